"""Where a reply in flight lives: an append-only event stream per utterance, plus its claim.

One interface, two implementations chosen by `settings.CHAT_REPLY_STREAMS_URL`:

- `redis://…` — `RedisReplyStreams`: a Redis Stream per utterance (XADD per batch of chunks,
  XREAD BLOCK to follow it) and a claim key set with `SET NX PX` (compare-and-set scripts to
  hand it over, renew and release). Every web process and every `chat` worker sees the same
  streams, so any process can serve any reply, and the claim makes the backend call happen once.
- `memory://` — `MemoryReplyStreams`: the same semantics in this process's memory, for the
  embedded default (SQLite, no Redis), where one web process generates and serves every reply.

Event ids increase within a stream and are what SSE `Last-Event-ID` carries back, so a client
that reconnects (to any process) continues right after the last event it received.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import weakref
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

from django.conf import settings

CHUNK = "chunk"  # data: {"t": text}
RESET = "reset"  # an earlier generation died mid-reply: the text so far is void, a new one starts
SAVED = "saved"  # data: the saved turn and the dialogue's state (see replies._saved_data)
FAILED = "failed"  # data: {"kind": ..., "detail": ...}
TERMINAL = frozenset({SAVED, FAILED})

# Ids as the two implementations write them: "17" (memory), "1732400000000-0" (Redis).
EVENT_ID = re.compile(r"^\d{1,20}(-\d{1,20})?$")


@dataclass(frozen=True)
class StreamEvent:
    id: str
    kind: str
    data: dict[str, Any]

    @property
    def terminal(self) -> bool:
        return self.kind in TERMINAL


@dataclass(frozen=True)
class Claimed:
    """A claim just taken, with the stream's last event at that moment: in the same step, so a
    generator learns whether the reply is done already, or was cut off, without another trip."""

    last: StreamEvent | None


class ReplyStreams(Protocol):
    """What the chat needs from the place replies in flight live (see the module docstring)."""

    async def claim(
        self, key: str, owner: str, ttl_s: float, *, replace: str | None = None
    ) -> Claimed | None:
        """Take the claim if nobody holds it (or if `replace` holds it); None when not taken."""

    async def renew(self, key: str, owner: str, ttl_s: float) -> bool:
        """Extend the claim held by `owner`; False when it is no longer theirs."""

    async def release(self, key: str, owner: str) -> None:
        """Drop the claim if `owner` still holds it."""

    async def holder(self, key: str) -> str | None:
        """Who holds the claim now (None when nobody does)."""

    async def append(
        self, key: str, kind: str, data: dict[str, Any], *, ttl_s: float | None
    ) -> str:
        """Add an event; the stream then expires `ttl_s` later (`None`: its expiry stays as an
        earlier append set it: one command instead of two per chunk). Returns its id."""

    async def read(self, key: str, after: str, *, block_s: float) -> list[StreamEvent]:
        """Events after id `after` ("0": from the start), waiting up to `block_s` for one."""

    async def last(self, key: str) -> StreamEvent | None:
        """The stream's last event, None when the stream is empty or gone."""

    async def discard_failed(self, key: str) -> bool:
        """Delete the stream if its last event is `failed` (a retry); True when deleted."""


# No command waits longer than this for Redis (a blocked XREAD waits at most half of it).
_SOCKET_TIMEOUT_S = 30.0


def _claim_key(key: str) -> str:
    return f"{key}:claim"


# --- Redis --------------------------------------------------------------------------------

