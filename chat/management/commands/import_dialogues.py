"""`python manage.py import_dialogues FILE.jsonl --campaign NAME`: all-or-nothing."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from chat.services import dialogue_io
from core.commands import WorkspaceCommand, input_file


class Command(WorkspaceCommand):
    help = (
        "Import dialogues from JSON Lines (docs/dialogues.md) into a campaign, created with mode "
        "'imported' when new. Errors name the line and field and leave the database unchanged."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="JSON Lines file to import, or - for standard input")
        parser.add_argument("--campaign", required=True, help="campaign name")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"]
        with input_file(path) as fileobj:
            try:
                result = dialogue_io.dialogues_import(
                    fileobj=fileobj, campaign_name=options["campaign"], created_by=None
                )
            except dialogue_io.DialogueImportError as exc:
                raise CommandError(f"{path}: {exc}") from exc
        created = (
            f" New systems: {', '.join(result.systems_created)}." if result.systems_created else ""
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {result.dialogues} dialogues ({result.turns} turns) into campaign "
                f"'{result.campaign.name}'.{created}"
            )
        )
