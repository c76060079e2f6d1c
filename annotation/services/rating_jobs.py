"""Rating jobs: which dialogues, which rubric, how many raters, which quality checks.

A job takes the accepted dialogues of a campaign (optionally only those of one static run; an
imported set is a campaign of mode `imported`). Seed 001 needs at least 3 raters per item for
single-turn and 5 for multi-turn; a rubric declares that as `min_raters`, and a job below it is
refused unless the researcher says so explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import transaction

from annotation.models import Assignment, GoldItem, JobRater, RatingJob, Rubric
from annotation.rubric_spec import AnswerError, as_spec, validate_answer
from annotation.selectors.rating import experts, model_turn_ids
from annotation.services.assignments import RatingJobError, assignments_generate
from annotation.services.quality import QualitySettings
from chat.models import Campaign, Dialogue, StaticRun
from core.access import Role


@transaction.atomic
def job_create(
    *,
    name: str,
    campaign: Campaign,
    rubric: Rubric,
    created_by: AbstractBaseUser | None,
    static_run: StaticRun | None = None,
    raters_per_dialogue: int = 3,
    raters: Iterable[AbstractBaseUser] | None = None,
    quality_settings: Mapping[str, Any] | None = None,
    deadline_hours: int = 72,
    seed: int = 0,
    allow_below_minimum: bool = False,
) -> RatingJob:
    """Create a draft job. `raters` is the expert pool (default: every active expert)."""
    name = name.strip()
    if not name:
        raise RatingJobError("name: is required")
    if RatingJob.objects.filter(name=name).exists():
        raise RatingJobError(f"name: a rating job named {name!r} already exists")
    if static_run is not None and static_run.campaign_id != campaign.pk:
        raise RatingJobError(
            f"static_run: run {static_run.pk} belongs to another campaign than {campaign.name!r}"
        )
    if raters_per_dialogue < 1:
        raise RatingJobError("raters_per_dialogue: must be at least 1")
    minimum = as_spec(rubric.spec).min_raters
    if raters_per_dialogue < minimum and not allow_below_minimum:
        raise RatingJobError(
            f"raters_per_dialogue: rubric {rubric.key} v{rubric.version} needs at least "
            f"{minimum} raters per item, got {raters_per_dialogue}"
        )
    if deadline_hours < 1:
        raise RatingJobError("deadline_hours: must be at least 1")
    settings = QualitySettings.parse(quality_settings)
    pool = list(experts() if raters is None else raters)
    expert_group = Group.objects.get(name=Role.EXPERT.value)
    not_experts = [u.get_username() for u in pool if not u.groups.filter(pk=expert_group.pk)]
    if not_experts:
        raise RatingJobError(f"raters: not experts: {', '.join(sorted(not_experts))}")
    job = RatingJob.objects.create(
        name=name,
        campaign=campaign,
        rubric=rubric,
        static_run=static_run,
        raters_per_dialogue=raters_per_dialogue,
        quality_settings=settings.as_dict(),
        deadline_hours=deadline_hours,
        seed=seed,
        created_by=created_by,
    )
    JobRater.objects.bulk_create([JobRater(job=job, rater=user) for user in pool])
    return job


@transaction.atomic
def job_raters_add(*, job: RatingJob, raters: Iterable[AbstractBaseUser]) -> int:
    """Add experts to the pool; an open job assigns them work at once."""
    created = 0
    for user in raters:
        _, was_created = JobRater.objects.get_or_create(job=job, rater=user)
        created += was_created
    if job.status == RatingJob.Status.OPEN:
        assignments_generate(job=job)
    return created


@transaction.atomic
def job_open(*, job: RatingJob) -> RatingJob:
    """Open a draft (or reopen a closed) job and assign its dialogues."""
    job = RatingJob.objects.select_for_update().get(pk=job.pk)
    if job.is_live:
        raise RatingJobError("status: a live job is opened by the chat, not by hand")
    if not JobRater.objects.filter(job=job).exists():
        raise RatingJobError("raters: the job has no raters")
    job.status = RatingJob.Status.OPEN
    job.save(update_fields=["status"])
    assignments_generate(job=job)
    return job


@transaction.atomic
def job_close(*, job: RatingJob) -> RatingJob:
    """Close a job: no more answers are accepted; submitted ratings stay."""
    job = RatingJob.objects.select_for_update().get(pk=job.pk)
    job.status = RatingJob.Status.CLOSED
    job.save(update_fields=["status"])
    return job


@transaction.atomic
def gold_item_set(
    *, job: RatingJob, dialogue: Dialogue, purpose: str, answers: list[Mapping[str, Any]]
) -> GoldItem:
    """Store a dialogue's known answers as a gold or onboarding item of the job.

    Each answer is {"question", "turn" (model-turn index or null), "value"}; they are validated
    against the job's rubric, and a turn must exist in the dialogue.
    """
    if purpose not in GoldItem.Purpose.values:
        raise RatingJobError(f"purpose: must be gold or onboarding, got {purpose!r}")
    if dialogue.campaign_id != job.campaign_id:
        raise RatingJobError(f"dialogue: {dialogue.pk} is not in the job's campaign")
    if Assignment.objects.filter(job=job, dialogue=dialogue, kind=Assignment.Kind.REAL).exists():
        raise RatingJobError(f"dialogue: {dialogue.pk} is already assigned as a real item")
    if not answers:
        raise RatingJobError("answers: at least one known answer is needed")
    n_model_turns = len(model_turn_ids(dialogue))
    cleaned = []
    seen = set()
    for index, answer in enumerate(answers):
        question, turn = answer.get("question"), answer.get("turn")
        if (question, turn) in seen:
            raise RatingJobError(f"answers[{index}]: a second answer for {question} turn {turn}")
        seen.add((question, turn))
        try:
            value = validate_answer(
                job.rubric.spec,
                str(question),
                answer.get("value"),
                turn=turn,
                skill=dialogue.skill.key,
            )
        except AnswerError as exc:
            raise RatingJobError(f"answers[{index}]: {exc}") from exc
        if turn is not None and turn >= n_model_turns:
            raise RatingJobError(
                f"answers[{index}]: turn {turn} does not exist (the dialogue has "
                f"{n_model_turns} model turns)"
            )
        if isinstance(value, str):
            raise RatingJobError(f"answers[{index}]: {question}: free text has no known answer")
        cleaned.append({"question": question, "turn": turn, "value": value})
    item, _ = GoldItem.objects.update_or_create(
        job=job, dialogue=dialogue, defaults={"purpose": purpose, "answers": cleaned}
    )
    return item


@transaction.atomic
def job_update(
    *, job: RatingJob, name: str | None = None, deadline_hours: int | None = None
) -> RatingJob:
    """Rename a job or change its deadline (new assignments get the new deadline)."""
    if name is not None:
        name = name.strip()
        if not name:
            raise RatingJobError("name: is required")
        if RatingJob.objects.filter(name=name).exclude(pk=job.pk).exists():
            raise RatingJobError(f"name: a rating job named {name!r} already exists")
        job.name = name
    if deadline_hours is not None:
        if deadline_hours < 1:
            raise RatingJobError("deadline_hours: must be at least 1")
        job.deadline_hours = deadline_hours
    job.save(update_fields=["name", "deadline_hours"])
    return job


@transaction.atomic
def job_delete(*, job: RatingJob) -> None:
    """Delete a draft job; a job that was opened keeps its ratings (close it instead)."""
    if job.status != RatingJob.Status.DRAFT or job.assignments.exists():
        raise RatingJobError("status: only a draft job without assignments can be deleted")
    job.delete()
