"""Server-sent events: turn a stream of lines into the `data` payloads of its events.

Follows the WHATWG event-stream rules the engines rely on: `:` lines are comments (keep-alives),
an event's `data:` lines are joined with newlines, a blank line dispatches the event, one
optional space after the colon is dropped, other fields (`event`, `id`, `retry`) are ignored.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator


async def sse_data(lines: AsyncIterable[str]) -> AsyncIterator[str]:
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
    if data:  # a stream closed without the final blank line
        yield "\n".join(data)
