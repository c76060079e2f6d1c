"""The `openai` adapter: any OpenAI-compatible `/chat/completions` endpoint, streamed.

vLLM, TGI, Ollama, llama.cpp's server and hosted APIs all speak this protocol. `base_url` is the
API root as the OpenAI SDK takes it (`http://host:8000/v1`); the adapter posts to
`{base_url}/chat/completions` with `stream: true` and reads the SSE chunks' `delta.content`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from chat.backends.base import BackendSpec, ChatRequest
from chat.backends.errors import BackendError
from chat.backends.httpcommon import api_key, body_lines, open_stream, redact
from chat.backends.sse import sse_data

logger = logging.getLogger(__name__)

GENERATION_KEYS = (
    "temperature",
    "top_p",
    "max_tokens",
    "presence_penalty",
    "frequency_penalty",
    "stop",
    "seed",
)
ROLES = {"user": "user", "system": "assistant"}


def chat_messages(request: ChatRequest) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": request.prompt}] if request.prompt else []
    messages += [{"role": ROLES[speaker], "content": text} for speaker, text in request.history]
    return messages


def completions_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/chat/completions"


def _excerpt(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _delta(chunk: Any) -> str | None:
    """The text of one chunk, `None` for a chunk that carries none (role, usage, finish)."""
    if not isinstance(chunk, dict):
        raise ValueError("not a JSON object")
    if "error" in chunk:
        error = chunk["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise BackendError(f"the backend reported an error: {message}", kind="bad_response")
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        raise ValueError("no 'choices' list")
    if not choices:
        return None  # the usage chunk some engines send last
    choice = choices[0]
    delta = choice.get("delta") if isinstance(choice, dict) else None
    if not isinstance(delta, dict):
        raise ValueError("no 'choices[0].delta' object")
    content = delta.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("'delta.content' is not a string")
    return content


class OpenAIAdapter:
    async def stream(
        self, spec: BackendSpec, request: ChatRequest, *, notes: list[str]
    ) -> AsyncIterator[str]:
        config = spec.config
        secret = api_key(spec)
        payload: dict[str, Any] = {
            **(config.get("extra_body") or {}),
            "model": config["model"],
            "messages": chat_messages(request),
            "stream": True,
        }
        payload.update({key: config[key] for key in GENERATION_KEYS if key in config})
        headers = {"Accept": "text/event-stream"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        url = completions_url(config["base_url"])
        malformed = 0
        produced = False
        async with open_stream(
            spec, url=url, payload=payload, headers=headers, secret=secret
        ) as response:
            content_type = response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                body = redact((await response.read())[:200].decode(errors="replace"), secret)
                raise BackendError(
                    f"expected a text/event-stream answer, got '{content_type or 'none'}': "
                    f"{_excerpt(body)}",
                    kind="bad_response",
                )
            lines = body_lines(response)
            # Closed explicitly: after `[DONE]` they are left unfinished, and a generator
            # collected after its event loop closed raises "no running event loop".
            async with aclosing(lines), aclosing(sse_data(lines)) as events:
                async for data in events:
                    if data.strip() == "[DONE]":
                        break
                    try:
                        text = _delta(json.loads(data))
                    except (ValueError, AttributeError) as exc:
                        # Skipped, not fatal: one broken chunk should not lose a whole reply.
                        malformed += 1
                        note = f"malformed chunk skipped ({exc}): {_excerpt(redact(data, secret))}"
                        logger.warning("backend %s: %s", spec.name, note)
                        if malformed <= 3:
                            notes.append(note)
                        continue
                    except BackendError as exc:
                        raise BackendError(redact(str(exc), secret), kind=exc.kind) from None
                    if text:
                        produced = True
                        yield text
        if malformed and not produced:
            raise BackendError(
                f"the backend sent {malformed} malformed chunk(s) and no text; first: "
                f"{notes[0] if notes else ''}",
                kind="bad_response",
            )
        if malformed > 3:
            notes.append(f"{malformed} malformed chunks skipped in all")
