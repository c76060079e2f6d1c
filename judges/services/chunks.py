"""The judges' chunk handler: how one chunk of a judge run is scored.

The execution path, from a judge run's creation to its scores:

1. :func:`judges.services.runs.judge_run_create` makes a :class:`metrics.models.MetricRun`
   whose chunks have family ``judge:<part>`` and enqueues them on commit with every metric
   run's (``metrics.services.metric_runs._enqueue_on_commit``), each on the queue that
   :func:`judge_chunk_queue` names (``chat``, or the model queue for a local model);
2. ``metrics/tasks/runs.py``: the Celery task ``score_chunk`` calls
   ``metrics.services.metric_run_scoring.metric_run_score_chunk``, which takes the chunk's lease,
   keeps its heartbeat and finishes the run after its last chunk;
3. for a ``judge`` family that function calls the handler that ``judges/apps.py`` registers in
   ``metrics.services.chunk_handlers`` (``metrics`` never imports ``judges``):
   :func:`judge_chunk_score` here.

``manage.py judge run --here`` calls step 2's function for each chunk in its own process instead
of sending tasks. ``docs/architecture.md`` draws the whole path.

A chunk

1. renders a prompt per unit (:func:`judges.services.planning.plan_items`);
2. answers each from the cache or the backend (:mod:`judges.services.execution`);
3. under the run's row lock, replaces its :class:`JudgeAnswer` rows, recomputes the metric
   scores of its dialogues *from the stored answers* (:mod:`judges.scoring`), recomputes the
   affected system means, in pairwise mode replaces its pairs' votes (one per order asked,
   :mod:`judges.services.votes`), and marks itself done with a compare-and-set (so a re-run
   counts once and scores and votes never double).

Unparseable, refused, truncated and failed answers are stored with their raw text and never
scored: a question without a valid answer simply has no score for that unit.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from asgiref.sync import async_to_sync
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from chat.backends.errors import BackendError
from chat.models import Backend
from core.jobs import JobCancelled, job_finish
from judges.models import JudgeAnswer, JudgeChunk, JudgeRun
from judges.scoring import DialogueData, JudgeConfig, direct_scores, metric_names, pairwise_scores
from judges.services.config import judge_config
from judges.services.execution import (
    ItemResult,
    PartTraffic,
    SampleResult,
    attempt_params,
    cache_key,
    cached_responses,
    execute_unless_stopped,
    store_cache,
)
from judges.services.planning import WorkItem, load_dialogues, plan_items
from judges.services.votes import replace_chunk_votes
from metrics.models import JobStatus, Level, MetricRun, MetricRunChunk, MetricScore

logger = logging.getLogger(__name__)


def judge_chunk_queue(chunk_id: int) -> str:
    """A local ``transformers`` judge runs a model: the configured model queue (``gpu`` where a
    GPU worker consumes it); any other judge only waits on a server: ``chat`` (I/O-bound)."""
    adapter = (
        JudgeRun.objects.filter(metric_run__chunks__pk=chunk_id)
        .values_list("judge__backend__adapter", flat=True)
        .first()
    )
    if adapter == Backend.Adapter.TRANSFORMERS:
        from metrics.services.queues import model_queue

        return model_queue()
    return "chat"


def judge_chunk_score(chunk_id: int, owner: str) -> str:
    """Judge one chunk (see the module docstring) under the lease `owner` holds. Idempotent;
    returns what happened. A failure ends the chunk only while `owner` still holds it: an
    execution that lost its lease to another worker leaves that worker's chunk alone."""
    chunk = MetricRunChunk.objects.select_related("run").filter(pk=chunk_id).first()
    if chunk is None or chunk.status == JobStatus.DONE:
        return "skipped"
    run = chunk.run
    try:
        judge_run = JudgeRun.objects.select_related("judge__backend", "judge__rubric").get(
            metric_run=run
        )
        part = JudgeChunk.objects.get(chunk=chunk)
        config = judge_config(judge_run.judge)
        ids = set(part.dialogues) | {d for pair in part.pairs for d in pair}
        dialogues = load_dialogues(ids)
        items, skipped = plan_items(
            config, dialogues, dialogue_ids=part.dialogues, pairs=part.pairs
        )
        keys = [
            cache_key(config, item.prompt.digest, attempt_params(config, attempt))
            for item in items
            for attempt in range(config.max_attempts)
        ]
        cached = cached_responses(keys)
        traffic = PartTraffic()
        # A cancel is seen before each part (the chunk task checks the run), during it (the
        # chunk's heartbeat sees the chunk cancelled with its run, and the part's requests are
        # abandoned) and when the part is written (under the run's lock).
        try:
            results = async_to_sync(execute_unless_stopped)(config, items, cached, traffic)
        except JobCancelled:
            store_cache(config, traffic)  # what was paid for is kept for the resume
            return "cancelled"
        if items and all(r.error and not r.samples for r in results):
            raise BackendError(
                f"every request failed; first: {results[0].error}", kind="unavailable"
            )
        return _write_part(chunk, run, config, part, results, traffic, skipped, items, dialogues)
    except Exception as exc:  # noqa: BLE001 - recorded on the chunk; a resume runs it again
        logger.warning("judge chunk %s failed: %s", chunk_id, exc)
        job_finish(
            MetricRunChunk,
            chunk_id,
            status=JobStatus.FAILED,
            owner=owner,
            error=f"{type(exc).__name__}: {exc}"[:2000],
        )
        return "failed"


