"""acc23 with tie calibration, accuracy without ties, and the system-level statistics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.analysis.pairwise_accuracy import (
    accuracy_without_ties,
    calibrated_acc23,
    kendall_tau_interval,
    metric_outcomes,
    pair_stats,
    system_agreement,
    tie_calibration,
)
from metrics.analysis.preference_agreement import (
    A_WINS,
    B_WINS,
    BOTH_BAD,
    TIE,
    resample_counts,
)

# Integer scores so the differences are exact. Vote by vote (diff = score_a − score_b):
#   vote   1    2    3    4    5         6    7    8
#   human  A    B    A    tie  both-bad  B    A    tie
#   diff   4   −5   −1    1    0         1    0   −2
#   ε = 0  Con  Con  Dis  T_h  T_hm      Dis  T_m  T_h
HUMAN = np.array([A_WINS, B_WINS, A_WINS, TIE, BOTH_BAD, B_WINS, A_WINS, TIE])
SCORE_A = np.array([9.0, 2, 3, 5, 6, 6, 8, 2])
SCORE_B = np.array([5.0, 7, 4, 4, 6, 5, 8, 4])


def brute_force_calibration(
    human: np.ndarray, score_a: np.ndarray, score_b: np.ndarray
) -> tuple[float, float, list[float], list[float]]:
    """O(n²) reference: acc23 at 0 and every distinct |diff|, the first maximum wins."""
    diffs = [float(a - b) for a, b in zip(score_a, score_b, strict=True)]
    candidates = sorted({0.0, *(abs(d) for d in diffs)})
    accuracies = []
    for epsilon in candidates:
        correct = 0
        for code, d in zip(human, diffs, strict=True):
            human_side = 0 if code in (TIE, BOTH_BAD) else (1 if code == A_WINS else -1)
            metric_side = 0 if abs(d) <= epsilon else (1 if d > 0 else -1)
            correct += human_side == metric_side
        accuracies.append(correct / len(diffs))
    best = max(range(len(candidates)), key=lambda i: (accuracies[i], -i))
    return candidates[best], accuracies[best], candidates, accuracies


def test_metric_votes_tie_within_epsilon() -> None:
    assert metric_outcomes(SCORE_A, SCORE_B).tolist() == [0, 1, 1, 0, 2, 0, 2, 1]
    assert metric_outcomes(SCORE_A, SCORE_B, 1.0).tolist() == [0, 1, 2, 2, 2, 2, 2, 1]


def test_pair_statistics_and_acc23_by_hand() -> None:
    counts = pair_stats(HUMAN, SCORE_A, SCORE_B)
    assert (counts.con, counts.dis, counts.ties_human, counts.ties_metric) == (2, 2, 2, 1)
    assert counts.ties_both == 1
    assert counts.acc23 == 3 / 8  # (Con + T_hm) / 8
    assert counts.accuracy_without_ties == 2 / 4


def test_tie_calibration_by_hand() -> None:
    # ε = 1 ties votes 3–7: 3, 6, 7 → T_m; 4, 5 → T_hm; left Con 1, 2 and T_h 8 → 4/8.
    # ε = 2 also ties vote 8 (a human tie) → 5/8; ε = 4 ties the concordant vote 1 → 4/8;
    # ε = 5 ties everything → the 3 human ties → 3/8.
    result = tie_calibration(HUMAN, SCORE_A, SCORE_B)
    assert result.thresholds.tolist() == [0, 1, 2, 4, 5]
    assert result.accuracies.tolist() == [3 / 8, 4 / 8, 5 / 8, 4 / 8, 3 / 8]
    assert (result.epsilon, result.acc23) == (2.0, 5 / 8)
    assert (result.stats.con, result.stats.ties_both, result.stats.ties_metric) == (2, 3, 3)


def test_equal_maxima_pick_the_smallest_epsilon() -> None:
    # A concordant vote at |diff| 1 and a human tie at |diff| 2: ε = 0 and ε = 2 both give 1/2.
    result = tie_calibration(np.array([A_WINS, TIE]), np.array([1.0, 0.0]), np.array([0.0, 2.0]))
    assert result.accuracies.tolist() == [0.5, 0.0, 0.5]
    assert result.epsilon == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_tie_calibration_equals_the_quadratic_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    human = rng.integers(0, 4, n)
    # Coarse scores make repeated and zero differences common.
    score_a = np.round(rng.normal(size=n), 1)
    score_b = np.round(score_a * rng.uniform(-1, 1) + rng.normal(size=n) * 0.5, 1)
    result = tie_calibration(human, score_a, score_b)
    epsilon, best, candidates, accuracies = brute_force_calibration(human, score_a, score_b)
    assert result.thresholds.tolist() == candidates
    assert result.accuracies.tolist() == pytest.approx(accuracies, abs=1e-12)
    assert (result.epsilon, result.acc23) == (epsilon, pytest.approx(best, abs=1e-12))
    assert result.stats.acc23 == pytest.approx(best, abs=1e-12)


def test_calibrated_acc23_recalibrates_each_resample_as_on_the_materialised_resample() -> None:
    rng = np.random.default_rng(5)
    n, samples = 60, 30
    human = rng.integers(0, 4, n)
    score_a = np.round(rng.normal(size=n), 1)
    score_b = np.round(rng.normal(size=n), 1)
    result = calibrated_acc23(human, score_a, score_b, samples=samples, seed=13)
    counts = resample_counts(np.random.default_rng(13), n, samples)
    for b in range(samples):
        drawn = np.repeat(np.arange(n), counts[b])
        epsilon, best, _, _ = brute_force_calibration(human[drawn], score_a[drawn], score_b[drawn])
        assert result.replicates[b] == pytest.approx(best, abs=1e-12)
        assert result.epsilon_replicates[b] == epsilon
    point = tie_calibration(human, score_a, score_b)
    assert (result.value, result.epsilon) == (point.acc23, point.epsilon)


def test_intervals_are_reproducible_with_a_seed() -> None:
    rng = np.random.default_rng(6)
    human = rng.integers(0, 4, 80)
    score_a, score_b = rng.normal(size=80), rng.normal(size=80)
    first = calibrated_acc23(human, score_a, score_b, samples=200, seed=1)
    again = calibrated_acc23(human, score_a, score_b, samples=200, seed=1)
    other = calibrated_acc23(human, score_a, score_b, samples=200, seed=2)
    assert np.array_equal(first.replicates, again.replicates)
    assert not np.array_equal(first.replicates, other.replicates)
    assert first.low is not None and first.high is not None
    assert first.low <= first.value <= first.high
    tie_free = accuracy_without_ties(human, score_a, score_b, samples=200, seed=1)
    assert tie_free == accuracy_without_ties(human, score_a, score_b, samples=200, seed=1)


def test_accuracy_without_ties_by_hand() -> None:
    # ε = 0: votes 1, 2 agree, 3, 6 disagree; 4, 5, 8 are human ties, 5, 7 metric ties.
    result = accuracy_without_ties(HUMAN, SCORE_A, SCORE_B, samples=200)
    assert (result.value, result.used, result.excluded) == (0.5, 4, 4)
    assert (result.excluded_human_ties, result.excluded_metric_ties) == (3, 2)
    # ε = 1 also ties votes 3 and 6: only 1 and 2 are left, both agree.
    strict = accuracy_without_ties(HUMAN, SCORE_A, SCORE_B, epsilon=1.0, samples=200)
    assert (strict.value, strict.used, strict.excluded) == (1.0, 2, 6)
    assert (strict.low, strict.high) == (1.0, 1.0)


def test_bad_votes_are_refused() -> None:
    with pytest.raises(ValueError, match="outcome codes"):
        pair_stats(np.array([4]), np.array([1.0]), np.array([0.0]))
    with pytest.raises(ValueError, match="finite"):
        tie_calibration(np.array([0]), np.array([np.nan]), np.array([0.0]))
    with pytest.raises(ValueError, match="one length"):
        pair_stats(np.array([0, 1]), np.array([1.0]), np.array([0.0]))


def test_system_agreement_by_hand() -> None:
    human = np.array([3.0, 2.0, 1.0, 0.0, np.nan])
    metric = np.array([0.9, 0.8, 0.1, 0.2, 0.5])
    # Six pairs over the four systems with both values; only systems 3 and 4 swap.
    result = system_agreement(human, metric)
    assert (result.pairwise_accuracy, result.pairs, result.systems) == (5 / 6, 6, 4)
    assert result.kendall_tau_b == pytest.approx((5 - 1) / 6)


def test_kendall_tau_interval_rows_equal_scipy_fixed_and_paired() -> None:
    rng = np.random.default_rng(7)
    ratings = np.round(rng.normal(size=(40, 6)), 1)
    ratings[3] = 1.0  # all tied: no τ
    ratings[5, 2] = np.nan  # a missing rating: no τ
    fixed = np.array([0.1, 0.5, 0.5, 0.9, 0.2, 0.3])
    paired = np.round(rng.normal(size=(40, 6)), 1)
    for scores in (fixed, paired):
        result = kendall_tau_interval(ratings, scores, confidence=0.9)
        rows = np.broadcast_to(scores, ratings.shape)
        for r in range(40):
            if r in (3, 5):
                assert np.isnan(result.replicates[r])
                continue
            expected = stats.kendalltau(ratings[r], rows[r]).statistic
            assert result.replicates[r] == pytest.approx(expected, abs=1e-12)
        assert result.defined == 38
        defined = result.replicates[~np.isnan(result.replicates)]
        low, high = np.percentile(defined, [5, 95])
        assert (result.low, result.high) == (pytest.approx(low), pytest.approx(high))
    with pytest.raises(ValueError, match="rounds × systems"):
        kendall_tau_interval(ratings, paired[:, :3])


def test_no_resamples_give_the_point_values_without_intervals() -> None:
    human = np.array([0, 1, 2, 0, 1])
    score_a = np.array([0.9, 0.1, 0.5, 0.2, 0.4])
    score_b = np.array([0.1, 0.8, 0.5, 0.6, 0.3])
    calibrated = calibrated_acc23(human, score_a, score_b, samples=0)
    assert calibrated.low is None and calibrated.high is None and calibrated.value is not None
    tie_free = accuracy_without_ties(human, score_a, score_b, samples=0)
    assert tie_free.low is None and tie_free.value == pytest.approx(2 / 4)
