"""Seed 001's multi-turn protocol on the chat page: the test is locked at the live rubric's
turn limit (5), and the worker may end it early when the conversation cannot go on."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Rubric
from annotation.selectors.human_scores import job_scores, normalised_system_scores
from annotation.selectors.rating import model_turns
from annotation.services.live import live_job_for, live_rating_save, live_turn_limit
from chat.models import Dialogue
from chat.selectors.collection import chat_state
from chat.services.collection import CollectionError, dialogue_submit
from core.access import Role
from tests.annotation.factories import CampaignFactory, dialogue_with_turns
from tests.annotation.results.factories import MULTI_KEYS
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _chat(campaign, worker, replies: int) -> Dialogue:
    texts = [t for i in range(replies) for t in (("user", f"问{i}"), ("system", f"答{i}"))]
    return dialogue_with_turns(
        campaign=campaign, worker=worker, status=Dialogue.Status.IN_PROGRESS, texts=texts
    )


def test_a_rate_while_chatting_campaign_is_locked_at_the_rubrics_five_turns():
    worker = make_user("w-lock", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True, max_turns=10, min_turns=1)
    assert live_turn_limit(campaign) == 5
    state = chat_state(dialogue=_rated(_chat(campaign, worker, 5), worker))
    assert (state.max_turns, state.can_send, state.can_finish) == (5, False, True)
    assert chat_state(dialogue=_rated(_chat(campaign, worker, 4), worker)).can_send


def _rated(dialogue: Dialogue, worker) -> Dialogue:
    """Every reply answered (seed 001: the chat goes on once the last reply is rated)."""
    for turn in model_turns(dialogue):
        live_rating_save(turn=turn, user=worker, answers=dict.fromkeys(MULTI_KEYS, 1))
    return dialogue


def test_without_live_rating_the_campaigns_own_limit_holds():
    worker = make_user("w-free", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=False, max_turns=10)
    assert live_turn_limit(campaign) is None
    state = chat_state(dialogue=_chat(campaign, worker, 5))
    assert (state.max_turns, state.can_send, state.can_end_early) == (10, True, False)


def test_the_limit_follows_the_live_jobs_rubric():
    campaign = CampaignFactory(rate_while_chatting=True, max_turns=10)
    job = live_job_for(campaign)
    spec = dict(job.rubric.spec)
    spec["questions"] = [dict(q, max_turns=3) for q in spec["questions"]]
    job.rubric = Rubric.objects.create(key="multi-3", version=1, spec=spec)
    job.save(update_fields=["rubric"])
    assert live_turn_limit(campaign) == 3


def test_cannot_continue_ends_the_chat_early_and_the_unreached_turns_score_zero():
    worker = make_user("w-stop", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True, max_turns=10, min_turns=3)
    dialogue = _chat(campaign, worker, 2)
    state = chat_state(dialogue=dialogue)
    assert state.can_end_early and not state.can_finish
    with pytest.raises(CollectionError):
        dialogue_submit(dialogue=dialogue)
    for turn in model_turns(dialogue):
        live_rating_save(turn=turn, user=worker, answers=dict.fromkeys(MULTI_KEYS, 1))
    dialogue_submit(dialogue=dialogue, cannot_continue=True)
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED and dialogue.cannot_continue
    Dialogue.objects.filter(pk=dialogue.pk).update(status=Dialogue.Status.ACCEPTED)
    job = live_job_for(campaign)
    (score,) = job_scores(job=job).unit_scores
    # 2 turns × 8 yes out of 5 turns × 8 = 40 points → 40.0
    assert (score.points, score.max_points) == (16.0, 40.0)
    assert [s.score for s in normalised_system_scores(job=job) if s.skill is None] == [40.0]


def test_cannot_continue_needs_a_reply_and_a_live_rated_campaign():
    worker = make_user("w-early", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True)
    empty = _chat(campaign, worker, 0)
    with pytest.raises(CollectionError):
        dialogue_submit(dialogue=empty, cannot_continue=True)
    plain = _chat(CampaignFactory(rate_while_chatting=False, min_turns=3), worker, 1)
    with pytest.raises(CollectionError):
        dialogue_submit(dialogue=plain, cannot_continue=True)
    plain.refresh_from_db()
    assert plain.status == Dialogue.Status.IN_PROGRESS and not plain.cannot_continue


def test_the_chat_page_offers_the_control_and_records_it():
    worker = make_user("w-page", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True, min_turns=3)
    dialogue = _chat(campaign, worker, 1)
    client = Client()
    client.force_login(worker)
    page = client.get(reverse("chat:live-dialogue", args=[dialogue.pk])).content.decode()
    assert 'id="cannot-continue"' in page and "第 2 / 5 轮" in page
    response = client.post(
        reverse("chat:live-submit", args=[dialogue.pk]), {"cannot_continue": "1"}
    )
    assert response.status_code == 302
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED and dialogue.cannot_continue
