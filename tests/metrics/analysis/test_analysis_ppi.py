"""Prediction-powered estimates equal ppi-python on shared inputs; sampling designs; BT ratings."""

from __future__ import annotations

import numpy as np
import ppi_py
import pytest
from scipy import stats

from metrics.analysis.ppi import (
    ELO_SCALE,
    Sampling,
    bradley_terry_design,
    bradley_terry_ppi,
    inclusion_probabilities,
    ppi_logistic,
    ppi_mean,
)


def _study(seed: int, n: int = 150, n_units: int = 2000, noise: float = 0.5):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n_units)
    y = 3 + quality + rng.normal(scale=0.6, size=n_units)
    yhat = 3.3 + 0.8 * quality + rng.normal(scale=noise, size=n_units)
    return y[:n], yhat[:n], yhat[n:]


@pytest.mark.parametrize(("seed", "noise"), [(1, 0.5), (2, 0.05), (3, 5.0)])
def test_mean_equals_ppi_python(seed: int, noise: float) -> None:
    y, yhat, unlabelled = _study(seed, noise=noise)
    result = ppi_mean(y, yhat, unlabelled, bootstrap_samples=0)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled)
    low, high = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.1)
    assert result.ppi.estimate == pytest.approx(float(point[0]), abs=1e-12)
    assert result.ppi.low == pytest.approx(float(low[0]), abs=1e-12)
    assert result.ppi.high == pytest.approx(float(high[0]), abs=1e-12)
    c_low, c_high = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.1, lam=0)
    assert result.human_only.low == pytest.approx(float(c_low[0]), abs=1e-12)
    assert result.human_only.high == pytest.approx(float(c_high[0]), abs=1e-12)


def test_mean_reports_the_human_only_and_predictor_figures_beside_it() -> None:
    y, yhat, unlabelled = _study(4)
    result = ppi_mean(y, yhat, unlabelled, alpha=0.05, bootstrap_samples=0)
    assert result.human_only.estimate == pytest.approx(y.mean())
    assert result.human_only.se == pytest.approx(y.std() / np.sqrt(y.size))
    assert result.predictor_only == pytest.approx(np.concatenate([yhat, unlabelled]).mean())
    assert result.pearson == pytest.approx(stats.pearsonr(y, yhat).statistic)
    assert result.effective_n == pytest.approx(y.size * result.human_only.se**2 / result.ppi.se**2)
    assert result.effective_n > y.size  # a correlated predictor is worth extra ratings
    assert result.ppi.width < result.human_only.width
    z = stats.norm.ppf(0.975)
    assert result.ppi.width == pytest.approx(2 * z * result.ppi.se)
    assert (result.n, result.n_units, result.weighted) == (150, 2000, False)


def test_useless_predictor_falls_back_to_the_human_only_estimate() -> None:
    y, yhat, unlabelled = _study(5)
    rng = np.random.default_rng(0)
    constant = ppi_mean(y, np.full(y.size, 2.0), np.full(unlabelled.size, 2.0), bootstrap_samples=0)
    assert constant.lam == 0.0
    assert constant.ppi == constant.human_only
    assert np.isnan(constant.pearson)
    noise = ppi_mean(y, rng.normal(size=y.size), rng.normal(size=unlabelled.size))
    assert noise.lam < 0.2
    assert noise.effective_n == pytest.approx(y.size, rel=0.1)


def test_bootstrap_interval_is_seeded_and_close_to_the_normal_one() -> None:
    y, yhat, unlabelled = _study(6)
    first = ppi_mean(y, yhat, unlabelled, bootstrap_samples=500, seed=3)
    again = ppi_mean(y, yhat, unlabelled, bootstrap_samples=500, seed=3)
    other = ppi_mean(y, yhat, unlabelled, bootstrap_samples=500, seed=4)
    assert (first.bootstrap_low, first.bootstrap_high) == (
        again.bootstrap_low,
        again.bootstrap_high,
    )
    assert first.bootstrap_low != other.bootstrap_low
    width = first.bootstrap_high - first.bootstrap_low
    assert width == pytest.approx(first.ppi.width, rel=0.15)
    assert first.bootstrap_low < first.ppi.estimate < first.bootstrap_high


