"""`manage.py create_rating_job --name N --campaign C --rubric msde [--raters 3]
[--sample-size 500 --sample-seed 1] [--open]`.

A pairwise (ACUTE-Eval) job: `--mode pairwise --questions acute --raters-per-pair 3
[--onboarding BETTER:WORSE ...] [--gold BETTER:WORSE ...]` (dialogue ids or external ids; the
better dialogue first); `--questions rubric --rubric likert` asks a rubric's dimensions
comparatively.

The same validation as the job pages and `POST /api/rating-jobs/`; `--open` assigns the accepted
dialogues to the expert pool at once.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from annotation.models import RatingJob
from annotation.selectors.rating import gold_dialogue
from annotation.selectors.rubrics import RubricLookupError, rubric_by_ref
from annotation.services.rating_assignments import RatingJobError
from annotation.services.rating_jobs import gold_pair_set, job_create, job_open
from chat.models import Campaign, Dialogue, StaticRun
from core.commands import WorkspaceCommand


class Command(WorkspaceCommand):
    help = "Create a rating job (dialogues × rubric × raters per dialogue), optionally open it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--campaign", required=True, help="campaign name")
        parser.add_argument("--rubric", help="KEY or KEY:VERSION, e.g. msde")
        parser.add_argument("--mode", choices=["absolute", "pairwise"], default="absolute")
        parser.add_argument(
            "--questions",
            choices=["acute", "rubric"],
            default="acute",
            help="pairwise: ACUTE-Eval's four questions, or --rubric's asked comparatively",
        )
        parser.add_argument("--raters-per-pair", type=int, help="pairwise: raters per pair")
        parser.add_argument(
            "--onboarding",
            nargs="*",
            default=[],
            metavar="BETTER:WORSE",
            help="pairwise: onboarding pairs with their known better side",
        )
        parser.add_argument(
            "--gold", nargs="*", default=[], metavar="BETTER:WORSE", help="pairwise: gold pairs"
        )
        parser.add_argument("--static-run", type=int, help="only the dialogues of this run")
        parser.add_argument("--raters", type=int, default=3, help="raters per dialogue")
        parser.add_argument("--experts", default="", help="comma-separated usernames (pool)")
        parser.add_argument("--quality", default="{}", help="rater-quality settings as JSON")
        parser.add_argument("--deadline-hours", type=int, default=72)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--sample-size",
            type=int,
            help="rate only this many dialogues per system, drawn after generation (seed 001)",
        )
        parser.add_argument("--sample-seed", type=int, default=0, help="seed of that draw")
        parser.add_argument(
            "--pair-sample-size",
            type=int,
            help="pairwise: ask about only this many comparisons, drawn at random with "
            "--sample-seed (for the human + judge ratings, manage.py ppi_pairwise)",
        )
        parser.add_argument("--open", action="store_true", help="open and assign now")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(name=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"--campaign: no campaign named {options['campaign']!r}")
        pairwise = options["mode"] == "pairwise"
        ref = options["rubric"]
        if pairwise and options["questions"] == "acute":
            if ref:
                raise CommandError(
                    "--rubric: not with --questions acute (its questions are ACUTE's)"
                )
            ref = "acute-eval"
        if not ref:
            raise CommandError("--rubric is required")
        try:
            rubric = rubric_by_ref(ref)
        except RubricLookupError as exc:
            raise CommandError(f"--rubric: {exc}") from exc
        raters_per_item = options["raters"]
        if options["raters_per_pair"] is not None:
            if not pairwise:
                raise CommandError("--raters-per-pair: only with --mode pairwise")
            raters_per_item = options["raters_per_pair"]
        if not pairwise and (options["onboarding"] or options["gold"]):
            raise CommandError("--onboarding/--gold pairs: only with --mode pairwise")
        static_run = None
        if options["static_run"] is not None:
            static_run = StaticRun.objects.filter(pk=options["static_run"]).first()
            if static_run is None:
                raise CommandError(f"--static-run: no static run {options['static_run']}")
        raters = None
        if options["experts"]:
            names = [n.strip() for n in options["experts"].split(",") if n.strip()]
            raters = list(User.objects.filter(username__in=names))
            missing = sorted(set(names) - {u.username for u in raters})
            if missing:
                raise CommandError(f"--experts: no user(s) {', '.join(missing)}")
        try:
            quality = json.loads(options["quality"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--quality is not valid JSON: {exc}") from exc
        try:
            with transaction.atomic():
                job = job_create(
                    name=options["name"],
                    campaign=campaign,
                    rubric=rubric,
                    created_by=None,
                    static_run=static_run,
                    raters_per_dialogue=raters_per_item,
                    mode=options["mode"],
                    raters=raters,
                    quality_settings=quality,
                    deadline_hours=options["deadline_hours"],
                    seed=options["seed"],
                    sample_size=options["sample_size"],
                    sample_seed=options["sample_seed"],
                    pair_sample_size=options["pair_sample_size"],
                )
                for purpose in ("onboarding", "gold"):
                    for index, spec in enumerate(options[purpose]):
                        better, worse = _pair(job, spec, f"--{purpose}[{index}]")
                        gold_pair_set(job=job, better=better, worse=worse, purpose=purpose)
                if options["open"]:
                    job = job_open(job=job)
        except RatingJobError as exc:
            raise CommandError(str(exc)) from exc
        assigned = job.assignments.count()
        self.stdout.write(
            f"created rating job {job.name!r} (id {job.pk}, {job.status}, {rubric}); "
            f"{assigned} assignment(s)"
        )


def _pair(job: RatingJob, spec: str, where: str) -> tuple[Dialogue, Dialogue]:
    """BETTER:WORSE → the two dialogues of the job's campaign (id or external id)."""
    refs = spec.split(":")
    if len(refs) != 2 or not all(r.strip() for r in refs):
        raise CommandError(f"{where}: expected BETTER:WORSE, got {spec!r}")
    found = [gold_dialogue(job, ref) for ref in refs]
    for ref, dialogue in zip(refs, found, strict=True):
        if dialogue is None:
            raise CommandError(f"{where}: no dialogue {ref!r} in campaign {job.campaign.name!r}")
    return found[0], found[1]  # type: ignore[return-value]  # None refused above
