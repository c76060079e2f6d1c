"""The Bradley–Terry statistics side-by-side campaigns ask for, registered with chat as its
ranking provider (`chat.services.side_by_side_hooks`, in `MetricsConfig.ready`, imported
only when first called): eq. 9's
variance per pair for adaptive pairing, and the campaign page's live leaderboard (sandwich
intervals, and per adjacent pair whether the intervals separate and how many more votes would
separate them, `bradley_terry.votes_to_separate`).

Votes arrive as chat stores them (`Vote.Outcome` values; A is the system shown left). Both
return None while the votes do not link every system (the fit would set unlinked groups
against each other by fiat).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from chat.services.side_by_side_hooks import (
    AdjacentPair,
    Leaderboard,
    LeaderboardRow,
    VoteRow,
)
from metrics.analysis import bradley_terry as bt
from metrics.analysis.side_by_side import pair_outcome_variances

_CODES = {"a": bt.A_WINS, "b": bt.B_WINS, "tie": bt.TIE, "both_bad": bt.BOTH_BAD}
CONFIDENCE = 0.95


def _counts(systems: Sequence[int], votes: Sequence[VoteRow]) -> bt.PairCounts | None:
    index = {system: position for position, system in enumerate(systems)}
    rows = [(index[a], index[b], _CODES[o]) for a, b, o in votes if a in index and b in index]
    if len(systems) < 2 or not rows:
        return None
    a, b, outcome = (np.array(column, dtype=int) for column in zip(*rows, strict=True))
    return bt.pair_counts(a, b, outcome, len(systems))


def side_by_side_variances(
    systems: Sequence[int], votes: Sequence[VoteRow]
) -> dict[tuple[int, int], float] | None:
    counts = _counts(systems, votes)
    if counts is None:
        return None
    try:
        fit = bt.fit_bradley_terry(counts.wins)
    except ValueError:  # the votes do not link every system yet
        return None
    variances = pair_outcome_variances(counts, fit.ratings)
    first, second = np.triu_indices(len(systems), k=1)
    out = {}
    for i, j, value in zip(first.tolist(), second.tolist(), variances.tolist(), strict=True):
        a, b = systems[i], systems[j]
        out[(a, b) if a < b else (b, a)] = float(value)
    return out


def side_by_side_leaderboard(
    systems: Sequence[int], votes: Sequence[VoteRow]
) -> Leaderboard | None:
    counts = _counts(systems, votes)
    if counts is None:
        return None
    try:
        result = bt.bradley_terry(counts, rounds=0, interval="sandwich", confidence=CONFIDENCE)
    except ValueError:
        return None
    order = np.argsort(-result.ratings, kind="stable").tolist()
    rows = tuple(
        LeaderboardRow(
            system=systems[i],
            rating=float(result.ratings[i]),
            lower=float(result.lower[i]),
            upper=float(result.upper[i]),
            rank=int(result.rank[i]),
            rank_upper=int(result.rank_upper[i]),
            votes=int(result.votes[i]),
        )
        for i in order
    )
    separations = bt.votes_to_separate(
        result.ratings, result.se, result.total_votes, confidence=CONFIDENCE
    )
    adjacent = tuple(
        AdjacentPair(
            higher=systems[s.higher],
            lower=systems[s.lower],
            separated=s.separated,
            votes_needed=s.votes_needed,
        )
        for s in separations
    )
    return Leaderboard(
        rows=rows,
        adjacent=adjacent,
        total_votes=result.total_votes,
        interval=f"sandwich {CONFIDENCE:.0%}",
    )
