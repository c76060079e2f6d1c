"""Pearson, Spearman and Kendall tau-b of every x column with every y column, with p-values.

Conventions follow scipy.stats so results can be checked against it: Pearson's r with the exact
two-sided test of ``scipy.stats.pearsonr`` (Student's t with n-2 degrees of freedom, identical to
its beta-distribution form); Spearman's rho as ``scipy.stats.spearmanr`` (Pearson on average ranks,
same t test); Kendall's tau-b and its p-value as ``scipy.stats.kendalltau`` (method='auto': exact
for small samples without ties, the tie-corrected normal approximation otherwise).

At ``n <= EXACT_MAX_N`` (9: 9! = 362,880 orderings) the rank correlations' p-values are exact
permutation p-values instead: the statistic over every one of the n! orderings of the y column
against x, two-sided as ``scipy.stats.permutation_test(..., permutation_type="pairings")`` defines
it (twice the smaller tail, at most 1). The t approximation is far off there: at n = 4 it gives
p = 0 for rho = 1, where the exact p is 2/4! = 1/12. With ties the permutation is over the tied
data as they are, which keeps the test exact (the null is "any pairing equally likely"); without
ties Kendall's p equals ``kendalltau(method="exact")``. Pearson keeps the t test at every n: its
p-value rests on the scores being normally distributed, which a handful of units cannot show.

Pearson and Spearman are computed for all column pairs at once with matrix products. Missing
values (NaN) are handled pairwise: each pair uses the rows where both columns have a value.
A pair with fewer than 3 such rows, or a constant column, is *undefined*: its value is NaN here and
``reason`` says why, so that tables print the reason, never "nan".
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

Method = Literal["pearson", "spearman", "kendall"]
METHODS: tuple[Method, ...] = ("pearson", "spearman", "kendall")
METHOD_LABELS: dict[str, str] = {"pearson": "Pearson", "spearman": "Spearman", "kendall": "Kendall"}
MIN_N = 3
EXACT_MAX_N = 9


@dataclass(frozen=True, eq=False)
class CorrelationGrid:
    """Correlations of x columns (rows of each array) with y columns (columns of each array)."""

    method: Method
    value: np.ndarray
    p_value: np.ndarray
    n: np.ndarray
    reason: np.ndarray  # dtype object: "" where defined, else why not


def t_test_pvalue(r: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Two-sided p-value of a correlation coefficient under H0: rho = 0, t with n-2 df."""
    from scipy import special  # lazily: web pages import this module for its labels

    r = np.asarray(r, dtype=float)
    df = np.asarray(n, dtype=float) - 2
    with np.errstate(divide="ignore", invalid="ignore"):
        t = r * np.sqrt(df / ((1.0 - r) * (1.0 + r)))
    p = 2.0 * special.stdtr(df, -np.abs(t))
    return np.where(np.abs(r) >= 1.0, 0.0, p)


def min_exact_p(n: int) -> float:
    """Smallest two-sided exact permutation p-value a rank correlation over n units can reach.

    The observed ordering is always one of the n! in its own tail, so p >= 2/n! (ties only raise
    it): at n = 4 that is 1/12, so no rank correlation over 4 units reaches p < 0.05.
    """
    return min(1.0, 2.0 / math.factorial(n))


@functools.lru_cache(maxsize=EXACT_MAX_N + 1)
def _orderings(n: int) -> np.ndarray:
    """Every permutation of range(n), one per row (n! × n, uint8); cached, read-only."""
    flat = itertools.chain.from_iterable(itertools.permutations(range(n)))
    out = np.fromiter(flat, dtype=np.uint8, count=math.factorial(n) * n).reshape(-1, n)
    out.flags.writeable = False
    return out


