"""Queries about a study's pairwise votes: counts for its page, lists, the flagged leaks."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from chat.models import Campaign, Turn, Vote


@dataclass(frozen=True)
class VoteCounts:
    human: int
    judge: int
    identity_leaks: int
    sources: int

    @property
    def total(self) -> int:
        return self.human + self.judge


def vote_counts(*, campaign: Campaign) -> VoteCounts:
    """Human and judge votes, the identity-leak flagged ones and the sources, in one query."""
    counts = Vote.objects.filter(campaign=campaign).aggregate(
        human=Count("pk", filter=Q(voter_kind=Vote.VoterKind.HUMAN)),
        judge=Count("pk", filter=Q(voter_kind=Vote.VoterKind.JUDGE)),
        identity_leaks=Count("pk", filter=~Q(identity_leak="")),
        sources=Count("source", distinct=True),
    )
    return VoteCounts(**counts)


def vote_list(*, campaign: Campaign | None = None) -> QuerySet[Vote]:
    """Votes (of one study) with their systems and source, oldest first."""
    votes = Vote.objects.select_related("system_a", "system_b", "source", "campaign")
    if campaign is not None:
        votes = votes.filter(campaign=campaign)
    return votes.order_by("pk")


def identity_leak_list(*, campaign: Campaign) -> QuerySet[Vote]:
    """The study's votes flagged as identity leaks, with the compared replies to show why."""
    return (
        vote_list(campaign=campaign)
        .exclude(identity_leak="")
        .select_related("dialogue_a", "dialogue_b")
        .prefetch_related("dialogue_a__turns", "dialogue_b__turns")
    )


def leak_excerpt(vote: Vote, *, context: int = 60) -> str:
    """The compared reply around the identity word that flagged ``vote`` ("" when the votes
    came without their conversations)."""
    word = vote.identity_leak
    for dialogue in (vote.dialogue_a, vote.dialogue_b):
        if dialogue is None:
            continue
        for turn in dialogue.turns.all():
            if turn.speaker != Turn.Speaker.SYSTEM:
                continue
            folded = unicodedata.normalize("NFKC", turn.text).casefold()
            at = folded.find(word)
            if at >= 0:
                start, end = max(0, at - context), at + len(word) + context
                text = folded if len(folded) != len(turn.text) else turn.text
                prefix = "…" if start else ""
                suffix = "…" if end < len(text) else ""
                return f"{prefix}{text[start:end]}{suffix}"
    return ""
