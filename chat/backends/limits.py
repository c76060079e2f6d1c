"""Per-backend concurrency limits that hold across event loops and threads of one process.

An `asyncio.Semaphore` belongs to one event loop, but the sync callers (Celery tasks, commands,
"test connection" from a sync view) each run their own loop through `async_to_sync`, possibly
in several threads at once. `SlotLimiter` keeps its count under a `threading.Lock` and wakes a
waiter on *its* loop with `call_soon_threadsafe`, so one limit covers every caller.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType


@dataclass(eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    granted: bool = False


@dataclass(eq=False)
class SlotLimiter:
    limit: int
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _in_use: int = 0
    _waiters: deque[_Waiter] = field(default_factory=deque)

    @property
    def in_use(self) -> int:
        return self._in_use

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._in_use < self.limit and not self._waiters:
                self._in_use += 1
                return
            waiter = _Waiter(loop=loop, future=loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter.future
        except BaseException:
            with self._lock:
                if not waiter.granted:
                    self._waiters.remove(waiter)
                    raise
            # The slot was handed over while we were being cancelled: pass it on.
            self.release()
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                try:
                    waiter.loop.call_soon_threadsafe(_wake, waiter.future)
                except RuntimeError:  # the waiter's loop is closed: it waits no more
                    continue
                waiter.granted = True  # the slot moves to the waiter; _in_use is unchanged
                return
            self._in_use -= 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_registry: dict[str, SlotLimiter] = {}
_registry_lock = threading.Lock()


def limiter_for(key: str, limit: int) -> SlotLimiter:
    """The process-wide limiter of a backend; `key` includes its settings (see fingerprint)."""
    with _registry_lock:
        limiter = _registry.get(key)
        if limiter is None or limiter.limit != limit:
            limiter = _registry[key] = SlotLimiter(limit=limit)
        return limiter
