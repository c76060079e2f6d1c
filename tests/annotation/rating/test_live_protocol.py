"""Seed 001's multi-turn protocol held by the server: a tester rates each reply before the chat
goes on (sending and 「完成」 wait for the answers, 「无法继续」 never does), and a campaign cannot
allow fewer turns than the rubric's fixed denominator counts."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.selectors.rating import model_turns
from annotation.services.live import live_rating_save
from chat.models import Campaign, Dialogue, Turn
from chat.selectors.collection import chat_state
from chat.services.campaigns import campaign_create, campaign_readiness_problems, campaign_update
from chat.services.collection import CollectionError, worker_turn_post
from core.access import Role
from core.errors import ServiceError
from tests.annotation.factories import CampaignFactory, dialogue_with_turns
from tests.annotation.results.factories import MULTI_KEYS
from tests.chat.campaigns.factories import scenario_dataset
from tests.chat.factories import BackendFactory
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _chat(campaign, worker, replies: int) -> Dialogue:
    texts = [t for i in range(replies) for t in (("user", f"问{i}"), ("system", f"答{i}"))]
    return dialogue_with_turns(
        campaign=campaign,
        worker=worker,
        status=Dialogue.Status.IN_PROGRESS,
        skill_key="chitchat",
        texts=texts,
    )


def _answer(turn: Turn, worker, n: int) -> None:
    live_rating_save(turn=turn, user=worker, answers=dict.fromkeys(MULTI_KEYS[:n], 1))


@pytest.fixture
def worker():
    return make_user("tester", Role.CROWDWORKER)


@pytest.fixture
def campaign():
    return CampaignFactory(rate_while_chatting=True, min_turns=1, max_turns=10)


def test_sending_waits_until_every_question_on_the_last_reply_is_answered(campaign, worker):
    dialogue = _chat(campaign, worker, 1)
    (reply,) = model_turns(dialogue)
    state = chat_state(dialogue=dialogue)
    assert (state.can_send, state.reply_answers_missing, state.answers_missing) == (False, 8, 8)
    with pytest.raises(CollectionError, match="请先回答上一条回复下的 8 个评分问题"):
        worker_turn_post(worker=worker, dialogue_id=dialogue.pk, text="你好，再聊聊电影吧")
    _answer(reply, worker, 7)
    with pytest.raises(CollectionError, match="请先回答上一条回复下的 1 个评分问题"):
        worker_turn_post(worker=worker, dialogue_id=dialogue.pk, text="你好，再聊聊电影吧")
    assert dialogue.turns.count() == 2  # nothing saved while refused
    _answer(reply, worker, 8)
    posted = worker_turn_post(worker=worker, dialogue_id=dialogue.pk, text="你好，再聊聊电影吧")
    assert posted.turn.text == "你好，再聊聊电影吧" and dialogue.turns.count() == 3


def test_the_send_view_answers_422_naming_the_missing_answers(campaign, worker):
    dialogue = _chat(campaign, worker, 1)
    client = Client()
    client.force_login(worker)
    response = client.post(
        reverse("chat:live-send", args=[dialogue.pk]),
        {"text": "继续聊"},
        HTTP_ACCEPT="text/event-stream",
    )
    assert response.status_code == 422
    assert "请先回答上一条回复下的 8 个评分问题" in response.content.decode()
    assert list(dialogue.turns.values_list("text", flat=True)) == ["问0", "答0"]


def test_replies_beyond_the_rubrics_turns_ask_nothing_and_lock_nothing(worker):
    campaign = CampaignFactory(rate_while_chatting=True, min_turns=1, max_turns=10)
    dialogue = _chat(campaign, worker, 5)
    for reply in model_turns(dialogue):
        _answer(reply, worker, 8)
    state = chat_state(dialogue=dialogue)
    assert (state.answers_missing, state.can_finish) == (0, True)


def test_finish_is_refused_while_answers_are_missing_and_the_page_says_how_many(campaign, worker):
    dialogue = _chat(campaign, worker, 2)
    first, second = model_turns(dialogue)
    _answer(first, worker, 8)
    _answer(second, worker, 5)
    client = Client()
    client.force_login(worker)
    page = client.get(reverse("chat:live-dialogue", args=[dialogue.pk])).content.decode()
    assert "还有 3 个评分问题没有回答" in page
    assert 'id="finish-button" disabled' in page and 'id="send-button" disabled' in page

    response = client.post(reverse("chat:live-submit", args=[dialogue.pk]))
    assert response.status_code == 302
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.IN_PROGRESS
    # 「无法继续」 is always allowed: the three unanswered questions then score 0
    response = client.post(
        reverse("chat:live-submit", args=[dialogue.pk]), {"cannot_continue": "1"}
    )
    assert response.status_code == 302
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED and dialogue.cannot_continue


def test_an_answer_brings_the_status_bar_that_unlocks_the_composer(campaign, worker):
    dialogue = _chat(campaign, worker, 1)
    (reply,) = model_turns(dialogue)
    client = Client()
    client.force_login(worker)
    url = reverse("annotation:live-turn-rating", args=[reply.pk])
    seven = client.post(url, dict.fromkeys(MULTI_KEYS[:7], "1"), HTTP_HX_REQUEST="true")
    html = seven.content.decode()
    assert seven.status_code == 200
    assert 'id="chat-status"' in html and 'hx-swap-oob="true"' in html
    assert 'data-can-send="false"' in html and "还有 1 个评分问题没有回答" in html
    eight = client.post(url, dict.fromkeys(MULTI_KEYS, "1"), HTTP_HX_REQUEST="true")
    assert eight.status_code == 200
    assert 'data-can-send="true"' in eight.content.decode()
    assert chat_state(dialogue=dialogue).can_send


def _create(**options) -> Campaign:
    return campaign_create(
        name="多轮测试",
        mode=Campaign.Mode.INTERACTIVE,
        skills=["chitchat"],
        backends=[BackendFactory()],
        datasets=[scenario_dataset("chitchat", 2)],
        created_by=None,
        **options,
    )


def test_a_rate_while_chatting_campaign_cannot_allow_fewer_turns_than_the_rubric():
    """max 3 turns under a 5-turn denominator would cap every system at 60 (decision 54)."""
    with pytest.raises(ServiceError) as caught:
        _create(rate_while_chatting=True, max_turns=3, min_turns=1)
    assert "最多轮数（3）不能少于 5" in str(caught.value.errors["max_turns"])
    assert not Campaign.objects.filter(name="多轮测试").exists()

    campaign = _create(max_turns=3, min_turns=1)  # no live rating: any limit
    with pytest.raises(ServiceError) as caught:
        campaign_update(campaign=campaign, rate_while_chatting=True)
    assert "不能少于 5" in str(caught.value.errors["max_turns"])
    campaign.refresh_from_db()
    assert (campaign.rate_while_chatting, campaign.max_turns) == (False, 3)
    campaign_update(campaign=campaign, rate_while_chatting=True, max_turns=5)
    campaign.refresh_from_db()
    assert (campaign.rate_while_chatting, campaign.max_turns) == (True, 5)


def test_a_campaign_saved_before_the_rule_is_named_among_the_readiness_problems():
    campaign = CampaignFactory(rate_while_chatting=True, max_turns=3, min_turns=1)
    assert any("不能少于 5" in problem for problem in campaign_readiness_problems(campaign))
