"""Faults the live chat must survive by itself (issue 23 items 4 and 9), on the real services:
no chat worker running, a full reply queue, Redis dropping the pooled connections, and the
database failing the reply's save for a moment.

The chat page is served by uvicorn in this process (`asgi_server`) on the configured Redis
(shared reply streams, the scaled-out mode) with no `chat` worker unless a test starts one.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest
import redis.asyncio as aioredis
from django.conf import settings
from django.db import OperationalError
from django.test import Client
from django.urls import reverse

from chat.models import ReplyFailure, Turn
from chat.services import replies, reply_worker
from chat.services.reply_streams import RedisReplyStreams
from core.access import Role
from core.health import health_check
from tests.chat.live.asgi_server import drop_other_connections
from tests.chat.live.conftest import (
    browser,
    read_events,
    run,
    send,
    session_cookies,
    wait_for_turns,
)
from tests.conftest import make_user

REDIS = settings.CELERY_BROKER_URL if settings.CELERY_BROKER_URL.startswith("redis") else None
needs_redis = pytest.mark.skipif(REDIS is None, reason="no Redis (CELERY_BROKER_URL=redis://…)")
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

REPLY = "陈凯歌导演的，1993年上映。"
HELLO = "你好，最近在看什么电影？"


@pytest.fixture
def on_redis(settings) -> RedisReplyStreams:
    """Shared reply streams on Redis, under a prefix of this test's own; short timeouts."""
    settings.CHAT_REPLY_STREAMS_URL = REDIS
    settings.CHAT_REPLY_KEY_PREFIX = f"test-{uuid.uuid4().hex[:8]}"
    settings.CHAT_CLAIM_TTL_S = 3.0  # a listener looks at the claim every second
    settings.CHAT_UNCLAIMED_TIMEOUT_S = 1.5
    settings.CHAT_WORKER_HEARTBEAT_S = 0.2
    return RedisReplyStreams(REDIS or "")


@pytest.fixture
def chat_db_threads():
    """The chat's database threads run the generation's queries here: their connections are
    closed after the test, so that the test database can be flushed."""
    yield
    drop_other_connections()


def _queued(streams: RedisReplyStreams) -> list[str]:
    async def read() -> list[str]:
        client = aioredis.Redis.from_url(streams.url, decode_responses=True)
        try:
            return await client.lrange(replies.reply_queue_key(), 0, -1)
        finally:
            await client.aclose()

    return run(read())


def _campaign_page(campaign) -> str:
    client = Client()
    client.force_login(make_user("rita", Role.RESEARCHER))
    response = client.get(reverse("chat:campaign-detail", args=[campaign.pk]))
    assert response.status_code == 200
    return response.content.decode()


# --- No chat worker (item 4) ----------------------------------------------------------------


@needs_redis
def test_with_no_chat_worker_the_reply_fails_with_a_retry_that_a_worker_then_answers(
    on_redis, asgi_server, fake_openai, make_chat
):
    chat = make_chat()
    fake_openai.set_behaviour(reply=REPLY)
    cookies = session_cookies(chat.worker)

    async def without_worker():
        async with browser(asgi_server, cookies) as client:
            sent = await send(client, chat.dialogue.pk, HELLO)
            return sent, await asyncio.wait_for(read_events(client, chat.dialogue.pk), 20)

    sent, events = run(without_worker())
    assert sent.status_code == 200
    assert [e.name for e in events] == ["failed"]
    assert "没有能生成回复的服务" in events[0].data["html"] and "重试" in events[0].data["html"]
    # The utterance stays, nothing was generated, and no job is left to pile up in the queue.
    assert [t.text for t in chat.dialogue.turns.all()] == [HELLO]
    assert fake_openai.requests == [] and _queued(on_redis) == []
    # The researcher sees why, on the campaign page.
    failure = ReplyFailure.objects.get(dialogue=chat.dialogue)
    assert failure.kind == "no_worker" and "chat_worker" in failure.detail
    assert "no_worker" in _campaign_page(chat.campaign)

    async def retry_with_a_worker():
        stop = asyncio.Event()
        worker = asyncio.create_task(
            reply_worker.reply_worker_run(concurrency=2, stop=stop, grace_s=5)
        )
        try:
            async with browser(asgi_server, cookies) as client:
                response = await client.post(f"/chat/work/dialogues/{chat.dialogue.pk}/retry/")
                events = await asyncio.wait_for(read_events(client, chat.dialogue.pk), 20)
                return response, events
        finally:
            stop.set()
            await worker

    response, events = run(retry_with_a_worker())
    assert response.status_code == 200 and 'id="reply-pending"' in response.text
    assert events[-1].name == "saved"
    assert [t.text for t in wait_for_turns(chat.dialogue, 2)] == [HELLO, REPLY]
    assert len(fake_openai.requests) == 1