# KEYS[1] claim key, KEYS[2] the stream; ARGV: owner, ttl ms, the holder it may replace ("" for
# none). Returns {1, the stream's last entry (none or one)} when taken, {0} when not.
_CLAIM = """
local current = redis.call('GET', KEYS[1])
if current == false or (ARGV[3] ~= '' and current == ARGV[3]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)}
end
return {0}
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
# KEYS[1] claim key, KEYS[2] the job queue, KEYS[3] the stream; ARGV: owner, ttl ms, the job,
# the queue's bound, a `failed` event's data, its stream's ttl s. The claim and the job together
# or neither: a job is queued only by whoever placed the claim. Returns 1 when queued, 0 when
# the claim is held, -1 when the queue is full: the reply then fails at once ("busy").
_CLAIM_AND_QUEUE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[4]) then
  redis.call('XADD', KEYS[3], '*', 'k', 'failed', 'd', ARGV[5])
  redis.call('EXPIRE', KEYS[3], ARGV[6])
  return -1
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[3])
return 1
"""
# KEYS[1] claim key, KEYS[2] the job queue, KEYS[3] the stream; ARGV: the dispatch token, its
# job, a `failed` event's data, its stream's ttl s. Gives up a queued job no worker took: only
# while the claim is still the dispatch token (a worker that took it over replaced the token),
# so a reply is never both generated and failed. A worker that pops the job afterwards finds
# the failure as the stream's last event and does nothing.
_FAIL_UNCLAIMED = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('LREM', KEYS[2], 0, ARGV[2])
redis.call('XADD', KEYS[3], '*', 'k', 'failed', 'd', ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[4])
return 1
"""
_DISCARD_FAILED = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last == 1 then
  local fields = last[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'k' and fields[i + 1] == 'failed' then
      redis.call('DEL', KEYS[1])
      return 1
    end
  end
end
return 0
"""


