"""`python manage.py ppi_pairwise --job NAME --judge judge:KEY[-vN] --question Q [--alpha A]
[--json]`: a pairwise job's human-only and human + judge Bradley–Terry ratings (issue 28)."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.models import RatingJob
from core.commands import WorkspaceCommand
from core.errors import ServiceError
from metrics.services.ppi_pairwise import pairwise_ppi


class Command(WorkspaceCommand):
    help = (
        "Prediction-powered Bradley–Terry ratings of a pairwise job that rated a random subset "
        "of its comparisons (pair_sample_size), with a judge that voted on all of them: per "
        "system the human-only and human + judge ratings with intervals and the effective "
        "sample size."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--job", required=True, help="pairwise rating job name")
        parser.add_argument("--judge", required=True, help="judge:<key> or judge:<key>-v<N>")
        parser.add_argument("--question", required=True, help="the job's question key")
        parser.add_argument("--alpha", type=float, default=0.1, help="0.1: 90 %% intervals")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        job = RatingJob.objects.select_related("rubric").filter(name=options["job"]).first()
        if job is None:
            raise CommandError(f"--job: no rating job named {options['job']!r}")
        try:
            result = pairwise_ppi(
                job=job,
                judge=options["judge"],
                question=options["question"],
                alpha=options["alpha"],
            )
        except ServiceError as exc:
            raise CommandError(
                f"--{(exc.field or 'job').replace('_', '-')}: {exc.message}"
            ) from None
        if options["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False, indent=1))
            return
        design = result["design"]
        agreement = result["agreement"]
        self.stdout.write(
            f"job '{job.name}', {result['question']}, judge {result['judge']}: "
            f"{result['n_labelled']} of {result['n_comparisons']} comparisons with human votes "
            f"(drawn {design['drawn']} of {design['population']}, π = {design['inclusion']:.3f}); "
            f"judge agrees with the humans on {agreement['matched']}/{agreement['total']}"
        )
        for note in result["notes"]:
            self.stdout.write(f"note: {note}")
        self.stdout.write("system\thuman_only [interval]\thuman+judge [interval]\teffective_n")
        for row in result["systems"]:
            human, both = row["human_only"], row["ppi"]
            n_eff = "—" if row["effective_n"] is None else f"{row['effective_n']:.1f}"
            self.stdout.write(
                f"{row['system']}\t{human['rating']:.0f} [{human['low']:.0f}, {human['high']:.0f}]"
                f"\t{both['rating']:.0f} [{both['low']:.0f}, {both['high']:.0f}]\t{n_eff}"
            )
