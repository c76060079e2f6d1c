"""The reply streams' contract, on both implementations, and the chat path staying async."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.urls import URLPattern, get_resolver

from chat.services.reply_streams import (
    FAILED,
    Claimed,
    MemoryReplyStreams,
    RedisReplyStreams,
    ReplyStreams,
    _build,
)

REDIS = settings.CELERY_BROKER_URL if settings.CELERY_BROKER_URL.startswith("redis") else None


@pytest.fixture(params=["memory", "redis"])
def streams(request: pytest.FixtureRequest) -> Iterator[ReplyStreams]:
    if request.param == "memory":
        yield MemoryReplyStreams()
        return
    if REDIS is None:
        pytest.skip("no Redis configured (CELERY_BROKER_URL=redis://…)")
    yield RedisReplyStreams(REDIS)


def _key() -> str:
    return f"test-{uuid.uuid4().hex}:reply:1"


def test_of_many_claims_racing_for_one_utterance_exactly_one_wins(streams):
    key = _key()

    async def race() -> list[bool]:
        claims = await asyncio.gather(*(streams.claim(key, f"o{i}", 5) for i in range(20)))
        return [claim is not None for claim in claims]

    won = asyncio.run(race())
    assert won.count(True) == 1


def test_a_claim_comes_with_the_streams_last_event_in_the_same_step(streams):
    key = _key()

    async def flow() -> list[object]:
        fresh = await streams.claim(key, "first", 5)
        await streams.append(key, "chunk", {"t": "你"}, ttl_s=60)
        await streams.append(key, "chunk", {"t": "好"}, ttl_s=60)
        await streams.release(key, "first")
        cut_off = await streams.claim(key, "second", 5)
        refused = await streams.claim(key, "third", 5)
        return [fresh, cut_off and (cut_off.last.kind, cut_off.last.data), refused]

    assert asyncio.run(flow()) == [Claimed(last=None), ("chunk", {"t": "好"}), None]


def test_a_claim_expires_is_handed_over_only_by_its_holder_and_released_by_its_owner(streams):
    key = _key()

    async def flow() -> list[object]:
        steps: list[object] = []
        steps.append(await streams.claim(key, "queued:1", 0.2) is not None)
        steps.append(await streams.claim(key, "worker", 5, replace="queued:other") is not None)
        steps.append(await streams.claim(key, "worker", 5, replace="queued:1") is not None)
        steps.append(await streams.holder(key))
        await streams.release(key, "someone-else")
        steps.append(await streams.holder(key))
        steps.append(await streams.renew(key, "someone-else", 5))
        await streams.release(key, "worker")
        steps.append(await streams.holder(key))
        steps.append(await streams.claim(key, "short", 0.2) is not None)
        await asyncio.sleep(0.4)
        steps.append(await streams.holder(key))  # expired: a dead generator's claim lapses
        steps.append(await streams.claim(key, "next", 5) is not None)
        return steps

    assert asyncio.run(flow()) == [
        True,
        False,
        True,
        "worker",
        "worker",
        False,
        None,
        True,
        None,
        True,
    ]


def test_a_reader_gets_each_event_after_its_cursor_once_and_waits_for_new_ones(streams):
    key = _key()

    async def flow() -> tuple[list[str], list[str], list[str], object]:
        first = await streams.append(key, "chunk", {"t": "你"}, ttl_s=60)
        await streams.append(key, "chunk", {"t": "好"}, ttl_s=60)
        everything = await streams.read(key, "0", block_s=1)
        after_first = await streams.read(key, first, block_s=1)

        async def later() -> None:
            await asyncio.sleep(0.2)
            await streams.append(key, "saved", {"turn": 1}, ttl_s=60)

        writer = asyncio.create_task(later())
        waited = await streams.read(key, everything[-1].id, block_s=5)
        await writer
        last = await streams.last(key)
        return (
            [e.data["t"] for e in everything],
            [e.data["t"] for e in after_first],
            [e.kind for e in waited],
            last.kind if last else None,
        )

    assert asyncio.run(flow()) == (["你", "好"], ["好"], ["saved"], "saved")


def test_only_a_failed_stream_is_discarded_for_a_retry(streams):
    key = _key()

    async def flow() -> list[object]:
        await streams.append(key, "chunk", {"t": "a"}, ttl_s=60)
        steps: list[object] = [await streams.discard_failed(key)]
        await streams.append(key, FAILED, {"kind": "timeout", "detail": "x"}, ttl_s=60)
        steps.append(await streams.discard_failed(key))
        steps.append(await streams.last(key))
        steps.append(await streams.discard_failed(key))  # a second retry finds nothing
        return steps

    assert asyncio.run(flow()) == [False, True, None, False]


def test_the_implementation_is_chosen_by_configuration():
    assert isinstance(_build("memory://"), MemoryReplyStreams)
    assert isinstance(_build("redis://127.0.0.1:6379/5"), RedisReplyStreams)
    with pytest.raises(ValueError, match="CHAT_REPLY_STREAMS_URL"):
        _build("kafka://somewhere")


# The crowdworker's chat: every request of a turn. A sync view here runs on a thread of its own
# per request under ASGI and opens a database connection of its own: the queueing the issue
# measured. Adding a chat URL means adding it here.
CHAT_PATH = {
    "live-dialogue",
    "live-send",
    "live-stream",
    "live-retry",
    "live-grounding",
    "live-submit",
}


def test_every_view_on_the_chat_path_is_async():
    patterns = {
        view.name: view
        for top in get_resolver().url_patterns
        for view in _flatten(top)
        if view.name in CHAT_PATH
    }
    assert set(patterns) == CHAT_PATH
    sync = sorted(
        name for name, p in patterns.items() if not asyncio.iscoroutinefunction(p.callback)
    )
    assert sync == [], f"sync views on the chat path: {sync}"


def _flatten(pattern):
    if isinstance(pattern, URLPattern):
        yield pattern
        return
    for inner in pattern.url_patterns:
        yield from _flatten(inner)
