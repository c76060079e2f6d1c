"""Calling a judge's backend: one prompt in, ``n`` sampled replies out (no ORM here).

- ``openai`` adapter: a non-streamed ``/chat/completions`` request carrying ``n``, the sampling
  parameters, ``response_format`` (a strict JSON schema, or ``json_object``) or vLLM's
  ``guided_json`` (the schema) and, for G-Eval, ``logprobs``/``top_logprobs``. A server that
  refuses ``response_format``/``guided_json`` (HTTP 400) is asked again without it once, and
  the caller is told so (vLLM versions, llama.cpp). Transient
  failures (connect errors, 429, 5xx) are retried with the runtime's backoff.
- any other adapter (``http``, ``transformers``, ``retrieval``): the streaming runtime
  (:func:`chat.backends.runtime.stream_text`) with the prompt as the system prompt and one user
  turn, called ``n`` times; log-probabilities only from a local ``transformers`` model, read by
  a forward pass at each answer value (``judges.local_geval``).

Every call goes through the backend's process-wide concurrency limiter, plus an optional
requests-per-second limit.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotation.rubric_spec import Question
from chat.backends.base import BackendSpec, ChatRequest
from chat.backends.errors import BackendError
from chat.backends.httpcommon import (
    SSL_CONTEXT,
    api_key,
    client_timeout,
    status_error,
    transport_error,
)
from chat.backends.limits import limiter_for
from chat.backends.openai_compat import completions_url
from chat.backends.runtime import backoff_delay, clean, stream_text

if TYPE_CHECKING:  # aiohttp loads where requests are sent, not in every process reading the URLs
    import aiohttp

MAX_REPLY_CHARS = 20_000


@dataclass
class Choice:
    text: str
    finish_reason: str | None = None
    refusal: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    # A local model's G-Eval candidates per question key: [{"token", "logprob"}, …] at the
    # position where the value starts (judges.local_geval).
    value_logprobs: dict[str, list[dict[str, Any]]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "refusal": self.refusal,
            "logprobs": self.logprobs,
        }
        if self.value_logprobs is not None:
            out["value_logprobs"] = self.value_logprobs
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Choice:
        return cls(
            text=data.get("text") or "",
            finish_reason=data.get("finish_reason"),
            refusal=data.get("refusal"),
            logprobs=data.get("logprobs"),
            value_logprobs=data.get("value_logprobs"),
        )


@dataclass
class Completion:
    choices: list[Choice]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "choices": [c.to_dict() for c in self.choices],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        usage = data.get("usage") or {}
        return cls(
            choices=[Choice.from_dict(c) for c in data.get("choices") or []],
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )


@dataclass(frozen=True)
class Params:
    """The request parameters that change an answer (and so are part of the cache key)."""

    n: int = 1
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    response_format: str = "none"  # none | json_schema | json_object
    attempt: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class RateLimiter:
    """At most ``rate`` request starts per second, shared by every chunk of the process that
    calls the same backend (worker threads each run their own event loop, so the slot is taken
    under a thread lock and only the sleep is awaited)."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


_rate_limiters: dict[tuple[int | None, float], RateLimiter] = {}
_rate_lock = threading.Lock()


def rate_limiter(backend_id: int | None, rate: float) -> RateLimiter:
    """The process-wide limiter of a backend at a rate."""
    with _rate_lock:
        limiter = _rate_limiters.get((backend_id, rate))
        if limiter is None:
            limiter = _rate_limiters[(backend_id, rate)] = RateLimiter(rate)
        return limiter


def _payload(
    spec: BackendSpec, system: str, user: str, params: Params, schema: dict[str, Any]
) -> dict[str, Any]:
    config = spec.config
    payload: dict[str, Any] = {
        **(config.get("extra_body") or {}),
        "model": config["model"],
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "stream": False,
    }
    if params.n > 1:
        payload["n"] = params.n
    for key in ("temperature", "max_tokens", "seed"):
        value = getattr(params, key)
        if value is not None:
            payload[key] = value
    if params.logprobs:
        payload["logprobs"] = True
        payload["top_logprobs"] = params.top_logprobs
    if params.response_format == "json_schema":
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "judgement", "strict": True, "schema": schema},
        }
    elif params.response_format == "json_object":
        payload["response_format"] = {"type": "json_object"}
    elif params.response_format == "guided_json":
        # vLLM's guided decoding (an "extra_body" field of its OpenAI-compatible server, merged
        # into the request's JSON): the reply is constrained to the judge's schema. Sent instead
        # of response_format, which vLLM counts as a second, conflicting guide.
        payload["guided_json"] = schema
    return payload


