"""Reads of metric runs: what a run scores (its response units), its scores, tables, downloads."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet

from chat.models import Dialogue, Turn
from metrics.models import (
    FollowupSelection,
    JobStatus,
    Level,
    MetricRun,
    MetricRunChunk,
    MetricScore,
)
from metrics.scorers.registry import METRICS

# Campaign targets score accepted dialogues; "include submitted" adds those awaiting review.
ACCEPTED = (Dialogue.Status.ACCEPTED,)
ACCEPTED_OR_SUBMITTED = (Dialogue.Status.ACCEPTED, Dialogue.Status.SUBMITTED)


@dataclass(frozen=True)
class Unit:
    """One response to score: a model turn, its references and the texts of the turns before it."""

    turn_id: int
    dialogue_id: int
    text: str
    references: list[str]
    context: list[str]


def metric_run_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[MetricRun]:
    """Every run (researchers see all of them), newest first."""
    return MetricRun.objects.select_related("campaign", "static_run", "created_by")


def done_selections() -> list[tuple[int, str]]:
    """Finished follow-up item selections as (id, label) choices for a run's
    ``followup_selection``, newest first; the label names the variant and scorer inputs."""
    rows = FollowupSelection.objects.filter(status=JobStatus.DONE).order_by("-pk")
    return [
        (
            selection.pk,
            f"{selection.name} · {selection.results.get('variant', '')} · "
            f"layout:{selection.layout} · norm:{selection.normalisation}",
        )
        for selection in rows
    ]


def target_dialogues(*, run: MetricRun) -> QuerySet[Dialogue]:
    """The dialogues a run scores.

    Static-run answers are not reviewed (accepted or submitted both count); a campaign target
    takes accepted dialogues, or accepted and submitted ones when ``include_submitted``.
    """
    if run.static_run_id is not None:
        return Dialogue.objects.filter(
            static_run_id=run.static_run_id, status__in=ACCEPTED_OR_SUBMITTED
        )
    statuses = ACCEPTED_OR_SUBMITTED if run.include_submitted else ACCEPTED
    return Dialogue.objects.filter(campaign_id=run.campaign_id, status__in=statuses)


def response_units(*, run: MetricRun, backend_id: int, skill_id: int | None) -> list[Unit]:
    """The responses of one system batch (a backend's dialogues of one skill, or of all skills
    when ``skill_id`` is None), in dialogue and turn order.

    Static answers (static-run dialogues, static campaigns, uploads, imports of static answers)
    copy the sample's context
    as user *and* system turns before the model's reply, so only their last turn is the
    model's; elsewhere every system turn is.
    """
    dialogues = target_dialogues(run=run).filter(backend_id=backend_id)
    if skill_id is not None:
        dialogues = dialogues.filter(skill_id=skill_id)
    static_campaign = run.campaign.answers_are_last_turns
    turns = (
        Turn.objects.filter(dialogue__in=dialogues)
        .order_by("dialogue_id", "index")
        .values_list(
            "id", "dialogue_id", "speaker", "text", "references", "dialogue__static_run_id"
        )
    )
    by_dialogue: dict[int, list[tuple[int, str, str, list[str]]]] = defaultdict(list)
    single: dict[int, bool] = {}
    for turn_id, dialogue_id, speaker, text, references, static_run_id in turns.iterator(
        chunk_size=5000
    ):
        by_dialogue[dialogue_id].append((turn_id, speaker, text, references or []))
        single[dialogue_id] = static_campaign or static_run_id is not None
    units: list[Unit] = []
    for dialogue_id, rows in by_dialogue.items():
        texts = [text for _id, _speaker, text, _refs in rows]
        for position, (turn_id, speaker, text, references) in enumerate(rows):
            if speaker != Turn.Speaker.SYSTEM:
                continue
            if single[dialogue_id] and position != len(rows) - 1:
                continue
            refs = [r for r in references if isinstance(r, str) and r.strip()]
            units.append(Unit(turn_id, dialogue_id, text, refs, texts[:position]))
    return units


def dialogue_texts(*, dialogue_ids: Iterable[int]) -> dict[int, list[str]]:
    """*The dialogue*, as every dialogue-level reference-free score sees it: the text of every
    turn in order, user and model, trailing user turns included (seed 004 §2 appends the
    follow-ups after the whole dialogue). Metric runs and the item-selection job both use it, so
    items are chosen on the same input they are applied to."""
    ids = list(dict.fromkeys(dialogue_ids))
    texts: dict[int, list[str]] = {pk: [] for pk in ids}
    turns = Turn.objects.filter(dialogue_id__in=ids).order_by("dialogue_id", "index")
    for dialogue_id, text in turns.values_list("dialogue_id", "text").iterator(chunk_size=5000):
        texts[dialogue_id].append(text)
    return texts


def system_batches(*, run: MetricRun) -> list[tuple[int, int]]:
    """``(backend id, skill id)`` of every system batch with at least one model turn."""
    pairs = (
        Turn.objects.filter(dialogue__in=target_dialogues(run=run), speaker=Turn.Speaker.SYSTEM)
        .values_list("dialogue__backend_id", "dialogue__skill_id")
        .distinct()
    )
    return sorted(set(pairs))


def run_metric_status(*, run: MetricRun) -> list[dict[str, object]]:
    """Per metric of the run: family, ``ok`` / the unavailable reason, signature, score count."""
    counts = dict(run.scores.values("metric").annotate(n=Count("id")).values_list("metric", "n"))
    rows = []
    for name in run.metrics:
        spec = METRICS.get(name)
        reason = run.unavailable.get(name, "")
        rows.append(
            {
                "name": name,
                "family": spec.family if spec else "",
                "status": reason or ("ok" if counts.get(name) else ""),
                "unavailable": bool(reason) and not counts.get(name),
                "partial": bool(reason) and bool(counts.get(name)),
                "signature": run.signatures.get(name, ""),
                "scores": counts.get(name, 0),
            }
        )
    return rows


def chunk_summary(*, run: MetricRun) -> dict[str, int]:
    """How many chunks are in each status."""
    found = dict(run.chunks.values("status").annotate(n=Count("id")).values_list("status", "n"))
    return {status: found.get(status, 0) for status in JobStatus.values}


def failed_chunks(*, run: MetricRun) -> QuerySet[MetricRunChunk]:
    return run.chunks.filter(status=JobStatus.FAILED).select_related("backend", "skill")


def run_backends(*, run: MetricRun) -> list[tuple[int, str]]:
    """``(id, name)`` of the backends that have scores in the run."""
    return sorted(
        set(run.scores.filter(level=Level.SYSTEM).values_list("backend_id", "backend__name")),
        key=lambda pair: pair[1],
    )


def system_table(*, run: MetricRun) -> list[dict[str, object]]:
    """System scores laid out per group (skill, then "" = all skills): one row per metric,
    one column per backend, ``None`` where a backend has no value."""
    backends = run_backends(run=run)
    values: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    for metric, group, backend_id, value in run.scores.filter(level=Level.SYSTEM).values_list(
        "metric", "group", "backend_id", "value"
    ):
        values[group][(metric, backend_id)] = value
    groups = sorted(values, key=lambda g: (g == "", g))
    tables: list[dict[str, object]] = []
    for group in groups:
        rows: list[dict[str, object]] = []
        for metric in run.metrics:
            cells = [values[group].get((metric, backend_id)) for backend_id, _ in backends]
            if any(cell is not None for cell in cells):
                rows.append({"metric": metric, "cells": cells})
        tables.append({"group": group, "backends": [name for _, name in backends], "rows": rows})
    return tables


def _pivot(scores: QuerySet[MetricScore], key: str) -> dict[int, dict[str, float]]:
    table: dict[int, dict[str, float]] = defaultdict(dict)
    for unit, metric, value in scores.values_list(key, "metric", "value"):
        table[unit][metric] = value
    return table


def turn_rows(
    *, run: MetricRun, backend_id: int | None = None, group: str | None = None
) -> QuerySet[Turn]:
    """The run's scored model turns (for paging), filtered by backend and skill."""
    scored = run.scores.filter(level=Level.TURN)
    if backend_id:
        scored = scored.filter(backend_id=backend_id)
    if group:
        scored = scored.filter(group=group)
    return (
        Turn.objects.filter(pk__in=scored.values("turn_id"))
        .select_related("dialogue__backend", "dialogue__skill")
        .order_by("dialogue__backend__name", "dialogue_id", "index")
    )


