"""`manage.py create_report --name N --metric-runs 3,4 --rating-jobs 2 --level system [--wait]`
(``--pairwise``: with the studies' pairwise votes; ``--rating-jobs`` may then be left out).

A correlation report on platform data, validated like the report form and `POST /api/reports/`;
the work runs on a worker (`--wait` follows it and prints where the files are). For scores that
are not in the platform, use `correlate` (two CSV files, no server).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from core.commands import WorkspaceCommand
from metrics.models import JobStatus, Report
from metrics.services.reports import ReportConfigError, report_create


def _ids(value: str, option: str) -> list[int]:
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise CommandError(f"{option}: expected comma-separated ids, got {value!r}") from exc


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class Command(WorkspaceCommand):
    help = (
        "Create a correlation report from metric runs and rating jobs, and/or (--pairwise) "
        "the studies' pairwise votes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--metric-runs", required=True, help="comma-separated run ids")
        parser.add_argument(
            "--rating-jobs",
            default="",
            help="comma-separated job ids (optional with --pairwise: the votes stand in)",
        )
        parser.add_argument("--level", default="system", choices=("turn", "dialogue", "system"))
        parser.add_argument("--grouping", default="skill", help="skill, dataset or none")
        parser.add_argument("--methods", default="pearson,spearman")
        parser.add_argument("--metrics", default="", help="subset of metric names (default all)")
        parser.add_argument("--dimensions", default="", help="subset of dimensions (default all)")
        parser.add_argument("--bootstrap", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--pairwise",
            action="store_true",
            help="add the Pairwise section: Bradley–Terry leaderboards of the studies' votes, "
            "agreement among voters and each metric's and judge's pairwise accuracy",
        )
        parser.add_argument(
            "--pairwise-voters", default="humans", help="humans, judge:<key> or all (ranking)"
        )
        parser.add_argument(
            "--judge-rule", default="per_order", help="per_order or conservative (ranking)"
        )
        parser.add_argument(
            "--include-identity-leaks",
            action="store_true",
            help="count votes whose replies name a model",
        )
        parser.add_argument("--wait", action="store_true", help="wait until it is computed")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds for --wait")

    def handle(self, *args: Any, **options: Any) -> None:
        config = {
            "metric_runs": _ids(options["metric_runs"], "--metric-runs"),
            "rating_jobs": _ids(options["rating_jobs"], "--rating-jobs"),
            "level": options["level"],
            "grouping": options["grouping"],
            "methods": _names(options["methods"]),
            "metrics": _names(options["metrics"]),
            "dimensions": _names(options["dimensions"]),
            "bootstrap": options["bootstrap"],
            "seed": options["seed"],
        }
        if options["pairwise"]:
            config["pairwise"] = {
                "voters": options["pairwise_voters"],
                "judge_rule": options["judge_rule"],
                "include_identity_leaks": options["include_identity_leaks"],
            }
        try:
            with transaction.atomic():
                report = report_create(name=options["name"], config=config)
        except ReportConfigError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"created report {report.name!r} (id {report.pk})")
        if not options["wait"]:
            return
        deadline = time.monotonic() + options["timeout"]
        while report.status in (JobStatus.PENDING, JobStatus.RUNNING):
            if time.monotonic() > deadline:
                raise CommandError(f"report {report.pk} is still {report.status}; is a worker up?")
            time.sleep(1.0)
            report = Report.objects.get(pk=report.pk)
        if report.status != JobStatus.DONE:
            raise CommandError(f"report {report.pk} {report.status}: {report.error}")
        self.stdout.write(f"done: files in {report.files_dir}")
