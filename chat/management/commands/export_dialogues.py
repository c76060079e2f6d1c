"""`manage.py export_dialogues --campaign NAME [--static-run ID] [--status S …] --output FILE`."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from chat.models import Dialogue, StaticRun
from chat.selectors.dialogues import campaign_get
from chat.services import dialogue_io


class Command(BaseCommand):
    help = "Export a campaign's dialogues as JSON Lines (docs/dialogues.md); re-importable."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--static-run", type=int, help="only the answers of this static run")
        parser.add_argument(
            "--status",
            action="append",
            choices=Dialogue.Status.values,
            help="only dialogues with this status (repeatable)",
        )
        parser.add_argument("--output", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_get(name=options["campaign"])
        if campaign is None:
            raise CommandError(f"no campaign named '{options['campaign']}'")
        static_run = None
        if options["static_run"] is not None:
            static_run = StaticRun.objects.filter(
                pk=options["static_run"], campaign=campaign
            ).first()
            if static_run is None:
                raise CommandError(
                    f"campaign '{campaign.name}' has no static run {options['static_run']}"
                )
        lines = dialogue_io.dialogue_export_lines(
            campaign=campaign, static_run=static_run, statuses=options["status"]
        )
        if options["output"] is None:
            for line in lines:
                self.stdout.write(line)
            return
        count = 0
        try:
            with open(options["output"], "w", encoding="utf-8", newline="\n") as out:
                for line in lines:
                    out.write(line + "\n")
                    count += 1
        except OSError as exc:
            raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from exc
        self.stdout.write(self.style.SUCCESS(f"Exported {count} dialogues to {options['output']}."))
