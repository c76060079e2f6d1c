"""Bradley–Terry ratings equal choix and evalica, a hand-solved case, an explicit sandwich, a
per-round bootstrap reference, the prior's trigger, Arena's rank rule and online Elo by hand."""

from __future__ import annotations

import math

import choix
import evalica
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.analysis import bradley_terry as bt
from metrics.analysis.bradley_terry import A_WINS, B_WINS, BOTH_BAD, TIE


def _votes(n: int, votes: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=n)
    a = rng.integers(0, n, size=votes)
    b = (a + rng.integers(1, n, size=votes)) % n
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    u = rng.random(votes)
    decisive = np.where(rng.random(votes) < p, A_WINS, B_WINS)
    outcome = np.where(u < 0.1, TIE, np.where(u < 0.15, BOTH_BAD, decisive)).astype(np.int8)
    return a, b, outcome


def _elo(theta: np.ndarray) -> np.ndarray:
    return 1000.0 + 400.0 / math.log(10.0) * (theta - theta.mean())


def test_pair_counts_halve_ties_and_both_bad_each_way() -> None:
    a = np.array([0, 1, 0, 2, 2])
    b = np.array([1, 0, 2, 0, 1])
    outcome = np.array([A_WINS, A_WINS, TIE, BOTH_BAD, B_WINS], dtype=np.int8)
    counts = bt.pair_counts(a, b, outcome, 3)
    expected = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(counts.wins, expected)
    np.testing.assert_array_equal(counts.battles, expected + expected.T)
    assert counts.votes == 5
    rates = bt.win_rate_matrix(counts)
    assert rates[0, 2] == 0.5 and rates[2, 1] == 0.0 and np.isnan(rates[0, 0])