def _two_sided(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Exact two-sided p for each column of ``null`` (orderings × k), as scipy.permutation_test.

    The statistics compared here are integer-valued (see the callers), so ties with the observed
    value are exact and need none of scipy's rounding tolerance.
    """
    less = np.count_nonzero(null <= observed, axis=0) / null.shape[0]
    greater = np.count_nonzero(null >= observed, axis=0) / null.shape[0]
    return np.clip(2 * np.minimum(less, greater), 0.0, 1.0)


def _exact_spearman_p(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact p of Spearman's rho for every x column against every y column (complete data).

    For one pair, rho over an ordering is an increasing function of sum_i rx_i·ry_p(i) (the
    means and spreads of the ranks do not change), so that sum is the statistic compared. With
    doubled average ranks it is an integer, exact in float32 up to n = 9 (at most 4·9³).
    """
    from scipy import stats

    orderings = _orderings(x.shape[0])
    xr = (2 * stats.rankdata(x, axis=0)).astype(np.float32)
    p = np.full((x.shape[1], y.shape[1]), np.nan)
    for j in range(y.shape[1]):
        yr = (2 * stats.rankdata(y[:, j])).astype(np.float32)
        p[:, j] = _two_sided(yr[orderings] @ xr, yr @ xr)
    return p


@functools.lru_cache(maxsize=EXACT_MAX_N + 1)
def _ordered_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs i < j, and for each ordering p the flat index p(i)·n + p(j) of each pair; cached."""
    i, j = np.triu_indices(n, k=1)
    orderings = _orderings(n)
    index = orderings[:, i] * np.uint8(n) + orderings[:, j]  # < 81 at n = 9: fits uint8
    index.flags.writeable = False
    return i * n + j, index


def _exact_kendall_p(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact p of Kendall's tau-b for every x column against every y column (complete data).

    tau-b's denominator (the tie counts of each column) is the same for every ordering, so the
    integer numerator sum_{i<j} sign(x_i - x_j)·sign(y_p(i) - y_p(j)) is the statistic compared.
    """
    n = x.shape[0]
    pairs, index = _ordered_pairs(n)
    sx = np.sign(x[:, None, :] - x[None, :, :]).reshape(n * n, x.shape[1])[pairs]
    sx = sx.astype(np.float32)
    p = np.full((x.shape[1], y.shape[1]), np.nan)
    for j in range(y.shape[1]):
        sy = np.sign(y[:, j][:, None] - y[:, j][None, :]).reshape(-1).astype(np.float32)
        p[:, j] = _two_sided(sy[index] @ sx, sy[pairs] @ sx)
    return p


def _constant(columns: np.ndarray) -> np.ndarray:
    """Columns whose values are all equal (exactly: a mean-centred test would see rounding)."""
    if columns.shape[0] == 0:
        return np.ones(columns.shape[1], dtype=bool)
    return np.ptp(columns, axis=0) == 0


def _pearson_block(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=0)
    yc = y - y.mean(axis=0)
    sx = np.sqrt(np.einsum("ij,ij->j", xc, xc))
    sy = np.sqrt(np.einsum("ij,ij->j", yc, yc))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (xc.T @ yc) / np.outer(sx, sy)
    return np.clip(r, -1.0, 1.0)


def _complete_block(
    x: np.ndarray, y: np.ndarray, method: Method, exact: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Value and p-value for complete columns (no NaN), n >= MIN_N, constant columns allowed.

    ``exact``: exact permutation p-values for the rank correlations at n <= EXACT_MAX_N.
    """
    from scipy import stats

    n = x.shape[0]
    if method == "pearson":
        r = _pearson_block(x, y)
        return r, t_test_pvalue(r, np.full(r.shape, n))
    if method == "spearman":
        r = _pearson_block(stats.rankdata(x, axis=0), stats.rankdata(y, axis=0))
        if exact and n <= EXACT_MAX_N:
            return r, _exact_spearman_p(x, y)
        return r, t_test_pvalue(r, np.full(r.shape, n))
    value = np.full((x.shape[1], y.shape[1]), np.nan)
    p_value = np.full_like(value, np.nan)
    x_constant, y_constant = _constant(x), _constant(y)
    for i in np.flatnonzero(~x_constant):
        for j in np.flatnonzero(~y_constant):
            result = stats.kendalltau(x[:, i], y[:, j])
            value[i, j], p_value[i, j] = result.statistic, result.pvalue
    if exact and n <= EXACT_MAX_N:
        p_value = np.where(np.isnan(value), np.nan, _exact_kendall_p(x, y))
    return value, p_value


def correlate(
    x: np.ndarray,
    y: np.ndarray,
    method: Method,
    *,
    x_label: str = "metric scores",
    y_label: str = "human scores",
    exact_p: bool = True,
) -> CorrelationGrid:
    """Correlate every column of ``x`` (n × M) with every column of ``y`` (n × D).

    ``exact_p=False`` keeps the asymptotic p-values at small n too, for callers that use only
    the coefficients (the exact enumeration costs up to 9! orderings per column pair).
    """
    if method not in METHODS:
        raise ValueError(f"unknown correlation method {method!r}; use one of {', '.join(METHODS)}")
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError("x and y must be 2-D arrays with the same number of rows")
    shape = (x.shape[1], y.shape[1])
    value = np.full(shape, np.nan)
    p_value = np.full(shape, np.nan)
    count = np.zeros(shape, dtype=int)
    reason = np.full(shape, "", dtype=object)

    x_valid = ~np.isnan(x)
    y_valid = ~np.isnan(y)
    if x_valid.all() and y_valid.all():
        blocks = [(np.ones(x.shape[0], dtype=bool), np.arange(shape[0]), np.arange(shape[1]))]
    else:
        blocks = [
            (x_valid[:, i] & y_valid[:, j], np.array([i]), np.array([j]))
            for i in range(shape[0])
            for j in range(shape[1])
        ]
    for rows, xi, yj in blocks:
        n = int(rows.sum())
        index = np.ix_(xi, yj)
        count[index] = n
        if n < MIN_N:
            reason[index] = (
                f"no unit has both {x_label} and {y_label}"
                if n == 0
                else f"fewer than {MIN_N} units with both scores (n={n})"
            )
            continue
        xb, yb = x[np.ix_(rows, xi)], y[np.ix_(rows, yj)]
        value[index], p_value[index] = _complete_block(xb, yb, method, exact_p)
        x_constant, y_constant = _constant(xb), _constant(yb)
        block_reason = np.full((len(xi), len(yj)), "", dtype=object)
        block_reason[:, y_constant] = f"{y_label} are constant"
        block_reason[x_constant, :] = f"{x_label} are constant"
        reason[index] = block_reason
    undefined = reason != ""
    value[undefined] = np.nan
    p_value[undefined] = np.nan
    return CorrelationGrid(method=method, value=value, p_value=p_value, n=count, reason=reason)