def _completion(data: Any) -> Completion:
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise BackendError("the backend's answer has no 'choices' list", kind="bad_response")
    choices = []
    for raw in data["choices"]:
        message = (raw or {}).get("message") or {}
        logprobs = (raw.get("logprobs") or {}).get("content") if raw.get("logprobs") else None
        choices.append(
            Choice(
                text=clean(str(message.get("content") or ""))[:MAX_REPLY_CHARS],
                finish_reason=raw.get("finish_reason"),
                refusal=message.get("refusal") or None,
                logprobs=logprobs if isinstance(logprobs, list) else None,
            )
        )
    usage = data.get("usage") or {}
    return Completion(
        choices=choices,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


async def _openai_once(
    client: aiohttp.ClientSession, spec: BackendSpec, payload: dict[str, Any]
) -> Completion:
    import aiohttp

    secret = api_key(spec)
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    url = completions_url(spec.config["base_url"])
    try:
        async with client.post(url, json=payload, headers=headers) as response:
            body = await response.read()
            if response.status >= 400:
                raise status_error(response.status, body, response.headers, secret=secret)
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise transport_error(exc, url=url, timeout_s=spec.timeout_s, secret=secret) from None
    try:
        return _completion(json.loads(body))
    except ValueError:
        raise BackendError("the backend's answer is not JSON", kind="bad_response") from None


async def call_openai(
    client: aiohttp.ClientSession,
    spec: BackendSpec,
    *,
    system: str,
    user: str,
    params: Params,
    schema: dict[str, Any],
) -> Completion:
    payload = _payload(spec, system, user, params, schema)
    max_retries = int(spec.config.get("max_retries", 2))
    notes: list[str] = []
    attempt = 0
    while True:
        try:
            completion = await _openai_once(client, spec, payload)
            completion.notes = notes
            return completion
        except BackendError as exc:
            guide = next((k for k in ("response_format", "guided_json") if k in payload), None)
            if guide and exc.kind == "bad_response" and "HTTP 400" in str(exc):
                payload.pop(guide)
                notes.append(f"the backend refused {guide} ({exc}); asked without it")
                continue
            if not exc.retryable or attempt >= max_retries:
                raise
            await asyncio.sleep(backoff_delay(attempt, exc.retry_after))
            attempt += 1


async def call_streaming(
    spec: BackendSpec,
    *,
    system: str,
    user: str,
    language: str,
    params: Params,
    questions: Sequence[Question] = (),
) -> Completion:
    """Any adapter through the chat runtime, ``n`` times; the runtime holds the limiter.

    A local ``transformers`` judge asked for log-probabilities (G-Eval) then reads, per reply,
    the distribution over the scale's values where each value starts (``judges.local_geval``).
    """
    request = ChatRequest(
        skill="chitchat", language=language, grounding={}, history=[("user", user)], prompt=system
    )
    local_geval = params.logprobs and spec.adapter == "transformers" and bool(questions)
    choices = []
    notes: list[str] = []
    for _ in range(params.n):
        parts: list[str] = []
        async with aclosing(stream_text(spec, request)) as chunks:
            async for chunk in chunks:
                parts.append(chunk)
        choice = Choice(text="".join(parts)[:MAX_REPLY_CHARS], finish_reason="stop")
        if local_geval:
            from judges.local_geval import value_logprobs

            limiter = limiter_for(f"{spec.id}:{spec.fingerprint}", spec.concurrency_limit)
            async with limiter:
                choice.value_logprobs, found = await asyncio.to_thread(
                    value_logprobs,
                    spec.config["model_path"],
                    spec.config.get("device", "auto"),
                    request,
                    choice.text,
                    questions,
                )
            notes.extend(n for n in found if n not in notes)
        choices.append(choice)
    return Completion(choices=choices, notes=notes)


async def call(
    client: aiohttp.ClientSession | None,
    spec: BackendSpec,
    *,
    system: str,
    user: str,
    language: str,
    params: Params,
    schema: dict[str, Any],
    rate: RateLimiter | None = None,
    questions: Sequence[Question] = (),
) -> Completion:
    """One judged prompt; raises BackendError (kind and a message safe to show).
    ``questions`` (the asked ones) let a local model compute G-Eval log-probabilities."""
    if spec.adapter != "openai":
        if rate is not None:
            await rate.wait()
        return await call_streaming(
            spec,
            system=system,
            user=user,
            language=language,
            params=params,
            questions=questions,
        )
    assert client is not None
    limiter = limiter_for(f"{spec.id}:{spec.fingerprint}", spec.concurrency_limit)
    async with limiter:
        if rate is not None:
            await rate.wait()
        return await call_openai(
            client, spec, system=system, user=user, params=params, schema=schema
        )


def http_client(spec: BackendSpec) -> aiohttp.ClientSession:
    """A session for one chunk (call inside the running loop). aiohttp rather than httpx: at
    hundreds of concurrent JSON requests per second httpx's connection pool costs ~2 ms of CPU
    per request, aiohttp a fraction of that (benchmarks/judge_throughput.py)."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=max(spec.concurrency_limit, 1) * 2, ssl=SSL_CONTEXT)
    timeout = client_timeout(spec.timeout_s)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, json_serialize=json.dumps)


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
