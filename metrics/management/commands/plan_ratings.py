"""`python manage.py plan_ratings --job ID --run RUN --predictor METRIC [--predictor ...]
--target-width W [--question Q] [--alpha A] [--estimates] [--json]`: how many human ratings a
rating job needs for intervals ``W`` wide, human-only vs with the predictor (issue 28)."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.models import RatingJob
from core.commands import WorkspaceCommand
from core.errors import ServiceError
from metrics.services import ppi


class Command(WorkspaceCommand):
    help = (
        "Plan a rating job's human ratings from its current ratings (the pilot): per system the "
        "ratings needed for a target interval width, human-only and prediction-powered with the "
        "predictor (a metric or judge of the runs; several --predictor: the mean of their "
        "z-scores). --estimates also prints the current human-only and human + predictor "
        "estimates."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--job", type=int, required=True, help="rating job id")
        parser.add_argument(
            "--run", type=int, action="append", required=True, help="metric run id (repeat)"
        )
        parser.add_argument(
            "--predictor", action="append", required=True, help="metric name (repeat: combine)"
        )
        parser.add_argument("--target-width", type=float, required=True)
        parser.add_argument("--question", default="overall", help="rubric question or overall")
        parser.add_argument("--alpha", type=float, default=0.1, help="0.1: 90 %% intervals")
        parser.add_argument("--estimates", action="store_true", help="print the estimates too")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        job = RatingJob.objects.select_related("rubric").filter(pk=options["job"]).first()
        if job is None:
            raise CommandError(f"--job: no rating job {options['job']}")
        try:
            predictor = ppi.predictor_check(run_ids=options["run"], metrics=options["predictor"])
            question = ppi.question_check(job=job, question=options["question"])
            alpha = ppi.alpha_check(options["alpha"])
            plan = ppi.ratings_plan(
                job=job,
                question=question,
                predictor=predictor,
                target_width=options["target_width"],
                alpha=alpha,
            )
            estimates = (
                ppi.ppi_estimates(job=job, question=question, predictor=predictor, alpha=alpha)
                if options["estimates"]
                else None
            )
        except ServiceError as exc:
            raise CommandError(
                f"--{(exc.field or 'job').replace('_', '-')}: {exc.message}"
            ) from None
        if options["json"]:
            body = {"plan": plan, "estimates": estimates}
            self.stdout.write(json.dumps(body, ensure_ascii=False, indent=1, default=str))
            return
        self.stdout.write(
            f"job {job.pk} '{job.name}', {question}, predictor {predictor.label}, "
            f"target width {plan['target_width']:g} ({round((1 - alpha) * 100)} % intervals)"
        )
        if plan["caveat"]:
            self.stdout.write(f"note: {plan['caveat']}")
        self.stdout.write("system\trated\tr\thuman_only\twith_predictor\tstill_needed\tsaving")
        for row in plan["systems"]:
            if row["refused"]:
                self.stdout.write(f"{row['system']}\t{row['rated']}\t{row['refused']}")
                continue
            saving = "—" if row["saving"] is None else f"{row['saving']:.0%}"
            rho = "—" if row["rho"] is None else f"{row['rho']:.2f}"
            with_predictor = "unreachable" if row["ppi"] is None else row["ppi"]
            still = "—" if row["still_needed_ppi"] is None else row["still_needed_ppi"]
            self.stdout.write(
                f"{row['system']}\t{row['rated']}\t{rho}\t{row['human_only']}\t"
                f"{with_predictor}\t{still}\t{saving}"
            )
        if estimates is not None:
            self._estimates(estimates)

    def _estimates(self, section: dict[str, Any]) -> None:
        if section["refused"]:
            self.stdout.write(f"estimates refused: {section['refused']}")
            return
        self.stdout.write("system\tn\thuman_only [interval]\thuman+predictor [interval]\tn_eff")
        for row in section["systems"]:
            if row["refused"]:
                self.stdout.write(f"{row['system']}\t{row['n']}\t{row['refused']}")
                continue
            human, both = row["human"], row["ppi"]
            both_text = (
                "—"
                if both is None
                else f"{both['estimate']:.3f} [{both['low']:.3f}, {both['high']:.3f}]"
            )
            n_eff = "—" if row.get("effective_n") is None else f"{row['effective_n']:.0f}"
            self.stdout.write(
                f"{row['system']}\t{row['n']}\t{human['estimate']:.3f} "
                f"[{human['low']:.3f}, {human['high']:.3f}]\t{both_text}\t{n_eff}"
            )
