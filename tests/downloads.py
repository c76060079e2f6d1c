"""Reading a streamed download in a test that uses Django's synchronous test client.

Exports stream through async iterators (ASGI is the server model, `core.http.stream_lines`), so
the sync client hands back an async iterator; this collects it. Its batches are read with
`sync_to_async(thread_sensitive=True)`, which `async_to_sync` runs on the test's own thread: the
test's database connection and transaction."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse


def streamed_bytes(response: StreamingHttpResponse) -> bytes:
    """The whole body of a streamed response, sync or async."""
    if not response.is_async:
        return b"".join(response.streaming_content)  # type: ignore[arg-type]

    async def collect() -> bytes:
        return b"".join([part async for part in response.streaming_content])  # type: ignore[union-attr]

    return async_to_sync(collect)()
