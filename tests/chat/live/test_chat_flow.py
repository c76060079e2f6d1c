"""The crowdworker chat through the ASGI app: send, the streamed reply, failures and retry."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Participant, ReplyFailure, Turn
from chat.services.generation import build_request
from core.access import Role
from tests.chat.live.conftest import (
    browser,
    read_events,
    run,
    send,
    session_cookies,
    wait_for_turns,
)
from tests.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

REPLY = "陈凯歌导演的，1993年上映。"
HELLO = "你好，最近在看什么电影？"


def _page(user, dialogue) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("chat:live-dialogue", args=[dialogue.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_reply_streams_in_chunks_and_is_saved_with_prompt_and_latency(
    asgi_server, fake_openai, make_chat
):
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    # A pause mid-reply: a buffered response would deliver the first tokens with the last ones.
    fake_openai.set_behaviour(reply=REPLY, stall_after_tokens=3, stall_s=1.0)

    async def flow():
        async with browser(asgi_server, cookies) as client:
            sent = await send(client, chat.dialogue.pk, "你看过《霸王别姬》吗？")
            return sent, await read_events(client, chat.dialogue.pk)

    sent, events = run(flow())
    assert sent.status_code == 200 and sent.data is not None
    assert "你看过《霸王别姬》吗？" in sent.data["turn_html"]
    assert 'id="reply-pending"' in sent.data["pending_html"]
    assert 'data-awaiting="true"' in sent.data["status_html"]
    assert "第 1 / 10 轮" in sent.data["status_html"]

    chunks = [e for e in events if e.name == "chunk"]
    assert "".join(e.data for e in chunks) == REPLY
    # Tokens that arrive together may leave as one event; the pause splits the reply at least.
    assert len(chunks) >= 2 and len(chunks[0].data) <= 3
    assert events[-1].name == "saved"
    assert events[-1].at - chunks[0].at >= 0.5  # the first tokens came before the pause ended
    assert REPLY in events[-1].data["turn_html"]
    assert "第 2 / 10 轮" in events[-1].data["status_html"]

    user_turn, reply = wait_for_turns(chat.dialogue, 2)
    assert (user_turn.speaker, user_turn.text) == (Turn.Speaker.USER, "你看过《霸王别姬》吗？")
    assert (reply.speaker, reply.text, reply.index) == (Turn.Speaker.SYSTEM, REPLY, 1)
    expected = build_request(
        backend=chat.backend,
        skill="knowledge",
        language="zh",
        grounding=chat.dialogue.grounding,
        history=[("user", "你看过《霸王别姬》吗？")],
    )
    assert reply.prompt == expected.prompt and "陈凯歌" in reply.prompt
    assert reply.latency_ms >= 1000
    assert fake_openai.requests[-1].json["messages"][-1]["content"] == "你看过《霸王别姬》吗？"


def test_a_client_that_leaves_mid_reply_still_gets_the_whole_turn_saved(
    asgi_server, fake_openai, make_chat
):
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, stall_after_tokens=2, stall_s=0.8)

    async def flow():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            return await read_events(client, chat.dialogue.pk, stop_after=1)

    first = run(flow())
    assert first[0].name == "chunk" and REPLY.startswith(first[0].data)
    assert len(first[0].data) < len(REPLY)

    turns = wait_for_turns(chat.dialogue, 2)
    assert [t.text for t in turns] == [HELLO, REPLY]
    assert len(fake_openai.requests) == 1


def test_a_reload_during_the_reply_continues_the_same_generation(
    asgi_server, fake_openai, make_chat
):
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, stall_after_tokens=4, stall_s=3.0)

    async def leave_early():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            return await read_events(client, chat.dialogue.pk, stop_after=1)

    run(leave_early())
    page = _page(chat.worker, chat.dialogue)
    assert 'id="reply-pending"' in page and HELLO in page

    async def come_back():
        async with browser(asgi_server, cookies) as client:
            return await read_events(client, chat.dialogue.pk)

    events = run(come_back())
    # The first chunk replays what was streamed before the reload; the rest follows.
    assert "".join(e.data for e in events if e.name == "chunk") == REPLY
    assert events[-1].name == "saved"
    assert len(fake_openai.requests) == 1
    assert [t.text for t in wait_for_turns(chat.dialogue, 2)] == [HELLO, REPLY]

    page = _page(chat.worker, chat.dialogue)
    assert REPLY in page and 'id="reply-pending"' not in page
    assert "第 2 / 10 轮" in page


def test_a_backend_error_detail_reaches_researchers_not_the_worker(
    asgi_server, fake_openai, make_chat, monkeypatch
):
    chat = make_chat()
    monkeypatch.setenv("H13B_FAKE_KEY", "sk-secret-h13b")
    chat.backend.api_key_env = "H13B_FAKE_KEY"
    chat.backend.save(update_fields=["api_key_env"])
    fake_openai.set_behaviour(reply=REPLY, fail_times=1, fail_status=500, echo_auth=True)
    cookies = session_cookies(chat.worker)

    async def first_try():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            return await read_events(client, chat.dialogue.pk)

    events = run(first_try())
    assert [e.name for e in events] == ["failed"]
    assert "fake failure" not in events[0].data["html"]
    worker_page = _page(chat.worker, chat.dialogue)
    assert 'id="reply-failed"' in worker_page and "fake failure" not in worker_page

    failure = ReplyFailure.objects.get()
    assert (failure.dialogue, failure.backend, failure.kind) == (
        chat.dialogue,
        chat.backend,
        "unavailable",
    )
    assert "fake failure 500" in failure.detail and "***" in failure.detail
    assert "sk-secret-h13b" not in failure.detail

    researcher, reviewer = Client(), Client()
    researcher.force_login(make_user("rita", Role.RESEARCHER))
    reviewer.force_login(make_user("rex", Role.RESEARCHER, Role.EXPERT))
    dialogue_link = reverse("annotation:review-dialogue", args=[chat.dialogue.pk])
    for url in (
        reverse("chat:backend-detail", args=[chat.backend.pk]),
        reverse("chat:campaign-detail", args=[chat.campaign.pk]),
    ):
        page = researcher.get(url).content.decode()
        section = page[page.index('id="reply-failures"') :]
        assert "共 1 次" in section and "fake failure 500" in section, url
        assert f"#{chat.dialogue.pk}" in section and "sk-secret-h13b" not in page, url
        assert dialogue_link not in section, url  # the review page is for experts only
        assert dialogue_link in reviewer.get(url).content.decode(), url


def test_a_backend_error_shows_retry_keeps_the_utterance_and_retry_answers_it(
    asgi_server, fake_openai, make_chat
):
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, fail_times=1, fail_status=500)

    async def first_try():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            return await read_events(client, chat.dialogue.pk)

    events = run(first_try())
    assert [e.name for e in events] == ["failed"]
    assert "暂时连不上模型服务" in events[0].data["html"] and "重试" in events[0].data["html"]
    assert [t.text for t in chat.dialogue.turns.all()] == [HELLO]

    page = _page(chat.worker, chat.dialogue)  # a reload shows the failure, not a new attempt
    assert 'id="reply-failed"' in page and 'id="reply-pending"' not in page
    assert len(fake_openai.requests) == 1

    async def retry():
        async with browser(asgi_server, cookies) as client:
            response = await client.post(f"/chat/work/dialogues/{chat.dialogue.pk}/retry/")
            return response, await read_events(client, chat.dialogue.pk)

    response, events = run(retry())
    assert response.status_code == 200 and 'id="reply-pending"' in response.text
    assert events[-1].name == "saved"
    assert [t.text for t in wait_for_turns(chat.dialogue, 2)] == [HELLO, REPLY]


def test_a_backend_timeout_is_reported_and_nothing_is_saved(asgi_server, fake_openai, make_chat):
    chat = make_chat(timeout_s=0.3)
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, stall_after_tokens=2, stall_s=2.0)

    async def flow():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            return await read_events(client, chat.dialogue.pk)

    events = run(flow())
    assert events[-1].name == "failed"
    assert "模型在规定时间内没有回复" in events[-1].data["html"]
    # The two tokens streamed before the stall are not kept as a half reply.
    assert [t.text for t in chat.dialogue.turns.all()] == [HELLO]


def test_model_html_is_shown_as_inert_text(asgi_server, fake_openai, make_chat):
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>好的'
    fake_openai.set_behaviour(
        tokens=("<script>", 'alert("x")', "</script>", "<img src=x onerror=alert(1)>", "好的")
    )

    async def flow():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            return await read_events(client, chat.dialogue.pk)

    events = run(flow())
    turn_html = events[-1].data["turn_html"]
    assert "<script>" not in turn_html and "<img" not in turn_html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in turn_html
    assert wait_for_turns(chat.dialogue, 2)[1].text == hostile
    page = _page(chat.worker, chat.dialogue)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img src=x" not in page


def test_the_worker_cannot_send_while_a_reply_is_awaited_or_after_max_turns(
    asgi_server, fake_openai, make_chat
):
    chat = make_chat(max_turns=1)
    cookies = session_cookies(chat.worker)
    # The reply starts with the send: keep it in flight while the second utterance comes.
    fake_openai.set_behaviour(reply=REPLY, stall_after_tokens=1, stall_s=1.0)

    async def flow():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            early = await send(client, chat.dialogue.pk, "你在吗？")
            events = await read_events(client, chat.dialogue.pk)
            late = await send(client, chat.dialogue.pk, "再聊一句")
            return early, events, late

    early, events, late = run(flow())
    assert early.status_code == 422 and "请等模型回复后再发送" in early.text
    assert early.headers["HX-Retarget"] == "#composer-error"
    assert events[-1].name == "saved"
    assert 'data-can-send="false"' in events[-1].data["status_html"]
    assert late.status_code == 422 and "已经聊满 1 轮" in late.text
    assert [t.text for t in chat.dialogue.turns.all()] == [HELLO, REPLY]


def test_an_unacceptable_utterance_is_refused_recorded_and_not_saved(asgi_server, make_chat):
    chat = make_chat(acceptability={"safety_words": ["笨蛋"]})
    cookies = session_cookies(chat.worker)

    async def flow():
        async with browser(asgi_server, cookies) as client:
            return await send(client, chat.dialogue.pk, "你这个笨蛋，知道霸王别姬吗")

    response = run(flow())
    assert response.status_code == 422
    assert 'id="composer-error"' in response.text
    assert chat.dialogue.turns.count() == 0
    assert Participant.objects.get(pk=chat.participant.pk).violations == 1


def test_a_reconnect_with_last_event_id_gets_the_rest_even_after_the_reply_was_saved(
    asgi_server, fake_openai, make_chat
):
    import json

    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, stall_after_tokens=3, stall_s=0.5)
    url = f"/chat/work/dialogues/{chat.dialogue.pk}/stream/"

    async def events(client, last_id=None, stop_after=None):
        headers = {"Last-Event-ID": last_id} if last_id else {}
        found = []
        async with client.stream("GET", url, headers=headers) as response:
            buffer = ""
            async for text in response.aiter_text():
                buffer += text
                while "\n\n" in buffer:
                    raw, buffer = buffer.split("\n\n", 1)
                    fields = dict(line.split(": ", 1) for line in raw.split("\n"))
                    found.append((fields["id"], fields["event"], json.loads(fields["data"])))
                    if stop_after and len(found) >= stop_after:
                        return found
        return found

    async def flow():
        async with browser(asgi_server, cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            head = await events(client, stop_after=1)
            return head

    head = run(flow())
    wait_for_turns(chat.dialogue, 2)  # the reply is saved while the browser is away

    async def resume():
        async with browser(asgi_server, cookies) as client:
            return await events(client, last_id=head[-1][0])

    tail = run(resume())
    text = "".join(data for _, name, data in head + tail if name == "chunk")
    assert text == REPLY and len(head[0][2]) < len(REPLY)
    assert tail[-1][1] == "saved"
    assert len(fake_openai.requests) == 1
