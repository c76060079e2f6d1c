"""The chat's database threads: where the async chat views and the reply engine run ORM code.

The database work of the chat's async views and of generation runs on a few threads of their
own whose connections stay open: the hot path never waits for a new connection, never queues
behind one thread-sensitive executor, and holds at most CHAT_DB_THREADS connections per process
however many requests are in flight. (Under ASGI a request's own thread is never reused, so each
would otherwise open and close a connection.) Used by `chat.views.live`, `chat.middleware` and
the reply engine (`chat.services.replies`).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.utils import translation

P = ParamSpec("P")
R = TypeVar("R")

_db_threads: ThreadPoolExecutor | None = None
_db_threads_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _db_threads
    with _db_threads_lock:
        if _db_threads is None:
            _db_threads = ThreadPoolExecutor(
                max_workers=settings.CHAT_DB_THREADS, thread_name_prefix="chat-db"
            )
        return _db_threads


def _run_with_connection(func: Callable[[], R]) -> R:
    """`func()` on this thread's persistent connection, reconnecting once if it was broken
    (database restarted, connection killed). Every caller is safe to re-run: reads, and the
    reply engine's writes, which are whole-or-nothing and report a second attempt (see
    `chat.services.replies._save`)."""
    try:
        return func()
    except (OperationalError, InterfaceError):
        connection.close()
        return func()


async def in_db_thread(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run sync ORM code for an async view or the generator (see the module docstring).

    With `CHAT_DB_THREADS = 0` it is Django's own `sync_to_async` (thread-sensitive): what tests
    inside a transaction need, since the chat threads' connections cannot see its rows."""
    language = translation.get_language()

    def call() -> R:
        # The request's language (LocaleMiddleware, a campaign's fixed language) is activated
        # in a thread-local that the copied context does not carry: activate it explicitly.
        with translation.override(language):
            return func(*args, **kwargs)

    if settings.CHAT_DB_THREADS <= 0:
        return await sync_to_async(call)()
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()  # the request's language and the like
    return await loop.run_in_executor(_executor(), ctx.run, _run_with_connection, call)
