"""`python manage.py rank_pairwise --study NAME [--bootstrap N] [--seed S] [--question Q]
[--voters humans|judge:<key>|all] --output FILE.csv`: the Bradley–Terry leaderboard."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from chat.models import Campaign
from core.commands import WorkspaceCommand
from metrics.services import pairwise


class Command(WorkspaceCommand):
    help = (
        "Rank a study's systems by its pairwise votes (Bradley–Terry, ties half a win each way, "
        "Elo scale with mean 1000) with bootstrap or sandwich intervals and Arena rank "
        "intervals. Writes system,rating,lower,upper,rank,rank_lower,rank_upper,votes,se,elo "
        "(CSV), or the whole result with matrices and separations (--json)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--study", required=True, help="study (campaign) name")
        parser.add_argument("--bootstrap", type=int, default=1000, help="rounds (0 = sandwich)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--confidence", type=float, default=0.95)
        parser.add_argument(
            "--question", default=None, help='rubric question key ("" = overall votes)'
        )
        parser.add_argument("--voters", default="humans", help="humans, judge:<key>[-v<N>] or all")
        parser.add_argument(
            "--judge-rule",
            choices=pairwise.JUDGE_RULES,
            default="per_order",
            help="a judge's two orders as two votes, or one by MT-Bench's conservative rule",
        )
        parser.add_argument("--interval", choices=pairwise.INTERVALS, default="bootstrap")
        parser.add_argument("--anchor", default=None, help="SYSTEM=RATING: fix one system's rating")
        parser.add_argument(
            "--include-identity-leaks", action="store_true", help="count flagged votes too"
        )
        parser.add_argument(
            "--include-excluded", action="store_true", help="count quality-excluded votes too"
        )
        parser.add_argument("--json", action="store_true", help="write the whole result as JSON")
        parser.add_argument("--output", required=True, help="file to write, or - for stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(name=options["study"]).first()
        if campaign is None:
            raise CommandError(f"no study named {options['study']!r}")
        anchor = None
        if options["anchor"]:
            system, _, rating = options["anchor"].rpartition("=")
            try:
                anchor = {"system": system, "rating": float(rating)}
            except ValueError:
                raise CommandError("--anchor: expected SYSTEM=RATING, e.g. gpt-4=1200") from None
        try:
            board = pairwise.rank_pairwise(
                campaign_ids=[campaign.pk],
                voters=options["voters"],
                question=options["question"],
                rounds=options["bootstrap"],
                seed=options["seed"],
                confidence=options["confidence"],
                include_identity_leaks=options["include_identity_leaks"],
                include_excluded=options["include_excluded"],
                judge_rule=options["judge_rule"],
                interval=options["interval"],
                anchor=anchor,
            )
        except (pairwise.PairwiseConfigError, pairwise.PairwiseDataError) as exc:
            raise CommandError(str(exc)) from None
        text = (
            json.dumps(board, ensure_ascii=False, indent=1)
            if options["json"]
            else pairwise.leaderboard_csv(board)
        )
        if options["output"] == "-":
            self.stdout.write(text, ending="")
        else:
            Path(options["output"]).write_text(text, encoding="utf-8")
            left_out = ", ".join(f"{n} {why}" for why, n in board["left_out"].items() if n)
            self.stderr.write(
                f"{len(board['systems'])} systems from {board['votes']} votes written to "
                f"{options['output']}" + (f" (left out: {left_out})" if left_out else "")
            )
