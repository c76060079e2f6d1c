"""The pair choice of side-by-side campaigns (pure): balanced counts and Chatbot Arena's eq. 9."""

from __future__ import annotations

import math
import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from chat import pairing


@settings(max_examples=60, deadline=None)
@given(systems=st.integers(min_value=2, max_value=6), draws=st.integers(0, 80), seed=st.integers())
def test_balanced_pairs_never_differ_by_more_than_one(systems: int, draws: int, seed: int) -> None:
    pairs = pairing.all_pairs(list(range(systems)))
    counts: Counter[pairing.Pair] = Counter()
    rng = random.Random(seed)
    for _ in range(draws):
        counts[pairing.balanced_pair(pairs, counts, rng)] += 1
        values = [counts[pair] for pair in pairs]
        assert max(values) - min(values) <= 1


def test_all_pairs_are_unordered_and_distinct() -> None:
    assert pairing.all_pairs([3, 1, 2, 1]) == [(1, 2), (1, 3), (2, 3)]


@settings(max_examples=60, deadline=None)
@given(
    n=st.lists(st.integers(1, 200), min_size=2, max_size=6),
    variance=st.floats(0.01, 0.25),
)
def test_eq9_favours_the_pair_with_the_fewest_votes_at_equal_variance(
    n: list[int], variance: float
) -> None:
    pairs = [(0, k + 1) for k in range(len(n))]
    counts = dict(zip(pairs, n, strict=True))
    weights = pairing.eq9_weights(pairs, counts, dict.fromkeys(pairs, variance))
    assert math.isclose(sum(weights.values()), 1.0)
    widest = min(pairs, key=lambda pair: counts[pair])  # fewest votes: widest interval
    assert weights[widest] >= max(weights.values()) - 1e-12


@settings(max_examples=60, deadline=None)
@given(
    variances=st.lists(st.floats(0.001, 0.25), min_size=2, max_size=6, unique=True),
    n=st.integers(1, 200),
)
def test_eq9_favours_the_pair_with_the_largest_variance_at_equal_counts(
    variances: list[float], n: int
) -> None:
    pairs = [(0, k + 1) for k in range(len(variances))]
    weights = pairing.eq9_weights(
        pairs, dict.fromkeys(pairs, n), dict(zip(pairs, variances, strict=True))
    )
    widest = max(pairs, key=lambda pair: variances[pair[1] - 1])
    assert weights[widest] >= max(weights.values()) - 1e-12


def test_eq9_matches_the_formula_and_puts_unseen_pairs_first() -> None:
    pairs = [(1, 2), (1, 3), (2, 3)]
    counts = {(1, 2): 4, (1, 3): 9}
    variances = {(1, 2): 0.2, (1, 3): 0.2}
    weights = pairing.eq9_weights(pairs, counts, variances)
    raw = {
        (1, 2): math.sqrt(0.2 / 4) - math.sqrt(0.2 / 5),
        (1, 3): math.sqrt(0.2 / 9) - math.sqrt(0.2 / 10),
        (2, 3): math.sqrt(pairing.UNSEEN_VARIANCE),
    }
    total = sum(raw.values())
    for pair in pairs:
        assert math.isclose(weights[pair], raw[pair] / total)
    assert weights[(2, 3)] > weights[(1, 2)] > weights[(1, 3)]


def test_pair_variances_shrink_towards_a_coin() -> None:
    variances = pairing.pair_variances({(1, 2): [1.0, 1.0], (1, 3): [1.0, 0.0, 0.5]})
    # p̂ = 3/4 for two wins: residuals ¼ each, variance 1/16 (not 0).
    assert math.isclose(variances[(1, 2)], 1 / 16)
    assert math.isclose(variances[(1, 3)], ((0.5) ** 2 + 0.5**2 + 0) / 3)


def test_weighted_pair_draws_by_probability() -> None:
    rng = random.Random(1)
    drawn = Counter(pairing.weighted_pair({(1, 2): 0.9, (1, 3): 0.1}, rng) for _ in range(2000))
    assert 0.85 < drawn[(1, 2)] / 2000 < 0.95
