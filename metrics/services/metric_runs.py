"""Metric runs: create, score chunk by chunk (Celery), finish, cancel, resume.

A run scores every model turn of its target dialogues (a campaign's, one static run's, or an
uploaded answer file's) with metrics of the registry (:mod:`metrics.scorers.registry`). The work
is split into chunks of one *system batch* (a backend's responses of one skill) × one metric
family, because corpus values and CIDEr-D's idf are defined over a whole system's batch. Each
chunk writes, for its metrics:

- ``turn`` scores: the per-response values (``group`` = skill key, ``backend`` set);
- ``dialogue`` scores: for metrics whose spec lists a ``dialogue`` level, one item per dialogue
  (hypothesis = its last model turn, context = every turn before it); otherwise the mean of the
  dialogue's turn values;
- ``system`` scores: the corpus value per backend and skill, and per backend over all skills
  (``group`` ""), which a chunk of the backend's whole batch computes when it has several skills.

A chunk replaces its own score rows (delete, then insert, in one transaction) and marks itself
done with a compare-and-set, so a chunk run twice (a crashed worker's task redelivered, or a
resume) leaves one score per unit and counts once in the progress.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
import types
import typing
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
from django.conf import settings as django_settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from chat.models import Backend, Campaign, Dialogue, Language, Skill, StaticRun, Turn
from metrics.models import JobStatus, Level, MetricRun, MetricRunChunk, MetricScore
from metrics.scorers.base import MetricResult, Settings
from metrics.scorers.models import default_models
from metrics.scorers.offline import InputError, read_items
from metrics.scorers.registry import METRICS, score
from metrics.selectors import metric_runs as selectors

# Named metric sets. MSDE 16: seed 000 §4 (a sentence-encoder cosine stands in for Skip-Thought);
# seed 002's extras beside them.
PRESETS: dict[str, tuple[str, ...]] = {
    "msde16": (
        "f1",
        "bleu-1",
        "bleu-2",
        "rouge-l",
        "meteor",
        "dist-1",
        "dist-2",
        "cider",
        "sentence-cosine",
        "embedding-average",
        "vector-extrema",
        "greedy-matching",
        "bertscore-p",
        "bertscore-r",
        "bertscore-f1",
        "bleurt",
    ),
    "seed002-extra": (
        "bleu-3",
        "bleu-4",
        "rouge-1",
        "rouge-2",
        "rouge-3",
        "rouge-4",
        "rouge-w",
        "perplexity",
        "length",
    ),
}
PRESET_LABELS = {"msde16": "MSDE 16", "seed002-extra": "seed 002 extra"}
# Families whose kernels run neural models: their chunks go to the `gpu` queue when CUDA is here.
MODEL_HEAVY_FAMILIES = frozenset({"neural", "language-model", "follow-up", "learned"})
RUN_NAME_MAX_LENGTH = 160  # MetricRun.name
NO_REFERENCES = "no references"
WRITE_BATCH_SIZE = 2000


class MetricRunError(ValueError):
    """Bad input for a run; ``field`` (and ``line`` of an uploaded file) say where.

    ``str(exc)`` reads ``"<field>: <what is wrong>"`` or, for an upload,
    ``"<file> line N, field 'F': <what is wrong>"``.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        filename: str | None = None,
    ) -> None:
        self.message, self.field, self.line = message, field, line
        if line is not None:
            where = f"{filename or 'upload'} line {line}" + (f", field {field!r}" if field else "")
        else:
            where = field or ""
        super().__init__(f"{where}: {message}" if where else message)


# --- Checks -------------------------------------------------------------------------------------


def check_metric_names(names: Iterable[str]) -> list[str]:
    """Metric names (and preset names, expanded) validated against the registry, in order."""
    wanted: list[str] = []
    unknown: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        members = PRESETS.get(name.lower().replace(" ", ""), (name,))
        for member in members:
            if member not in METRICS:
                unknown.append(member)
            elif member not in wanted:
                wanted.append(member)
    if unknown:
        raise MetricRunError(
            f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRICS)}; "
            f"presets: {', '.join(PRESETS)}",
            field="metrics",
        )
    if not wanted:
        raise MetricRunError("choose at least one metric", field="metrics")
    return wanted


