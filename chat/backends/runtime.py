"""Timeout, concurrency limit, retry and output cap around any adapter's stream.

- Concurrency: at most `concurrency_limit` calls per backend in the process (`limits`).
- Timeout: `timeout_s` bounds the wait for the first chunk and every gap between two chunks,
  so a backend that stalls at any point fails with kind "timeout" (time spent queueing for a
  concurrency slot does not count).
- Retry: transient failures (connection errors, HTTP 429 and 5xx) are retried with exponential
  backoff, `max_retries` times, but only while nothing has been yielded: text already streamed
  to a worker is never repeated.
- Output is untrusted: control characters (NUL, …) are removed and the reply is cut at
  `max_chars`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing

from chat.backends import get_adapter
from chat.backends.base import BackendSpec, ChatRequest
from chat.backends.config import DEFAULT_MAX_CHARS, DEFAULT_MAX_RETRIES
from chat.backends.errors import BackendError
from chat.backends.limits import limiter_for

logger = logging.getLogger(__name__)

BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean(text: str) -> str:
    return _CONTROL.sub("", text)


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    delay = min(BACKOFF_BASE_S * 2**attempt, BACKOFF_MAX_S)
    if retry_after is not None:
        delay = min(max(delay, retry_after), BACKOFF_MAX_S)
    return delay


async def _timed(stream: AsyncIterator[str], timeout_s: float) -> AsyncGenerator[str, None]:
    async with aclosing(stream):  # type: ignore[type-var]  # adapters' streams are generators
        while True:
            try:
                async with asyncio.timeout(timeout_s):
                    chunk = await anext(stream)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise BackendError(
                    f"no answer from the backend within {timeout_s:g} s", kind="timeout"
                ) from None
            yield chunk


async def stream_text(
    spec: BackendSpec, request: ChatRequest, *, notes: list[str] | None = None
) -> AsyncGenerator[str, None]:
    """Stream a reply; raises `BackendError`. Consume it with `contextlib.aclosing`."""
    notes = [] if notes is None else notes
    adapter = get_adapter(spec.adapter)
    max_chars = int(spec.config.get("max_chars", DEFAULT_MAX_CHARS))
    max_retries = int(spec.config.get("max_retries", DEFAULT_MAX_RETRIES))
    limiter = limiter_for(f"{spec.id}:{spec.fingerprint}", spec.concurrency_limit)
    async with limiter:
        attempt = 0
        while True:
            sent = 0
            try:
                async with aclosing(
                    _timed(adapter.stream(spec, request, notes=notes), spec.timeout_s)
                ) as chunks:
                    async for chunk in chunks:
                        text = clean(chunk)[: max_chars - sent]
                        if text:
                            sent += len(text)
                            yield text
                        if sent >= max_chars:
                            notes.append(f"reply cut at {max_chars} characters")
                            break
            except BackendError as exc:
                if sent or not exc.retryable or attempt >= max_retries:
                    raise
                delay = backoff_delay(attempt, exc.retry_after)
                logger.info(
                    "backend %s: %s; retry %d in %.1f s", spec.name, exc, attempt + 1, delay
                )
                attempt += 1
                await asyncio.sleep(delay)
                continue
            except Exception as exc:
                # An adapter bug or an unforeseen library error: report it, never hang.
                logger.exception("backend %s failed unexpectedly", spec.name)
                raise BackendError(
                    f"the backend failed: {type(exc).__name__}", kind="unavailable"
                ) from exc
            if not sent:
                raise BackendError("the backend returned an empty reply", kind="bad_response")
            return