def turn_values(*, run: MetricRun, turns: list[Turn]) -> dict[int, dict[str, float]]:
    return _pivot(run.scores.filter(level=Level.TURN, turn_id__in=[t.pk for t in turns]), "turn_id")


def dialogue_rows(
    *, run: MetricRun, backend_id: int | None = None, group: str | None = None
) -> QuerySet[Dialogue]:
    scored = run.scores.filter(level=Level.DIALOGUE)
    if backend_id:
        scored = scored.filter(backend_id=backend_id)
    if group:
        scored = scored.filter(group=group)
    return (
        Dialogue.objects.filter(pk__in=scored.values("dialogue_id"))
        .select_related("backend", "skill")
        .annotate(turn_count=Count("turns"))
        .order_by("backend__name", "pk")
    )


def dialogue_values(*, run: MetricRun, dialogues: list[Dialogue]) -> dict[int, dict[str, float]]:
    return _pivot(
        run.scores.filter(level=Level.DIALOGUE, dialogue_id__in=[d.pk for d in dialogues]),
        "dialogue_id",
    )


def score_list(
    *,
    run: MetricRun,
    level: str | None = None,
    metric: str | None = None,
    backend: str | None = None,
    group: str | None = None,
) -> QuerySet[MetricScore]:
    """The run's score rows, filtered (``backend`` by name or id)."""
    scores = run.scores.select_related("backend", "dialogue").order_by(
        "level", "metric", "backend__name", "group", "dialogue_id", "turn_id"
    )
    if level:
        scores = scores.filter(level=level)
    if metric:
        scores = scores.filter(metric=metric)
    if backend:
        scores = scores.filter(
            Q(backend__name=backend) | Q(backend_id=int(backend))
            if backend.isdigit()
            else Q(backend__name=backend)
        )
    if group is not None:
        scores = scores.filter(group=group)
    return scores


DOWNLOAD_COLUMNS = (
    "run",
    "metric",
    "level",
    "turn_id",
    "dialogue_id",
    "dialogue_external_id",
    "backend",
    "skill",
    "value",
    "signature",
)


def download_rows(*, run: MetricRun, level: str) -> Iterator[dict[str, object]]:
    """Tidy rows of one level: one per score, with the unit ids, backend, skill and signature.

    System rows have ``skill`` "" for the backend's value over all skills.
    """
    scores = (
        run.scores.filter(level=level)
        .order_by("metric", "backend__name", "group", "dialogue_id", "turn_id")
        .values_list(
            "metric",
            "turn_id",
            "dialogue_id",
            "dialogue__external_id",
            "backend__name",
            "group",
            "value",
        )
    )
    for metric, turn_id, dialogue_id, external_id, backend, group, value in scores.iterator(
        chunk_size=2000
    ):
        yield {
            "run": run.name,
            "metric": metric,
            "level": level,
            "turn_id": turn_id,
            "dialogue_id": dialogue_id,
            "dialogue_external_id": external_id or "",
            "backend": backend or "",
            "skill": group,
            "value": value if math.isfinite(value) else None,
            "signature": run.signatures.get(metric, ""),
        }
