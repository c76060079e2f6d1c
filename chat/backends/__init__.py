"""Model adapters behind one streaming interface (see `chat.services.generation`)."""

from __future__ import annotations

from chat.backends.base import Adapter, BackendSpec, ChatRequest
from chat.backends.errors import BackendConfigError, BackendError

__all__ = [
    "Adapter",
    "BackendConfigError",
    "BackendError",
    "BackendSpec",
    "ChatRequest",
    "get_adapter",
]


def get_adapter(name: str) -> Adapter:
    """The adapter for `Backend.adapter`; heavy ones (torch) are imported only when used."""
    if name == "openai":
        from chat.backends.openai_compat import OpenAIAdapter

        return OpenAIAdapter()
    if name == "http":
        from chat.backends.http_json import HttpJsonAdapter

        return HttpJsonAdapter()
    if name == "transformers":
        from chat.backends.transformers_local import TransformersAdapter

        return TransformersAdapter()
    if name == "retrieval":
        from chat.backends.retrieval import RetrievalAdapter

        return RetrievalAdapter()
    if name == "imported":
        raise BackendError(
            "this system's dialogues were imported; it cannot be called", kind="config"
        )
    raise BackendError(f"unknown adapter '{name}'", kind="config")
