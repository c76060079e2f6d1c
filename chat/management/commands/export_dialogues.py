"""`manage.py export_dialogues --campaign NAME [--static-run ID] [--status S …] --output FILE`."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from chat.management.options import campaign_and_static_run
from chat.models import Dialogue
from chat.services import dialogue_io
from core.commands import WorkspaceCommand, write_lines


class Command(WorkspaceCommand):
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
        campaign, static_run = campaign_and_static_run(
            campaign_name=options["campaign"], static_run_id=options["static_run"]
        )
        lines = dialogue_io.dialogue_export_lines(
            campaign=campaign, static_run=static_run, statuses=options["status"]
        )
        count = write_lines(lines, options["output"], self.stdout)
        if options["output"] is not None:
            self.stdout.write(
                self.style.SUCCESS(f"Exported {count} dialogues to {options['output']}.")
            )