def _type_ok(value: Any, annotation: Any) -> bool:
    allowed = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else ()
    options = allowed or (annotation,)
    for option in options:
        if typing.get_origin(option) in (tuple, list) and isinstance(value, list | tuple):
            return True  # the items are checked by Settings
        if option is type(None) and value is None:
            return True
        if option is bool and isinstance(value, bool):
            return True
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if option is float and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if option is str and isinstance(value, str):
            return True
    return False


def check_settings(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's stored settings: the given ones validated (each error names the setting), plus
    a packaged model for the English neural metrics when none is given."""
    values = dict(values or {})
    hints = typing.get_type_hints(Settings)
    known = {f.name for f in dataclasses.fields(Settings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise MetricRunError(
            f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}",
            field="settings",
        )
    for key, value in values.items():
        if not _type_ok(value, hints[key]):
            raise MetricRunError(
                f"setting {key}={value!r} has the wrong type (expected {hints[key]})",
                field="settings",
            )
    try:
        settings = Settings.from_dict(values)
    except (ValueError, TypeError) as exc:
        raise MetricRunError(str(exc), field="settings") from exc
    for key, model in default_models(settings.lang).items():
        if not values.get(key):
            values[key] = model
    return values


# --- Create -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Upload:
    """An answer file in the ``score_responses`` input format, and whose answers they are."""

    fileobj: IO[bytes]
    filename: str
    system: str = "uploaded"
    skill: str = "chitchat"


def _read_upload(upload: Upload, *, need_references: bool) -> list[Any]:
    """Parse the upload with the offline command's reader (one format, one parser)."""
    limit = django_settings.DATASET_UPLOAD_MAX_BYTES
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as handle:
        size = 0
        for block in iter(lambda: upload.fileobj.read(1 << 20), b""):
            size += len(block)
            if size > limit:
                raise MetricRunError(
                    f"{upload.filename} is larger than {limit // (1 << 20)} MiB "
                    "(DATASET_UPLOAD_MAX_BYTES)",
                    field="file",
                )
            handle.write(block)
        handle.flush()
        try:
            return read_items(Path(handle.name), need_references=need_references)
        except InputError as exc:
            if exc.line == 0:
                raise MetricRunError(f"{upload.filename}: {exc.problem}", field="file") from exc
            raise MetricRunError(
                exc.problem, field=exc.field, line=exc.line, filename=upload.filename
            ) from exc


def _import_upload(
    *,
    upload: Upload,
    run_name: str,
    language: str,
    metrics: Sequence[str],
    created_by: AbstractBaseUser | None,
) -> Campaign:
    """Store the answers as single-turn dialogues of a new campaign: the context turns
    (alternating, the last one the user's), then the system's answer with its references.

    The campaign's mode is ``static`` (an upload is a static generation done elsewhere), which
    tells the scorer that only the last turn of each dialogue is the system's answer.
    """
    need_refs = any(METRICS[m].needs_reference for m in metrics)
    items = _read_upload(upload, need_references=need_refs)
    system = upload.system.strip()
    if not system:
        raise MetricRunError("name the system whose answers these are", field="system")
    skill = Skill.objects.filter(key=upload.skill).first()
    if skill is None:
        known = ", ".join(Skill.objects.values_list("key", flat=True))
        raise MetricRunError(f"unknown skill {upload.skill!r} (known: {known})", field="skill")
    backend, _ = Backend.objects.get_or_create(
        name=system[:120],
        defaults={"adapter": Backend.Adapter.IMPORTED, "active": False, "created_by": created_by},
    )
    name = f"{run_name} · {upload.filename}"[:150]
    suffix = 1
    while Campaign.objects.filter(name=name).exists():
        suffix += 1
        name = f"{run_name} · {upload.filename} ({suffix})"[:160]
    campaign = Campaign.objects.create(
        name=name, mode=Campaign.Mode.STATIC, status=Campaign.Status.CLOSED, created_by=created_by
    )
    campaign.skills.add(skill)
    campaign.campaign_backends.create(backend=backend, alias="模型 A")
    now = timezone.now()
    dialogues = Dialogue.objects.bulk_create(
        [
            Dialogue(
                campaign=campaign,
                backend=backend,
                skill=skill,
                language=language,
                status=Dialogue.Status.ACCEPTED,
                external_id=str(item.id),
                submitted_at=now,
            )
            for item in items
        ],
        batch_size=WRITE_BATCH_SIZE,
    )
    turns: list[Turn] = []
    for dialogue, item in zip(dialogues, items, strict=True):
        context = item.context or []
        for index, text in enumerate(context):
            # The last context turn is the user's; speakers alternate backwards from it.
            user = (len(context) - 1 - index) % 2 == 0
            speaker = Turn.Speaker.USER if user else Turn.Speaker.SYSTEM
            turns.append(Turn(dialogue=dialogue, index=index, speaker=speaker, text=text))
        turns.append(
            Turn(
                dialogue=dialogue,
                index=len(context),
                speaker=Turn.Speaker.SYSTEM,
                text=item.hypothesis,
                references=item.references or [],
            )
        )
    Turn.objects.bulk_create(turns, batch_size=WRITE_BATCH_SIZE)
    return campaign


def _chunks_for(run: MetricRun) -> list[MetricRunChunk]:
    families: dict[str, list[str]] = defaultdict(list)
    for name in run.metrics:
        families[METRICS[name].family].append(name)
    batches = selectors.system_batches(run=run)
    skills_of: dict[int, set[int]] = defaultdict(set)
    for backend_id, skill_id in batches:
        skills_of[backend_id].add(skill_id)
    chunks = []
    for family, names in families.items():
        for backend_id, skill_id in batches:
            chunks.append(
                MetricRunChunk(
                    run=run, backend_id=backend_id, skill_id=skill_id, family=family, metrics=names
                )
            )
        for backend_id, skills in skills_of.items():
            if len(skills) > 1:
                chunks.append(
                    MetricRunChunk(
                        run=run, backend_id=backend_id, skill_id=None, family=family, metrics=names
                    )
                )
    return chunks


@transaction.atomic
def metric_run_create(
    *,
    name: str,
    metrics: Iterable[str],
    settings: Mapping[str, Any] | None = None,
    campaign: Campaign | None = None,
    static_run: StaticRun | None = None,
    upload: Upload | None = None,
    include_submitted: bool = False,
    created_by: AbstractBaseUser | None = None,
) -> MetricRun:
    """Create a run over exactly one target and enqueue its chunks once the transaction commits.

    Raises :class:`MetricRunError` naming the field (or the upload's line); nothing is saved then.
    """
    name = name.strip()
    if not name:
        raise MetricRunError("a run name is required", field="name")
    if len(name) > RUN_NAME_MAX_LENGTH:
        raise MetricRunError(f"longer than {RUN_NAME_MAX_LENGTH} characters", field="name")
    targets = [t for t in (campaign, static_run, upload) if t is not None]
    if len(targets) != 1:
        raise MetricRunError(
            "choose exactly one target: a campaign, a static run or an uploaded file",
            field="target",
        )
    names = check_metric_names(metrics)
    stored_settings = check_settings(settings)
    if upload is not None:
        language = stored_settings.get("lang", "zh")
        if language not in Language.values:
            raise MetricRunError(f"unknown language {language!r}", field="settings")
        campaign = _import_upload(
            upload=upload,
            run_name=name,
            language=language,
            metrics=names,
            created_by=created_by,
        )
        target = MetricRun.Target.UPLOAD
    elif static_run is not None:
        campaign = static_run.campaign
        target = MetricRun.Target.STATIC_RUN
    else:
        target = MetricRun.Target.CAMPAIGN
    assert campaign is not None
    run = MetricRun.objects.create(
        name=name,
        campaign=campaign,
        static_run=static_run,
        target=target,
        include_submitted=include_submitted,
        metrics=names,
        metric_settings=stored_settings,
        created_by=created_by,
    )
    chunks = _chunks_for(run)
    if not chunks:
        raise MetricRunError(
            "the target has no model turns to score"
            + ("" if include_submitted or target != "campaign" else " among accepted dialogues"),
            field="target",
        )
    MetricRunChunk.objects.bulk_create(chunks)
    run.progress_total = len(chunks)
    run.save(update_fields=["progress_total"])
    _enqueue_on_commit(run, [c.pk for c in run.chunks.all()])
    return run


def chunk_queue(family: str) -> str:
    """``gpu`` for model-heavy families when this machine has CUDA, else ``metrics``."""
    if family in MODEL_HEAVY_FAMILIES:
        import torch

        if torch.cuda.is_available():
            return "gpu"
    return "metrics"


def _enqueue_on_commit(run: MetricRun, chunk_ids: list[int]) -> None:
    from metrics.tasks import runs as tasks

    families = dict(MetricRunChunk.objects.filter(pk__in=chunk_ids).values_list("pk", "family"))
    work = [(pk, chunk_queue(families[pk])) for pk in chunk_ids]
    run_id = run.pk
    transaction.on_commit(lambda: tasks.dispatch(run_id=run_id, chunks=work))


# --- Cancel, resume -----------------------------------------------------------------------------


def metric_run_cancel(*, run: MetricRun) -> bool:
    """Stop a pending or running run; chunks not yet written see it and stop. False when the
    run had already ended."""
    changed = MetricRun.objects.filter(
        pk=run.pk, status__in=[JobStatus.PENDING, JobStatus.RUNNING]
    ).update(status=JobStatus.CANCELLED, finished_at=timezone.now())
    run.refresh_from_db()
    return bool(changed)


@transaction.atomic
def metric_run_resume(*, run: MetricRun) -> int:
    """Re-enqueue every chunk not done (after a crash, a failure or a cancel); returns how many.

    Safe while old tasks are still queued or running: a chunk replaces its own rows and is
    counted once, so duplicates of a chunk cost time, never a duplicate score.
    """
    run = MetricRun.objects.select_for_update().get(pk=run.pk)
    if run.status == JobStatus.DONE:
        raise MetricRunError("the run is already done", field="status")
    todo = list(run.chunks.exclude(status=JobStatus.DONE).values_list("pk", flat=True))
    run.chunks.filter(pk__in=todo).update(status=JobStatus.PENDING, error="")
    run.status = JobStatus.RUNNING if run.started_at else JobStatus.PENDING
    run.error = ""
    run.finished_at = None
    run.save(update_fields=["status", "error", "finished_at"])
    _enqueue_on_commit(run, todo)
    return len(todo)


# --- Scoring one chunk --------------------------------------------------------------------------


def _finite(value: float) -> bool:
    return value is not None and math.isfinite(value)


@dataclasses.dataclass
class _ChunkOutput:
    rows: list[MetricScore]
    signatures: dict[str, str]
    unavailable: dict[str, str]


def _score_units(
    names: list[str], units: list[selectors.Unit], settings: Settings, unit: str = "response"
) -> tuple[dict[str, MetricResult], dict[str, list[int]], dict[str, str]]:
    """Score the units: metrics needing references over the units that have them. ``unit``
    ``dialogue``: each unit is a dialogue's last model turn after its whole history.

    Returns the results, which unit positions each metric's values belong to, and reasons for
    metrics (partly) skipped.
    """
    results: dict[str, MetricResult] = {}
    positions: dict[str, list[int]] = {}
    reasons: dict[str, str] = {}
    contexts = [u.context for u in units]
    free = [n for n in names if not METRICS[n].needs_reference]
    needs = [n for n in names if METRICS[n].needs_reference]
    if free:
        found = score(free, [u.text for u in units], None, contexts, settings, unit)
        results.update(found)
        positions.update(dict.fromkeys(free, list(range(len(units)))))
    if needs:
        with_refs = [i for i, u in enumerate(units) if u.references]
        if not with_refs:
            reasons.update(dict.fromkeys(needs, NO_REFERENCES))
        else:
            found = score(
                needs,
                [units[i].text for i in with_refs],
                [units[i].references for i in with_refs],
                [units[i].context for i in with_refs],
                settings,
                unit,
            )
            results.update(found)
            positions.update(dict.fromkeys(needs, with_refs))
            missing = len(units) - len(with_refs)
            if missing:
                note = f"{NO_REFERENCES} for {missing} of {len(units)} responses (not scored)"
                reasons.update(dict.fromkeys(needs, note))
    return results, positions, reasons


def _dialogue_items(units: list[selectors.Unit]) -> list[selectors.Unit]:
    """One item per dialogue: its last model turn, with every turn before it as context."""
    last: dict[int, selectors.Unit] = {}
    for unit in units:
        last[unit.dialogue_id] = unit
    return list(last.values())


def _chunk_rows(
    chunk: MetricRunChunk, units: list[selectors.Unit], *, also_all: bool
) -> _ChunkOutput:
    """The chunk's score rows; ``also_all``: the backend has this one skill only, so its
    all-skills system value (group "") is this batch's value too."""
    run = chunk.run
    settings = Settings.from_dict(run.metric_settings)
    names = list(chunk.metrics)
    out = _ChunkOutput([], {}, {})
    if not units:
        out.unavailable.update(dict.fromkeys(names, "no model turns in this system batch"))
        return out
    results, positions, reasons = _score_units(names, units, settings)
    out.unavailable.update(reasons)
    group = chunk.skill.key if chunk.skill_id else ""
    base = {"run": run, "backend_id": chunk.backend_id}
    dialogue_level = [n for n in names if "dialogue" in METRICS[n].levels and n in results]
    dialogue_results: dict[str, MetricResult] = {}
    dialogue_positions: dict[str, list[int]] = {}
    items = _dialogue_items(units) if chunk.skill_id and dialogue_level else []
    if items:
        dialogue_results, dialogue_positions, _ = _score_units(
            dialogue_level, items, settings, unit="dialogue"
        )
    for name in names:
        result = results.get(name)
        if result is None:
            continue
        out.signatures[name] = result.signature
        if not result.available:
            out.unavailable[name] = result.unavailable or "unknown reason"
            continue
        if chunk.skill_id:
            out.rows += _unit_rows(name, result, positions[name], units, group, base)
            if name in dialogue_results:
                out.rows += _dialogue_item_rows(
                    name, dialogue_results[name], dialogue_positions[name], items, group, base
                )
            else:
                out.rows += _dialogue_mean_rows(name, result, positions[name], units, group, base)
        groups = [group] if chunk.skill_id else [""]
        if chunk.skill_id and also_all:
            groups.append("")
        if _finite(result.corpus):
            for g in groups:
                out.rows.append(
                    MetricScore(
                        metric=name, level=Level.SYSTEM, group=g, value=result.corpus, **base
                    )
                )
    return out


def _unit_rows(
    name: str,
    result: MetricResult,
    positions: list[int],
    units: list[selectors.Unit],
    group: str,
    base: dict[str, Any],
) -> list[MetricScore]:
    rows = []
    for value, position in zip(result.per_response.tolist(), positions, strict=True):
        if _finite(value):
            unit = units[position]
            rows.append(
                MetricScore(
                    metric=name,
                    level=Level.TURN,
                    turn_id=unit.turn_id,
                    dialogue_id=unit.dialogue_id,
                    group=group,
                    value=value,
                    **base,
                )
            )
    return rows


def _dialogue_mean_rows(
    name: str,
    result: MetricResult,
    positions: list[int],
    units: list[selectors.Unit],
    group: str,
    base: dict[str, Any],
) -> list[MetricScore]:
    per_dialogue: dict[int, list[float]] = defaultdict(list)
    for value, position in zip(result.per_response.tolist(), positions, strict=True):
        if _finite(value):
            per_dialogue[units[position].dialogue_id].append(value)
    return [
        MetricScore(
            metric=name,
            level=Level.DIALOGUE,
            dialogue_id=dialogue_id,
            group=group,
            value=float(np.mean(values)),
            **base,
        )
        for dialogue_id, values in per_dialogue.items()
    ]


def _dialogue_item_rows(
    name: str,
    result: MetricResult,
    positions: list[int],
    items: list[selectors.Unit],
    group: str,
    base: dict[str, Any],
) -> list[MetricScore]:
    if result.per_response is None:
        return []
    return [
        MetricScore(
            metric=name,
            level=Level.DIALOGUE,
            dialogue_id=items[position].dialogue_id,
            group=group,
            value=value,
            **base,
        )
        for value, position in zip(result.per_response.tolist(), positions, strict=True)
        if _finite(value)
    ]


def _start(run: MetricRun) -> None:
    MetricRun.objects.filter(pk=run.pk, status=JobStatus.PENDING).update(
        status=JobStatus.RUNNING, started_at=timezone.now()
    )


def metric_run_score_chunk(*, chunk_id: int) -> str:
    """Score one chunk and write its rows; returns what happened (``done``, ``skipped``,
    ``cancelled``, ``failed``). Idempotent: a chunk already done is skipped."""
    chunk = (
        MetricRunChunk.objects.select_related("run__campaign", "skill").filter(pk=chunk_id).first()
    )
    if chunk is None or chunk.status == JobStatus.DONE:
        return "skipped"
    run = chunk.run
    if run.status in (JobStatus.CANCELLED, JobStatus.DONE):
        return "cancelled" if run.status == JobStatus.CANCELLED else "skipped"
    _start(run)
    MetricRunChunk.objects.filter(pk=chunk.pk).exclude(status=JobStatus.DONE).update(
        status=JobStatus.RUNNING
    )
    also_all = (
        chunk.skill_id is not None
        and not MetricRunChunk.objects.filter(
            run_id=run.pk, backend_id=chunk.backend_id, family=chunk.family, skill__isnull=True
        ).exists()
    )
    try:
        units = selectors.response_units(
            run=run, backend_id=chunk.backend_id, skill_id=chunk.skill_id
        )
        output = _chunk_rows(chunk, units, also_all=also_all)
        return _write_chunk(chunk, output, responses=len(units), also_all=also_all)
    except Exception as exc:  # recorded on the chunk; a resume runs it again
        MetricRunChunk.objects.filter(pk=chunk.pk).exclude(status=JobStatus.DONE).update(
            status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        return "failed"


@transaction.atomic
def _write_chunk(
    chunk: MetricRunChunk, output: _ChunkOutput, *, responses: int, also_all: bool
) -> str:
    run = MetricRun.objects.select_for_update().get(pk=chunk.run_id)
    if run.status == JobStatus.CANCELLED:
        return "cancelled"
    scope = Q(group=chunk.skill.key) if chunk.skill_id else Q(level=Level.SYSTEM, group="")
    if also_all:
        scope |= Q(level=Level.SYSTEM, group="")
    MetricScore.objects.filter(
        scope, run_id=run.pk, backend_id=chunk.backend_id, metric__in=chunk.metrics
    ).delete()
    MetricScore.objects.bulk_create(output.rows, batch_size=WRITE_BATCH_SIZE)
    marked = (
        MetricRunChunk.objects.filter(pk=chunk.pk)
        .exclude(status=JobStatus.DONE)
        .update(
            status=JobStatus.DONE,
            responses=responses,
            signatures=output.signatures,
            unavailable=output.unavailable,
            error="",
            finished_at=timezone.now(),
        )
    )
    if marked:
        MetricRun.objects.filter(pk=run.pk).update(progress_done=F("progress_done") + 1)
    return "done"


# --- Finish ------------------------------------------------------------------------------------


def _merge(values: Iterable[str]) -> str:
    return "; ".join(dict.fromkeys(v for v in values if v))


def metric_run_finish(*, run_id: int) -> str:
    """Collect the chunks' signatures and unavailable reasons onto the run and set its final
    status (``done``, or ``failed`` naming the failed chunks). Idempotent."""
    with transaction.atomic():
        run = MetricRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None:  # deleted since its chunks were sent
            return "missing"
        chunks = list(run.chunks.select_related("backend", "skill"))
        signatures: dict[str, list[str]] = defaultdict(list)
        reasons: dict[str, list[str]] = defaultdict(list)
        for chunk in chunks:
            for name, signature in chunk.signatures.items():
                signatures[name].append(signature)
            for name, reason in chunk.unavailable.items():
                reasons[name].append(reason)
        scored = set(run.scores.values_list("metric", flat=True).distinct())
        unavailable = {}
        for name, found in reasons.items():
            prefix = "unavailable" if name not in scored else "partly unavailable"
            unavailable[name] = f"{prefix}: {_merge(found)}"
        run.signatures = {name: _merge(found) for name, found in signatures.items()}
        run.unavailable = unavailable
        fields = ["signatures", "unavailable"]
        if run.status in (JobStatus.PENDING, JobStatus.RUNNING):
            failed = [c for c in chunks if c.status == JobStatus.FAILED]
            pending = [c for c in chunks if c.status != JobStatus.DONE]
            if failed:
                run.status = JobStatus.FAILED
                run.error = "\n".join(
                    f"{c.backend.name} / {c.skill.key if c.skill else '*'} / {c.family}: {c.error}"
                    for c in failed
                )[:5000]
            elif not pending:
                run.status = JobStatus.DONE
            if run.status in (JobStatus.DONE, JobStatus.FAILED):
                run.finished_at = timezone.now()
                fields += ["status", "error", "finished_at"]
        run.save(update_fields=fields)
        return run.status
