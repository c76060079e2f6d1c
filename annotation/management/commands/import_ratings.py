"""`python manage.py import_ratings FILE.csv --campaign NAME --rubric KEY[:VERSION]`."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.services.rating_import import RatingImportError, ratings_import
from core.commands import WorkspaceCommand, input_file


class Command(WorkspaceCommand):
    help = (
        "Import existing ratings from CSV (columns dialogue_id, rater, question, value, optional "
        "turn) into the campaign's imported rating job for the rubric, inline with a progress "
        "line on standard error. All-or-nothing: an error names the row (the header is row 1) "
        "and column and leaves the database unchanged."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="CSV file (UTF-8), or - for standard input")
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument(
            "--rubric", required=True, help="rubric key, latest version; or KEY:VERSION"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"]
        shown = [-1]

        def progress(fraction: float) -> None:
            """One line on standard error, rewritten in place as the import goes on."""
            percent = int(fraction * 100)
            if percent != shown[0]:
                shown[0] = percent
                self.stderr.write(f"\rimporting {path}: {percent}%", ending="")
                self.stderr.flush()

        with input_file(path) as fileobj:
            try:
                result = ratings_import(
                    fileobj=fileobj,
                    campaign_name=options["campaign"],
                    rubric_ref=options["rubric"],
                    progress=progress,
                )
            except RatingImportError as exc:
                raise CommandError(f"{path}: {exc}") from exc
            finally:
                if shown[0] >= 0:
                    self.stderr.write("")
        created = (
            f" (new expert accounts: {', '.join(result.new_raters)})" if result.new_raters else ""
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {result.ratings} ratings of {result.dialogues} dialogues by "
                f"{result.raters} raters into job '{result.job.name}'{created}."
            )
        )
        if result.incomplete:
            self.stdout.write(
                self.style.WARNING(
                    f"{result.incomplete} rated dialogue(s) miss answers: each missing answer "
                    "scores 0 under the rubric's fixed full score (counted as incomplete)."
                )
            )