@pytest.mark.parametrize(
    ("a", "b", "outcome", "message"),
    [
        ([0], [3], [0], r"b\[0\] = 3 is not a system"),
        ([1], [1], [0], "compares system 1 with itself"),
        ([0], [1], [4], r"outcome\[0\] = 4"),
    ],
)
def test_pair_counts_names_the_bad_vote(
    a: list[int], b: list[int], outcome: list[int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        bt.pair_counts(np.array(a), np.array(b), np.array(outcome), 3)


def test_equals_choix_ilsr_with_ties_as_a_win_each_way_and_decisive_votes_doubled() -> None:
    n = 8
    a, b, outcome = _votes(n, 3000, seed=1)
    # A tie as one win each way weighs a tie like two decisive votes; doubling every decisive
    # vote restores half a win each way, the same likelihood up to a factor 2.
    data: list[tuple[int, int]] = []
    for left, right, code in zip(a.tolist(), b.tolist(), outcome.tolist(), strict=True):
        if code == A_WINS:
            data += [(left, right), (left, right)]
        elif code == B_WINS:
            data += [(right, left), (right, left)]
        else:
            data += [(left, right), (right, left)]
    theta = choix.ilsr_pairwise(n, data, tol=1e-13, max_iter=10_000)
    fit = bt.fit_bradley_terry(bt.pair_counts(a, b, outcome, n).wins)
    assert fit.prior is None
    np.testing.assert_allclose(fit.ratings, _elo(theta), atol=1e-6)


def test_equals_evalica_with_half_a_win_per_tie() -> None:
    n = 6
    a, b, outcome = _votes(n, 2000, seed=2)
    winners = [
        evalica.Winner.X
        if o == A_WINS
        else evalica.Winner.Y
        if o == B_WINS
        else evalica.Winner.Draw
        for o in outcome.tolist()
    ]
    result = evalica.bradley_terry(
        a.tolist(), b.tolist(), winners, index=None, tie_weight=0.5, tolerance=1e-12, limit=10_000
    )
    scores = result.scores.reindex(range(n)).to_numpy()
    fit = bt.fit_bradley_terry(bt.pair_counts(a, b, outcome, n).wins)
    np.testing.assert_allclose(fit.ratings, _elo(np.log(scores)), atol=1e-4)


def test_hand_solved_three_systems() -> None:
    # Strengths 4 : 2 : 1 give P(A>B) = 2/3, P(B>C) = 2/3, P(A>C) = 4/5. Counts that match these
    # exactly (A–B 2:1 as one win of A, a tie and a "both bad", B–C 2:1, A–C 4:1) zero every score
    # equation W_ij − N_ij p_ij, so the MLE is log-strength ∝ log(4, 2, 1): on the Elo scale,
    # centred, A = 1000 + 400·log10(4/2) = 1120.412, B = 1000, C = 1000 − 400·log10(2) = 879.588.
    votes = [(0, 1, A_WINS), (0, 1, TIE), (1, 0, BOTH_BAD)]
    votes += [(1, 2, A_WINS), (2, 1, B_WINS), (2, 1, A_WINS)]
    votes += [(0, 2, A_WINS)] * 3 + [(2, 0, B_WINS), (2, 0, A_WINS)]
    a, b, outcome = (np.array(column) for column in zip(*votes, strict=True))
    fit = bt.fit_bradley_terry(bt.pair_counts(a, b, outcome, 3).wins)
    np.testing.assert_allclose(fit.ratings, [1120.411998, 1000.0, 879.588002], atol=1e-6)
    anchored = bt.fit_bradley_terry(bt.pair_counts(a, b, outcome, 3).wins, anchor=(2, 800.0))
    np.testing.assert_allclose(anchored.ratings, [1040.823997, 920.411998, 800.0], atol=1e-6)
    probability = bt.predicted_win_probability(fit.ratings)
    assert probability[0, 2] == pytest.approx(0.8) and probability[1, 0] == pytest.approx(1 / 3)


def test_sandwich_equals_an_explicit_per_vote_computation() -> None:
    n = 5
    a, b, outcome = _votes(n, 400, seed=3)
    counts = bt.pair_counts(a, b, outcome, n)
    result = bt.bradley_terry(counts, rounds=0, interval="sandwich")
    theta = result.ratings * math.log(10.0) / 400.0
    hessian = np.zeros((n, n))
    meat = np.zeros((n, n))
    for left, right, code in zip(a.tolist(), b.tolist(), outcome.tolist(), strict=True):
        x = np.zeros(n)
        x[left], x[right] = 1.0, -1.0
        p = 1.0 / (1.0 + math.exp(theta[right] - theta[left]))
        y = {A_WINS: 1.0, B_WINS: 0.0, TIE: 0.5, BOTH_BAD: 0.5}[code]
        score = (y - p) * x
        meat += np.outer(score, score)
        hessian += p * (1.0 - p) * np.outer(x, x)
    inverse = np.linalg.pinv(hessian, rtol=1e-10, hermitian=True)  # centred
    expected = (400.0 / math.log(10.0)) ** 2 * inverse @ meat @ inverse
    np.testing.assert_allclose(result.covariance, expected, rtol=1e-9, atol=1e-9)
    z = 1.959963984540054
    np.testing.assert_allclose(result.upper - result.ratings, z * np.sqrt(np.diag(expected)))
    # Anchored: the covariance of r − r_anchor, the anchor itself exact.
    anchored = bt.bradley_terry(counts, rounds=0, interval="sandwich", anchor=(1, 1200.0))
    assert anchored.se[1] == pytest.approx(0.0, abs=1e-9)
    assert anchored.se[0] ** 2 == pytest.approx(
        expected[0, 0] + expected[1, 1] - 2 * expected[0, 1], rel=1e-9
    )


def test_bootstrap_is_seeded_and_equals_a_per_round_fit() -> None:
    n = 4
    a, b, outcome = _votes(n, 120, seed=4)
    counts = bt.pair_counts(a, b, outcome, n)
    result = bt.bradley_terry(counts, rounds=40, seed=11)
    again = bt.bradley_terry(counts, rounds=40, seed=11)
    other = bt.bradley_terry(counts, rounds=40, seed=12)
    np.testing.assert_array_equal(result.replicates, again.replicates)
    assert not np.array_equal(result.replicates, other.replicates)
    first, second, _ = bt._cell_layout(counts)
    drawn = bt._draw_cells(counts, 40, np.random.default_rng(11))
    assert (drawn.sum(axis=(1, 2)) == counts.votes).all()
    for r in range(40):
        wins = bt._resample_wins(first, second, drawn[r : r + 1], n)[0]
        expected = bt.fit_bradley_terry(wins).ratings
        np.testing.assert_allclose(result.replicates[r], expected, atol=1e-7)
    low, high = np.percentile(result.replicates, [2.5, 97.5], axis=0)
    np.testing.assert_array_equal(result.lower, low)
    np.testing.assert_array_equal(result.upper, high)


def test_bootstrap_rounds_that_lose_a_pairs_only_win_use_the_prior_and_say_so() -> None:
    # 0 beats 1 once and loses to it 20 times: a resample drops that win with chance ~ e^-1.
    votes = [(0, 1, A_WINS)] + [(1, 0, A_WINS)] * 20 + [(1, 2, A_WINS), (2, 1, A_WINS)] * 5
    a, b, outcome = (np.array(column) for column in zip(*votes, strict=True))
    result = bt.bradley_terry(bt.pair_counts(a, b, outcome, 3), rounds=200, seed=0)
    assert result.prior is None
    assert 30 < result.bootstrap_rounds_with_prior < 120
    assert np.isfinite(result.replicates).all()


def test_the_prior_is_used_and_reported_only_when_a_system_never_loses() -> None:
    votes = [(0, 1, A_WINS), (2, 0, B_WINS), (1, 2, A_WINS), (2, 1, A_WINS), (1, 2, TIE)]
    a, b, outcome = (np.array(column) for column in zip(*votes, strict=True))
    result = bt.bradley_terry(bt.pair_counts(a, b, outcome, 3), rounds=50)
    assert result.prior == bt.DEFAULT_PRIOR
    assert result.never_lost == (0,) and result.never_won == ()
    assert result.prior_groups == ((0,), (1, 2))
    assert np.isfinite(result.ratings).all() and result.ratings.argmax() == 0
    # One loss of 0 makes the wins graph strongly connected: the plain MLE, nothing reported.
    a2, b2, outcome2 = np.r_[a, 1], np.r_[b, 0], np.r_[outcome, A_WINS]
    plain = bt.bradley_terry(bt.pair_counts(a2, b2, outcome2, 3), rounds=50)
    assert plain.prior is None and plain.prior_groups == () and plain.never_lost == ()


def test_a_group_that_always_wins_triggers_the_prior_though_no_system_is_unbeaten() -> None:
    votes = [(0, 1, A_WINS), (1, 0, A_WINS), (2, 3, A_WINS), (3, 2, A_WINS), (0, 2, A_WINS)]
    a, b, outcome = (np.array(column) for column in zip(*votes, strict=True))
    fit = bt.fit_bradley_terry(bt.pair_counts(a, b, outcome, 4).wins, prior=0.5)
    assert fit.prior == 0.5 and fit.never_lost == () and fit.never_won == ()
    assert fit.prior_groups == ((0, 1), (2, 3))


def test_a_disconnected_battle_graph_raises_naming_the_groups() -> None:
    a, b, outcome = np.array([0, 1, 2]), np.array([1, 0, 3]), np.array([A_WINS, A_WINS, TIE])
    with pytest.raises(ValueError, match=r"\{0, 1\}; \{2, 3\}"):
        bt.bradley_terry(bt.pair_counts(a, b, outcome, 4), rounds=10)


def test_rank_intervals_follow_the_arena_rule() -> None:
    lower = np.array([10.0, 8.0, 2.0, 1.0])
    upper = np.array([12.0, 11.0, 9.0, 3.0])
    rank, best, worst = bt.rank_intervals(lower, upper)
    # 0 and 1 overlap; 2 is below 0 (lower 10 > upper 9) but overlaps 1; 3 is below 0 and 1
    # but overlaps 2.
    np.testing.assert_array_equal(best, [1, 1, 2, 3])
    np.testing.assert_array_equal(worst, [2, 3, 4, 4])
    np.testing.assert_array_equal(rank, best)


def test_online_elo_by_hand() -> None:
    a, b = np.array([0, 1, 0]), np.array([1, 0, 2])
    outcome = np.array([A_WINS, TIE, B_WINS])
    ratings = bt.online_elo(a, b, outcome, 3)
    # Vote 1: both expect ½ → 0: 1002, 1: 998. Vote 2 (1 left, tie): e_1 = 1/(1 + 10^(4/400))
    # = 0.4942441 → 1 gains 4·(0.5 − 0.4942441) = 0.0230236. Vote 3: 0 (1001.9769764) loses to
    # 2 (1000): e_0 = 1/(1 + 10^(−1.9769764/400)) = 0.5028448 → 0 loses 2.0113792.
    np.testing.assert_allclose(ratings, [999.9655972, 998.0230236, 1002.0113792], atol=1e-6)


def test_votes_to_separate_follows_the_one_over_root_votes_scaling() -> None:
    ratings = np.array([1100.0, 1000.0, 1000.0, 800.0])
    se = np.array([30.0, 30.0, 10.0, 10.0])
    pairs = bt.votes_to_separate(ratings, se, 1000)
    z = 1.959963984540054
    first = pairs[0]
    assert (first.higher, first.lower, first.gap, first.separated) == (0, 1, 100.0, False)
    # V' = 1000 · (z · 60 / 100)² = 1382.9…: 383 more.
    assert first.votes_needed == math.floor(1000 * (z * 60 / 100) ** 2 - 1000) + 1 == 383
    assert pairs[1].votes_needed is None  # equal ratings
    assert pairs[2].separated and pairs[2].votes_needed == 0


def _balanced(battles: list[int]) -> bt.PairCounts:
    """Pairs of 4 systems with the given (even) battle counts, split evenly: equal ratings."""
    a, b, outcome = [], [], []
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    for (i, j), count in zip(pairs, battles, strict=True):
        a += [i] * count
        b += [j] * count
        outcome += [A_WINS, B_WINS] * (count // 2)
    return bt.pair_counts(np.array(a), np.array(b), np.array(outcome), 4)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 60), min_size=6, max_size=6, unique=True))
