"""How metrics relate to each other (seed 002 §4): correlation matrix, clustering, distributions.

* Metric-vs-metric correlations over the scored units, then average-linkage hierarchical
  clustering (``scipy.cluster.hierarchy.linkage``) on the distance 1 − r, so metrics that rank
  responses alike end up side by side; metrics with an undefined correlation are left out of the
  clustering and listed with the reason.
* Score distributions after z-normalisation x' = (x − μ)/σ (seed 002 eq. 4.1, σ the population
  standard deviation), estimated with a Gaussian kernel density (as ``scipy.stats.gaussian_kde``
  with Scott's bandwidth) on a grid from min(z) − 1 to max(z) + 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

from metrics.analysis.correlation import MIN_N, CorrelationGrid, Method, correlate

GRID_POINTS = 128
_GRAM_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, eq=False)
class Clustering:
    """Leaf order (indices into the metrics), linkage matrix rows, and left-out metrics."""

    order: list[int]
    linkage: list[list[float]]
    excluded: dict[int, str]


def metric_correlations(values: np.ndarray, method: Method) -> CorrelationGrid:
    """Correlation of every metric column with every other (n × M → M × M).

    Kendall's tau-b on complete columns is the normalised Gram matrix of the pairwise sign
    matrices, one matrix product for all pairs; its p-values are not computed (NaN).
    """
    if method == "kendall" and values.shape[0] >= MIN_N and not np.isnan(values).any():
        return _kendall_matrix(values)
    return correlate(
        values, values, method, x_label="metric scores", y_label="metric scores", exact_p=False
    )


def _kendall_matrix(values: np.ndarray) -> CorrelationGrid:
    """tau-b[a, b] = Σ S_a S_b / sqrt(Σ S_a² · Σ S_b²), S[i, j] = sign(v_i − v_j).

    As scipy.stats.kendalltau: the sums run over ordered pairs, so concordant minus discordant
    and the untied-pair counts are all doubled and the ratio is tau-b.
    """
    n, size = values.shape
    gram = np.zeros((size, size))
    # Row blocks keep the sign tensor small and every float32 sum exact (below 2**24 terms).
    rows = max(1, min(_GRAM_BYTES // (4 * n * size), 2**24 // n))
    for start in range(0, n, rows):
        signs = np.sign(values[start : start + rows, None, :] - values[None, :, :])
        flat = signs.reshape(-1, size).astype(np.float32)
        gram += flat.T @ flat
    untied = np.diag(gram).copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.clip(gram / np.sqrt(np.outer(untied, untied)), -1.0, 1.0)
    reason = np.full((size, size), "", dtype=object)
    constant = untied == 0
    reason[:, constant] = "metric scores are constant"
    reason[constant, :] = "metric scores are constant"
    tau[reason != ""] = np.nan
    return CorrelationGrid(
        method="kendall",
        value=tau,
        p_value=np.full((size, size), np.nan),
        n=np.full((size, size), n),
        reason=reason,
    )


def cluster_metrics(grid: CorrelationGrid) -> Clustering:
    """Average-linkage clustering on 1 − r over the metrics whose correlations are all defined."""
    size = grid.value.shape[0]
    # A metric undefined against itself (constant, or fewer than 3 scores) goes first; then,
    # while some pair lacks common units, the metric with the most such pairs.
    excluded = {i: str(grid.reason[i, i]) for i in range(size) if grid.reason[i, i]}
    kept = [i for i in range(size) if i not in excluded]
    while True:
        block = grid.reason[np.ix_(kept, kept)] != ""
        if not block.any():
            break
        worst = int(np.argmax(block.sum(axis=1)))
        j = int(np.flatnonzero(block[worst])[0])
        excluded[kept[worst]] = f"{grid.reason[kept[worst], kept[j]]} (with another metric)"
        kept.pop(worst)
    if len(kept) < 3:
        return Clustering(order=kept, linkage=[], excluded=excluded)
    distance = 1.0 - grid.value[np.ix_(kept, kept)]
    distance = (distance + distance.T) / 2.0
    np.fill_diagonal(distance, 0.0)
    tree = hierarchy.linkage(squareform(np.clip(distance, 0.0, 2.0)), method="average")
    order = [kept[int(leaf)] for leaf in hierarchy.leaves_list(tree)]
    return Clustering(order=order, linkage=tree.tolist(), excluded=excluded)


@dataclass(frozen=True, eq=False)
class Density:
    n: int
    mean: float | None
    std: float | None
    grid: list[float]
    density: list[float]
    undefined: str


def z_density(values: np.ndarray, points: int = GRID_POINTS) -> Density:
    """KDE of the z-normalised values (NaN ignored)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    n = len(values)
    if n < 3:
        return Density(n, None, None, [], [], f"fewer than 3 scores (n={n})")
    mean, std = float(values.mean()), float(values.std())
    if np.ptp(values) == 0 or std == 0:
        return Density(n, mean, 0.0, [], [], "the scores are constant")
    z = (values - mean) / std
    grid = np.linspace(z.min() - 1.0, z.max() + 1.0, points)
    # scipy.stats.gaussian_kde in one dimension with Scott's factor n^(-1/5), written out:
    # the scipy version solves a triangular system per call, slow for many small samples.
    bandwidth = n ** (-1 / 5) * z.std(ddof=1)
    kernel = np.exp(-0.5 * ((grid[:, None] - z[None, :]) / bandwidth) ** 2)
    density = kernel.sum(axis=1) / (n * bandwidth * np.sqrt(2 * np.pi))
    return Density(n, mean, std, grid.tolist(), density.tolist(), "")
