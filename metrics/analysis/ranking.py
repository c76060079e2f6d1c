"""Ranking systems: positions, and how well a metric orders systems as the humans do.

* Pairwise ranking accuracy (Kocmi et al. 2021; the system-level "pairwise accuracy" of WMT22–23,
  ``Agreement`` in mt-metrics-eval): the share of system pairs whose order by the metric has the
  same sign as their order by the humans; a pair tied by the humans counts as agreeing only if
  the metric ties it too.
* The Spearman correlation between the human ranking and a metric's ranking is Spearman's rho of
  the system means (average ranks for ties), as in seed 004 Tables 3–4.
"""

from __future__ import annotations

import numpy as np


def pairwise_accuracy(human: np.ndarray, metric: np.ndarray) -> tuple[float | None, int]:
    """Share of agreeing system pairs over systems with both scores, and the number of pairs."""
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    keep = ~np.isnan(human) & ~np.isnan(metric)
    human, metric = human[keep], metric[keep]
    upper = np.triu_indices(len(human), k=1)
    human_order = np.sign(human[:, None] - human[None, :])[upper]
    metric_order = np.sign(metric[:, None] - metric[None, :])[upper]
    pairs = len(human_order)
    if pairs == 0:
        return None, 0
    return float(np.mean(human_order == metric_order)), pairs


def positions(values: np.ndarray) -> list[int | None]:
    """Competition ranking, 1 = highest score; ties share the best position; NaN → None."""
    from scipy import stats  # lazily: web pages lay out tables with this module

    values = np.asarray(values, dtype=float)
    out: list[int | None] = [None] * len(values)
    present = np.flatnonzero(~np.isnan(values))
    if present.size:
        ranks = stats.rankdata(-values[present], method="min")
        for index, rank in zip(present, ranks, strict=True):
            out[int(index)] = int(rank)
    return out
