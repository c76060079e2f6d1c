"""Percentile bootstrap confidence intervals for many correlations at once.

Unit level (turns, dialogues): units are resampled with replacement (Efron & Tibshirani 1993,
percentile interval). A resample is represented by how often each unit was drawn (a count
vector ``c``), so nothing is materialised per resample:

* Pearson is the ``c``-weighted Pearson correlation;
* Spearman ranks the resample (tied copies share their average rank, as ``scipy.stats.rankdata``)
  from cumulative counts over the tie blocks of each column, then takes the weighted Pearson;
* Kendall's tau-b of the resample is ``cᵀ(Sx∘Sy)c / sqrt((N² − Σ tx²)(N² − Σ ty²))`` where
  ``S[i, j] = sign(v_i − v_j)`` and ``t`` are the counts drawn from each tie block: copies of
  one unit are tied pairs, exactly as ``scipy.stats.kendalltau`` would count them on the
  materialised resample. The quadratic forms are one matrix product per column pair.

System level: the items inside each system are resampled (metric and human sides independently,
as they are different items in the MSDE design), the system means recomputed, and the
correlation taken over the systems; all resamples are correlated together along a batch axis.

All columns of a block share the same resamples, so replicates of two metrics are paired (the
paired bootstrap test in :mod:`metrics.analysis.significance` relies on that).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from metrics.analysis.correlation import Method

# Upper bound for the temporary arrays of one chunk of resamples (bytes).
_CHUNK_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Replicates (samples × M × D, NaN where a resample is undefined) and percentile bounds."""

    method: Method
    replicates: np.ndarray
    low: np.ndarray
    high: np.ndarray
    defined: np.ndarray


def _summarise(method: Method, replicates: np.ndarray, confidence: float) -> BootstrapResult:
    defined = (~np.isnan(replicates)).sum(axis=0)
    tail = (1.0 - confidence) / 2.0 * 100.0
    if defined.min() == replicates.shape[0]:
        low, high = np.percentile(replicates, [tail, 100.0 - tail], axis=0)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells stay NaN
            low, high = np.nanpercentile(replicates, [tail, 100.0 - tail], axis=0)
    return BootstrapResult(method, replicates, low, high, defined)


def _draw_counts(rng: np.random.Generator, n: int, samples: int) -> np.ndarray:
    """How often each of n units is drawn in each of `samples` resamples of size n."""
    draws = rng.integers(0, n, size=(samples, n))
    draws += np.arange(samples)[:, None] * n
    return np.bincount(draws.ravel(), minlength=samples * n).reshape(samples, n)


class _TieBlocks:
    """Sorted tie blocks of one column: block of each unit and the sort order of units."""

    def __init__(self, column: np.ndarray) -> None:
        self.order = np.argsort(column, kind="stable")
        ordered = column[self.order]
        starts = np.r_[True, ordered[1:] != ordered[:-1]]
        self.starts = np.flatnonzero(starts)
        block_of_sorted = np.cumsum(starts) - 1
        self.block = np.empty(len(column), dtype=np.intp)
        self.block[self.order] = block_of_sorted

    def totals(self, counts: np.ndarray) -> np.ndarray:
        """Resample counts per tie block (samples × blocks)."""
        return np.add.reduceat(counts[:, self.order], self.starts, axis=1)

    def ranks(self, totals: np.ndarray) -> np.ndarray:
        """Average rank of every unit in each resample (samples × n), 1-based."""
        block_rank = np.cumsum(totals, axis=1) - (totals - 1) / 2.0
        return block_rank[:, self.block]


