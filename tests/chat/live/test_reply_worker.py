"""The `chat` worker (chat/services/reply_worker.py, `manage.py chat_worker`): jobs queued with
their claim in one step, run at most `concurrency` at once, finished on stop, a heartbeat while
alive; idle with in-memory streams."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from chat.services import replies, reply_worker
from chat.services.reply_streams import RedisReplyStreams
from tests.conftest import REPO_ROOT

REDIS = settings.CELERY_BROKER_URL if settings.CELERY_BROKER_URL.startswith("redis") else None
needs_redis = pytest.mark.skipif(REDIS is None, reason="no Redis (CELERY_BROKER_URL=redis://…)")


@pytest.fixture
def on_redis(settings):
    settings.CHAT_REPLY_STREAMS_URL = REDIS
    settings.CHAT_REPLY_KEY_PREFIX = f"test-{uuid.uuid4().hex[:8]}"
    settings.CHAT_WORKER_HEARTBEAT_S = 0.2
    return RedisReplyStreams(REDIS or "")


@needs_redis
def test_a_reply_is_queued_once_with_its_claim(on_redis):
    async def flow():
        first = await replies.reply_dispatch(utterance_id=41)
        second = await replies.reply_dispatch(utterance_id=41)  # a listener arriving next
        queued = await on_redis._client().lrange(replies.reply_queue_key(), 0, -1)
        holder = await on_redis.holder(replies.reply_key(utterance_id=41))
        return first, second, queued, holder

    first, second, queued, holder = asyncio.run(flow())
    assert (first, second) == (True, False)
    assert len(queued) == 1 and json.loads(queued[0])["utterance"] == 41
    # The job carries the claim's token: the worker that starts it takes the claim over.
    assert json.loads(queued[0])["token"] == holder and holder.startswith("queued:")


@needs_redis
def test_the_worker_runs_jobs_concurrently_up_to_its_limit_and_finishes_them_on_stop(
    on_redis, monkeypatch
):
    running: list[int] = []
    peak: list[int] = []
    four_done = asyncio.Event()
    done: list[tuple[int, str]] = []

    async def fake_generate(*, utterance_id: int, dispatch_token: str | None = None) -> bool:
        running.append(utterance_id)
        peak.append(len(running))
        await asyncio.sleep(0.3)
        running.remove(utterance_id)
        done.append((utterance_id, dispatch_token or ""))
        if len(done) >= 4:
            four_done.set()
        return True

    monkeypatch.setattr(reply_worker, "reply_generate", fake_generate)

    async def flow():
        queue = replies.reply_queue_key()
        client = on_redis._client()
        await client.rpush(
            queue,
            "not a job",
            *(json.dumps({"utterance": u, "token": f"t{u}"}) for u in range(1, 8)),
        )
        stop = asyncio.Event()
        worker = asyncio.create_task(
            reply_worker.reply_worker_run(concurrency=3, stop=stop, grace_s=10)
        )
        await asyncio.wait_for(four_done.wait(), 15)
        alive = await reply_worker.workers_alive()
        stop.set()  # with jobs still running: they finish
        await asyncio.wait_for(worker, 15)
        return alive, await reply_worker.workers_alive(), await client.llen(queue)

    alive, after, left = asyncio.run(flow())
    assert max(peak) == 3  # never more than the concurrency
    assert alive == [reply_worker.worker_name()]
    assert after == []  # its heartbeat is gone once it stopped
    finished = sorted(u for u, _ in done)
    # Every job it took was finished (the malformed one was dropped); what it never took waits.
    assert finished == list(range(1, len(finished) + 1)) and left == 7 - len(finished)
    assert all(token == f"t{u}" for u, token in done)


@needs_redis
def test_a_stopping_worker_cancels_what_is_still_running_after_the_grace(on_redis, monkeypatch):
    cancelled: list[int] = []
    started = asyncio.Event()

    async def stuck(*, utterance_id: int, dispatch_token: str | None = None) -> bool:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(utterance_id)
            raise
        return True

    monkeypatch.setattr(reply_worker, "reply_generate", stuck)

    async def flow():
        await on_redis._client().rpush(
            replies.reply_queue_key(), json.dumps({"utterance": 9, "token": "t"})
        )
        stop = asyncio.Event()
        worker = asyncio.create_task(
            reply_worker.reply_worker_run(concurrency=2, stop=stop, grace_s=0.2)
        )
        await asyncio.wait_for(started.wait(), 15)
        stop.set()
        await asyncio.wait_for(worker, 10)

    asyncio.run(flow())
    # Cut off: its claim lapses and the reply's listener queues it again (replies).
    assert cancelled == [9]


def test_with_streams_in_memory_the_worker_has_nothing_to_do(settings):
    settings.CHAT_REPLY_STREAMS_URL = "memory://"
    with pytest.raises(reply_worker.ReplyWorkerUnavailable, match="memory://"):
        asyncio.run(reply_worker.reply_worker_run(concurrency=1, stop=asyncio.Event(), grace_s=1))
    with pytest.raises(CommandError, match="memory://"):
        call_command("chat_worker", "--ping")


@needs_redis
def test_ping_fails_when_no_worker_is_alive_on_this_host(on_redis):
    with pytest.raises(CommandError, match="no chat worker alive"):
        call_command("chat_worker", "--ping")


def test_the_command_waits_idle_in_memory_mode_and_stops_on_sigterm():
    env = {**os.environ, "CHAT_REPLY_STREAMS_URL": "memory://", "LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "chat_worker"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # it stays up (honcho would stop every process otherwise)
        assert line.startswith("chat worker idle:") and "memory://" in line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
