"""A pairwise study: scenarios × systems, one accepted dialogue each, and an ACUTE job."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User

from annotation.models import RatingJob
from annotation.services.rating_jobs import job_create
from chat.models import Backend, Campaign, Dialogue
from tests.annotation.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DialogueFactory,
    TurnFactory,
    experts,
    rubric,
    skill,
)
from tests.chat.factories import SampleFactory


@dataclass
class Study:
    campaign: Campaign
    systems: list[Backend]
    dialogues: dict[tuple[int, int], Dialogue]  # (scenario index, system index) → dialogue
    raters: list[User]


def dialogue(campaign: Campaign, backend: Backend, scenario, texts, worker=None) -> Dialogue:
    d = DialogueFactory(
        campaign=campaign,
        backend=backend,
        scenario=scenario,
        skill=skill("chitchat"),
        status=Dialogue.Status.ACCEPTED,
        worker=worker,
    )
    for index, text in enumerate(texts):
        TurnFactory(
            dialogue=d, index=index, speaker="user" if index % 2 == 0 else "system", text=text
        )
    return d


def study(*, n_scenarios: int = 2, n_systems: int = 3, n_raters: int = 6) -> Study:
    campaign = CampaignFactory()
    systems = [BackendFactory() for _ in range(n_systems)]
    for i, system in enumerate(systems):
        CampaignBackendFactory(campaign=campaign, backend=system, alias=f"系统{'ABCDEFG'[i]}")
    dialogues = {}
    for s in range(n_scenarios):
        scenario = SampleFactory(skill=skill("chitchat"))
        for i, system in enumerate(systems):
            dialogues[(s, i)] = dialogue(
                campaign, system, scenario, [f"你好 {s}", f"系统 {i} 的回答 {s}"]
            )
    return Study(campaign, systems, dialogues, experts(n_raters, prefix=f"px{campaign.pk}-"))


def acute_job(s: Study, *, per_pair: int = 2, **kwargs) -> RatingJob:
    return job_create(
        name=kwargs.pop("name", f"acute-{s.campaign.pk}"),
        campaign=s.campaign,
        rubric=rubric("acute-eval"),
        created_by=None,
        raters=s.raters,
        raters_per_dialogue=per_pair,
        mode=RatingJob.Mode.PAIRWISE,
        **kwargs,
    )