def _unit_block(
    x: np.ndarray,
    y: np.ndarray,
    methods: Sequence[Method],
    counts: np.ndarray,
) -> dict[Method, np.ndarray]:
    """Replicates (samples × M × D) for complete columns x (n × M), y (n × D)."""
    samples, n = counts.shape
    weights = counts.astype(float)
    x_blocks = [_TieBlocks(column) for column in x.T]
    y_blocks = [_TieBlocks(column) for column in y.T]
    x_totals = [blocks.totals(counts) for blocks in x_blocks]
    y_totals = [blocks.totals(counts) for blocks in y_blocks]
    # A resample is constant in a column when all its draws fall in one tie block.
    x_constant = np.stack([(t > 0).sum(axis=1) <= 1 for t in x_totals], axis=1)
    y_constant = np.stack([(t > 0).sum(axis=1) <= 1 for t in y_totals], axis=1)
    undefined = x_constant[:, :, None] | y_constant[:, None, :]

    out: dict[Method, np.ndarray] = {}
    if "pearson" in methods:
        # Standardise first so the moment differences below lose no precision.
        xs = (x - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
        ys = (y - y.mean(axis=0)) / np.where(y.std(axis=0) > 0, y.std(axis=0), 1.0)
        w = weights / n
        mx, my = w @ xs, w @ ys
        vx = w @ xs**2 - mx**2
        vy = w @ ys**2 - my**2
        products = (xs[:, :, None] * ys[:, None, :]).reshape(n, -1)
        exy = (w @ products).reshape(undefined.shape)
        cov = exy - mx[:, :, None] * my[:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = cov / np.sqrt(np.clip(vx, 0, None)[:, :, None] * np.clip(vy, 0, None)[:, None, :])
        out["pearson"] = np.where(undefined, np.nan, np.clip(r, -1.0, 1.0))
    if "spearman" in methods:
        rho = _weighted_spearman(weights, x_blocks, x_totals, y_blocks, y_totals)
        out["spearman"] = np.where(undefined, np.nan, rho)
    if "kendall" in methods:
        tau = _weighted_kendall(x, y, weights, x_totals, y_totals)
        out["kendall"] = np.where(undefined, np.nan, tau)
    return out


def _weighted_spearman(
    weights: np.ndarray,
    x_blocks: list[_TieBlocks],
    x_totals: list[np.ndarray],
    y_blocks: list[_TieBlocks],
    y_totals: list[np.ndarray],
) -> np.ndarray:
    samples, n = weights.shape
    columns = len(x_blocks) + len(y_blocks)
    chunk = max(1, _CHUNK_BYTES // (8 * n * columns * 2))
    mean_rank = (n + 1) / 2.0  # a resample has n draws; average ranks keep the rank sum
    result = np.empty((samples, len(x_blocks), len(y_blocks)))
    for start in range(0, samples, chunk):
        part = slice(start, start + chunk)
        w = weights[part][:, None, :]
        rx = np.empty((w.shape[0], len(x_blocks), n))
        ry = np.empty((w.shape[0], len(y_blocks), n))
        for ranks, blocks, totals in ((rx, x_blocks, x_totals), (ry, y_blocks, y_totals)):
            for k, (b, t) in enumerate(zip(blocks, totals, strict=True)):
                ranks[:, k, :] = b.ranks(t[part]) - mean_rank
        wrx = w * rx
        wry = w * ry
        cov = np.matmul(wrx, ry.transpose(0, 2, 1))
        vx = (wrx * rx).sum(axis=2)
        vy = (wry * ry).sum(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            result[part] = cov / np.sqrt(vx[:, :, None] * vy[:, None, :])
    return np.clip(result, -1.0, 1.0)


def _sign_matrix(column: np.ndarray) -> np.ndarray:
    return np.sign(column[:, None] - column[None, :]).astype(np.float32)


def _weighted_kendall(
    x: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    x_totals: list[np.ndarray],
    y_totals: list[np.ndarray],
) -> np.ndarray:
    samples, n = weights.shape
    # Counts are small integers, so the float32 matrix products are exact (below 2**24); the
    # final contraction, which can exceed that, runs in float64.
    c32 = weights.astype(np.float32)
    untied_x = np.stack([n * n - (t.astype(float) ** 2).sum(axis=1) for t in x_totals], axis=1)
    untied_y = np.stack([n * n - (t.astype(float) ** 2).sum(axis=1) for t in y_totals], axis=1)
    y_signs = [_sign_matrix(column) for column in y.T]
    pairs = [(i, j) for i in range(x.shape[1]) for j in range(y.shape[1])]
    # Several column pairs share one wide matrix product: BLAS runs much faster on it.
    chunk = max(1, _CHUNK_BYTES // (4 * n * (n + samples)))
    numerator = np.empty((samples, x.shape[1], y.shape[1]))
    x_sign: np.ndarray | None = None
    x_index = -1
    for start in range(0, len(pairs), chunk):
        block = pairs[start : start + chunk]
        products = np.empty((n, len(block) * n), dtype=np.float32)
        for k, (i, j) in enumerate(block):
            if i != x_index:
                x_sign, x_index = _sign_matrix(x[:, i]), i
            assert x_sign is not None  # set on the first pair: i != -1
            np.multiply(x_sign, y_signs[j], out=products[:, k * n : (k + 1) * n])
        weighted = (c32 @ products).reshape(samples, len(block), n)
        values = np.einsum("bki,bi->bk", weighted, c32, dtype=np.float64)
        rows, columns = zip(*block, strict=True)
        numerator[:, list(rows), list(columns)] = values
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = numerator / np.sqrt(untied_x[:, :, None] * untied_y[:, None, :])
    return np.clip(tau, -1.0, 1.0)


def bootstrap_units(
    x: np.ndarray,
    y: np.ndarray,
    methods: Sequence[Method],
    *,
    samples: int,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> dict[Method, BootstrapResult]:
    """Resample units (rows); x is n × M, y is n × D, NaN = missing (pairwise complete)."""
    shape = (samples, x.shape[1], y.shape[1])
    replicates = {method: np.full(shape, np.nan) for method in methods}
    x_valid, y_valid = ~np.isnan(x), ~np.isnan(y)
    # Pairs sharing the same complete rows share one set of resamples (usually all pairs).
    patterns: dict[bytes, tuple[np.ndarray, list[tuple[int, int]]]] = {}
    for i in range(x.shape[1]):
        for j in range(y.shape[1]):
            rows = x_valid[:, i] & y_valid[:, j]
            patterns.setdefault(rows.tobytes(), (rows, []))[1].append((i, j))
    for rows, pairs in patterns.values():
        n = int(rows.sum())
        if n < 2:
            continue
        xi = sorted({i for i, _ in pairs})
        yj = sorted({j for _, j in pairs})
        block = _unit_block(
            x[np.ix_(rows, np.asarray(xi, dtype=np.intp))],
            y[np.ix_(rows, np.asarray(yj, dtype=np.intp))],
            methods,
            _draw_counts(rng, n, samples),
        )
        x_pos = {i: k for k, i in enumerate(xi)}
        y_pos = {j: k for k, j in enumerate(yj)}
        for method, values in block.items():
            for i, j in pairs:
                replicates[method][:, i, j] = values[:, x_pos[i], y_pos[j]]
    return {m: _summarise(m, replicates[m], confidence) for m in methods}


def _resampled_means(
    items: Sequence[np.ndarray], samples: int, rng: np.random.Generator
) -> np.ndarray:
    """samples × systems × names: means of items resampled inside each system."""
    width = items[0].shape[1]
    means = np.full((samples, len(items), width), np.nan)
    for s, matrix in enumerate(items):
        counts = _draw_counts(rng, matrix.shape[0], samples).astype(float)
        valid = ~np.isnan(matrix)
        with np.errstate(divide="ignore", invalid="ignore"):
            means[:, s, :] = (counts @ np.where(valid, matrix, 0.0)) / (counts @ valid)
    return means


def batched_correlation(x: np.ndarray, y: np.ndarray, method: Method) -> np.ndarray:
    """Correlations over axis 1 for a batch: x is B × n × M, y is B × n × D → B × M × D.

    NaN anywhere in a column makes that replicate undefined (NaN); so does a constant column.
    """
    if method == "spearman":
        x = stats.rankdata(x, axis=1)
        y = stats.rankdata(y, axis=1)
    if method in ("pearson", "spearman"):
        xc = x - x.mean(axis=1, keepdims=True)
        yc = y - y.mean(axis=1, keepdims=True)
        cov = np.matmul(xc.transpose(0, 2, 1), yc)
        vx = np.einsum("bim,bim->bm", xc, xc)
        vy = np.einsum("bid,bid->bd", yc, yc)
    else:
        x_sign = np.sign(x[:, :, None, :] - x[:, None, :, :])
        y_sign = np.sign(y[:, :, None, :] - y[:, None, :, :])
        cov = np.einsum("bijm,bijd->bmd", x_sign, y_sign)
        vx = np.abs(x_sign).sum(axis=(1, 2))
        vy = np.abs(y_sign).sum(axis=(1, 2))
    constant_x = np.ptp(x, axis=1) == 0
    constant_y = np.ptp(y, axis=1) == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = cov / np.sqrt(vx[:, :, None] * vy[:, None, :])
    r = np.where(constant_x[:, :, None] | constant_y[:, None, :], np.nan, r)
    return np.clip(r, -1.0, 1.0)


def bootstrap_systems(
    metric_items: Sequence[np.ndarray],
    human_items: Sequence[np.ndarray],
    methods: Sequence[Method],
    *,
    samples: int,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> dict[Method, BootstrapResult]:
    """Resample items inside each system, recompute system means, correlate over systems.

    ``metric_items[s]`` is system s's items × metrics matrix, ``human_items[s]`` its items ×
    dimensions matrix (NaN = item without that score). A metric or dimension with no score at
    all in a system leaves that system out of that pair, as the point estimate does.
    """
    width_x, width_y = metric_items[0].shape[1], human_items[0].shape[1]
    shape = (samples, width_x, width_y)
    replicates = {method: np.full(shape, np.nan) for method in methods}
    x = _resampled_means(metric_items, samples, rng)
    y = _resampled_means(human_items, samples, rng)
    x_present = np.array([(~np.isnan(m)).any(axis=0) for m in metric_items])
    y_present = np.array([(~np.isnan(m)).any(axis=0) for m in human_items])
    patterns: dict[bytes, tuple[np.ndarray, list[tuple[int, int]]]] = {}
    for i in range(width_x):
        for j in range(width_y):
            systems = x_present[:, i] & y_present[:, j]
            patterns.setdefault(systems.tobytes(), (systems, []))[1].append((i, j))
    for systems, pairs in patterns.values():
        if systems.sum() < 2:
            continue
        xi = sorted({i for i, _ in pairs})
        yj = sorted({j for _, j in pairs})
        xs = x[:, systems][:, :, xi]
        ys = y[:, systems][:, :, yj]
        per_sample = 8 * xs.shape[1] ** 2 * (len(xi) + len(yj))
        chunk = max(1, _CHUNK_BYTES // per_sample)
        x_pos = {i: k for k, i in enumerate(xi)}
        y_pos = {j: k for k, j in enumerate(yj)}
        for method in methods:
            starts = range(0, samples, chunk)
            values = np.concatenate(
                [batched_correlation(xs[b : b + chunk], ys[b : b + chunk], method) for b in starts]
            )
            for i, j in pairs:
                replicates[method][:, i, j] = values[:, x_pos[i], y_pos[j]]
    return {m: _summarise(m, replicates[m], confidence) for m in methods}
