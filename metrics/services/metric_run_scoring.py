"""Metric runs, the worker's side: score one chunk, write its rows, finish the run.

A chunk is one *system batch* (a backend's responses of one skill) × one metric family
(:mod:`metrics.services.metric_runs` plans and sends them). Each chunk writes, for its metrics:

- ``turn`` scores: the per-response values (``group`` = skill key, ``backend`` set);
- ``dialogue`` scores: for metrics whose spec lists a ``dialogue`` level, one item per dialogue:
  *the dialogue* as the item-selection job scores it too (every turn in order, trailing user turns
  included; :func:`metrics.selectors.metric_runs.dialogue_texts`); otherwise the mean of the
  dialogue's turn values;
- ``system`` scores: the corpus value per backend and skill, and per backend over all skills
  (``group`` ""), which a chunk of the backend's whole batch computes when it has several skills.

A chunk replaces its own score rows (delete, then insert, in one transaction) and marks itself
done with a compare-and-set, so a chunk run twice (a crashed worker's task redelivered, or a
resume) leaves one score per unit and counts once in the progress. Each chunk is a leased unit
(:class:`core.models.Leased`): the task claims it and renews the lease from a heartbeat thread,
and the run is finished by whichever chunk ends last (or by the job sweeper).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.jobs import (
    ACTIVE,
    Heartbeat,
    job_claim,
    job_finish,
    new_lease_owner,
)
from metrics.models import JobStatus, Level, MetricRun, MetricRunChunk, MetricScore
from metrics.scorers import followup
from metrics.scorers.base import MetricResult, Settings
from metrics.scorers.registry import METRICS, prepare, score_batch
from metrics.selectors import metric_runs as selectors
from metrics.services import chunk_handlers, queues

# Families whose kernels run neural models: their chunks go to the `gpu` queue where configured.
MODEL_HEAVY_FAMILIES = frozenset({"neural", "language-model", "follow-up", "learned"})
FOLLOWUP_FAMILY = "follow-up"
NO_REFERENCES = "no references"
WRITE_BATCH_SIZE = 2000


def dialogue_only_metrics(names: Iterable[str], settings: Settings) -> set[str]:
    """The ``*-selected`` metrics whose chosen items include dialogue-level ones: they have no
    turn-level score (FED's 8 turn items do not hold them), so a run scores them per dialogue
    only."""
    if not settings.followup_items:
        return set()
    turn_items = {
        item.name for item in followup.load_followups(settings.lang, settings.followup_override)
        .select("turn")
    }  # fmt: skip
    if set(settings.followup_items) <= turn_items:
        return set()
    return {n for n in names if n in followup.VARIANTS and followup.VARIANTS[n].requires_items}


def chunk_queue(family: str, chunk_id: int | None = None) -> str:
    """The configured model queue (:func:`~metrics.services.queues.model_queue`) for model-heavy
    families, else ``metrics``; a registered handler's family (an LLM judge) names its own."""
    handler = chunk_handlers.handler_for(family)
    if handler is not None and chunk_id is not None:
        return handler.queue(chunk_id)
    return queues.model_queue() if family in MODEL_HEAVY_FAMILIES else queues.METRICS_QUEUE


# --- Scoring one chunk --------------------------------------------------------------------------


def _finite(value: float) -> bool:
    return value is not None and math.isfinite(value)


@dataclasses.dataclass
class _ChunkOutput:
    rows: list[MetricScore]
    signatures: dict[str, str]
    unavailable: dict[str, str]


def _add_reason(reasons: dict[str, str], name: str, reason: str) -> None:
    reasons[name] = f"{reasons[name]}; {reason}" if reasons.get(name) else reason


def _score_isolated(
    names: list[str],
    hyps: list[str],
    refs: list[list[str]] | None,
    contexts: list[list[str]],
    settings: Settings,
    unit: str,
    reasons: dict[str, str],
) -> dict[str, MetricResult]:
    """Score ``names`` on one prepared batch (tokens shared), kernel by kernel, so that one
    metric's failure never fails another's: a kernel that raises leaves its metrics out with
    the reason."""
    batch = prepare(hyps, refs, contexts, settings, unit)
    groups: dict[str, list[str]] = defaultdict(list)
    for name in names:
        groups[METRICS[name].kernel].append(name)
    results: dict[str, MetricResult] = {}
    for members in groups.values():
        try:
            results.update(score_batch(members, batch))
        except Exception as exc:  # noqa: BLE001 - recorded per metric; the other kernels go on
            for name in members:
                _add_reason(reasons, name, f"failed: {type(exc).__name__}: {exc}")
    return results


def _score_units(
    names: list[str], units: list[selectors.Unit], settings: Settings, unit: str = "response"
) -> tuple[dict[str, MetricResult], dict[str, list[int]], dict[str, str]]:
    """Score the units: metrics needing references over the units that have them. ``unit``
    ``dialogue``: each unit is a whole dialogue (its last turn after every turn before it).

    Returns the results, which unit positions each metric's values belong to, and reasons for
    metrics (partly) skipped or failed.
    """
    results: dict[str, MetricResult] = {}
    positions: dict[str, list[int]] = {}
    reasons: dict[str, str] = {}
    contexts = [u.context for u in units]
    free = [n for n in names if not METRICS[n].needs_reference]
    needs = [n for n in names if METRICS[n].needs_reference]
    if free:
        found = _score_isolated(
            free, [u.text for u in units], None, contexts, settings, unit, reasons
        )
        results.update(found)
        positions.update(dict.fromkeys(free, list(range(len(units)))))
    if needs:
        with_refs = [i for i, u in enumerate(units) if u.references]
        if not with_refs:
            reasons.update(dict.fromkeys(needs, NO_REFERENCES))
        else:
            found = _score_isolated(
                needs,
                [units[i].text for i in with_refs],
                [units[i].references for i in with_refs],
                [units[i].context for i in with_refs],
                settings,
                unit,
                reasons,
            )
            results.update(found)
            positions.update(dict.fromkeys(needs, with_refs))
            missing = len(units) - len(with_refs)
            if missing:
                note = f"{NO_REFERENCES} for {missing} of {len(units)} responses (not scored)"
                for name in needs:
                    _add_reason(reasons, name, note)
    return results, positions, reasons


def _dialogue_items(units: list[selectors.Unit]) -> list[selectors.Unit]:
    """One item per dialogue: the whole dialogue (:func:`selectors.dialogue_texts`, the same
    input the item-selection job scores), as its last turn after every turn before it. The item
    keeps the dialogue's last *model* turn id."""
    last: dict[int, selectors.Unit] = {}
    for unit in units:
        last[unit.dialogue_id] = unit
    texts = selectors.dialogue_texts(dialogue_ids=list(last))
    return [
        dataclasses.replace(unit, text=texts[pk][-1], context=texts[pk][:-1], references=[])
        for pk, unit in last.items()
    ]


def _non_finite_note(result: MetricResult, what: str) -> str | None:
    """A reason for values a kernel returned as NaN/inf: they are not stored, and say so."""
    if result.per_response is None:
        return None
    bad = int((~np.isfinite(result.per_response)).sum())
    if not bad:
        return None
    return (
        f"{bad} of {len(result.per_response)} {what} values not finite (NaN or infinite, e.g. "
        "an empty response) and not stored"
    )


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
    dialogue_only = dialogue_only_metrics(names, settings)
    turn_names = [n for n in names if n not in dialogue_only]
    results, positions, reasons = _score_units(turn_names, units, settings)
    out.unavailable.update(reasons)
    for name in dialogue_only:
        _add_reason(
            out.unavailable,
            name,
            "no turn-level scores: followup_items include dialogue-level items "
            f"({', '.join(settings.followup_items or ())}); scored per dialogue only",
        )
    group = chunk.skill.key if chunk.skill is not None else ""
    base = {"run": run, "backend_id": chunk.backend_id}
    dialogue_level = [
        n for n in names if "dialogue" in METRICS[n].levels and (n in results or n in dialogue_only)
    ]
    # Seed 004 §4.4 ranks teams by the mean of their *dialogue* scores, so a follow-up metric's
    # system value is that, for every variant alike (the mean of turn scores, 8 turn-level items
    # per model turn, weighs long dialogues more and is another number): the all-skills chunk
    # scores the dialogues for it too.
    followup_names = {n for n in names if METRICS[n].family == FOLLOWUP_FAMILY}
    if not chunk.skill_id:
        dialogue_level = [n for n in dialogue_level if n in followup_names]
    dialogue_results: dict[str, MetricResult] = {}
    dialogue_positions: dict[str, list[int]] = {}
    items = _dialogue_items(units) if dialogue_level else []
    if items:
        dialogue_results, dialogue_positions, dialogue_reasons = _score_units(
            dialogue_level, items, settings, unit="dialogue"
        )
        for name, reason in dialogue_reasons.items():
            _add_reason(out.unavailable, name, f"dialogue level: {reason}")
    for name in names:
        result = results.get(name)
        if result is None and name in dialogue_only:
            result = dialogue_results.get(name)
        if result is None:
            continue
        out.signatures[name] = result.signature
        if not result.available:
            _add_reason(out.unavailable, name, result.unavailable or "unknown reason")
            continue
        for found, what in ((results.get(name), "turn"), (dialogue_results.get(name), "dialogue")):
            note = _non_finite_note(found, what) if found is not None else None
            if note:
                _add_reason(out.unavailable, name, note)
        if chunk.skill_id:
            if name not in dialogue_only:
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
        system_value = result.corpus
        if name in followup_names:
            by_dialogue = dialogue_results.get(name)
            system_value = by_dialogue.corpus if by_dialogue is not None else None
        if system_value is None or not _finite(system_value):
            _add_reason(out.unavailable, name, "the system value is not finite and not stored")
        else:
            for g in groups:
                out.rows.append(
                    MetricScore(
                        metric=name, level=Level.SYSTEM, group=g, value=system_value, **base
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
    if result.per_response is None:
        return []
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
    if result.per_response is None:
        return []
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
    ``taken``, ``cancelled``, ``failed``). Idempotent: a chunk already done is skipped, one
    another live worker holds is left to it. The chunk that ends last finishes the run."""
    chunk = (
        MetricRunChunk.objects.select_related("run__campaign", "skill").filter(pk=chunk_id).first()
    )
    if chunk is None or chunk.status == JobStatus.DONE:
        return "skipped"
    run = chunk.run
    if run.status in (JobStatus.CANCELLED, JobStatus.DONE):
        return "cancelled" if run.status == JobStatus.CANCELLED else "skipped"
    owner = new_lease_owner()
    if not job_claim(MetricRunChunk, chunk.pk, owner=owner):
        return "taken"
    _start(run)
    with Heartbeat(MetricRunChunk, chunk.pk, owner=owner):
        # Chunks of families with their own scoring (LLM judges) go to their handler.
        handler = chunk_handlers.handler_for(chunk.family)
        if handler is not None:
            outcome = handler.score(chunk.pk, owner)
        else:
            outcome = _score_claimed_chunk(chunk, owner)
    if not MetricRunChunk.objects.filter(run_id=run.pk, status__in=ACTIVE).exists():
        metric_run_finish(run_id=run.pk)
    return outcome


def _score_claimed_chunk(chunk: MetricRunChunk, owner: str) -> str:
    run = chunk.run
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
        return _write_chunk(chunk, output, owner=owner, responses=len(units), also_all=also_all)
    except Exception as exc:  # noqa: BLE001  # recorded on the chunk; a resume runs it again
        job_finish(
            MetricRunChunk,
            chunk.pk,
            status=JobStatus.FAILED,
            owner=owner,
            error=f"{type(exc).__name__}: {exc}"[:2000],
        )
        return "failed"


@transaction.atomic
def _write_chunk(
    chunk: MetricRunChunk, output: _ChunkOutput, *, owner: str, responses: int, also_all: bool
) -> str:
    run = MetricRun.objects.select_for_update().get(pk=chunk.run_id)
    if run.status == JobStatus.CANCELLED:
        job_finish(MetricRunChunk, chunk.pk, status=JobStatus.CANCELLED, owner=owner)
        return "cancelled"
    scope = Q(group=chunk.skill.key) if chunk.skill is not None else Q(level=Level.SYSTEM, group="")
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
            lease_owner="",
            lease_expires_at=None,
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
