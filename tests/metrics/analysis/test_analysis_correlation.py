"""Vectorised correlations agree with scipy.stats; undefined cells say why."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.analysis.correlation import Method, correlate

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("n", [5, 40, 300])
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
