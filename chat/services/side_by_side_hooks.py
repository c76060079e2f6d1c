"""The statistics a side-by-side campaign needs from an app above chat (decision XX).

Chat sits below metrics (docs/architecture.md), yet adaptive pairing and the campaign page's
leaderboard need the Bradley–Terry fit of `metrics.analysis.bradley_terry`. Metrics registers a
`RankingProvider` here in its `AppConfig.ready` (as judges register their chunk handler with
metrics); chat only calls it. Chat applies eq. 9 itself (`chat.pairing`), from its counts and
the provider's variances; without a provider, from the pairs' own variances, and the page
shows no leaderboard.

A provider receives the campaign's systems (backend ids) and its side-by-side votes as
``(system_a, system_b, outcome)`` with `chat.models.Vote.Outcome` values, identity leaks and
excluded votes already left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

VoteRow = tuple[int, int, str]


@dataclass(frozen=True)
class LeaderboardRow:
    system: int  # backend id
    rating: float
    lower: float
    upper: float
    rank: int
    rank_upper: int
    votes: int


@dataclass(frozen=True)
class AdjacentPair:
    higher: int  # backend ids, adjacent in rating order
    lower: int
    separated: bool  # their intervals no longer overlap
    votes_needed: int | None  # more votes expected to separate them (None: never, a zero gap)


@dataclass(frozen=True)
class Leaderboard:
    rows: tuple[LeaderboardRow, ...]  # best first
    adjacent: tuple[AdjacentPair, ...]
    total_votes: int
    interval: str  # how the intervals were computed, e.g. "sandwich 95%"


@dataclass(frozen=True)
class RankingProvider:
    # Eq. 9's Σ_aa per pair (smaller id first): the variance of one vote's outcome around the
    # fitted Bradley–Terry probability; None when the votes do not allow a fit yet (chat then
    # uses the pairs' own variances, `chat.pairing.pair_variances`).
    variances: Callable[[Sequence[int], Sequence[VoteRow]], dict[tuple[int, int], float] | None]
    # The leaderboard, or None when the votes do not allow one yet.
    leaderboard: Callable[[Sequence[int], Sequence[VoteRow]], Leaderboard | None]


_provider: RankingProvider | None = None


def register_ranking_provider(provider: RankingProvider) -> None:
    global _provider
    _provider = provider


def ranking_provider() -> RankingProvider | None:
    return _provider
