"""What the HTTP adapters and the LLM judges share: the API key, the HTTP client, error mapping,
the body's lines, and a redacting helper.

The client is aiohttp (as the judges'): a chat worker parses every token of every reply, and
aiohttp's C parser costs a fraction of httpx's CPU per streamed reply (docs/scaling.md). It loads
on the first request, inside the functions that send one: the judges import this module's helpers
at start-up, so a top-level import would make every web process and management command pay for
it (issue 14, item 3).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import certifi

from chat.backends.base import BackendSpec
from chat.backends.errors import BackendError

if TYPE_CHECKING:
    import aiohttp

# Building an SSL context loads the CA bundle (tens of ms of CPU): once per process, not per call.
SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())

ERROR_BODY_CHARS = 300
# An error answer is read up to this much (its message is cut to ERROR_BODY_CHARS anyway).
ERROR_BODY_BYTES = 4000


def api_key(spec: BackendSpec) -> str | None:
    """The key from the environment variable the backend names, read at call time."""
    if not spec.api_key_env:
        return None
    value = os.environ.get(spec.api_key_env)
    if not value:
        raise BackendError(
            f"the environment variable {spec.api_key_env} named for the API key is not set "
            "on the server",
            kind="config",
        )
    return value


def redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def client_timeout(timeout_s: float) -> aiohttp.ClientTimeout:
    """`timeout_s` bounds the connection (at most 10 s) and each wait for bytes, so a stream that
    stalls mid-way times out too; a long reply that keeps streaming does not."""
    import aiohttp

    return aiohttp.ClientTimeout(total=None, sock_connect=min(timeout_s, 10.0), sock_read=timeout_s)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _error_detail(body: bytes) -> str:
    text = body[:ERROR_BODY_BYTES].decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:ERROR_BODY_CHARS]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:ERROR_BODY_CHARS]
    return str(data)[:ERROR_BODY_CHARS]


def status_error(
    status: int, body: bytes, headers: Mapping[str, str], *, secret: str | None
) -> BackendError:
    """What an HTTP error answer means for the platform (kind, retry, the backend's message)."""
    detail = redact(_error_detail(body), secret)
    message = f"the backend answered HTTP {status}" + (f": {detail}" if detail else "")
    if status == 429:
        return BackendError(
            message, kind="rate_limited", retryable=True, retry_after=_retry_after(headers)
        )
    if status >= 500:
        return BackendError(message, kind="unavailable", retryable=True)
    if status in (401, 403):
        return BackendError(message + " (check the API key)", kind="config")
    if status == 404:
        return BackendError(message + " (check the URL and model name)", kind="config")
    return BackendError(message, kind="bad_response")


def transport_error(
    exc: Exception, *, url: str, timeout_s: float, secret: str | None
) -> BackendError:
    """An aiohttp exception (or a timeout) as a BackendError."""
    import aiohttp

    if isinstance(exc, TimeoutError):
        return BackendError(f"no answer from the backend within {timeout_s:g} s", kind="timeout")
    detail = redact(str(exc), secret)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return BackendError(
            f"cannot connect to {_origin(url)}: {detail or 'refused'}",
            kind="unavailable",
            retryable=True,
        )
    if isinstance(
        exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError | aiohttp.ClientOSError
    ):
        return BackendError(
            f"the connection to {_origin(url)} broke: {detail or type(exc).__name__}",
            kind="unavailable",
            retryable=True,
        )
    return BackendError(
        f"request to {_origin(url)} failed: {detail or type(exc).__name__}", kind="unavailable"
    )


# The connection pool that calls inside `kept_connections` share; None elsewhere (each call then
# opens its own connection).
_pool: ContextVar[aiohttp.ClientSession | None] = ContextVar("model_connections", default=None)
# Idle connections are closed after this long: under uvicorn's 5 s (what vLLM and most
# OpenAI-compatible servers run), so a connection the server is about to close is not reused
# for a POST, which aiohttp does not retry (RFC 9112, 9.3.1).
KEEPALIVE_S = 4.0
# A stream's reader stops at its own end marker (`[DONE]`), which can arrive before the HTTP body's
# end (the chunked body's last frame, sent after it, often in a packet of its own). aiohttp closes
# a connection released before its body ended instead of pooling it, so a kept-alive connection
# survived a turn only when both arrived together: a race the network or a busy machine loses.
# The body's rest is read for up to this long (and STREAM_END_MAX_BYTES) before the release; a
# server still sending after that has its connection closed, as before.
STREAM_END_WAIT_S = 1.0
STREAM_END_MAX_BYTES = 64 * 1024


@asynccontextmanager
async def kept_connections() -> AsyncIterator[None]:
    """Share one pool of kept-alive connections to the model servers among the calls made
    inside (the tasks started inside included): the chat worker's life. A new connection per
    turn costs a TCP handshake and, to a hosted API, a TLS handshake: one to three round trips
    and milliseconds of CPU before the model even sees the utterance."""
    import aiohttp

    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=SSL_CONTEXT, limit=0, keepalive_timeout=KEEPALIVE_S)
    )
    token = _pool.set(session)
    try:
        yield
    finally:
        _pool.reset(token)
        await session.close()


