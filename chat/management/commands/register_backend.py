"""`manage.py register_backend --name N --adapter openai --config '{"base_url": …}' [--test]`.

The same validation as the backend pages and `POST /api/backends/`; `--test` then sends one message
and prints the latency and the reply (or the error), as "test connection" does.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from chat.backends import BackendConfigError
from chat.models import Backend
from chat.services import backends as services
from chat.services.generation import backend_connection_check
from core.commands import WorkspaceCommand


class Command(WorkspaceCommand):
    help = "Register a model backend (the API key only as the name of an environment variable)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--adapter", required=True, choices=[a.value for a in Backend.Adapter])
        parser.add_argument("--config", default="{}", help="adapter settings as JSON")
        parser.add_argument("--api-key-env", default="", help="NAME of the env variable")
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--timeout", type=float, default=60.0, help="seconds")
        parser.add_argument("--description", default="")
        parser.add_argument("--test", action="store_true", help="send one message afterwards")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = json.loads(options["config"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--config is not valid JSON: {exc}") from exc
        try:
            backend = services.backend_create(
                name=options["name"],
                adapter=options["adapter"],
                config=config,
                api_key_env=options["api_key_env"],
                concurrency_limit=options["concurrency"],
                timeout_s=options["timeout"],
                description=options["description"],
            )
        except BackendConfigError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"registered backend {backend.name!r} (id {backend.pk})")
        if options["test"]:
            result = backend_connection_check(backend=backend)
            if not result.ok:
                raise CommandError(f"test failed after {result.latency_ms} ms: {result.error}")
            self.stdout.write(f"test ok in {result.latency_ms} ms: {result.reply}")
