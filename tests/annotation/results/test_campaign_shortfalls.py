"""The campaign page loads a warning naming each rating job's systems with fewer raters than
the rubric's min_raters (seed 001: ≥ 3 single-turn, ≥ 5 testers multi-turn)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment
from annotation.selectors.human_scores import campaign_rater_shortfalls
from tests.annotation.results.factories import (
    dialogue_with_turns,
    expert,
    job_for,
    multi,
    rate,
    single,
)
from tests.chat.factories import BackendFactory, CampaignFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    """Single-turn job: FullBot 3 raters, ThinBot 2 (one more only in progress). Live multi-turn
    job: ChatBot 1 tester. A likert job (min_raters 1) never warns."""
    campaign = CampaignFactory(name="人数检查")
    single_job = job_for("yesno-single-turn", campaign=campaign, name="单轮")
    full, thin = BackendFactory(name="FullBot"), BackendFactory(name="ThinBot")
    for backend, raters in ((full, 3), (thin, 2)):
        item = dialogue_with_turns(campaign, backend)
        for r in range(raters):
            rate(single_job, item, f"{backend.name}-r{r}", single(8))
        if backend is thin:
            rate(single_job, item, "late", single(8), status=Assignment.Status.IN_PROGRESS)
    live = job_for("yesno-multi-turn", campaign=campaign, name="多轮现场")
    live.is_live = True
    live.save(update_fields=["is_live"])
    chat = dialogue_with_turns(
        campaign, BackendFactory(name="ChatBot"), model_turns=1, worker=expert("tester")
    )
    rate(live, chat, "tester", multi([8]))
    job_for("likert", campaign=campaign, name="李克特")
    return campaign


def test_each_job_lists_its_systems_below_the_rubric_minimum(campaign):
    found = {
        item.job.name: (item.min_raters, [(s.backend, s.n_raters) for s in item.shortfalls])
        for item in campaign_rater_shortfalls(campaign_id=campaign.pk)
    }
    # the single-turn job also draws on ChatBot's accepted chat, which nobody rated yet
    assert found == {
        "单轮": (3, [("ChatBot", 0), ("ThinBot", 2)]),
        "多轮现场": (5, [("ChatBot", 1)]),
    }


def test_the_campaign_page_loads_the_warning_partial(researcher_client, campaign):
    page = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk]))
    url = reverse("annotation:campaign-rater-shortfalls", args=[campaign.pk])
    assert f'hx-get="{url}"' in page.content.decode()
    html = researcher_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="rater-shortfalls"' in html
    assert (
        "ThinBot：1/1 段对话少于 3 位评分人（最少 2 位）" in html and "ChatBot：1 位评分人" in html
    )
    assert "FullBot" not in html and "李克特" not in html


def test_no_warning_when_every_system_has_enough_raters(researcher_client):
    campaign = CampaignFactory()
    url = reverse("annotation:campaign-rater-shortfalls", args=[campaign.pk])
    assert researcher_client.get(url).content.decode().strip() == ""


def test_experts_cannot_see_the_warning(expert_client, campaign):
    url = reverse("annotation:campaign-rater-shortfalls", args=[campaign.pk])
    assert expert_client.get(url).status_code == 403


def test_three_experts_who_each_rate_different_answers_are_one_rater_per_item(
    researcher_client,
):
    # Seed 001: every answer needs >= 3 raters; 3 experts splitting the answers give each one.
    from annotation.selectors.human_scores import rater_shortfalls

    campaign = CampaignFactory(name="分工")
    job = job_for("yesno-single-turn", campaign=campaign, name="分工单轮")
    split = BackendFactory(name="SplitBot")
    for r in range(3):
        rate(job, dialogue_with_turns(campaign, split), f"expert-{r}", single(8))
    (job_item,) = campaign_rater_shortfalls(campaign_id=campaign.pk)
    (short,) = job_item.shortfalls
    assert (short.backend, short.n_raters, short.items_short, short.items) == ("SplitBot", 1, 3, 3)
    assert rater_shortfalls(job=job) == [short]
    url = reverse("annotation:campaign-rater-shortfalls", args=[campaign.pk])
    html = researcher_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "SplitBot：3/3 段对话少于 3 位评分人（最少 1 位）" in html