@needs_redis
def test_a_reply_that_live_but_saturated_workers_never_take_fails_as_busy(
    on_redis, asgi_server, fake_openai, make_chat
):
    chat = make_chat()
    cookies = session_cookies(chat.worker)

    async def flow():
        # A worker alive by its heartbeat that takes no job (all its slots are taken).
        client = aioredis.Redis.from_url(on_redis.url, decode_responses=True)
        beat = json.dumps({"running": 100, "at": time.time()})
        await client.set(replies.reply_worker_key("saturated:1"), beat, ex=60)
        await client.aclose()
        async with browser(asgi_server, cookies) as http:
            await send(http, chat.dialogue.pk, HELLO)
            return await asyncio.wait_for(read_events(http, chat.dialogue.pk), 20)

    events = run(flow())
    assert [e.name for e in events] == ["failed"]
    assert "平台正忙" in events[0].data["html"] and "重试" in events[0].data["html"]
    failure = ReplyFailure.objects.get(dialogue=chat.dialogue)
    assert failure.kind == "busy" and "1 chat workers are alive" in failure.detail
    assert _queued(on_redis) == [] and fake_openai.requests == []


@needs_redis
def test_past_the_queue_bound_a_send_answers_busy_with_a_retry_not_an_error(
    on_redis, asgi_server, fake_openai, make_chat, settings
):
    settings.CHAT_REPLY_QUEUE_MAX = 2
    chat = make_chat()
    cookies = session_cookies(chat.worker)

    async def flow():
        client = aioredis.Redis.from_url(on_redis.url, decode_responses=True)
        await client.rpush(replies.reply_queue_key(), "waiting-1", "waiting-2")
        await client.aclose()
        async with browser(asgi_server, cookies) as http:
            sent = await send(http, chat.dialogue.pk, HELLO)
            return sent, await asyncio.wait_for(read_events(http, chat.dialogue.pk), 10)

    sent, events = run(flow())
    assert sent.status_code == 200  # the utterance is saved and shown
    assert [e.name for e in events] == ["failed"]
    assert "平台正忙" in events[0].data["html"] and "重试" in events[0].data["html"]
    assert [t.text for t in chat.dialogue.turns.all()] == [HELLO]
    assert _queued(on_redis) == ["waiting-1", "waiting-2"]  # nothing queued past the bound
    assert ReplyFailure.objects.get(dialogue=chat.dialogue).kind == "busy"


@needs_redis
def test_healthz_lists_the_live_chat_workers_and_the_reply_queue(on_redis):
    report = health_check(worker_timeout=0.1)["features"]["chat_workers"]
    assert report["ok"] is False and report["workers"] == [] and report["queue_depth"] == 0
    assert "no chat worker alive" in report["detail"]

    async def with_a_worker():
        stop = asyncio.Event()
        client = aioredis.Redis.from_url(on_redis.url, decode_responses=True)
        await client.rpush(replies.reply_queue_key(), "not a job")  # dropped by the worker
        await client.aclose()
        worker = asyncio.create_task(
            reply_worker.reply_worker_run(concurrency=3, stop=stop, grace_s=1)
        )
        try:
            for _ in range(50):
                report = await asyncio.to_thread(reply_worker.chat_workers_health)
                if report["workers"]:
                    return report
                await asyncio.sleep(0.1)
            raise AssertionError("the worker's heartbeat never showed")
        finally:
            stop.set()
            await worker

    report = run(with_a_worker())
    assert report["ok"] is True
    assert [w["name"] for w in report["workers"]] == [reply_worker.worker_name()]
    assert report["workers"][0]["running"] == 0 and report["workers"][0]["heartbeat_age_s"] < 5
    assert report["queue_depth"] == 0 and report["queue_max"] == settings.CHAT_REPLY_QUEUE_MAX


