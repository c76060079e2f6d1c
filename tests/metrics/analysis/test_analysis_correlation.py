"""Vectorised correlations agree with scipy.stats; undefined cells say why."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.analysis.correlation import EXACT_MAX_N, Method, correlate, min_exact_p

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("n", [12, 40, 300])  # above EXACT_MAX_N: the asymptotic p of scipy
def test_it_matches_scipy_on_random_data_with_ties(method: Method, n: int) -> None:
    rng = np.random.default_rng(n)
    latent = rng.normal(size=n)
    x = latent[:, None] + rng.normal(size=(n, 6))
    x[:, 0] = np.round(x[:, 0])  # ties, as in DIST or a 0–2 scale
    y = np.round(latent[:, None] + rng.normal(size=(n, 3)), 1)
    grid = correlate(x, y, method)
    for i in range(x.shape[1]):
        for j in range(y.shape[1]):
            expected = SCIPY[method](x[:, i], y[:, j])
            assert grid.value[i, j] == pytest.approx(expected.statistic, abs=1e-12)
            assert grid.p_value[i, j] == pytest.approx(expected.pvalue, rel=1e-7, abs=1e-15)
            assert grid.n[i, j] == n
    assert not grid.reason.any()


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_missing_values_use_pairwise_complete_rows(method: Method) -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(30, 2))
    y = x @ [[1.0], [0.5]] + rng.normal(size=(30, 1))
    x[[1, 4, 9], 0] = np.nan
    y[[4, 20], 0] = np.nan
    grid = correlate(x, y, method)
    keep = ~np.isnan(x[:, 0]) & ~np.isnan(y[:, 0])
    expected = SCIPY[method](x[keep, 0], y[keep, 0])
    assert grid.n[0, 0] == keep.sum() == 26
    assert grid.n[1, 0] == 28
    assert grid.value[0, 0] == pytest.approx(expected.statistic, abs=1e-12)
    assert grid.p_value[0, 0] == pytest.approx(expected.pvalue, rel=1e-7)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_constant_input_and_tiny_samples_are_undefined_with_a_reason(method: Method) -> None:
    x = np.array([[1.0, 0.3], [1.0, 0.1], [1.0, 0.7], [1.0, 0.2]])
    y = np.array([[2.0, 1.0], [2.0, 0.0], [2.0, 2.0], [2.0, 1.0]])
    grid = correlate(x, y, method)
    assert np.isnan(grid.value[0, 1]) and grid.reason[0, 1] == "metric scores are constant"
    assert np.isnan(grid.value[1, 0]) and grid.reason[1, 0] == "human scores are constant"
    assert grid.reason[1, 1] == "" and not np.isnan(grid.value[1, 1])

    two = correlate(np.array([[0.1], [0.2]]), np.array([[1.0], [2.0]]), method)
    assert np.isnan(two.value[0, 0]) and np.isnan(two.p_value[0, 0])
    assert two.reason[0, 0] == "fewer than 3 units with both scores (n=2)"

    none = correlate(np.array([[np.nan], [1.0]]), np.array([[1.0], [np.nan]]), method)
    assert none.n[0, 0] == 0 and none.reason[0, 0].startswith("no unit has both")


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown correlation method 'pearsn'"):
        correlate(np.zeros((3, 1)), np.zeros((3, 1)), "pearsn")  # type: ignore[arg-type]  # a typo on purpose


def _spearman(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    ranks_a = stats.rankdata(a, axis=axis)
    ranks_b = stats.rankdata(b, axis=axis)
    ranks_a = ranks_a - ranks_a.mean(axis=axis, keepdims=True)
    ranks_b = ranks_b - ranks_b.mean(axis=axis, keepdims=True)
    return (ranks_a * ranks_b).sum(axis=axis) / np.sqrt(
        (ranks_a**2).sum(axis=axis) * (ranks_b**2).sum(axis=axis)
    )


def _kendall(a: np.ndarray, b: np.ndarray) -> float:
    return float(stats.kendalltau(a, b).statistic)


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_a_perfect_rank_correlation_over_four_systems_has_the_exact_p_of_one_in_twelve(
    method: Method,
) -> None:
    # Two of the 4! = 24 pairings reach |rho| = 1: p = 2/24, not the t test's 2.2e-16.
    grid = correlate(
        np.array([[0.1], [0.3], [0.2], [0.5]]), np.array([[1.0], [1.5], [1.2], [2.0]]), method
    )
    assert grid.value[0, 0] == pytest.approx(1.0)
    assert grid.p_value[0, 0] == pytest.approx(1 / 12)
    assert min_exact_p(4) == pytest.approx(1 / 12)


@pytest.mark.parametrize("n", [4, 6, 7])
def test_exact_spearman_p_with_ties_matches_scipy_permutation_test(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(0, 3, size=(n, 3)).astype(float)  # a 0–2 scale: many ties
    y = np.round(x[:, :2] + rng.normal(size=(n, 2)))
    grid = correlate(x, y, "spearman")
    for i in range(3):
        for j in range(2):
            if grid.reason[i, j]:
                continue
            expected = stats.permutation_test(
                (x[:, i], y[:, j]),
                _spearman,
                permutation_type="pairings",
                n_resamples=np.inf,
                vectorized=True,
            )
            assert grid.p_value[i, j] == pytest.approx(expected.pvalue, abs=1e-12)


def test_exact_kendall_p_without_ties_equals_scipy_exact_method() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(EXACT_MAX_N, 4))
    y = x[:, :2] + rng.normal(size=(EXACT_MAX_N, 2))
    grid = correlate(x, y, "kendall")
    for i in range(4):
        for j in range(2):
            expected = stats.kendalltau(x[:, i], y[:, j], method="exact")
            assert grid.p_value[i, j] == pytest.approx(expected.pvalue, abs=1e-12)


def test_exact_kendall_p_with_ties_matches_scipy_permutation_test() -> None:
    x = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 0.0])
    y = np.array([0.5, 1.0, 1.0, 2.0, 2.0, 0.5])
    grid = correlate(x[:, None], y[:, None], "kendall")
    expected = stats.permutation_test(
        (x, y), _kendall, permutation_type="pairings", n_resamples=np.inf
    )
    assert grid.p_value[0, 0] == pytest.approx(expected.pvalue, abs=1e-12)
    # scipy's own small-sample p with ties is the normal approximation, which differs here.
    assert grid.p_value[0, 0] != pytest.approx(stats.kendalltau(x, y).pvalue, abs=1e-3)


def test_pearson_keeps_the_t_test_at_small_n() -> None:
    x = np.array([[0.1], [0.3], [0.2], [0.5]])
    y = np.array([[1.0], [1.5], [1.2], [2.0]])
    grid = correlate(x, y, "pearson")
    assert grid.p_value[0, 0] == pytest.approx(stats.pearsonr(x[:, 0], y[:, 0]).pvalue)
