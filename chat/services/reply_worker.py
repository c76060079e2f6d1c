"""A `chat` worker: generates the live chat's replies that the web processes queue
(`manage.py chat_worker`; docker-compose's `chat-worker`).

The web process that saves an utterance places the reply's claim and queues a job in one Redis
step (`replies.reply_dispatch`); a worker takes jobs off the list with a blocking pop and runs
each as a task on its event loop (`replies.reply_generate`), at most `concurrency` at once.
Why not a Celery queue (decision 49): a generation is a coroutine that mostly waits on the model
server, and Celery ran it on a thread of its pool that handed it to an event loop, with kombu's
acknowledgement bookkeeping around it: about a third of the worker's CPU per turn and four thread
hand-offs between the utterance and the model call (docs/scaling.md).

Delivery is at most once, and nothing is lost by that: a job popped by a worker that dies before
it claims the utterance leaves the dispatch claim to expire (`CHAT_DISPATCH_TTL_S`), a worker
that dies mid-reply leaves its own claim to expire (`CHAT_CLAIM_TTL_S`), and then the browser
following the reply (or its reconnect, or the next page load) queues it again
(`replies.reply_follow`). The claim keeps every generation to one.

Each worker keeps a key alive in Redis while it runs (`CHAT_WORKER_HEARTBEAT_S`):
`manage.py chat_worker --ping` (docker-compose's health check), `/healthz` (`chat_workers_health`)
and the tests read it. With no worker at all, a queued reply fails after
`CHAT_UNCLAIMED_TIMEOUT_S` (`replies._give_up_unclaimed`) instead of waiting for ever.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from contextlib import suppress
from typing import Any

from django.conf import settings

from chat.backends.httpcommon import kept_connections
from chat.services.replies import reply_generate, reply_queue_key, reply_worker_key
from chat.services.reply_streams import RedisReplyStreams, gather_quietly, reply_streams
from core.errors import ServiceError

logger = logging.getLogger(__name__)

# A blocked pop waits this long before the loop looks at `stop` again.
_POP_BLOCK_S = 1.0


class ReplyWorkerUnavailable(ServiceError):
    """The reply streams are not shared (memory://): the web process generates every reply."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _redis_streams() -> RedisReplyStreams:
    streams = reply_streams()
    if not isinstance(streams, RedisReplyStreams):
        raise ReplyWorkerUnavailable(
            "CHAT_REPLY_STREAMS_URL is memory://: each web process generates its replies "
            "itself and a chat worker has nothing to do (set it to redis://… to use workers)"
        )
    return streams


async def _run_job(raw: str) -> None:
    try:
        job = json.loads(raw)
        utterance_id, token = int(job["utterance"]), str(job["token"])
    except (ValueError, KeyError, TypeError):
        logger.error("chat worker: dropped a malformed job %r", raw[:200])
        return
    # (Cancelled when it lost its claim to another generator, `replies._keep_claim`, which
    # says so in the log, or when a stopping worker's grace ran out.)
    try:
        await reply_generate(utterance_id=utterance_id, dispatch_token=token)
    except Exception:
        logger.exception("chat worker: generating the reply to utterance %s failed", utterance_id)


async def _keep_alive(streams: RedisReplyStreams, name: str, running: set[asyncio.Task]) -> None:
    beat = settings.CHAT_WORKER_HEARTBEAT_S
    while True:
        state = json.dumps({"running": len(running), "at": time.time()})
        try:
            await streams.mark_alive(reply_worker_key(name), state, ttl_s=beat * 3)
        except Exception:  # Redis away for a moment: the next beat tries again
            logger.warning("chat worker: heartbeat failed", exc_info=True)
        await asyncio.sleep(beat)


async def reply_worker_run(*, concurrency: int, stop: asyncio.Event, grace_s: float) -> None:
    """Generate queued replies, at most `concurrency` at once, until `stop` is set; then let
    the replies in progress finish (at most `grace_s` seconds: a reply cut off then is
    re-queued by its listener once its claim expires)."""
    if concurrency < 1:
        raise ServiceError(f"concurrency must be at least 1 (got {concurrency})")
    streams = _redis_streams()
    name = worker_name()
    queue = reply_queue_key()
    slots = asyncio.Semaphore(concurrency)
    running: set[asyncio.Task] = set()
    heartbeat = asyncio.create_task(_keep_alive(streams, name, running))

    def finished(task: asyncio.Task) -> None:
        running.discard(task)
        slots.release()

    logger.info("chat worker %s: up to %d replies at once from %s", name, concurrency, queue)
    # One pool of kept-alive connections to the model servers for the worker's life, the
    # replies that finish during the grace included.
    async with kept_connections():
        try:
            while not stop.is_set():
                await slots.acquire()
                try:
                    raw = await streams.next_job(queue, block_s=_POP_BLOCK_S)
                except Exception:
                    slots.release()
                    logger.warning("chat worker: reading the job queue failed", exc_info=True)
                    await asyncio.sleep(_POP_BLOCK_S)
                    continue
                if raw is None:
                    slots.release()
                    continue
                task = asyncio.create_task(_run_job(raw))
                running.add(task)
                task.add_done_callback(finished)
        finally:
            if running:
                logger.info("chat worker %s: finishing %d replies", name, len(running))
                _, unfinished = await asyncio.wait(set(running), timeout=grace_s)
                for task in unfinished:
                    task.cancel()
                await gather_quietly(*unfinished)
            heartbeat.cancel()
            with suppress(asyncio.CancelledError):
                await heartbeat
            await gather_quietly(streams.forget(reply_worker_key(name)))


async def workers_alive(*, host: str | None = None) -> list[str]:
    """The names (`host:pid`) of the chat workers whose heartbeat is current, on `host` or
    anywhere."""
    streams = _redis_streams()
    prefix = reply_worker_key("")
    keys = await streams.keys_like(f"{prefix}{host}:*" if host else f"{prefix}*")
    return sorted(key.removeprefix(prefix) for key in keys)


def chat_workers_health() -> dict[str, Any]:
    """The `chat_workers` part of `/healthz` (a feature check, registered by the chat app): the
    workers alive by their heartbeats, with the replies each is generating and its heartbeat's
    age, and how many replies wait in the queue. Not ok when no worker is alive or the queue is
    full: the chat then fails its replies with "no worker" or "busy" (issue 23 item 4).

    Sync, with a short-lived client of its own: /healthz is a sync view, and a check must not
    reuse a pooled connection that may hide a Redis that just went away."""
    import redis

    streams = reply_streams()
    if not isinstance(streams, RedisReplyStreams):
        return {
            "ok": True,
            "detail": "memory:// streams: each web process generates its replies itself",
            "workers": [],
            "queue_depth": 0,
        }
    client = redis.Redis.from_url(
        streams.url, decode_responses=True, socket_timeout=3, socket_connect_timeout=3
    )
    prefix = reply_worker_key("")
    try:
        keys = sorted(client.scan_iter(match=f"{prefix}*", count=1000))
        beats = client.mget(keys) if keys else []
        depth = int(client.llen(reply_queue_key()))
    finally:
        client.close()
    now = time.time()
    workers = []
    for key, beat in zip(keys, beats, strict=True):
        if beat is None:  # expired between the scan and the read
            continue
        state = json.loads(beat)
        workers.append(
            {
                "name": key.removeprefix(prefix),
                "running": state["running"],
                "heartbeat_age_s": round(now - state["at"], 1),
            }
        )
    limit = settings.CHAT_REPLY_QUEUE_MAX
    if not workers:
        detail = f"no chat worker alive ({depth} replies queued): run `manage.py chat_worker`"
    elif depth >= limit:
        detail = f"the reply queue is full ({depth} of {limit}): new replies fail as busy"
    else:
        detail = f"{len(workers)} chat workers alive, {depth} replies queued"
    return {
        "ok": bool(workers) and depth < limit,
        "detail": detail,
        "workers": workers,
        "queue_depth": depth,
        "queue_max": limit,
    }
