"""Inter-rater agreement of a rating job, per question and per rater, from the kernels.

The answers are the raw counted answers (`human_scores.job_answers`): a second-level question a
rater skipped after a failed gate is missing, not 0, as `annotation.agreement` expects.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from annotation.agreement import (
    GATE_CONVENTIONS,
    PooledKappa,
    QuestionAgreement,
    pooled_yesno_kappa,
    question_agreement,
    rater_deviations,
)
from annotation.models import RatingJob
from annotation.selectors.human_scores import JobAnswers, job_answers


@dataclass(frozen=True)
class RaterDeviationRow:
    """A rater's deviation from the other raters (0..1 scale), `flagged` as an outlier."""

    rater_id: int
    username: str
    n: int
    mean_deviation: float | None
    mean_abs_deviation: float | None
    z: float | None
    flagged: bool
    n_answers: int  # all the rater's numeric answers; `n` only those compared with another


def agreement_conventions(data: JobAnswers) -> tuple[str, ...]:
    """The gate conventions a job's agreement is reported under: both when the rubric has a gate
    (the kappa of a second-level question can differ a lot between them, e.g. −0.143 dropped vs
    0.429 counted as 0), else only ``missing`` (nothing is skipped)."""
    return GATE_CONVENTIONS if any(q.gate for q in data.spec.questions) else ("missing",)


def job_agreement(*, job: RatingJob, data: JobAnswers | None = None) -> list[QuestionAgreement]:
    """Per question (free text excluded): percent agreement, Randolph's free-marginal kappa,
    Fleiss' kappa, Krippendorff's alpha, and how many items and raters they rest on; for a
    gated rubric under both conventions for skipped second-level answers (all questions under
    ``missing``, then all under ``zero``), as the pooled kappa is reported."""
    data = data or job_answers(job=job)
    text_keys = {q.key for q in data.spec.questions if q.type == "text"}
    answers = [a for a in data.answers if a.question not in text_keys]
    return [
        row
        for convention in agreement_conventions(data)
        for row in question_agreement(
            data.spec, answers, gate_convention=convention, skills=data.skills
        )
    ]


def job_pooled_kappas(*, job: RatingJob, data: JobAnswers | None = None) -> list[PooledKappa]:
    """Seed 001's one free-marginal kappa over all yes/no questions, under both conventions for
    second-level answers skipped after a failed gate (dropped; counted as 0). Empty when the
    rubric has no yes/no question."""
    data = data or job_answers(job=job)
    if not any(q.type == "yesno" for q in data.spec.questions):
        return []
    return [
        pooled_yesno_kappa(data.spec, data.answers, convention=c, skills=data.skills)
        for c in agreement_conventions(data)
    ]


def job_rater_deviations(
    *, job: RatingJob, data: JobAnswers | None = None, z_threshold: float = 2.0
) -> list[RaterDeviationRow]:
    """Per rater, the deviation from the mean of the other raters of the same items, pooled over
    the numeric questions; flagged when its z among raters exceeds `z_threshold`. Sorted with the
    largest mean absolute deviation first."""
    data = data or job_answers(job=job)
    deviations = rater_deviations(data.spec, data.answers, z_threshold=z_threshold)
    names: dict[Hashable, str] = dict(
        get_user_model()
        .objects.filter(pk__in=[d.rater for d in deviations])
        .values_list("pk", "username")
    )
    rows = [
        RaterDeviationRow(
            rater_id=d.rater,  # type: ignore[arg-type]  # raters are User pks
            username=names.get(d.rater, str(d.rater)),
            n=d.n,
            mean_deviation=d.mean_deviation,
            mean_abs_deviation=d.mean_abs_deviation,
            z=d.z,
            flagged=d.flagged,
            n_answers=d.n_answers,
        )
        for d in deviations
    ]
    return sorted(rows, key=lambda r: (-(r.mean_abs_deviation or 0.0), r.username))
