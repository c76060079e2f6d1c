"""The generator's chunk writer: batches a streaming reply's chunks, never delays its end."""

from __future__ import annotations

import asyncio
import time

from chat.services.replies import _ChunkWriter
from chat.services.reply_streams import MemoryReplyStreams


def _texts(streams: MemoryReplyStreams, key: str) -> list[str]:
    async def read() -> list[str]:
        return [event.data["t"] for event in await streams.read(key, "0", block_s=0.01)]

    return asyncio.run(read())


def test_chunks_arriving_within_the_interval_leave_as_one_append(settings):
    settings.CHAT_STREAM_BATCH_MS = 100
    streams, key = MemoryReplyStreams(), "reply:1"

    async def reply() -> None:
        writer = _ChunkWriter(streams, key)
        writer.add("陈")  # the first goes out at once: the worker sees the reply start
        await asyncio.sleep(0.01)
        for text in "凯歌导演":
            writer.add(text)
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.15)  # the batch leaves when the interval is up
        writer.add("的。")
        await writer.flush()

    asyncio.run(reply())
    assert _texts(streams, key) == ["陈", "凯歌导演", "的。"]


def test_the_last_chunks_leave_at_once_whatever_the_batch_is_doing(settings):
    # The last token arrives just after an append (a drain task is created but has not run, or
    # is between two appends): the flush must not let it wait out the interval.
    settings.CHAT_STREAM_BATCH_MS = 500
    streams, key = MemoryReplyStreams(), "reply:2"

    async def reply() -> float:
        writer = _ChunkWriter(streams, key)
        writer.add("你")
        await asyncio.sleep(0.01)  # appended; the next drain would wait ~490 ms
        writer.add("好")  # its drain task is created, not yet run
        started = time.perf_counter()
        await writer.flush()
        return time.perf_counter() - started

    took = asyncio.run(reply())
    assert _texts(streams, key) == ["你", "好"]
    assert took < 0.1, f"the flush waited {took * 1000:.0f} ms for the batch interval"
