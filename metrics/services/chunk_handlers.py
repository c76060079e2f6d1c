"""Chunk families scored outside the metric registry, registered by the apps above ``metrics``.

An LLM judge's run is a metric run whose chunks (family ``judge:<part>``) call a backend instead
of a scorer kernel; the ``judges`` app registers its handler here in ``AppConfig.ready`` so that
``metrics`` never imports it. A handler scores the chunk, writes its rows idempotently and marks
the chunk done with a compare-and-set, as
:func:`metrics.services.metric_run_scoring._write_chunk` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkHandler:
    # (chunk id, lease owner) → "done" | "skipped" | "cancelled" | "failed"; the owner ends the
    # chunk (core.jobs.job_finish(owner=…)) so an execution that lost its lease changes nothing.
    score: Callable[[int, str], str]
    queue: Callable[[int], str]  # chunk id → Celery queue name


_handlers: dict[str, ChunkHandler] = {}


def register(prefix: str, handler: ChunkHandler) -> None:
    _handlers[prefix] = handler


def handler_for(family: str) -> ChunkHandler | None:
    """The handler of a family ``<prefix>:<anything>``; None for registry families."""
    prefix, sep, _rest = family.partition(":")
    return _handlers.get(prefix) if sep else None