@transaction.atomic
def _write_part(
    chunk: MetricRunChunk,
    run: MetricRun,
    config: JudgeConfig,
    part: JudgeChunk,
    results: Sequence[ItemResult],
    traffic: PartTraffic,
    skipped: Mapping[str, str],
    items: Sequence[WorkItem],
    dialogues: Mapping[int, DialogueData],
) -> str:
    locked = MetricRun.objects.select_for_update().get(pk=run.pk)
    if locked.status == JobStatus.CANCELLED:
        store_cache(config, traffic)  # what was paid for is kept for the resume
        return "cancelled"
    store_cache(config, traffic)
    answers = _answer_rows(run, results)
    keys = [f"{item.unit_key}:s{i}" for item in items for i in range(max(config.n, 1))]
    for start in range(0, len(keys), 2000):
        JudgeAnswer.objects.filter(run=run, unit_key__in=keys[start : start + 2000]).delete()
    JudgeAnswer.objects.bulk_create(answers, batch_size=2000)
    affected = set(part.dialogues) | {d for pair in part.pairs for d in pair}
    names = metric_names(mode=config.mode, spec=config.spec, prefix=config.prefix)
    MetricScore.objects.filter(
        run=run, metric__in=names, dialogue_id__in=affected, level__in=(Level.TURN, Level.DIALOGUE)
    ).delete()
    rows = _score_rows(
        run,
        config,
        affected,
        dialogues=dialogues,
        answers=answers if config.mode != "pairwise" else None,
    )
    MetricScore.objects.bulk_create(rows, batch_size=2000)
    backends = {dialogues[d].backend_id for d in affected if d in dialogues}
    MetricScore.objects.filter(
        run=run, level=Level.SYSTEM, backend_id__in=backends, metric__in=names
    ).delete()
    MetricScore.objects.bulk_create(_system_rows(run, backends), batch_size=2000)
    source = (
        JudgeRun.objects.filter(pk=run.pk).select_related("vote_source").get().vote_source
        if config.mode == "pairwise"
        else None
    )
    if source is not None:
        replace_chunk_votes(
            source=source, config=config, part=part, answers=answers, dialogues=dialogues
        )
    unavailable = dict(skipped)
    failed = sum(1 for a in answers if a.status != JudgeAnswer.Status.OK)
    if failed:
        note = f"{failed} of {len(answers)} judge answers not fully parsed (stored, not scored)"
        for name in names:
            unavailable.setdefault(name, note)
    marked = (
        MetricRunChunk.objects.filter(pk=chunk.pk)
        .exclude(status=JobStatus.DONE)
        .update(
            status=JobStatus.DONE,
            lease_owner="",
            lease_expires_at=None,
            responses=len(items),
            signatures=dict.fromkeys(names, config.signature),
            unavailable=unavailable,
            error="",
            finished_at=timezone.now(),
        )
    )
    if marked:
        MetricRun.objects.filter(pk=run.pk).update(progress_done=F("progress_done") + 1)
    notes = list(dict.fromkeys(traffic.notes))[:5]
    JudgeRun.objects.filter(pk=run.pk).update(
        requests_sent=F("requests_sent") + traffic.sent,
        cache_hits=F("cache_hits") + traffic.cache_hits,
        prompt_tokens=F("prompt_tokens") + traffic.prompt_tokens,
        completion_tokens=F("completion_tokens") + traffic.completion_tokens,
    )
    if notes:
        judge_run = JudgeRun.objects.get(pk=run.pk)
        judge_run.notes = list(dict.fromkeys([*judge_run.notes, *notes]))[:20]
        judge_run.save(update_fields=["notes"])
    return "done"


# --- answers and scores as rows ----------------------------------------------------------------


