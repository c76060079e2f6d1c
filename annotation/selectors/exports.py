"""Rating exports: raw ratings and aggregate score rows as CSV or JSON Lines.

Exports are for researchers (they name the real systems and the raters' user names). Raw rows
are the *counted* ratings (`human_scores.counted_assignments`: submitted real items of raters
who are not blocked), so that the raw file and the aggregates describe the same data.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, Literal

from django.db.models import QuerySet

from annotation.models import RatingJob
from annotation.scoring import ScoreRow, UnitScore
from annotation.selectors.human_scores import (
    JobScores,
    counted_ratings,
    dialogue_score_rows,
    job_scores,
    model_turn_indices,
    system_score_rows,
)
from chat.models import Campaign, CampaignBackend, Dialogue
from core.cells import csv_lines

What = Literal["raw", "dialogue", "system"]
Format = Literal["csv", "jsonl"]
WHATS: tuple[str, ...] = ("raw", "dialogue", "system")
FORMATS: tuple[str, ...] = ("csv", "jsonl")

RAW_COLUMNS = (
    "job",
    "rubric",
    "rubric_version",
    "dialogue_id",
    "dialogue_external_id",
    "backend",
    "alias",
    "skill",
    "turn",  # index among the dialogue's model turns (0 = first); empty at dialogue level
    "turn_id",
    "question",
    "value",
    "text",
    "rater",  # user name
    "submitted_at",
    "time_spent_s",  # the assignment's submitted_at − started_at, in seconds
)
# n_incomplete: ratings (dialogue × rater) with unanswered questions, which seed 001 rubrics
# score 0 (fixed full score); n_unanswered: how many answers those lack in all.
DIALOGUE_COLUMNS = (
    "unit",
    "skill",
    "dimension",
    "mean",
    "std",
    "n",
    "ci_low",
    "ci_high",
    "n_incomplete",
    "n_unanswered",
)
SYSTEM_COLUMNS = DIALOGUE_COLUMNS + ("rank",)


class JobLookupError(LookupError):
    """The `--campaign` / `--job` arguments do not name exactly one rating job."""


def job_by_names(*, campaign_name: str | None = None, job_name: str | None = None) -> RatingJob:
    """The job named `job_name` (in `campaign_name` when given), or the campaign's only job."""
    jobs: QuerySet[RatingJob] = RatingJob.objects.select_related("campaign", "rubric")
    if job_name:
        job = jobs.filter(name=job_name).first()
        if job is None:
            raise JobLookupError(f"no rating job named {job_name!r}")
        if campaign_name and job.campaign.name != campaign_name:
            raise JobLookupError(
                f"rating job {job_name!r} belongs to campaign {job.campaign.name!r}, "
                f"not {campaign_name!r}"
            )
        return job
    if not campaign_name:
        raise JobLookupError("name a rating job (--job) or a campaign (--campaign)")
    if not Campaign.objects.filter(name=campaign_name).exists():
        raise JobLookupError(f"no campaign named {campaign_name!r}")
    found = list(jobs.filter(campaign__name=campaign_name).order_by("name"))
    if not found:
        raise JobLookupError(f"campaign {campaign_name!r} has no rating job")
    if len(found) > 1:
        names = ", ".join(repr(job.name) for job in found)
        raise JobLookupError(
            f"campaign {campaign_name!r} has {len(found)} rating jobs ({names}); "
            "pick one with --job"
        )
    return found[0]


def raw_rows(*, job: RatingJob) -> Iterator[dict[str, Any]]:
    """One row per rater × dialogue × turn × question, ordered by dialogue, rater, question."""
    ratings = (
        counted_ratings(job=job)
        .select_related("assignment__rater", "assignment__dialogue__backend")
        .select_related("assignment__dialogue__skill")
        .order_by("assignment__dialogue_id", "assignment__rater__username", "question", "turn_id")
    )
    campaign = job.campaign
    aliases = dict(
        CampaignBackend.objects.filter(campaign=campaign).values_list("backend_id", "alias")
    )
    dialogue_ids = ratings.values_list("assignment__dialogue_id", flat=True).distinct()
    turn_index, _ = model_turn_indices(list(dialogue_ids))
    for rating in ratings.iterator(chunk_size=2000):
        assignment = rating.assignment
        dialogue: Dialogue = assignment.dialogue
        spent = None
        if assignment.started_at and assignment.submitted_at:
            spent = round((assignment.submitted_at - assignment.started_at).total_seconds(), 1)
        yield {
            "job": job.name,
            "rubric": job.rubric.key,
            "rubric_version": job.rubric.version,
            "dialogue_id": dialogue.pk,
            "dialogue_external_id": dialogue.external_id,
            "backend": dialogue.backend.name,
            "alias": aliases.get(dialogue.backend_id, ""),
            "skill": dialogue.skill.key,
            "turn": None if rating.turn_id is None else turn_index.get(rating.turn_id),
            "turn_id": rating.turn_id,
            "question": rating.question,
            "value": rating.value,
            "text": rating.text,
            "rater": assignment.rater.get_username(),
            "submitted_at": assignment.submitted_at.isoformat()
            if assignment.submitted_at
            else None,
            "time_spent_s": spent,
        }