class RedisReplyStreams:
    """Reply streams in Redis (`redis.asyncio`).

    A client belongs to one event loop, so there is one per loop (the web server has one; the
    tests and `manage.py chat_worker` run others). A blocked XREAD holds one connection while it
    waits: a web process following N replies uses about N connections (see docs/scaling.md).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _client(self) -> Any:
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff
        from redis.exceptions import ConnectionError as RedisConnectionError

        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                # redis-py's defaults (a 5 s socket timeout, 100 connections that fail beyond)
                # would cut a blocked XREAD and refuse the 101st listener: a listener holds a
                # connection while it waits, so allow many and let a burst wait for one.
                # A Redis restart leaves every pooled connection dead: each is checked (PING)
                # before use once idle for REDIS_HEALTH_CHECK_INTERVAL_S, and a command that
                # meets a dropped one is sent again once on a fresh connection. Without them
                # every send answered 500 until each stale connection had failed once (52 s in
                # the fault probe of issue 23 item 9).
                pool = aioredis.BlockingConnectionPool.from_url(
                    self.url,
                    decode_responses=True,
                    max_connections=settings.CHAT_REDIS_MAX_CONNECTIONS,
                    timeout=30,
                    socket_timeout=_SOCKET_TIMEOUT_S,
                    health_check_interval=settings.REDIS_HEALTH_CHECK_INTERVAL_S,
                    retry=Retry(
                        ExponentialBackoff(cap=1.0, base=0.05),
                        retries=2,
                        supported_errors=(RedisConnectionError,),
                    ),
                )
                client = aioredis.Redis(connection_pool=pool)
                self._clients[loop] = client
        return client

    async def _script(self, script: str, keys: list[str], args: list[Any]) -> int:
        return int(await self._client().eval(script, len(keys), *keys, *args))

    async def claim(
        self, key: str, owner: str, ttl_s: float, *, replace: str | None = None
    ) -> Claimed | None:
        ms = max(1, int(ttl_s * 1000))
        reply = await self._client().eval(_CLAIM, 2, _claim_key(key), key, owner, ms, replace or "")
        if not int(reply[0]):
            return None
        if not reply[1]:
            return Claimed(last=None)
        event_id, flat = reply[1][0]  # a script's reply gives the entry's fields as a flat list
        return Claimed(last=_decode(event_id, dict(zip(flat[::2], flat[1::2], strict=True))))

    async def renew(self, key: str, owner: str, ttl_s: float) -> bool:
        ms = max(1, int(ttl_s * 1000))
        return bool(await self._script(_RENEW, [_claim_key(key)], [owner, ms]))

    async def release(self, key: str, owner: str) -> None:
        await self._script(_RELEASE, [_claim_key(key)], [owner])

    async def holder(self, key: str) -> str | None:
        return cast(str | None, await self._client().get(_claim_key(key)))

    async def append(
        self, key: str, kind: str, data: dict[str, Any], *, ttl_s: float | None
    ) -> str:
        fields = {"k": kind, "d": json.dumps(data, ensure_ascii=False)}
        if ttl_s is None:
            return cast(str, await self._client().xadd(key, fields))
        async with self._client().pipeline(transaction=False) as pipe:
            pipe.xadd(key, fields)
            pipe.expire(key, max(1, int(ttl_s)))
            event_id, _ = await pipe.execute()
        return cast(str, event_id)

    async def read(self, key: str, after: str, *, block_s: float) -> list[StreamEvent]:
        block_ms = max(1, int(min(block_s, _SOCKET_TIMEOUT_S / 2) * 1000))
        reply = await self._client().xread({key: after}, block=block_ms)
        if not reply:
            return []
        # redis-py gives a list [[key, entries]] (RESP2) or a dict {key: [entries]} (RESP3).
        entries = reply[0][1] if isinstance(reply, list) else next(iter(reply.values()))[0]
        return [_decode(event_id, fields) for event_id, fields in entries]

    async def last(self, key: str) -> StreamEvent | None:
        entries = await self._client().xrevrange(key, count=1)
        return _decode(*entries[0]) if entries else None

    async def discard_failed(self, key: str) -> bool:
        return bool(await self._script(_DISCARD_FAILED, [key], []))

    # The `chat` workers' job queue and heartbeats (chat.services.reply_worker).

    async def claim_and_queue(
        self,
        key: str,
        owner: str,
        ttl_s: float,
        queue: str,
        job: str,
        *,
        max_queued: int,
        busy: dict[str, Any],
        stream_ttl_s: int,
    ) -> int:
        """Take the claim if nobody holds it and, in the same step, append `job` to `queue`:
        1. 0 when the claim is held. -1 when `queue` holds `max_queued` jobs already: nothing
        is queued and the stream ends with a `failed` event carrying `busy`."""
        ms = max(1, int(ttl_s * 1000))
        busy_data = json.dumps(busy, ensure_ascii=False)
        return await self._script(
            _CLAIM_AND_QUEUE,
            [_claim_key(key), queue, key],
            [owner, ms, job, max_queued, busy_data, stream_ttl_s],
        )

    async def fail_unclaimed(
        self, key: str, token: str, queue: str, job: str, data: dict[str, Any], *, ttl_s: int
    ) -> bool:
        """Take `job` off `queue` and end the stream with a `failed` event carrying `data`, if
        the claim is still `token` (no worker took the job); True when it did."""
        failed = json.dumps(data, ensure_ascii=False)
        return bool(
            await self._script(
                _FAIL_UNCLAIMED, [_claim_key(key), queue, key], [token, job, failed, ttl_s]
            )
        )

    async def queue_depth(self, queue: str) -> int:
        return int(await self._client().llen(queue))

    async def next_job(self, queue: str, *, block_s: float) -> str | None:
        """The oldest job of `queue`, taken off it; None when none came within `block_s`."""
        reply = await self._client().blpop([queue], timeout=max(1, round(block_s)))
        return cast(str, reply[1]) if reply else None

    async def mark_alive(self, key: str, value: str, ttl_s: float) -> None:
        await self._client().set(key, value, px=max(1, int(ttl_s * 1000)))

    async def forget(self, key: str) -> None:
        await self._client().delete(key)

    async def keys_like(self, pattern: str) -> list[str]:
        return [key async for key in self._client().scan_iter(match=pattern, count=1000)]


def _decode(event_id: str, fields: dict[str, str]) -> StreamEvent:
    return StreamEvent(id=event_id, kind=fields["k"], data=json.loads(fields["d"]))


# --- In memory (one process) ----------------------------------------------------------------


@dataclass
class _MemoryStream:
    events: list[StreamEvent] = field(default_factory=list)
    expires_at: float = 0.0
    # Readers waiting for the next append: (their loop, their future). Woken thread-safely, as
    # the test process runs the server's loop and its own in different threads.
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list
    )


class MemoryReplyStreams:
    """The same streams and claims in this process's memory (the embedded default)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[str, _MemoryStream] = {}
        self._claims: dict[str, tuple[str, float]] = {}
        self._next_id = 0

    def _purge(self, now: float) -> None:
        for key in [k for k, s in self._streams.items() if s.expires_at <= now and not s.waiters]:
            del self._streams[key]
        for key in [k for k, (_, until) in self._claims.items() if until <= now]:
            del self._claims[key]

    def _live_claim(self, key: str, now: float) -> str | None:
        held = self._claims.get(key)
        return held[0] if held is not None and held[1] > now else None

    async def claim(
        self, key: str, owner: str, ttl_s: float, *, replace: str | None = None
    ) -> Claimed | None:
        now = time.monotonic()
        with self._lock:
            self._purge(now)
            current = self._live_claim(key, now)
            if current is not None and (replace is None or current != replace):
                return None
            self._claims[key] = (owner, now + ttl_s)
            stream = self._streams.get(key)
            return Claimed(last=stream.events[-1] if stream is not None and stream.events else None)

    async def renew(self, key: str, owner: str, ttl_s: float) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._live_claim(key, now) != owner:
                return False
            self._claims[key] = (owner, now + ttl_s)
            return True

    async def release(self, key: str, owner: str) -> None:
        with self._lock:
            if self._live_claim(key, time.monotonic()) == owner:
                del self._claims[key]

    async def holder(self, key: str) -> str | None:
        with self._lock:
            return self._live_claim(key, time.monotonic())

    async def append(
        self, key: str, kind: str, data: dict[str, Any], *, ttl_s: float | None
    ) -> str:
        # A JSON round trip, as Redis does: readers never share mutable data with the writer.
        data = json.loads(json.dumps(data, ensure_ascii=False))
        now = time.monotonic()
        with self._lock:
            stream = self._stream(key, now)
            self._next_id += 1
            event = StreamEvent(id=str(self._next_id), kind=kind, data=data)
            stream.events.append(event)
            if ttl_s is not None:
                stream.expires_at = now + ttl_s
            waiters, stream.waiters = stream.waiters, []
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_wake, future)
            except RuntimeError:  # that reader's loop is closed
                continue
        return event.id

    def _stream(self, key: str, now: float) -> _MemoryStream:
        stream = self._streams.get(key)
        if stream is None or (stream.expires_at <= now and stream.events):
            stream = self._streams[key] = _MemoryStream(expires_at=now + 60)
        return stream

    async def read(self, key: str, after: str, *, block_s: float) -> list[StreamEvent]:
        after_n = int(after.split("-", 1)[0])
        loop = asyncio.get_running_loop()
        with self._lock:
            stream = self._stream(key, time.monotonic())
            found = [e for e in stream.events if int(e.id) > after_n]
            if found:
                return found
            future: asyncio.Future[None] = loop.create_future()
            stream.waiters.append((loop, future))
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout=block_s)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                if (loop, future) in stream.waiters:
                    stream.waiters.remove((loop, future))
        with self._lock:
            return [e for e in stream.events if int(e.id) > after_n]

    async def last(self, key: str) -> StreamEvent | None:
        with self._lock:
            stream = self._streams.get(key)
            if stream is None or not stream.events or stream.expires_at <= time.monotonic():
                return None
            return stream.events[-1]

    async def discard_failed(self, key: str) -> bool:
        with self._lock:
            stream = self._streams.get(key)
            if stream is None or not stream.events or stream.events[-1].kind != FAILED:
                return False
            stream.events.clear()
            stream.expires_at = time.monotonic() + 60
            return True


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


# --- Which one ------------------------------------------------------------------------------

_instances: dict[str, ReplyStreams] = {}
_instances_lock = threading.Lock()


def reply_streams() -> ReplyStreams:
    """The implementation `settings.CHAT_REPLY_STREAMS_URL` names (one instance per URL)."""
    url = settings.CHAT_REPLY_STREAMS_URL
    with _instances_lock:
        streams = _instances.get(url)
        if streams is None:
            streams = _instances[url] = _build(url)
    return streams


def _build(url: str) -> ReplyStreams:
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return MemoryReplyStreams()
    if scheme in ("redis", "rediss", "unix"):
        return RedisReplyStreams(url)
    raise ValueError(
        f"CHAT_REPLY_STREAMS_URL: unknown scheme {scheme!r} in {url!r} "
        "(expected memory:// or redis://host:port/db)"
    )


def uses_workers() -> bool:
    """True when replies are generated by `chat` workers (shared streams), False when the web
    process that received the utterance generates it (in-memory streams)."""
    return not isinstance(reply_streams(), MemoryReplyStreams)


async def gather_quietly(*aws: Awaitable[Any]) -> None:
    """Await clean-ups that must not hide the error being handled."""
    await asyncio.gather(*aws, return_exceptions=True)
