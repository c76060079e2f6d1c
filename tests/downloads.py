"""Reading a streamed download in a test that uses Django's synchronous test client.

Exports stream through async iterators (ASGI is the server model, `core.http.stream_lines`), so
the sync client hands back an async iterator; this collects it. Its batches are read with
`sync_to_async(thread_sensitive=True)`, which `async_to_sync` runs on the test's own thread: the
test's database connection and transaction."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from typing import cast

from asgiref.sync import async_to_sync
from django.http import FileResponse, StreamingHttpResponse


def streamed_bytes(response: StreamingHttpResponse | FileResponse) -> bytes:
    """The whole body of a streamed response, sync or async."""
    if not response.is_async:
        return b"".join(cast(Iterable[bytes], response.streaming_content))
    content = cast(AsyncIterable[bytes], response.streaming_content)

    async def collect() -> bytes:
        return b"".join([part async for part in content])

    return async_to_sync(collect)()
