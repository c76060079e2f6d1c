"""`python manage.py export_human_scores --campaign NAME [--job NAME] --level dialogue|system
--output FILE.csv`: human scores per dialogue or per system, as the correlation studies read them.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.selectors.exports import (
    DIALOGUE_COLUMNS,
    SYSTEM_COLUMNS,
    JobLookupError,
    csv_lines,
    dialogue_rows,
    job_by_names,
    system_rows,
)
from core.commands import WorkspaceCommand


class Command(WorkspaceCommand):
    help = (
        "Write human scores to CSV: unit (dialogue external id or d<pk>; or the system name), "
        "skill, dimension (question key or overall), mean, std, n, ci_low, ci_high, and rank at "
        "system level. Bootstrap CIs are 95%, seeded."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--job", help="rating job name (needed when the campaign has several)")
        parser.add_argument("--level", required=True, choices=["dialogue", "system"])
        parser.add_argument("--output", required=True, help="CSV file to write")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
        parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            job = job_by_names(campaign_name=options["campaign"], job_name=options["job"])
        except JobLookupError as exc:
            raise CommandError(str(exc)) from exc
        seed, n_boot = options["seed"], options["n_boot"]
        if options["level"] == "dialogue":
            columns, rows = DIALOGUE_COLUMNS, dialogue_rows(job=job, seed=seed, n_boot=n_boot)
        else:
            columns, rows = SYSTEM_COLUMNS, system_rows(job=job, seed=seed, n_boot=n_boot)
        try:
            with open(options["output"], "w", encoding="utf-8", newline="") as out:
                out.writelines(csv_lines(columns, rows))
        except OSError as exc:
            raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Wrote {len(rows)} {options['level']}-level rows of job '{job.name}' "
                f"to {options['output']}."
            )
        )
