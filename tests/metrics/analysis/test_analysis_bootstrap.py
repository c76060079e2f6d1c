"""Bootstrap replicates equal scipy on the materialised resamples; intervals cover."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.analysis import bootstrap
from metrics.analysis.bootstrap import batched_correlation, bootstrap_systems, bootstrap_units
from metrics.analysis.correlation import Method

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
METHODS: tuple[Method, ...] = ("pearson", "spearman", "kendall")


def test_unit_replicates_equal_scipy_on_each_resample_ties_included() -> None:
    rng = np.random.default_rng(0)
    x = np.round(rng.normal(size=(35, 3)), 1)
    y = np.round(rng.normal(size=(35, 2)) * 2) / 2
    samples = 25
    result = bootstrap_units(x, y, METHODS, samples=samples, rng=np.random.default_rng(9))
    counts = bootstrap._draw_counts(np.random.default_rng(9), 35, samples)
    for b in range(samples):
        drawn = np.repeat(np.arange(35), counts[b])
        for method in METHODS:
            for i in range(3):
                for j in range(2):
                    expected = SCIPY[method](x[drawn, i], y[drawn, j]).statistic
                    got = result[method].replicates[b, i, j]
                    assert got == pytest.approx(expected, abs=1e-12)


def test_a_constant_resample_is_an_undefined_replicate_not_a_number() -> None:
    x = np.array([[0.0], [0.0], [0.0], [1.0]])
    y = np.array([[0.0], [1.0], [2.0], [3.0]])
    result = bootstrap_units(x, y, METHODS, samples=200, rng=np.random.default_rng(1))
    for method in METHODS:
        replicates = result[method].replicates[:, 0, 0]
        # P(no draw of unit 4 in 4 draws) = (3/4)^4 ≈ 0.32
        assert 0.2 < np.isnan(replicates).mean() < 0.45
        assert result[method].defined[0, 0] == (~np.isnan(replicates)).sum()


def test_missing_values_are_resampled_over_each_pairs_complete_rows() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 2))
    y = x[:, :1] + rng.normal(size=(40, 1))
    x[:5, 1] = np.nan
    result = bootstrap_units(x, y, ("pearson",), samples=300, rng=rng)
    assert result["pearson"].defined.tolist() == [[300], [300]]
    assert result["pearson"].low[0, 0] < stats.pearsonr(x[:, 0], y[:, 0]).statistic


@pytest.mark.parametrize("method", METHODS)
def test_batched_correlation_matches_scipy(method: Method) -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 9, 2))
    y = np.round(rng.normal(size=(5, 9, 3)))
    out = batched_correlation(x, y, method)
    for b in range(5):
        for i in range(2):
            for j in range(3):
                expected = SCIPY[method](x[b, :, i], y[b, :, j]).statistic
                assert out[b, i, j] == pytest.approx(expected, abs=1e-12)


def test_system_bootstrap_resamples_items_inside_each_system() -> None:
    rng = np.random.default_rng(5)
    systems = 6
    metric_items = [rng.normal(loc=s, size=(int(rng.integers(3, 9)), 2)) for s in range(systems)]
    human_items = [rng.normal(loc=s, size=(int(rng.integers(3, 9)), 1)) for s in range(systems)]
    result = bootstrap_systems(
        metric_items, human_items, ("spearman",), samples=40, rng=np.random.default_rng(11)
    )
    # Recompute replicate 0..39 by drawing the same items in the same order.
    check = np.random.default_rng(11)
    x_counts = [bootstrap._draw_counts(check, len(m), 40) for m in metric_items]
    y_counts = [bootstrap._draw_counts(check, len(h), 40) for h in human_items]
    for b in range(40):
        x = [
            np.repeat(m, c[b], axis=0).mean(axis=0)
            for m, c in zip(metric_items, x_counts, strict=True)
        ]
        y = [
            np.repeat(h, c[b], axis=0).mean(axis=0)
            for h, c in zip(human_items, y_counts, strict=True)
        ]
        expected = stats.spearmanr(np.array(x)[:, 1], np.array(y)[:, 0]).statistic
        assert result["spearman"].replicates[b, 1, 0] == pytest.approx(expected, abs=1e-12)


def _bivariate(rng: np.random.Generator, n: int, rho: float) -> tuple[np.ndarray, np.ndarray]:
    data = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
    return data[:, :1], data[:, 1:]


def test_unit_intervals_cover_the_population_correlation() -> None:
    # Bivariate normal, rho = 0.5: population Pearson 0.5, Spearman (6/pi)·asin(rho/2),
    # Kendall (2/pi)·asin(rho). Percentile intervals should cover about 95% of the time.
    rho = 0.5
    truth = {
        "pearson": rho,
        "spearman": 6 / np.pi * np.arcsin(rho / 2),
        "kendall": 2 / np.pi * np.arcsin(rho),
    }
    rng = np.random.default_rng(2024)
    covered = dict.fromkeys(METHODS, 0)
    trials = 150
    for _ in range(trials):
        x, y = _bivariate(rng, 60, rho)
        result = bootstrap_units(x, y, METHODS, samples=300, rng=rng)
        for method in METHODS:
            covered[method] += (
                result[method].low[0, 0] <= truth[method] <= result[method].high[0, 0]
            )
    for method in METHODS:
        assert 0.86 <= covered[method] / trials <= 0.99, (method, covered[method] / trials)


def test_system_intervals_cover_the_correlation_of_the_true_means() -> None:
    rng = np.random.default_rng(77)
    true_metric = np.linspace(0, 1, 8)
    true_human = true_metric + rng.normal(scale=0.3, size=8)
    truth = stats.pearsonr(true_metric, true_human).statistic
    covered, trials = 0, 100
    for _ in range(trials):
        metric_items = [rng.normal(m, 0.5, size=(40, 1)) for m in true_metric]
        human_items = [rng.normal(h, 0.5, size=(40, 1)) for h in true_human]
        result = bootstrap_systems(metric_items, human_items, ("pearson",), samples=300, rng=rng)
        covered += result["pearson"].low[0, 0] <= truth <= result["pearson"].high[0, 0]
    assert covered / trials >= 0.85
