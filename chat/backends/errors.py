"""The one error type every adapter raises; `str(exc)` is safe to show to a user."""

from __future__ import annotations

from typing import Literal

from core.errors import ServiceError

ErrorKind = Literal["timeout", "unavailable", "rate_limited", "bad_response", "config"]


class BackendError(Exception):
    """A failed model call.

    `kind` is one of "timeout", "unavailable", "rate_limited", "bad_response", "config";
    `retryable` marks transient failures (connect errors, HTTP 429 and 5xx) that the runtime
    retries with backoff as long as nothing has been streamed yet. Messages are written in
    English for the researcher or worker and never contain a secret.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.retryable = retryable
        self.retry_after = retry_after


class BackendConfigError(ServiceError):
    """A backend configuration refused by validation; `field` names the offending key."""

    location_style = "prefix"

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, field=field)
        self.detail = message
