"""Counts and names a researcher reads on the rating pages: the live job's readable name, the
job's dialogue count beside its answers (a live job's dialogues are not accepted yet), and a
rater's answers beside the answers compared with other raters."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.agreement import rater_deviations
from annotation.models import RatingJob
from annotation.presets import preset_spec
from annotation.scoring import Answer
from annotation.selectors.rating import job_progress, model_turns
from annotation.services.live import live_job_for, live_rating_save
from chat.models import Dialogue
from core.access import Role
from tests.annotation.factories import CampaignFactory, dialogue_with_turns
from tests.conftest import make_user


def _live_dialogue(name: str, **campaign_fields):
    worker = make_user(f"w-{name}", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True, name=name, **campaign_fields)
    dialogue = dialogue_with_turns(
        campaign=campaign, worker=worker, status=Dialogue.Status.IN_PROGRESS
    )
    return campaign, dialogue, worker


@pytest.mark.django_db
def test_the_live_job_is_named_after_its_campaign_in_words():
    campaign, dialogue, worker = _live_dialogue("边聊边评")
    live_rating_save(turn=model_turns(dialogue)[0], user=worker, answers={"relevance_topic": 1})
    job = RatingJob.objects.get(campaign=campaign, is_live=True)
    assert job.name == "边聊边评 · 聊天时逐轮评分"


@pytest.mark.django_db
def test_the_live_job_of_a_japanese_campaign_is_named_in_japanese():
    campaign, _dialogue, _worker = _live_dialogue("対話評価", interface_language="ja")
    assert live_job_for(campaign).name == "対話評価 · 会話中の評定"


@pytest.mark.django_db
def test_a_live_job_name_a_researcher_already_took_gets_the_campaigns_number():
    campaign, _dialogue, _worker = _live_dialogue("撞名活动")
    other = CampaignFactory(name="另一个活动")
    RatingJob.objects.create(
        name="撞名活动 · 聊天时逐轮评分",
        campaign=other,
        rubric=live_job_for(other).rubric,
    )
    job = live_job_for(campaign)
    assert job.name == f"撞名活动 · 聊天时逐轮评分 #{campaign.pk}"
    assert RatingJob.objects.filter(campaign=campaign, is_live=True).count() == 1


@pytest.mark.django_db
def test_the_progress_of_a_live_job_counts_the_dialogues_being_rated(researcher_client):
    campaign, dialogue, worker = _live_dialogue("进度计数")
    live_rating_save(turn=model_turns(dialogue)[0], user=worker, answers={"relevance_topic": 1})
    job = RatingJob.objects.get(campaign=campaign, is_live=True)
    assert job_progress(job)["dialogues"] == 1

    researcher_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    response = researcher_client.get(reverse("annotation:job-detail", args=[job.pk]))
    assert response.status_code == 200
    assert "(1 dialogue)" in response.content.decode()


def test_a_raters_answers_count_even_where_no_other_rater_answered():
    answers = [
        Answer("d1", "a", "info", 2),
        Answer("d1", "b", "info", 0),
        Answer("d2", "a", "info", 1),  # only a rated d2
        Answer("d3", "c", "info", 2),  # nobody else rated d3
    ]
    by_rater = {d.rater: d for d in rater_deviations(preset_spec("msde"), answers)}
    assert (by_rater["a"].n_answers, by_rater["a"].n) == (2, 1)
    assert (by_rater["c"].n_answers, by_rater["c"].n) == (1, 0)
