"""Which two systems a side-by-side conversation compares (pure Python, no Django).

Two rules, as a side-by-side campaign says (`Campaign.pairing`):

* **uniform**: a pair with the fewest conversations so far, drawn uniformly among those tied,
  so the counts of all pairs never differ by more than one while conversations are created;
* **adaptive**: Chatbot Arena's active sampling (Chiang et al. 2024, §5, eq. 9),
  ``P(a) ∝ sqrt(Σ_aa / n_a) − sqrt(Σ_aa / (n_a + 1))``: the expected drop in pair a's standard
  error from one more vote, with ``n_a`` the pair's vote count and ``Σ_aa`` the variance of one
  vote's outcome. The variance comes from the Bradley–Terry fit of an app above chat when one
  is registered (`chat.services.side_by_side_hooks`); without it, `pair_variances` estimates it
  from the pair's own votes. An unseen pair (``n_a = 0``, where eq. 9 is infinite) gets
  ``sqrt(Σ_aa)``, the drop from "no estimate" to one vote, which puts it ahead of every seen
  pair of the same variance.

Chat sits below metrics (docs/architecture.md): this module is the rule, the statistics it may
be fed with live in `metrics.analysis.bradley_terry`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

Pair = tuple[int, int]  # two system ids, the smaller first

#: The variance of one vote on a pair with no votes yet: a fair coin, p(1 − p) at p = ½.
UNSEEN_VARIANCE = 0.25


def all_pairs(systems: Sequence[int]) -> list[Pair]:
    """Every unordered pair of distinct systems, smaller id first, in a fixed order."""
    ordered = sorted(set(systems))
    return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :]]


def balanced_pair(pairs: Sequence[Pair], counts: Mapping[Pair, int], rng: random.Random) -> Pair:
    """A pair with the fewest conversations, uniformly among the tied ones."""
    if not pairs:
        raise ValueError("no pair to choose from: a side-by-side campaign needs two systems")
    fewest = min(counts.get(pair, 0) for pair in pairs)
    return rng.choice([pair for pair in pairs if counts.get(pair, 0) == fewest])


def pair_variances(outcomes: Mapping[Pair, Sequence[float]]) -> dict[Pair, float]:
    """``Σ_aa`` per pair from its own votes: the mean squared residual ``(y − p̂)²`` of the
    outcomes ``y`` (1 = the pair's first system won, 0 = lost, ½ = tie or both bad) around the
    pair's win rate, shrunk towards ½ by one pseudo-vote each way, ``p̂ = (Σy + 1) / (n + 2)``
    (Laplace), so that two identical votes do not claim a variance of 0. The Bradley–Terry
    version (a higher app's provider) takes ``p`` from the fitted ratings instead."""
    variances: dict[Pair, float] = {}
    for pair, ys in outcomes.items():
        if not ys:
            continue
        p = (sum(ys) + 1.0) / (len(ys) + 2.0)
        variances[pair] = sum((y - p) ** 2 for y in ys) / len(ys)
    return variances


def eq9_weights(
    pairs: Sequence[Pair], counts: Mapping[Pair, int], variances: Mapping[Pair, float]
) -> dict[Pair, float]:
    """Eq. 9's probability per pair (they sum to 1; uniform when every weight is 0)."""
    if not pairs:
        raise ValueError("no pair to weigh: a side-by-side campaign needs two systems")
    weights: dict[Pair, float] = {}
    for pair in pairs:
        n = counts.get(pair, 0)
        variance = variances.get(pair, UNSEEN_VARIANCE)
        if n <= 0:
            weights[pair] = math.sqrt(variance)
        else:
            weights[pair] = math.sqrt(variance / n) - math.sqrt(variance / (n + 1))
    total = sum(weights.values())
    if total <= 0:
        return {pair: 1.0 / len(pairs) for pair in pairs}
    return {pair: weight / total for pair, weight in weights.items()}


def weighted_pair(probabilities: Mapping[Pair, float], rng: random.Random) -> Pair:
    """A pair drawn with the given probabilities."""
    pairs = sorted(probabilities)
    if not pairs:
        raise ValueError("no pair to choose from: a side-by-side campaign needs two systems")
    return rng.choices(pairs, weights=[probabilities[pair] for pair in pairs], k=1)[0]
