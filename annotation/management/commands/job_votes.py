"""`manage.py job_votes --job NAME [--format csv|jsonl]`: a pairwise job's votes.

A = the dialogue shown on the left; `excluded_reason` says why quality control keeps a vote
out of the analyses ("" = counted). The campaign's votes of every source: `export_votes`.
"""

from __future__ import annotations

import csv
import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import RatingJob
from annotation.selectors.pairwise import pairwise_vote_row, pairwise_votes
from core.commands import WorkspaceCommand

COLUMNS = (
    "id",
    "item",
    "question",
    "system_a",
    "system_b",
    "dialogue_a",
    "dialogue_b",
    "outcome",
    "voter",
    "reason",
    "excluded_reason",
    "voted_at",
)


class Command(WorkspaceCommand):
    help = "List a pairwise rating job's votes (CSV or JSON Lines)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--job", required=True, help="the job's name")
        parser.add_argument("--format", choices=["csv", "jsonl"], default="csv")

    def handle(self, *args: Any, **options: Any) -> None:
        job = RatingJob.objects.filter(name=options["job"]).first()
        if job is None:
            raise CommandError(f"--job: no rating job named {options['job']!r}")
        if not job.is_pairwise:
            raise CommandError(f"--job: {job.name!r} is not a pairwise job")
        rows = [pairwise_vote_row(v) for v in pairwise_votes(job).order_by("pk")]
        if options["format"] == "jsonl":
            for row in rows:
                self.stdout.write(json.dumps(row, ensure_ascii=False))
            return
        writer = csv.DictWriter(self.stdout, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
