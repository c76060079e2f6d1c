"""What the two HTTP adapters share: the API key, error mapping, and a redacting helper.

httpx (with the CLI it imports, about a tenth of a second) loads on the first request, inside the
functions that send one: the judges import this module's helpers at start-up, so a top-level import
would make every web process and management command pay for it (issue 14, item 3).
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import certifi

from chat.backends.base import BackendSpec
from chat.backends.errors import BackendError

if TYPE_CHECKING:
    import httpx

# Building an SSL context loads the CA bundle (tens of ms of CPU): once per process, not per call.
_SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())

ERROR_BODY_CHARS = 300


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


def timeout_for(spec: BackendSpec) -> httpx.Timeout:
    import httpx

    # `read` bounds each wait for bytes, so a stream that stalls mid-way times out too.
    return httpx.Timeout(spec.timeout_s, connect=min(spec.timeout_s, 10.0))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _error_detail(body: bytes) -> str:
    text = body[:4000].decode("utf-8", errors="replace")
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


async def raise_for_status(response: httpx.Response, *, secret: str | None) -> None:
    if response.status_code < 400:
        return
    body = await response.aread()
    detail = redact(_error_detail(body), secret)
    status = response.status_code
    message = f"the backend answered HTTP {status}" + (f": {detail}" if detail else "")
    if status == 429:
        raise BackendError(
            message, kind="rate_limited", retryable=True, retry_after=_retry_after(response)
        )
    if status >= 500:
        raise BackendError(message, kind="unavailable", retryable=True)
    if status in (401, 403):
        raise BackendError(message + " (check the API key)", kind="config")
    if status == 404:
        raise BackendError(message + " (check the URL and model name)", kind="config")
    raise BackendError(message, kind="bad_response")


@asynccontextmanager
async def open_stream(
    spec: BackendSpec, *, url: str, payload: dict, headers: dict[str, str], secret: str | None
) -> AsyncIterator[httpx.Response]:
    """POST `payload` and yield the streaming response; transport errors become BackendError."""
    import httpx

    try:
        async with (
            httpx.AsyncClient(timeout=timeout_for(spec), verify=_SSL_CONTEXT) as client,
            client.stream("POST", url, json=payload, headers=headers) as response,
        ):
            await raise_for_status(response, secret=secret)
            yield response
    except httpx.TimeoutException:
        raise BackendError(
            f"no answer from the backend within {spec.timeout_s:g} s", kind="timeout"
        ) from None
    except httpx.ConnectError as exc:
        raise BackendError(
            f"cannot connect to {_origin(url)}: {redact(str(exc), secret) or 'refused'}",
            kind="unavailable",
            retryable=True,
        ) from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise BackendError(
            f"the connection to {_origin(url)} broke: {redact(str(exc), secret)}",
            kind="unavailable",
            retryable=True,
        ) from None
    except httpx.HTTPError as exc:
        raise BackendError(
            f"request to {_origin(url)} failed: {redact(str(exc), secret)}", kind="unavailable"
        ) from None


def _origin(url: str) -> str:
    import httpx

    parts = httpx.URL(url)
    return f"{parts.scheme}://{parts.host}" + (f":{parts.port}" if parts.port else "")
