"""Test data for rating results: jobs over preset rubrics, dialogues with model turns, ratings."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from annotation.models import Assignment, Rating, RatingJob, Rubric
from annotation.presets import preset_spec
from chat.models import Backend, Campaign, Dialogue, Turn
from core.access import Role
from tests.chat.factories import BackendFactory, CampaignFactory, skill
from tests.conftest import make_user


def preset(key: str) -> Rubric:
    return Rubric.objects.get(key=key, version=1)


def job_for(rubric_key: str, *, campaign: Campaign | None = None, name: str = "") -> RatingJob:
    campaign = campaign or CampaignFactory()
    return RatingJob.objects.create(
        name=name or f"job-{rubric_key}-{campaign.pk}",
        campaign=campaign,
        rubric=preset(rubric_key),
        status=RatingJob.Status.OPEN,
    )


def dialogue_with_turns(
    campaign: Campaign,
    backend: Backend | None = None,
    *,
    skill_key: str = "knowledge",
    model_turns: int = 1,
    external_id: str = "",
    worker: User | None = None,
) -> Dialogue:
    """A dialogue alternating user and model turns, with `model_turns` model replies
    (`worker`: who chatted, the one rater of a live chat)."""
    dialogue = Dialogue.objects.create(
        campaign=campaign,
        worker=worker,
        backend=backend or BackendFactory(),
        skill=skill(skill_key),
        language="zh",
        status=Dialogue.Status.ACCEPTED,
        external_id=external_id,
    )
    for i in range(model_turns):
        Turn.objects.create(dialogue=dialogue, index=2 * i, speaker="user", text=f"问题 {i}")
        Turn.objects.create(dialogue=dialogue, index=2 * i + 1, speaker="system", text=f"回答 {i}")
    return dialogue


def expert(username: str) -> User:
    existing = User.objects.filter(username=username).first()
    return existing or make_user(username, Role.EXPERT)


def model_turn(dialogue: Dialogue, index: int) -> Turn:
    return dialogue.turns.filter(speaker="system").order_by("index")[index]


def rate(
    job: RatingJob,
    dialogue: Dialogue,
    rater: User | str,
    answers: dict[Any, Any],
    *,
    status: str = Assignment.Status.SUBMITTED,
    kind: str = Assignment.Kind.REAL,
    **assignment_fields: Any,
) -> Assignment:
    """One rater's answers: keys are question keys, or (question, model-turn index) pairs."""
    user = expert(rater) if isinstance(rater, str) else rater
    now = timezone.now()
    assignment = Assignment.objects.create(
        job=job,
        dialogue=dialogue,
        rater=user,
        status=status,
        kind=kind,
        is_gold=kind == Assignment.Kind.GOLD,
        started_at=now - timezone.timedelta(seconds=90),
        submitted_at=now if status == Assignment.Status.SUBMITTED else None,
        **assignment_fields,
    )
    for key, value in answers.items():
        question, turn = key if isinstance(key, tuple) else (key, None)
        Rating.objects.create(
            assignment=assignment,
            question=question,
            turn=None if turn is None else model_turn(dialogue, turn),
            value=None if isinstance(value, str) else value,
            text=value if isinstance(value, str) else "",
        )
    return assignment


SINGLE_SECOND = [
    q["key"] for q in preset_spec("yesno-single-turn")["questions"] if not q.get("gate")
]
MULTI_KEYS = [q["key"] for q in preset_spec("yesno-multi-turn")["questions"]]


def single(yes: int, *, grammatical: int = 1, unacceptable: int = 0) -> dict:
    """Seed 001 single-turn answers: the two gates, then `yes` of the ten questions answered yes."""
    second = {key: int(i < yes) for i, key in enumerate(SINGLE_SECOND)}
    return {"grammatical": grammatical, "unacceptable": unacceptable, **second}


def multi(yes_per_turn: list[int]) -> dict:
    """Seed 001 multi-turn answers: per model turn, `yes` of the eight indicators answered yes."""
    return {
        (key, turn): int(i < yes)
        for turn, yes in enumerate(yes_per_turn)
        for i, key in enumerate(MULTI_KEYS)
    }
