"""Pearson, Spearman and Kendall tau-b of every x column with every y column, with p-values.

Conventions follow scipy.stats so results can be checked against it: Pearson's r with the exact
two-sided test of ``scipy.stats.pearsonr`` (Student's t with n-2 degrees of freedom, identical to
its beta-distribution form); Spearman's rho as ``scipy.stats.spearmanr`` (Pearson on average ranks,
same t test); Kendall's tau-b and its p-value as ``scipy.stats.kendalltau`` (method='auto': exact
for small samples without ties, the tie-corrected normal approximation otherwise).

Pearson and Spearman are computed for all column pairs at once with matrix products. Missing
values (NaN) are handled pairwise: each pair uses the rows where both columns have a value.
A pair with fewer than 3 such rows, or a constant column, is *undefined*: its value is NaN here and
``reason`` says why, so that tables print the reason, never "nan".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Method = Literal["pearson", "spearman", "kendall"]
METHODS: tuple[Method, ...] = ("pearson", "spearman", "kendall")
METHOD_LABELS: dict[str, str] = {"pearson": "Pearson", "spearman": "Spearman", "kendall": "Kendall"}
MIN_N = 3


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


def _complete_block(x: np.ndarray, y: np.ndarray, method: Method) -> tuple[np.ndarray, np.ndarray]:
    """Value and p-value for complete columns (no NaN), n >= MIN_N, constant columns allowed."""
    from scipy import stats

    n = x.shape[0]
    if method == "pearson":
        r = _pearson_block(x, y)
        return r, t_test_pvalue(r, np.full(r.shape, n))
    if method == "spearman":
        r = _pearson_block(stats.rankdata(x, axis=0), stats.rankdata(y, axis=0))
        return r, t_test_pvalue(r, np.full(r.shape, n))
    value = np.full((x.shape[1], y.shape[1]), np.nan)
    p_value = np.full_like(value, np.nan)
    x_constant, y_constant = _constant(x), _constant(y)
    for i in np.flatnonzero(~x_constant):
        for j in np.flatnonzero(~y_constant):
            result = stats.kendalltau(x[:, i], y[:, j])
            value[i, j], p_value[i, j] = result.statistic, result.pvalue
    return value, p_value


def correlate(
    x: np.ndarray,
    y: np.ndarray,
    method: Method,
    *,
    x_label: str = "metric scores",
    y_label: str = "human scores",
) -> CorrelationGrid:
    """Correlate every column of ``x`` (n × M) with every column of ``y`` (n × D)."""
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
        value[index], p_value[index] = _complete_block(xb, yb, method)
        x_constant, y_constant = _constant(xb), _constant(yb)
        block_reason = np.full((len(xi), len(yj)), "", dtype=object)
        block_reason[:, y_constant] = f"{y_label} are constant"
        block_reason[x_constant, :] = f"{x_label} are constant"
        reason[index] = block_reason
    undefined = reason != ""
    value[undefined] = np.nan
    p_value[undefined] = np.nan
    return CorrelationGrid(method=method, value=value, p_value=p_value, n=count, reason=reason)
