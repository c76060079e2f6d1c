"""`manage.py create_campaign --name N --skills knowledge --backends A,B --datasets D --activate`.

The same validation as the campaign pages and `POST /api/campaigns/`; prints the invite link.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import transaction
from django.urls import reverse

from chat.models import Backend, Campaign, Dataset
from chat.services import campaigns as services
from core.commands import WorkspaceCommand
from core.errors import ServiceError


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class Command(WorkspaceCommand):
    help = "Create a campaign over registered backends and datasets, optionally open it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument(
            "--mode", default="interactive", choices=[m.value for m in Campaign.Mode]
        )
        parser.add_argument("--skills", required=True, help="comma-separated skill keys")
        parser.add_argument("--backends", required=True, help="comma-separated backend names")
        parser.add_argument("--datasets", default="", help="comma-separated dataset names")
        parser.add_argument("--aliases", default="", help="comma-separated blind aliases")
        parser.add_argument(
            "--options",
            default="{}",
            help='other campaign settings as JSON, e.g. {"max_turns": 10, "quota_per_cell": 20}',
        )
        parser.add_argument("--activate", action="store_true", help="open it to workers")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="for the link")

    def handle(self, *args: Any, **options: Any) -> None:
        backends = []
        for name in _names(options["backends"]):
            backend = Backend.objects.filter(name=name).first()
            if backend is None:
                raise CommandError(f"--backends: no backend named {name!r}")
            backends.append(backend)
        datasets = []
        for name in _names(options["datasets"]):
            dataset = Dataset.objects.filter(name=name).first()
            if dataset is None:
                raise CommandError(f"--datasets: no dataset named {name!r}")
            datasets.append(dataset)
        try:
            extra = json.loads(options["options"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--options is not valid JSON: {exc}") from exc
        if not isinstance(extra, dict):
            raise CommandError("--options must be a JSON object")
        try:
            with transaction.atomic():
                campaign = services.campaign_create(
                    name=options["name"],
                    mode=options["mode"],
                    skills=_names(options["skills"]),
                    backends=backends,
                    datasets=datasets,
                    created_by=None,
                    aliases=_names(options["aliases"]) or None,
                    **extra,
                )
                if options["activate"]:
                    campaign = services.campaign_activate(campaign=campaign)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        except TypeError as exc:
            raise CommandError(f"--options: {exc}") from exc
        link = options["base_url"].rstrip("/") + reverse(
            "chat:campaign-join", args=[campaign.invite_token]
        )
        self.stdout.write(
            f"created campaign {campaign.name!r} (id {campaign.pk}, {campaign.status})"
        )
        self.stdout.write(f"invite link: {link}?worker_id=<worker id>")
