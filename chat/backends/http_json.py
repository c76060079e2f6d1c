"""The `http` adapter: the platform's own JSON protocol for research models (docs/backends.md).

Request: `POST {url}` with `{"skill", "language", "grounding", "history": [{"speaker", "text"}],
"prompt", "params"}`. Answer, by content type: `application/json` `{"text": "..."}`;
`application/x-ndjson` lines of `{"delta": "..."}`; or `text/event-stream` events whose data is
`{"delta": "..."}` (`[DONE]` optional). `{"error": "..."}` in place of text is an error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from chat.backends.base import BackendSpec, ChatRequest
from chat.backends.errors import BackendError
from chat.backends.httpcommon import api_key, body_lines, open_stream, redact
from chat.backends.sse import sse_data

PARAM_KEYS = ("temperature", "top_p", "max_tokens")
ACCEPT = "application/x-ndjson, text/event-stream;q=0.9, application/json;q=0.8"


def protocol_payload(spec: BackendSpec, request: ChatRequest) -> dict[str, Any]:
    return {
        "skill": request.skill,
        "language": request.language,
        "grounding": request.grounding,
        "history": [{"speaker": speaker, "text": text} for speaker, text in request.history],
        "prompt": request.prompt,
        "params": {key: spec.config[key] for key in PARAM_KEYS if key in spec.config},
    }


def _excerpt(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _field(message: Any, name: str, raw: str) -> str:
    """`message[name]` as text, or BackendError naming what was wrong."""
    if not isinstance(message, dict):
        raise BackendError(f"expected a JSON object, got: {_excerpt(raw)}", kind="bad_response")
    if "error" in message:
        raise BackendError(
            f"the backend reported an error: {_excerpt(str(message['error']))}",
            kind="bad_response",
        )
    value = message.get(name)
    if not isinstance(value, str):
        raise BackendError(
            f"expected a string in '{name}', got: {_excerpt(raw)}", kind="bad_response"
        )
    return value


def _parse(raw: str, name: str) -> str:
    try:
        message = json.loads(raw)
    except ValueError:
        raise BackendError(f"not JSON: {_excerpt(raw)}", kind="bad_response") from None
    return _field(message, name, raw)


class HttpJsonAdapter:
    async def stream(
        self, spec: BackendSpec, request: ChatRequest, *, notes: list[str]
    ) -> AsyncIterator[str]:
        secret = api_key(spec)
        headers = {"Accept": ACCEPT}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        async with open_stream(
            spec,
            url=spec.config["url"],
            payload=protocol_payload(spec, request),
            headers=headers,
            secret=secret,
        ) as response:
            content_type = response.headers.get("content-type", "").split(";")[0].strip()
            try:
                if content_type == "application/json":
                    raw = (await response.read()).decode("utf-8", errors="replace")
                    yield _parse(raw, "text")
                elif content_type in ("application/x-ndjson", "application/jsonl"):
                    lines = body_lines(response)
                    async with aclosing(lines):
                        async for line in lines:
                            if line.strip():
                                yield _parse(line, "delta")
                elif content_type == "text/event-stream":
                    lines = body_lines(response)
                    async with aclosing(lines), aclosing(sse_data(lines)) as events:
                        async for data in events:
                            if data.strip() == "[DONE]":
                                break
                            yield _parse(data, "delta")
                else:
                    raise BackendError(
                        "expected application/json, application/x-ndjson or text/event-stream, "
                        f"got '{content_type or 'no content type'}'",
                        kind="bad_response",
                    )
            except BackendError as exc:
                raise BackendError(redact(str(exc), secret), kind=exc.kind) from None