def test_equal_inclusion_probabilities_give_the_plain_estimator_exactly() -> None:
    y, yhat, unlabelled = _study(7)
    plain = ppi_mean(y, yhat, unlabelled, bootstrap_samples=200, seed=1)
    pi = inclusion_probabilities(Sampling("random", seed=11), n_labelled=y.size, n_units=2000)
    np.testing.assert_array_equal(pi, np.full(y.size, y.size / 2000))
    weighted = ppi_mean(y, yhat, unlabelled, pi=pi, bootstrap_samples=200, seed=1)
    assert weighted.weighted
    assert weighted.ppi == plain.ppi
    assert weighted.human_only == plain.human_only
    assert (weighted.lam, weighted.effective_n) == (plain.lam, plain.effective_n)
    assert (weighted.bootstrap_low, weighted.bootstrap_high) == (
        plain.bootstrap_low,
        plain.bootstrap_high,
    )


def test_weighted_estimate_corrects_an_unequal_sample_where_the_plain_one_fails() -> None:
    """Two equal strata, the good one rated at 10 %, the poor one at 2 %, a biased judge: the
    inverse-probability-weighted interval covers the truth at least 90 % of the time (more: its
    with-replacement variance ignores that each stratum's count was fixed, which makes it
    conservative), the plain one (which ignores π) almost never."""
    rng = np.random.default_rng(8)
    half, repetitions = 1500, 200
    strata = np.repeat(["good", "poor"], half)
    rate = {"good": 0.10, "poor": 0.02}
    truth = 3.0  # strata means 3.8 and 2.2
    covered_ipw = covered_plain = 0
    for _ in range(repetitions):
        y = np.where(strata == "good", 3.8, 2.2) + rng.normal(scale=0.8, size=2 * half)
        yhat = 0.6 * y + 1.5 + rng.normal(scale=0.4, size=2 * half)
        rated = np.concatenate(
            [
                rng.choice(np.flatnonzero(strata == s), int(rate[s] * half), replace=False)
                for s in ("good", "poor")
            ]
        )
        unrated = np.setdiff1d(np.arange(2 * half), rated)
        sampling = Sampling(
            "stratified", strata=list(strata[rated]), stratum_weights={"good": 1, "poor": 1}
        )
        pi = inclusion_probabilities(sampling, n_labelled=rated.size, n_units=2 * half)
        np.testing.assert_allclose(pi, [rate[s] for s in strata[rated]])
        ipw = ppi_mean(y[rated], yhat[rated], yhat[unrated], pi=pi, bootstrap_samples=0)
        plain = ppi_mean(y[rated], yhat[rated], yhat[unrated], bootstrap_samples=0)
        covered_ipw += ipw.ppi.low <= truth <= ipw.ppi.high
        covered_plain += plain.ppi.low <= truth <= plain.ppi.high
    assert covered_ipw / repetitions >= stats.binom.ppf(0.0005, repetitions, 0.9) / repetitions
    assert covered_plain / repetitions < 0.5


@pytest.mark.parametrize(
    ("sampling", "message"),
    [
        (Sampling("unknown"), "sampling is unknown"),
        (Sampling("random"), "must record the seed"),
        (Sampling("stratified", strata=["a", "b"]), "population share"),
        (Sampling("stratified", strata=["a", "c"], stratum_weights={"a": 1, "b": 1}), "'c'"),
        (Sampling("adaptive"), "inclusion probability each round"),
        (Sampling("adaptive", probabilities=[0.5, 0.0]), "labelled unit 1"),
        (Sampling("adaptive", probabilities=[0.5]), "one per labelled unit"),
    ],
)
def test_a_subset_not_drawn_at_random_is_refused_with_the_reason(
    sampling: Sampling, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        inclusion_probabilities(sampling, n_labelled=2, n_units=10)


def test_adaptive_probabilities_are_taken_as_recorded() -> None:
    pi = inclusion_probabilities(
        Sampling("adaptive", probabilities=[0.1, 0.4]), n_labelled=2, n_units=10
    )
    np.testing.assert_array_equal(pi, [0.1, 0.4])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"y": [1.0], "yhat": [1.0], "yhat_unlabelled": [1.0, 2.0]}, "at least 2"),
        ({"y": [1.0, 2.0], "yhat": [1.0], "yhat_unlabelled": [1.0]}, "aligned"),
        ({"y": [1.0, np.nan], "yhat": [1.0, 2.0], "yhat_unlabelled": [1.0]}, "y: value 1"),
        ({"y": [1.0, 2.0], "yhat": [1.0, 2.0], "yhat_unlabelled": []}, "nobody rated"),
        ({"y": [1.0, 2.0], "yhat": [1.0, 2.0], "yhat_unlabelled": [1.0], "pi": [0.5]}, "pi:"),
    ],
)
def test_bad_mean_inputs_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ppi_mean(**kwargs)


