"""Reads for pairwise (ACUTE-Eval) jobs: the comparison page, onboarding results, the votes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Count, Q, QuerySet

from annotation.models import Assignment, JobRater, Rating, RatingJob
from annotation.pairwise import LEFT, comparative_questions
from annotation.rubric_spec import as_spec
from annotation.selectors.rating import ACTIVE_STATUSES, OPEN_STATUSES, localized
from annotation.services.pairwise import job_pairs, job_votes, pairwise_shortfall
from annotation.services.quality import Onboarding, onboarding_result
from chat.models import Vote


def pairwise_page(
    *,
    assignment: Assignment,
    language: str,
    posted: Mapping[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The comparison page of one pair: both dialogues (left as stored), the questions with
    their choices in `language`, and the answers given (or `posted` back after a refusal).
    No system name or alias appears: the two sides are "left" and "right"."""
    spec = as_spec(assignment.job.rubric.spec)
    saved = {
        r.question: ("left" if r.value == LEFT else "right", r.text)
        for r in Rating.objects.filter(assignment=assignment, value__isnull=False)
    }
    answers = {**saved, **(posted or {})}
    questions = [
        {
            "key": q.key,
            "label": localized(q.label, language),
            "left": localized(q.left, language),
            "right": localized(q.right, language),
            "side": answers.get(q.key, ("", ""))[0],
            "reason": answers.get(q.key, ("", ""))[1],
        }
        for q in comparative_questions(spec)
    ]
    mine = Assignment.objects.filter(
        job=assignment.job, rater=assignment.rater, status__in=ACTIVE_STATUSES
    )
    done = mine.filter(status=Assignment.Status.SUBMITTED).count()
    total = mine.count()
    assert assignment.dialogue_b is not None
    return {
        "assignment": assignment,
        "job": assignment.job,
        "sides": [
            {"side": "left", "turns": list(assignment.dialogue.turns.order_by("index"))},
            {"side": "right", "turns": list(assignment.dialogue_b.turns.order_by("index"))},
        ],
        "questions": questions,
        "instructions": localized(spec.instructions, language),
        "position": min(done + 1, total),
        "total": total,
        "percent": round(100 * done / total) if total else 0,
        "editable": assignment.status in OPEN_STATUSES
        and assignment.job.status == RatingJob.Status.OPEN,
    }


def pairwise_votes(job: RatingJob) -> QuerySet[Vote]:
    return (
        Vote.objects.filter(job_votes(job))
        .select_related("system_a", "system_b", "voter_user")
        .order_by("-voted_at", "-pk")
    )


def pairwise_overview(job: RatingJob, *, limit: int = 50) -> dict[str, Any]:
    """The job page's pairwise section: pairs and shortfall, onboarding per rater, votes per
    rater (kept and excluded), and the latest votes."""
    per_rater: dict[int, Mapping[str, Any]] = {
        row["voter_user"]: row
        for row in Vote.objects.filter(job_votes(job))
        .values("voter_user")
        .annotate(n=Count("id"), excluded=Count("id", filter=~Q(excluded_reason="")))
    }
    raters = []
    for member in JobRater.objects.filter(job=job).select_related("rater"):
        state, rate = onboarding_result(job=job, rater=member.rater)
        row = per_rater.get(member.rater_id, {})
        raters.append(
            {
                "rater_id": member.rater_id,
                "username": member.rater.get_username(),
                "state": member.state,
                "onboarding": state.value,
                "rate": rate,
                "votes": row.get("n", 0),
                "excluded": row.get("excluded", 0),
            }
        )
    votes = pairwise_votes(job)
    return {
        "pairs": len(job_pairs(job)),
        "shortfall": pairwise_shortfall(job),
        "raters": raters,
        "has_onboarding": any(r["onboarding"] != Onboarding.NONE for r in raters),
        "n_votes": votes.count(),
        "n_excluded": votes.exclude(excluded_reason="").count(),
        "latest": list(votes[:limit]),
    }


def pairwise_vote_row(vote: Vote) -> dict[str, Any]:
    """One vote as the API and `job_votes` list it."""
    return {
        "id": vote.pk,
        "item": vote.item,
        "question": vote.question,
        "system_a": vote.system_a.name,
        "system_b": vote.system_b.name,
        "dialogue_a": vote.dialogue_a_id,
        "dialogue_b": vote.dialogue_b_id,
        "outcome": vote.outcome,
        "voter": vote.voter,
        "reason": vote.reason,
        "excluded_reason": vote.excluded_reason,
        "voted_at": vote.voted_at.isoformat() if vote.voted_at else None,
    }