@asynccontextmanager
async def open_stream(
    spec: BackendSpec, *, url: str, payload: dict, headers: dict[str, str], secret: str | None
) -> AsyncIterator[aiohttp.ClientResponse]:
    """POST `payload` and yield the streaming response; transport errors, while connecting or
    while the body is read, become BackendError. Inside `kept_connections` the connection comes
    from its pool, elsewhere it is opened for this call."""
    import aiohttp

    try:
        async with AsyncExitStack() as stack:
            session = _pool.get()
            if session is None:
                session = await stack.enter_async_context(
                    aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=SSL_CONTEXT))
                )
            response = await stack.enter_async_context(
                session.post(
                    url, json=payload, headers=headers, timeout=client_timeout(spec.timeout_s)
                )
            )
            if response.status >= 400:
                body = await response.content.read(ERROR_BODY_BYTES)
                raise status_error(response.status, body, response.headers, secret=secret)
            yield response
            if _pool.get() is not None:
                await _read_to_end(response)
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise transport_error(exc, url=url, timeout_s=spec.timeout_s, secret=secret) from None


async def _read_to_end(response: aiohttp.ClientResponse) -> None:
    """Read what is left of a body whose reader has what it wanted, so that its kept-alive
    connection goes back to the pool (see STREAM_END_WAIT_S). The reply is complete already: a
    body that does not end soon, or breaks, only costs its connection."""
    import aiohttp

    content = response.content
    left = STREAM_END_MAX_BYTES
    try:
        async with asyncio.timeout(STREAM_END_WAIT_S):
            while left > 0 and not content.at_eof():
                data = await content.readany()
                if not data:
                    break
                left -= len(data)
    except (TimeoutError, aiohttp.ClientError):
        pass


async def body_lines(response: aiohttp.ClientResponse) -> AsyncIterator[str]:
    """The body's lines as they arrive, decoded, without their ends (LF, CRLF or CR), as SSE and
    NDJSON read them. (Split here rather than with aiohttp's `readline`, which refuses a line
    longer than its buffer.)"""
    pending = b""
    async for data in response.content.iter_any():
        pending += data
        if b"\r" in pending:
            # A CR at the very end may be the first half of a CRLF: it waits for the next bytes.
            held = b"\r" if pending.endswith(b"\r") else b""
            pending = pending[: len(pending) - len(held)]
            pending = pending.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            *complete, pending = pending.split(b"\n")
            pending += held
        else:
            *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line.decode("utf-8", errors="replace")
    if pending.rstrip(b"\r"):
        yield pending.rstrip(b"\r").decode("utf-8", errors="replace")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
