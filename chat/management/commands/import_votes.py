"""`python manage.py import_votes FILE --study NAME`: pairwise votes, all-or-nothing."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from chat.models import Language, Vote
from chat.services import votes
from core.commands import WorkspaceCommand, input_file


class Command(WorkspaceCommand):
    help = (
        "Import pairwise votes (CSV or JSON Lines; FastChat/Chatbot Arena/MT-Bench or plain "
        "left,right,winner; docs/votes.md) into a study (a campaign, created as an imported one "
        "when new). Conversations in the file become the study's dialogues. Errors name the line "
        "and field and leave the database unchanged."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", help="vote file, or - for standard input")
        parser.add_argument("--study", required=True, help="study (campaign) name")
        parser.add_argument(
            "--voter-kind",
            choices=Vote.VoterKind.values,
            default=Vote.VoterKind.HUMAN,
            help="who voted, for records without a voter_kind field (default: human)",
        )
        parser.add_argument(
            "--language",
            choices=Language.values,
            default="",
            help="language of the conversations, for records without a language field",
        )
        parser.add_argument(
            "--skill", default="chitchat", help="skill of the imported conversations"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"]
        with input_file(path) as fileobj:
            try:
                result = votes.votes_import(
                    fileobj=fileobj,
                    campaign_name=options["study"],
                    label=Path(path).name if path != "-" else "stdin",
                    voter_kind=options["voter_kind"],
                    language=options["language"],
                    skill=options["skill"],
                )
            except votes.VoteImportError as exc:
                raise CommandError(f"{path}: {exc}") from exc
        notes = []
        if result.systems_created:
            notes.append(f"New systems: {', '.join(result.systems_created)}.")
        if result.identity_leaks:
            notes.append(
                f"{result.identity_leaks} votes flagged as identity leaks (kept out of rankings "
                "by default)."
            )
        if result.ignored_fields:
            notes.append(f"Fields not read: {', '.join(result.ignored_fields)}.")
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {result.votes} votes and {result.dialogues} conversations into study "
                f"'{result.campaign.name}'. " + " ".join(notes)
            ).rstrip()
        )
