"""`python manage.py rating_rounds --job ID [--rule width|separated|budget --round-size N
--first-round N (--target-width W | --budget B) [--run RUN --predictor METRIC]] [--next]`: set a
draft job's stopping rule, show where a job in rounds stands, draw its next round (issue 28)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.models import RatingJob
from core.commands import WorkspaceCommand
from core.errors import ServiceError
from metrics.services import ppi_rounds


class Command(WorkspaceCommand):
    help = (
        "Run a rating job in rounds: --rule sets a draft job's stopping rule (a target interval "
        "width per system, every adjacent pair of systems separated, or a budget of ratings); "
        "--next draws the next round where the intervals need it most and assigns it; without "
        "either, print the rule's progress and the projected ratings still needed."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--job", type=int, required=True, help="rating job id")
        parser.add_argument("--rule", choices=ppi_rounds.RULE_KINDS)
        parser.add_argument("--round-size", type=int, default=50)
        parser.add_argument("--first-round", type=int, default=20, help="per system")
        parser.add_argument("--target-width", type=float)
        parser.add_argument("--budget", type=int)
        parser.add_argument("--alpha", type=float, default=0.1)
        parser.add_argument("--question", default="overall")
        parser.add_argument("--run", type=int, action="append", default=[])
        parser.add_argument("--predictor", action="append", default=[])
        parser.add_argument("--next", action="store_true", help="draw the next round")

    def handle(self, *args: Any, **options: Any) -> None:
        job = RatingJob.objects.select_related("rubric").filter(pk=options["job"]).first()
        if job is None:
            raise CommandError(f"--job: no rating job {options['job']}")
        try:
            if options["rule"]:
                ppi_rounds.stopping_rule_set(
                    job=job,
                    kind=options["rule"],
                    round_size=options["round_size"],
                    first_round=options["first_round"],
                    target_width=options["target_width"],
                    budget=options["budget"],
                    alpha=options["alpha"],
                    question=options["question"],
                    run_ids=options["run"],
                    predictor=options["predictor"],
                )
                self.stdout.write(f"job {job.pk}: stopping rule set ({options['rule']})")
            if options["next"]:
                drawn = ppi_rounds.round_draw(job=job)
                self.stdout.write(
                    f"round {drawn.number}: "
                    + ", ".join(f"{s} +{m}" for s, m in sorted(drawn.counts.items()))
                )
                job.refresh_from_db()
            if job.stopping_rule:
                self._status(ppi_rounds.public_status(ppi_rounds.rounds_status(job=job)))
        except ServiceError as exc:
            raise CommandError(
                f"--{(exc.field or 'job').replace('_', '-')}: {exc.message}"
            ) from None

    def _status(self, status: dict[str, Any]) -> None:
        rule = status["rule"]
        self.stdout.write(
            f"rule {rule['kind']}: {'met' if status['met'] else 'not met'}, "
            f"progress {status['progress']:.0%}, still needed "
            f"{'—' if status['still_needed'] is None else status['still_needed']}, "
            f"rounds {len(status['rounds'])}, drawn {status['drawn']}"
        )
        for row in status["systems"]:
            if "estimate" in row:
                self.stdout.write(
                    f"{row['system']}\t{row['n']}/{row['population']}\t"
                    f"{row['estimate']:.3f} ± {row['width'] / 2:.3f}"
                )
        if status["blocked"]:
            self.stdout.write(status["blocked"])