def dialogue_label(dialogue_id: int, external_id: str) -> str:
    """How a dialogue is named in exports: its external id, else `d<pk>`."""
    return external_id or f"d{dialogue_id}"


def dialogue_rows(*, job: RatingJob, seed: int = 0, n_boot: int = 1000) -> list[dict[str, Any]]:
    scores = job_scores(job=job)
    rows = dialogue_score_rows(job=job, seed=seed, n_boot=n_boot, scores=scores)
    labels = dict(
        Dialogue.objects.filter(pk__in={row.unit for row in rows}).values_list("pk", "external_id")
    )
    incomplete = _incomplete_counts(scores, lambda s: (s.unit, s.skill))
    return [
        _score_dict(
            row,
            dialogue_label(row.unit, labels[row.unit]),  # type: ignore[arg-type,index]  # units are Dialogue pks
            DIALOGUE_COLUMNS,
            incomplete.get((row.unit, row.skill), (0, 0)),
        )
        for row in rows
    ]


def system_rows(*, job: RatingJob, seed: int = 0, n_boot: int = 1000) -> list[dict[str, Any]]:
    scores = job_scores(job=job)
    incomplete = _incomplete_counts(scores, lambda s: (scores.data.systems[s.unit], s.skill))
    return [
        _score_dict(
            row, str(row.unit), SYSTEM_COLUMNS, incomplete.get((row.unit, row.skill), (0, 0))
        )
        for row in system_score_rows(job=job, seed=seed, n_boot=n_boot, scores=scores)
    ]


def _incomplete_counts(
    scores: JobScores, key: Callable[[UnitScore], Hashable]
) -> dict[Hashable, tuple[int, int]]:
    """(incomplete ratings, unanswered answers) per key of the scored units."""
    counts: dict[Hashable, list[int]] = defaultdict(lambda: [0, 0])
    for unit_score in scores.incomplete:
        entry = counts[key(unit_score)]
        entry[0] += 1
        entry[1] += unit_score.n_unanswered
    return {k: (a, b) for k, (a, b) in counts.items()}


def export_rows(*, job: RatingJob, what: What) -> tuple[tuple[str, ...], Iterable[dict[str, Any]]]:
    """The columns and rows of one export."""
    if what == "raw":
        return RAW_COLUMNS, raw_rows(job=job)
    if what == "dialogue":
        return DIALOGUE_COLUMNS, dialogue_rows(job=job)
    if what == "system":
        return SYSTEM_COLUMNS, system_rows(job=job)
    raise ValueError(f"unknown export {what!r}; use one of {', '.join(WHATS)}")


def jsonl_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def export_lines(*, job: RatingJob, what: What, fmt: Format) -> Iterator[str]:
    columns, rows = export_rows(job=job, what=what)
    if fmt == "csv":
        return csv_lines(columns, rows)
    if fmt == "jsonl":
        return jsonl_lines(rows)
    raise ValueError(f"unknown format {fmt!r}; use csv or jsonl")


def export_filename(*, job: RatingJob, what: What, fmt: Format) -> str:
    return f"ratings-job{job.pk}-{what}.{fmt}"


def _score_dict(
    row: ScoreRow, unit: str, columns: tuple[str, ...], incomplete: tuple[int, int]
) -> dict[str, Any]:
    values = {
        "n_incomplete": incomplete[0],
        "n_unanswered": incomplete[1],
        "unit": unit,
        "skill": row.skill,
        "dimension": row.dimension,
        "mean": row.mean,
        "std": row.std,
        "n": row.n,
        "ci_low": row.ci_low,
        "ci_high": row.ci_high,
        "rank": row.rank,
    }
    return {column: values[column] for column in columns}