# --- Transient faults heal by themselves (item 9) ---------------------------------------------


@needs_redis
def test_a_redis_connection_dropped_under_the_pool_is_replaced_without_an_error(on_redis):
    """What a Redis restart does to every pooled connection, done to one (`CLIENT KILL ID`: the
    other users of this Redis keep theirs). The next command on it must succeed."""
    key = replies.reply_key(utterance_id=7)

    async def flow():
        client = on_redis._client()
        assert await on_redis.claim(key, "owner-a", 30) is not None
        pooled = await client.client_id()  # the pool's one connection, reused below
        killer = aioredis.Redis.from_url(on_redis.url)
        try:
            assert await killer.client_kill_filter(_id=pooled) == 1
        finally:
            await killer.aclose()
        holder = await on_redis.holder(key)  # on the dropped connection
        await client.delete(f"{key}:claim")
        return holder, await client.client_id()

    holder, replacement = run(flow())
    assert holder == "owner-a"
    assert replacement is not None


def test_a_reply_whose_save_failed_on_a_database_error_is_saved_by_itself(
    fake_openai, make_chat, monkeypatch, settings, chat_db_threads
):
    """The database went away for a moment as the reply was saved (PostgreSQL restarting): the
    save is tried again with a backoff, and the reply is saved, with no click on retry."""
    settings.CHAT_SAVE_ATTEMPTS = 4
    chat = make_chat()
    fake_openai.set_behaviour(reply=REPLY)
    utterance = Turn.objects.create(dialogue=chat.dialogue, index=0, speaker="user", text=HELLO)
    real_save = replies._save
    failures: list[int] = []

    def save_after_two_failures(*args, **kwargs):
        if len(failures) < 2:
            failures.append(1)
            raise OperationalError("server closed the connection unexpectedly")
        return real_save(*args, **kwargs)

    monkeypatch.setattr(replies, "_save", save_after_two_failures)

    async def generate():
        generated = await replies.reply_generate(utterance_id=utterance.pk)
        last = await replies.reply_streams().last(replies.reply_key(utterance_id=utterance.pk))
        return generated, last

    generated, last = run(generate())
    assert generated and last is not None and last.kind == "saved"
    assert len(failures) == 2
    assert [t.text for t in chat.dialogue.turns.order_by("index")] == [HELLO, REPLY]
    assert not ReplyFailure.objects.exists()


def test_a_save_that_keeps_failing_ends_as_a_failure_with_a_retry(
    fake_openai, make_chat, monkeypatch, settings, chat_db_threads
):
    settings.CHAT_SAVE_ATTEMPTS = 2
    chat = make_chat()
    fake_openai.set_behaviour(reply=REPLY)
    utterance = Turn.objects.create(dialogue=chat.dialogue, index=0, speaker="user", text=HELLO)

    def down(*args, **kwargs):
        raise OperationalError("the database system is starting up")

    monkeypatch.setattr(replies, "_save", down)

    async def generate():
        await replies.reply_generate(utterance_id=utterance.pk)
        return await replies.reply_streams().last(replies.reply_key(utterance_id=utterance.pk))

    last = run(generate())
    assert last is not None and last.kind == "failed" and last.data["kind"] == "unavailable"
    assert [t.text for t in chat.dialogue.turns.all()] == [HELLO]
