"""Eq. 9's variance term for side-by-side pair choice, from a Bradley–Terry fit (no Django).

Chatbot Arena's active sampling (Chiang et al. 2024, §5, eq. 9) weighs pair a by
``sqrt(Σ_aa / n_a) − sqrt(Σ_aa / (n_a + 1))``. ``Σ_aa`` is the pair's share of the sandwich
meat: the mean squared residual ``(y − p_a)²`` of its votes (y ∈ {1, ½, 0} for the first
system winning, a tie or "both bad", losing) around the Bradley–Terry probability ``p_a`` of
the fitted ratings, as in `bradley_terry.active_sampling_weights`. The chat app applies eq. 9
itself (with its own counts, which include conversations still running), so it needs only
``Σ_aa``: an unseen pair gets ``p_a (1 − p_a)``, the variance of one decisive vote.
"""

from __future__ import annotations

import numpy as np

from metrics.analysis.bradley_terry import PairCounts, predicted_win_probability


def pair_outcome_variances(counts: PairCounts, ratings: np.ndarray) -> np.ndarray:
    """``Σ_aa`` of every pair i < j (row-major, as ``np.triu_indices(n, 1)`` orders them)."""
    n = counts.n_systems
    first, second = np.triu_indices(n, k=1)
    p = predicted_win_probability(ratings)[first, second]
    battles = counts.battles[first, second]
    residual = (
        counts.decisive[first, second] * (1.0 - p) ** 2
        + counts.decisive[second, first] * p**2
        + counts.draws[first, second] * (0.5 - p) ** 2
    )
    seen = battles > 0
    return np.where(seen, residual / np.where(seen, battles, 1.0), p * (1.0 - p))
