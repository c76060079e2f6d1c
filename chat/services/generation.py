"""The one entry point for model replies: the chat page, static runs and "test connection".

```python
request = build_request(backend=b, skill="knowledge", language="zh", grounding=g, history=h)
async with aclosing(stream_reply(backend=b, request=request)) as chunks:
    async for chunk in chunks: ...          # raises BackendError
reply = complete_reply_sync(backend=b, request=request)   # Celery tasks, commands
```

Build the request (sync: it reads the backend's prompt templates) before entering async code.
`stream_reply` and `complete_reply` only read plain fields of the `Backend` row they are given;
the retrieval adapter loads its dataset through `sync_to_async`. Consume `stream_reply` with
`contextlib.aclosing` (or to the end) so its concurrency slot is released at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync

from chat.backends.base import SPEAKERS, BackendSpec, ChatRequest
from chat.backends.errors import BackendConfigError, BackendError
from chat.backends.prompts import render_prompt, template_for
from chat.backends.runtime import stream_text
from chat.models import Backend, Language
from core.jobs import abandon_when_stopped

__all__ = [
    "BackendError",
    "ChatRequest",
    "ConnectionResult",
    "Reply",
    "build_request",
    "complete_reply",
    "complete_reply_sync",
    "stream_reply",
    "backend_connection_check",
]


@dataclass(frozen=True)
class Reply:
    text: str
    latency_ms: int  # from the call to the last chunk, queueing for a slot included
    first_token_ms: int | None


@dataclass(frozen=True)
class ConnectionResult:
    ok: bool
    latency_ms: int
    reply: str = ""
    error: str = ""
    error_kind: str = ""
    notes: list[str] = field(default_factory=list)  # malformed chunks skipped, reply cut, …


def build_request(
    *,
    backend: Backend,
    skill: str,
    language: str,
    grounding: dict,
    history: list[tuple[str, str]],
) -> ChatRequest:
    """Render the backend's prompt for the skill and language; raises `BackendError("config")`."""
    if language not in Language.values:
        raise BackendError(
            f"unknown language '{language}' (expected one of: {', '.join(Language.values)})",
            kind="config",
        )
    for index, (speaker, text) in enumerate(history):
        if speaker not in SPEAKERS or not isinstance(text, str):
            raise BackendError(
                f'history[{index}]: expected ("user"|"system", text), got {speaker!r}',
                kind="config",
            )
    try:
        prompt = render_prompt(
            template_for(backend.config or {}, skill=skill, language=language),
            grounding=grounding or {},
            skill=skill,
            language=language,
        )
    except BackendConfigError as exc:
        raise BackendError(
            f"the prompt template of skill '{skill}' is broken: {exc.detail}", kind="config"
        ) from None
    return ChatRequest(
        skill=skill,
        language=language,
        grounding=grounding or {},
        history=list(history),
        prompt=prompt,
    )


async def stream_reply(*, backend: Backend, request: ChatRequest) -> AsyncGenerator[str, None]:
    """Stream the reply's text chunks (concurrency limit, timeout, retry inside)."""
    async with aclosing(stream_text(BackendSpec.from_backend(backend), request)) as chunks:
        async for chunk in chunks:
            yield chunk


async def _complete(spec: BackendSpec, request: ChatRequest, notes: list[str]) -> Reply:
    start = time.perf_counter()
    first: int | None = None
    parts: list[str] = []
    async with aclosing(stream_text(spec, request, notes=notes)) as chunks:
        async for chunk in chunks:
            if first is None:
                first = round((time.perf_counter() - start) * 1000)
            parts.append(chunk)
    return Reply(
        text="".join(parts),
        latency_ms=round((time.perf_counter() - start) * 1000),
        first_token_ms=first,
    )


async def complete_reply(*, backend: Backend, request: ChatRequest) -> Reply:
    """The whole reply with its latency; raises `BackendError`."""
    return await _complete(BackendSpec.from_backend(backend), request, [])


def complete_reply_sync(
    *, backend: Backend, request: ChatRequest, stop: threading.Event | None = None
) -> Reply:
    """`complete_reply` for sync code (Celery tasks, commands, sync views).

    `async_to_sync` rather than `asyncio.run`: database work the adapters do through
    `sync_to_async` then runs in this thread, inside the caller's transaction.

    With `stop` (a job's `Heartbeat.stopped`), the call is abandoned within a fraction of a
    second of the event being set and `core.jobs.JobCancelled` is raised: a cancelled job does not
    keep its worker busy until the backend's timeout (issue 23 item 7).
    """
    if stop is None:
        return async_to_sync(complete_reply)(backend=backend, request=request)
    return async_to_sync(_complete_unless_stopped)(backend, request, stop)


async def _complete_unless_stopped(
    backend: Backend, request: ChatRequest, stop: threading.Event
) -> Reply:
    return await abandon_when_stopped(complete_reply(backend=backend, request=request), stop)


def backend_connection_check(*, backend: Backend, message: str = "你好") -> ConnectionResult:
    """Send one chit-chat message; report latency and the reply, or the error."""
    start = time.perf_counter()
    notes: list[str] = []
    try:
        request = build_request(
            backend=backend,
            skill="chitchat",
            language="zh",
            grounding={},
            history=[("user", message)],
        )
        reply = async_to_sync(_complete)(BackendSpec.from_backend(backend), request, notes)
    except BackendError as exc:
        return ConnectionResult(
            ok=False,
            latency_ms=round((time.perf_counter() - start) * 1000),
            error=str(exc),
            error_kind=exc.kind,
            notes=notes,
        )
    return ConnectionResult(ok=True, latency_ms=reply.latency_ms, reply=reply.text, notes=notes)
