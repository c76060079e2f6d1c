"""`python manage.py export_dataset --name NAME [--output FILE]`: generic JSONL (stdout default)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from chat.selectors import datasets as selectors
from chat.services import datasets as services
from core.commands import WorkspaceCommand, write_lines


class Command(WorkspaceCommand):
    help = "Export a dataset as generic JSONL (re-importable with --format jsonl)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--name", required=True, help="dataset name")
        parser.add_argument("--output", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = selectors.dataset_get(name=options["name"])
        if dataset is None:
            raise CommandError(f"no dataset named '{options['name']}'")
        lines = services.dataset_export_lines(dataset=dataset)
        write_lines(lines, options["output"], self.stdout)
        if options["output"] is not None:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Exported {dataset.sample_count} samples to {options['output']}."
                )
            )
