"""Seed 001's openings in the live chat: the model answers the drawn opening first."""

from __future__ import annotations

import pytest

from chat.models import Turn
from chat.services.campaigns import campaign_update
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.test_openings import prompt_dataset
from tests.chat.live.conftest import browser, read_events, run, session_cookies, wait_for_turns

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

REPLY = "陈凯歌导演的，1993年上映。"


def test_a_dialogue_opens_with_the_drawn_opening_and_the_models_reply_to_it(
    asgi_server, fake_openai, make_chat
):
    chat = make_chat()
    chat.dialogue.delete()  # the fixture's own dialogue; the assignment makes the real one
    campaign_update(
        campaign=chat.campaign,
        opening_dataset=prompt_dataset(n=4, topics=["电影", "旅游"]),
        opening_count=2,
    )
    dialogue = scenario_assign_next(participant=chat.participant)
    opening = dialogue.opening
    assert opening is not None
    cookies = session_cookies(chat.worker)

    async def flow():
        async with browser(asgi_server, cookies) as client:
            page = await client.get(f"/chat/work/dialogues/{dialogue.pk}/")
            return page, await read_events(client, dialogue.pk)

    page, events = run(flow())
    assert page.status_code == 200
    assert opening.text in page.text and 'id="reply-pending"' in page.text
    assert "活动给定的开场白" in page.text
    assert events[-1].name == "saved"
    assert "".join(e.data for e in events if e.name == "chunk") == REPLY

    first, reply = wait_for_turns(dialogue, 2)
    assert (first.index, first.speaker, first.text) == (0, Turn.Speaker.USER, opening.text)
    assert (reply.index, reply.speaker, reply.text) == (1, Turn.Speaker.SYSTEM, REPLY)
    assert fake_openai.requests[-1].json["messages"][-1]["content"] == opening.text
    assert "第 2 / 10 轮" in events[-1].data["status_html"]  # the worker continues the chat
