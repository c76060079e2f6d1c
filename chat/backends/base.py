"""What every adapter sees: a plain-value request and a plain-value backend spec.

Adapters never touch the ORM: `BackendSpec` copies what they need from a `chat.Backend` row, so
they can run on an event loop, in a thread or in a Celery task alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from chat.models import Backend

SPEAKERS = ("user", "system")


@dataclass(frozen=True)
class ChatRequest:
    """One call to a model: the scenario, the dialogue so far and the rendered system prompt."""

    skill: str  # skill key
    language: str  # zh | en | ja
    grounding: dict  # Sample.grounding shape
    # (speaker "user"|"system", text), oldest first; for a static run, the sample's context.
    history: list[tuple[str, str]]
    prompt: str  # the rendered system prompt (stored on the model Turn)


@dataclass(frozen=True)
class BackendSpec:
    """The plain values of a `chat.Backend` an adapter needs."""

    id: int | None
    name: str
    adapter: str
    config: dict[str, Any] = field(default_factory=dict)
    api_key_env: str = ""
    concurrency_limit: int = 4
    timeout_s: float = 60.0

    @classmethod
    def from_backend(cls, backend: Backend) -> BackendSpec:
        return cls(
            id=backend.pk,
            name=backend.name,
            adapter=backend.adapter,
            config=dict(backend.config or {}),
            api_key_env=backend.api_key_env,
            concurrency_limit=backend.concurrency_limit,
            timeout_s=backend.timeout_s,
        )

    @property
    def fingerprint(self) -> str:
        """Identifies the backend *and* its settings: an edited backend gets fresh limits."""
        payload = json.dumps(
            [self.id, self.adapter, self.config, self.concurrency_limit],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


class Adapter(Protocol):
    """Streams a reply as text chunks; raises `BackendError` on failure.

    `notes` collects non-fatal findings (malformed chunks skipped, …) for "test connection".
    """

    def stream(
        self, spec: BackendSpec, request: ChatRequest, *, notes: list[str]
    ) -> AsyncIterator[str]: ...