def _answer_rows(run: MetricRun, results: Sequence[ItemResult]) -> list[JudgeAnswer]:
    rows = []
    for result in results:
        item = result.item
        samples: list[SampleResult | None] = [*result.samples] or [None]
        for index, sample in enumerate(samples):
            status: str
            if sample is None:
                status, raw, values, problems, rationale, finish = (
                    JudgeAnswer.Status.ERROR.value,
                    "",
                    {},
                    [result.error or "no answer"],
                    "",
                    "",
                )
                geval: dict[str, float] = {}
            else:
                status = sample.parsed.status
                raw = sample.choice.text or (sample.choice.refusal or "")
                values = sample.parsed.values
                problems = sample.parsed.problems
                rationale = sample.parsed.rationale
                finish = sample.choice.finish_reason or ""
                geval = sample.geval
            rows.append(
                JudgeAnswer(
                    run=run,
                    unit_key=f"{item.unit_key}:s{index}",
                    dialogue_id=item.dialogue_id,
                    turn_id=item.turn_id,
                    other_dialogue_id=item.other_id,
                    order=item.order,
                    sample=index,
                    status=status,
                    attempts=max(result.attempts, 1),
                    values=values,
                    geval=geval,
                    rationale=rationale,
                    raw=raw,
                    problems=problems[:20],
                    finish_reason=finish[:40],
                    prompt_hash=item.prompt.digest,
                    prompt_tokens=result.prompt_tokens if index == 0 else 0,
                    completion_tokens=result.completion_tokens if index == 0 else 0,
                    cached=result.cached,
                )
            )
    return rows


def _score_rows(
    run: MetricRun,
    config: JudgeConfig,
    dialogue_ids: Iterable[int],
    *,
    dialogues: Mapping[int, DialogueData] | None = None,
    answers: Sequence[JudgeAnswer] | None = None,
) -> list[MetricScore]:
    """The scores of ``dialogue_ids`` from their stored answers (``answers``: the rows just
    written, when they are all of them — direct mode, where a part owns its dialogues)."""
    ids = sorted(set(dialogue_ids))
    if dialogues is None or any(i not in dialogues for i in ids):
        dialogues = load_dialogues(ids)
    rows: list[MetricScore] = []
    if config.mode == "pairwise":
        answers = list(
            JudgeAnswer.objects.filter(run=run).filter(
                Q(dialogue_id__in=ids) | Q(other_dialogue_id__in=ids)
            )
        )
        for dialogue_id, metrics in pairwise_scores(config, answers).items():
            data = dialogues.get(dialogue_id)
            if data is None:
                continue
            for name, value in metrics.items():
                rows.append(_row(run, data, name, value))
        return rows
    by_dialogue: dict[int, list[JudgeAnswer]] = defaultdict(list)
    wanted = set(ids)
    source = (
        answers if answers is not None else JudgeAnswer.objects.filter(run=run, dialogue_id__in=ids)
    )
    for answer in source:
        if answer.dialogue_id in wanted:
            by_dialogue[answer.dialogue_id].append(answer)
    for dialogue_id, answers in by_dialogue.items():
        data = dialogues[dialogue_id]
        dialogue, turns = direct_scores(config, data, answers)
        for name, value in dialogue.items():
            rows.append(_row(run, data, name, value))
        for (name, turn_id), value in turns.items():
            rows.append(_row(run, data, name, value, turn_id=turn_id))
    return rows


def _row(
    run: MetricRun, data: DialogueData, name: str, value: float, turn_id: int | None = None
) -> MetricScore:
    return MetricScore(
        run=run,
        metric=name,
        level=Level.TURN if turn_id else Level.DIALOGUE,
        turn_id=turn_id,
        dialogue_id=data.id,
        backend_id=data.backend_id,
        group=data.skill,
        value=float(value),
    )


def _system_rows(run: MetricRun, backend_ids: Iterable[int]) -> list[MetricScore]:
    """Each backend's mean dialogue score per skill and over all skills (group "")."""
    sums: dict[tuple[int, str, str], list[float]] = defaultdict(list)
    for backend_id, metric, group, value in MetricScore.objects.filter(
        run=run, level=Level.DIALOGUE, backend_id__in=list(backend_ids)
    ).values_list("backend_id", "metric", "group", "value"):
        sums[(backend_id, metric, group)].append(value)
        sums[(backend_id, metric, "")].append(value)
    return [
        MetricScore(
            run=run,
            metric=metric,
            level=Level.SYSTEM,
            backend_id=backend_id,
            group=group,
            value=sum(values) / len(values),
        )
        for (backend_id, metric, group), values in sums.items()
    ]
