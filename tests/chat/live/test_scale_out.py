"""The web tier scaled out: two real uvicorn processes on one Redis and a `chat` worker.

The processes are started as in production (separate interpreters, `config.asgi:application`),
on the test database and the configured Redis (shared reply streams). The fake model runs in
this process on loopback, so the tests count its requests: one per utterance, whatever happens.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse

from chat.models import Turn
from tests.chat.live.asgi_server import drop_other_connections
from tests.chat.live.conftest import (
    Event,
    browser,
    read_events,
    send,
    session_cookies,
    wait_for_turns,
)
from tests.conftest import REPO_ROOT
from tests.helpers import database_url_for_subprocess

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        not settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")),
        reason="the scaled-out web tier needs Redis (set CELERY_BROKER_URL=redis://…)",
    ),
]

REPLY = "陈凯歌导演的，1993年上映，张国荣和巩俐主演。"
HELLO = "你好，最近在看什么电影？"
# Streams of this test run, apart from any other run or deployment on the same Redis database.
PREFIX = f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture(autouse=True)
def embedded_reply_streams(settings) -> None:
    """Overrides the memory streams of the single-process tests: these share Redis."""
    settings.CHAT_REPLY_STREAMS_URL = settings.CELERY_BROKER_URL
    settings.CHAT_REPLY_KEY_PREFIX = PREFIX


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "CHAT_REPLY_STREAMS_URL": settings.CELERY_BROKER_URL,
        "CHAT_REPLY_KEY_PREFIX": PREFIX,
        "CHAT_CLAIM_TTL_S": "3",
        "LOG_LEVEL": "WARNING",
        # Plain HTTP on loopback: without DEBUG the deploy settings would redirect to HTTPS.
        "SECURE_SSL_REDIRECT": "false",
    }


@dataclass
class Web:
    proc: subprocess.Popen
    url: str


def _start_web() -> Web:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port)]
        + ["--host", "127.0.0.1", "--log-level", "warning"],
        cwd=REPO_ROOT,
        env=_env(),
    )
    web = Web(proc, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("a web process exited at start")
        try:
            # The login page imports the URLconf (every view) and needs no data.
            if httpx.get(f"{web.url}/accounts/login/", timeout=60).status_code == 200:
                return web
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    pytest.fail("a web process did not start within 180 s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _start_chat_worker() -> subprocess.Popen:
    from chat.services.reply_worker import workers_alive

    proc = subprocess.Popen(
        [sys.executable, "manage.py", "chat_worker", "--concurrency=8"],
        cwd=REPO_ROOT,
        env=_env(),
    )
    name = f"{socket.gethostname()}:{proc.pid}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("the chat worker exited at start")
        # Its heartbeat: it is taking jobs. (Module set-up: the per-test settings are not on.)
        with override_settings(
            CHAT_REPLY_STREAMS_URL=settings.CELERY_BROKER_URL, CHAT_REPLY_KEY_PREFIX=PREFIX
        ):
            if name in asyncio.run(workers_alive()):
                return proc
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the chat worker did not start within 180 s")


# The chat workers serving the module's tests; a test that kills one replaces it here.
_workers: list[subprocess.Popen] = []


@pytest.fixture(scope="module")
def tier(django_db_setup, django_db_blocker) -> Iterator[tuple[Web, Web]]:
    """Two web processes and a chat worker, for every test of the module."""
    with django_db_blocker.unblock():
        _workers.append(_start_chat_worker())
        webs: list[Web] = []
        try:
            webs = [_start_web(), _start_web()]
            yield webs[0], webs[1]
        finally:
            for web in webs:
                _stop(web.proc)
            while _workers:
                _stop(_workers.pop())
            drop_other_connections()


def run(coro):
    return asyncio.run(coro)


class _At:
    """`browser()` wants a server with a `url`."""

    def __init__(self, url: str) -> None:
        self.url = url


def _text(events: list[Event]) -> str:
    text = ""
    for event in events:
        if event.name == "reset":
            text = ""
        elif event.name == "chunk":
            text += event.data
    return text


async def _read_with_ids(
    client: httpx.AsyncClient, dialogue_id: int, *, last_id: str | None = None, stop_after=None
) -> list[tuple[str, str, object]]:
    """(id, event, data) of each event; `last_id` is sent as `Last-Event-ID`."""
    import json

    headers = {"Last-Event-ID": last_id} if last_id else {}
    found: list[tuple[str, str, object]] = []
    url = f"/chat/work/dialogues/{dialogue_id}/stream/"
    async with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        buffer = ""
        async for text in response.aiter_text():
            buffer += text
            while "\n\n" in buffer:
                raw, buffer = buffer.split("\n\n", 1)
                fields = dict(line.split(": ", 1) for line in raw.split("\n"))
                found.append((fields["id"], fields["event"], json.loads(fields["data"])))
                if stop_after is not None and len(found) >= stop_after:
                    return found
    return found


def test_a_reply_started_on_one_process_is_rejoined_on_the_other(tier, fake_openai, make_chat):
    one, two = tier
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, token_delay=0.05)

    async def flow():
        async with browser(_At(one.url), cookies) as client:
            sent = await send(client, chat.dialogue.pk, HELLO)
            first = await read_events(client, chat.dialogue.pk, stop_after=1)
        async with browser(_At(two.url), cookies) as client:
            rest = await read_events(client, chat.dialogue.pk)
        return sent, first, rest

    sent, first, rest = run(flow())
    assert sent.status_code == 200
    assert first[0].name == "chunk" and len(first[0].data) < len(REPLY)
    # The other process replays what was streamed so far, then follows to the end.
    assert _text(rest) == REPLY and rest[-1].name == "saved"
    assert REPLY in rest[-1].data["turn_html"]
    assert "csrfmiddlewaretoken" in rest[-1].data["status_html"]  # rendered with the request
    assert [t.text for t in wait_for_turns(chat.dialogue, 2)] == [HELLO, REPLY]
    assert len(fake_openai.requests) == 1


def test_two_rejoins_racing_for_one_utterance_make_one_backend_call(tier, fake_openai, make_chat):
    one, two = tier
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, token_delay=0.02)
    # An utterance whose reply nobody is generating (its job was lost): every listener that
    # arrives asks for a generator, and both processes do so at the same moment.
    Turn.objects.create(dialogue=chat.dialogue, index=0, speaker=Turn.Speaker.USER, text=HELLO)

    async def listen(url: str) -> list[Event]:
        async with browser(_At(url), cookies) as client:
            return await read_events(client, chat.dialogue.pk)

    async def race():
        return await asyncio.gather(listen(one.url), listen(two.url), listen(one.url))

    results = run(race())
    for events in results:
        assert _text(events) == REPLY and events[-1].name == "saved"
    assert len(fake_openai.requests) == 1
    assert [t.text for t in wait_for_turns(chat.dialogue, 2)] == [HELLO, REPLY]


def test_last_event_id_resumes_on_another_process_without_a_lost_or_doubled_character(
    tier, fake_openai, make_chat
):
    one, two = tier
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, token_delay=0.05)

    async def flow():
        async with browser(_At(one.url), cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            head = await _read_with_ids(client, chat.dialogue.pk, stop_after=2)
        async with browser(_At(two.url), cookies) as client:
            tail = await _read_with_ids(client, chat.dialogue.pk, last_id=head[-1][0])
            bad = await client.get(
                f"/chat/work/dialogues/{chat.dialogue.pk}/stream/",
                headers={"Last-Event-ID": "nonsense"},
            )
        return head, tail, bad

    head, tail, bad = run(flow())
    text = "".join(str(data) for _, name, data in head + tail if name == "chunk")
    assert text == REPLY
    assert tail[-1][1] == "saved"
    assert tail[0][0] != head[-1][0]  # it starts after the last event received
    assert bad.status_code == 400
    assert len(fake_openai.requests) == 1


def test_a_web_process_killed_mid_reply_loses_nothing(tier, fake_openai, make_chat):
    _, two = tier
    victim = _start_web()
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, token_delay=0.1)
    try:

        async def flow():
            async with browser(_At(victim.url), cookies) as client:
                await send(client, chat.dialogue.pk, HELLO)
                head = await _read_with_ids(client, chat.dialogue.pk, stop_after=2)
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait(10)
            # The browser reconnects to the other process with the last id it received.
            async with browser(_At(two.url), cookies) as client:
                tail = await _read_with_ids(client, chat.dialogue.pk, last_id=head[-1][0])
            return head, tail

        head, tail = run(flow())
    finally:
        _stop(victim.proc)
    text = "".join(str(data) for _, name, data in head + tail if name == "chunk")
    assert text == REPLY and tail[-1][1] == "saved"
    assert [t.text for t in wait_for_turns(chat.dialogue, 2)] == [HELLO, REPLY]
    assert len(fake_openai.requests) == 1


def test_a_failure_and_its_retry_are_seen_by_every_process(tier, fake_openai, make_chat):
    one, two = tier
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, fail_times=1, fail_status=500)
    page = reverse("chat:live-dialogue", args=[chat.dialogue.pk])

    async def flow():
        async with browser(_At(one.url), cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
            failed = await read_events(client, chat.dialogue.pk)
        async with browser(_At(two.url), cookies) as client:
            page_two = (await client.get(page)).text
            retried = await client.post(f"/chat/work/dialogues/{chat.dialogue.pk}/retry/")
        async with browser(_At(one.url), cookies) as client:
            answered = await read_events(client, chat.dialogue.pk)
            page_one = (await client.get(page)).text
        return failed, page_two, retried, answered, page_one

    failed, page_two, retried, answered, page_one = run(flow())
    assert [e.name for e in failed] == ["failed"]
    assert 'id="reply-failed"' in page_two  # the failure on one process shows on the other
    assert retried.status_code == 200 and 'id="reply-pending"' in retried.text
    # (Saved before the stream was asked for: it then brings just the saved turn.)
    assert answered[-1].name == "saved" and REPLY in answered[-1].data["turn_html"]
    assert 'id="reply-failed"' not in page_one and REPLY in page_one
    assert len(fake_openai.requests) == 2  # the failed call and the retry: nothing more


def test_the_page_of_a_dialogue_awaiting_its_reply_reloads_on_any_process(
    tier, fake_openai, make_chat
):
    one, two = tier
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    fake_openai.set_behaviour(reply=REPLY, token_delay=0.05)

    async def flow():
        async with browser(_At(one.url), cookies) as client:
            await send(client, chat.dialogue.pk, HELLO)
        async with browser(_At(two.url), cookies) as client:
            return (await client.get(f"/chat/work/dialogues/{chat.dialogue.pk}/")).text

    html = run(flow())
    assert 'id="reply-pending"' in html and HELLO in html
    assert [t.text for t in wait_for_turns(chat.dialogue, 2)] == [HELLO, REPLY]
    assert len(fake_openai.requests) == 1


def _claim_holder(utterance_id: int) -> str | None:
    import redis

    from chat.services.replies import reply_key

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, decode_responses=True)
    try:
        return client.get(f"{reply_key(utterance_id=utterance_id)}:claim")
    finally:
        client.close()


def test_a_chat_worker_killed_mid_reply_loses_nothing(tier, fake_openai, make_chat):
    """SIGKILL the worker generating a reply: its claim lapses (CHAT_CLAIM_TTL_S, 3 s here),
    the listener queues the reply again, another worker takes the claim over, writes `reset`
    and generates anew. The browser clears the partial text and sees the reply whole; one
    turn is saved. The backend is called twice: the one accepted cost (docs/scaling.md)."""
    one, _ = tier
    _workers.append(_start_chat_worker())  # two workers: one to kill, one to take over
    chat = make_chat()
    cookies = session_cookies(chat.worker)
    # Slow enough that the kill lands mid-reply (22 characters × 0.15 s ≈ 3.3 s per call).
    fake_openai.set_behaviour(reply=REPLY, token_delay=0.15)
    killed: list[int] = []

    async def post() -> None:
        async with browser(_At(one.url), cookies) as client:
            assert (await send(client, chat.dialogue.pk, HELLO)).status_code == 200

    run(post())
    utterance = chat.dialogue.turns.get(speaker=Turn.Speaker.USER).pk

    async def flow() -> list[Event]:
        async with browser(_At(one.url), cookies) as client:
            events: list[Event] = []
            url = f"/chat/work/dialogues/{chat.dialogue.pk}/stream/"
            async with client.stream("GET", url, timeout=60) as response:
                assert response.status_code == 200
                async for event in _events(response):
                    events.append(event)
                    if not killed and event.name == "chunk":
                        # The claim names its holder: "<host>:<pid>:<token>".
                        holder = await asyncio.to_thread(_claim_holder, utterance)
                        assert holder is not None and not holder.startswith("queued:")
                        pid = int(holder.split(":")[1])
                        victim = next(w for w in _workers if w.pid == pid)
                        victim.send_signal(signal.SIGKILL)
                        await asyncio.to_thread(victim.wait, 10)
                        _workers.remove(victim)
                        killed.append(pid)
            return events

    events = run(flow())
    assert killed, "no chunk arrived before the reply ended"
    names = [e.name for e in events]
    assert "reset" in names and names[-1] == "saved", names
    before_reset = _text(events[: names.index("reset")])
    assert 0 < len(before_reset) < len(REPLY) and REPLY.startswith(before_reset)
    # What the chat page shows: the partial text cleared, then the whole reply, once.
    assert _text(events) == REPLY
    assert REPLY in events[-1].data["turn_html"]
    turns = wait_for_turns(chat.dialogue, 2)
    assert [(t.speaker, t.text) for t in turns] == [
        (Turn.Speaker.USER, HELLO),
        (Turn.Speaker.SYSTEM, REPLY),
    ]
    time.sleep(1.0)  # no late second save from anywhere
    assert chat.dialogue.turns.count() == 2
    # A job for this utterance queued again now (a late listener, a doubled job) finds the
    # reply done and calls nobody.
    from chat.services.replies import reply_generate

    assert not run(reply_generate(utterance_id=utterance, dispatch_token="queued:late"))
    assert chat.dialogue.turns.count() == 2
    # The killed generation's call and the one that replaced it: the accepted cost.
    assert len(fake_openai.requests) == 2


async def _events(response: httpx.Response):
    import json

    buffer = ""
    async for text in response.aiter_text():
        buffer += text
        while "\n\n" in buffer:
            raw, buffer = buffer.split("\n\n", 1)
            fields = dict(line.split(": ", 1) for line in raw.split("\n"))
            yield Event(fields["event"], json.loads(fields["data"]), time.monotonic())
