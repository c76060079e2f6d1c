"""`python manage.py import_dataset PATH --format lic2021 --name NAME --language zh [--skill …]`."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from chat.importers import PARSERS, DatasetImportError
from chat.models import Language
from chat.services import datasets as services
from core.commands import WorkspaceCommand, input_file


class Command(WorkspaceCommand):
    help = (
        "Import a dataset file (all-or-nothing). Formats are described in docs/datasets.md; "
        "errors name the line and field and leave the database unchanged."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="JSON Lines file to import, or - for standard input")
        parser.add_argument(
            "--format", required=True, choices=sorted(PARSERS), dest="source_format"
        )
        parser.add_argument("--name", required=True, help="unique dataset name")
        parser.add_argument(
            "--skill",
            help="skill key; required except for lic2021 (skill from subtrack) and jsonl lines "
            "that name their own skill",
        )
        parser.add_argument("--language", required=True, choices=Language.values)
        parser.add_argument("--description", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"]
        with input_file(path) as fileobj:
            try:
                dataset = services.dataset_import(
                    fileobj=fileobj,
                    name=options["name"],
                    source_format=options["source_format"],
                    language=options["language"],
                    skill=options["skill"],
                    description=options["description"],
                )
            except DatasetImportError as exc:
                raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {dataset.sample_count} samples into dataset '{dataset.name}'."
            )
        )
