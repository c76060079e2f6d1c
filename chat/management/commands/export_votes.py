"""`python manage.py export_votes --study NAME [--format fastchat|plain] [--csv] [--output F]`."""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from chat.models import Campaign
from chat.services import votes
from core.commands import WorkspaceCommand


class Command(WorkspaceCommand):
    help = (
        "Export a study's pairwise votes in the FastChat layout (JSON Lines with the compared "
        "conversations, or CSV) or the plain left,right,winner layout; the file imports unchanged."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--study", required=True, help="study (campaign) name")
        parser.add_argument("--format", choices=votes.FORMATS, default="fastchat")
        parser.add_argument("--csv", action="store_true", help="CSV instead of JSON Lines")
        parser.add_argument("--output", default="-", help="file to write (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(name=options["study"]).first()
        if campaign is None:
            raise CommandError(f"no study named {options['study']!r}")
        lines = votes.votes_export_lines(
            campaign=campaign, fmt=options["format"], as_csv=options["csv"]
        )
        if options["output"] == "-":
            for chunk in lines:
                sys.stdout.write(chunk)
            return
        with open(options["output"], "w", encoding="utf-8", newline="") as out:
            for chunk in lines:
                out.write(chunk)
