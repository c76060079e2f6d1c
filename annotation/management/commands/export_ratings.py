"""`python manage.py export_ratings --job NAME [--campaign NAME] --what raw|dialogue|system
--format csv|jsonl --output FILE`."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.selectors.exports import FORMATS, WHATS, JobLookupError, export_lines, job_by_names
from core.commands import WorkspaceCommand


class Command(WorkspaceCommand):
    help = (
        "Export a rating job's raw ratings (one row per rater × dialogue × turn × question; "
        "raters by user name) or its dialogue- or system-level scores, as CSV or JSON Lines."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--job", help="rating job name")
        parser.add_argument(
            "--campaign", help="campaign name (checks --job, or picks the campaign's only job)"
        )
        parser.add_argument("--what", required=True, choices=WHATS)
        parser.add_argument("--format", required=True, choices=FORMATS, dest="fmt")
        parser.add_argument("--output", required=True, help="file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            job = job_by_names(campaign_name=options["campaign"], job_name=options["job"])
        except JobLookupError as exc:
            raise CommandError(str(exc)) from exc
        lines = export_lines(job=job, what=options["what"], fmt=options["fmt"])
        try:
            with open(options["output"], "w", encoding="utf-8", newline="") as out:
                out.writelines(lines)
        except OSError as exc:
            raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from exc
        self.stdout.write(
            self.style.SUCCESS(f"Wrote the {options['what']} export of job '{job.name}'.")
        )
