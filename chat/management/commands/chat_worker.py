"""`manage.py chat_worker [--concurrency N] [--ping]`: the live chat's reply generator."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from chat.services import reply_worker
from core.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Generate the live chat's replies that the web processes queue in Redis "
        "(CHAT_REPLY_STREAMS_URL=redis://…). SIGTERM or Ctrl-C stops it after the replies in "
        "progress (at most CHAT_WORKER_GRACE_S). With memory:// streams the web process "
        "generates its replies itself and this waits idle, so one Procfile serves both."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--concurrency",
            type=int,
            default=settings.CHAT_WORKER_CONCURRENCY,
            help="replies generated at once (default CHAT_WORKER_CONCURRENCY, %(default)s)",
        )
        parser.add_argument(
            "--ping",
            action="store_true",
            help="exit 0 if a chat worker on this host is alive (a health check), 1 otherwise",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["ping"]:
            self._ping()
            return
        sys.setswitchinterval(settings.GIL_SWITCH_INTERVAL_MS / 1000)  # see the setting
        try:
            asyncio.run(self._run(options["concurrency"]))
        except ServiceError as exc:
            raise CommandError(str(exc)) from None

    def _ping(self) -> None:
        try:
            alive = asyncio.run(reply_worker.workers_alive(host=socket.gethostname()))
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        if not alive:
            raise CommandError(f"no chat worker alive on {socket.gethostname()}", returncode=1)
        self.stdout.write(" ".join(alive))

    async def _run(self, concurrency: int) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        try:
            await reply_worker.reply_worker_run(
                concurrency=concurrency, stop=stop, grace_s=settings.CHAT_WORKER_GRACE_S
            )
        except reply_worker.ReplyWorkerUnavailable as exc:
            self.stdout.write(f"chat worker idle: {exc}")
            await stop.wait()
