"""uvicorn serving the real ASGI app in a thread of the test process (for the chat tests)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from django.db import connection
from django.urls import get_resolver


class ServerThread:
    """uvicorn serving `config.asgi.application` on a free loopback port, in a thread."""

    def __init__(self) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        config = uvicorn.Config(
            "config.asgi:application", host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        # Import every view now (the URLconf pulls in scipy, torch, …): on a busy machine the
        # first request would otherwise spend the browser's whole timeout importing.
        get_resolver().url_patterns  # noqa: B018
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(20)


def drop_other_connections() -> None:
    """Close connections the server's threads left open to the test database, so that the
    flush after the test and the final DROP DATABASE are not blocked by them."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
