"""Factories and builders for review and rating tests."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User
from django.utils import timezone

from annotation.models import RatingJob, Rubric
from annotation.services.rating_jobs import job_create, job_open
from chat.models import Campaign, Dialogue
from core.access import Role
from tests.chat.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DialogueFactory,
    TurnFactory,
    skill,
)
from tests.conftest import make_user

__all__ = [
    "BackendFactory",
    "CampaignBackendFactory",
    "CampaignFactory",
    "DialogueFactory",
    "TurnFactory",
    "dialogue_with_turns",
    "experts",
    "rubric",
    "skill",
]


def rubric(key: str = "msde") -> Rubric:
    return Rubric.objects.filter(key=key).order_by("-version").first()


def experts(n: int, prefix: str = "ex") -> list[User]:
    return [make_user(f"{prefix}{i}", Role.EXPERT) for i in range(n)]


def dialogue_with_turns(
    *,
    campaign=None,
    worker: User | None = None,
    status: str = Dialogue.Status.ACCEPTED,
    skill_key: str = "knowledge",
    texts: Sequence[tuple[str, str]] = (
        ("user", "你好，最近在看什么电影？"),
        ("system", "在看《流浪地球》，导演是郭帆。"),
        ("user", "好看吗？"),
        ("system", "很好看，特效很震撼。"),
    ),
    alias: str | None = None,
) -> Dialogue:
    """A dialogue with turns (user/system alternating by default) and a blind alias."""
    campaign = campaign or CampaignFactory()
    backend = BackendFactory()
    CampaignBackendFactory(campaign=campaign, backend=backend, alias=alias or f"系统-{backend.pk}")
    dialogue = DialogueFactory(
        campaign=campaign,
        backend=backend,
        worker=worker,
        status=status,
        skill=skill(skill_key),
        grounding={"knowledge": [["流浪地球", "导演", "郭帆"]]},
        submitted_at=None if status == Dialogue.Status.IN_PROGRESS else timezone.now(),
    )
    for index, (speaker, text) in enumerate(texts):
        TurnFactory(dialogue=dialogue, index=index, speaker=speaker, text=text)
    return dialogue


def single_rater_job(*, name: str, campaign: Campaign, rubric_key: str, rater: User) -> RatingJob:
    """An open rating job of one rater per dialogue (below the rubric's minimum on purpose)."""
    job = job_create(
        name=name,
        campaign=campaign,
        rubric=rubric(rubric_key),
        created_by=None,
        raters=[rater],
        raters_per_dialogue=1,
        allow_below_minimum=True,
    )
    job_open(job=job)
    return job