def _arena(
    seed: int, systems: int = 5, comparisons: int = 3000, labelled: int = 300, ties: bool = False
):
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=systems)
    pairs = np.array([rng.choice(systems, 2, replace=False) for _ in range(comparisons)])
    p_first = 1 / (1 + np.exp(-(strength[pairs[:, 0]] - strength[pairs[:, 1]])))
    human = (rng.uniform(size=comparisons) < p_first).astype(float)
    if ties:
        human[rng.uniform(size=comparisons) < 0.15] = 0.5
    judge = np.where(rng.uniform(size=comparisons) < 0.8, human, 1 - human)
    return strength, pairs, human, judge, np.arange(labelled)


@pytest.mark.parametrize("seed", [1, 2])
def test_logistic_equals_ppi_python(seed: int) -> None:
    _, pairs, human, judge, labelled = _arena(seed)
    x = bradley_terry_design(5, pairs)
    rest = np.arange(labelled.size, len(pairs))
    args = (x[labelled], human[labelled], judge[labelled], x[rest], judge[rest])
    ours = ppi_logistic(*args, alpha=0.1)
    low, high = ppi_py.ppi_logistic_ci(*args, alpha=0.1)
    np.testing.assert_allclose(ours.low, low, atol=1e-6)
    np.testing.assert_allclose(ours.high, high, atol=1e-6)
    # the interval's centre is ppi_py's point estimate at the λ its interval tuned
    point = ppi_py.ppi_logistic_pointestimate(*args, lam=ours.lam)
    np.testing.assert_allclose(ours.coef, point, atol=1e-6)
    fixed = ppi_logistic(*args, lam=0.0)
    low0, high0 = ppi_py.ppi_logistic_ci(*args, alpha=0.1, lam=0.0)
    np.testing.assert_allclose(fixed.low, low0, atol=1e-6)
    np.testing.assert_allclose(fixed.high, high0, atol=1e-6)


def test_bradley_terry_ratings_on_the_elo_scale_with_intervals() -> None:
    strength, pairs, human, judge, labelled = _arena(3)
    result = bradley_terry_ppi(5, pairs, judge, labelled, human[labelled])
    assert result.rating.mean() == pytest.approx(1000.0)
    assert np.all(result.low < result.rating) and np.all(result.rating < result.high)
    # differences are the BT log-odds scaled by 400/ln 10
    assert result.rating[1] - result.rating[0] == pytest.approx(ELO_SCALE * result.coef[1])
    truth = 1000 + ELO_SCALE * (strength - strength.mean())
    assert np.all(np.abs(result.rating - truth) < 3 * (result.high - result.low))
    assert np.argmax(result.rating) == np.argmax(strength)
    # the judge narrows the intervals on average (λ minimises the covariance's trace, not each
    # coordinate's variance) compared with the human votes alone
    assert np.mean(result.high - result.low) < np.mean(
        result.human_only_high - result.human_only_low
    )
    assert (result.n, result.n_comparisons, result.notes) == (300, 3000, ())


def test_bradley_terry_counts_a_tie_as_half_a_win() -> None:
    _, pairs, human, judge, labelled = _arena(4, ties=True)
    result = bradley_terry_ppi(5, pairs, judge, labelled, human[labelled])
    assert result.notes == ("ties counted as half a win for each side",)
    swapped = bradley_terry_ppi(5, pairs[:, ::-1], 1 - judge, labelled, 1 - human[labelled])
    np.testing.assert_allclose(swapped.rating, result.rating, atol=1e-8)


def test_bradley_terry_with_equal_probabilities_is_the_plain_estimate() -> None:
    _, pairs, human, judge, labelled = _arena(5)
    plain = bradley_terry_ppi(5, pairs, judge, labelled, human[labelled])
    weighted = bradley_terry_ppi(5, pairs, judge, labelled, human[labelled], pi=np.full(300, 0.1))
    np.testing.assert_array_equal(weighted.rating, plain.rating)
    np.testing.assert_array_equal(weighted.low, plain.low)


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (np.array([[0, 0]]), "comparison 0"),
        (np.array([[0, 7]]), "comparison 0"),
        (np.array([0, 1]), "pairs must"),
    ],
)
def test_bad_comparisons_are_named(pairs: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bradley_terry_design(3, pairs)


def test_bad_votes_are_named() -> None:
    _, pairs, human, judge, labelled = _arena(6)
    votes = human[labelled].copy()
    votes[4] = 2.0
    with pytest.raises(ValueError, match="human: vote 4"):
        bradley_terry_ppi(5, pairs, judge, labelled, votes)