def test_active_sampling_favours_the_pair_with_the_widest_uncertainty(halves: list[int]) -> None:
    battles = [2 * h for h in halves]
    counts = _balanced(battles)
    fit = bt.fit_bradley_terry(counts.wins)
    pairs, probability = bt.active_sampling_weights(counts, fit.ratings)
    assert probability.sum() == pytest.approx(1.0)
    # Same per-battle variance (¼) everywhere: the fewer battles, the wider, the likelier.
    assert np.array_equal(np.argsort(probability), np.argsort(battles)[::-1])
    assert (
        tuple(pairs[probability.argmax()])
        == list(zip(*np.triu_indices(4, 1), strict=True))[int(np.argmin(battles))]
    )


def test_an_unseen_pair_gets_a_finite_weight_above_the_seen_ones() -> None:
    counts = _balanced([2, 4, 0, 6, 8, 10])  # pair (0, 3) never met
    fit = bt.fit_bradley_terry(counts.wins)
    pairs, probability = bt.active_sampling_weights(counts, fit.ratings)
    assert np.isfinite(probability).all()
    assert tuple(pairs[probability.argmax()]) == (0, 3)
    weight_unseen = math.sqrt(0.25)
    weight_two = math.sqrt(0.25 / 2) - math.sqrt(0.25 / 3)
    assert probability[2] / probability[0] == pytest.approx(weight_unseen / weight_two)
