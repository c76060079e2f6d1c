"""A correlation study: from score rows to every number a report shows.

``run_study`` joins metric and human scores (:mod:`metrics.analysis.join`), then per group
computes the correlation of every metric with every human dimension by each method, bootstrap
intervals, significance clusters, the per-system table (system level), metric-vs-metric
correlations with a clustering, and z-normalised score distributions, into a
:class:`~metrics.analysis.results.CorrelationStudy`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import numpy as np

from metrics.analysis.bootstrap import BootstrapResult, bootstrap_systems, bootstrap_units
from metrics.analysis.correlation import (
    EXACT_MAX_N,
    CorrelationGrid,
    Method,
    correlate,
    min_exact_p,
)
from metrics.analysis.intermetric import cluster_metrics, metric_correlations, z_density
from metrics.analysis.join import GroupScores, JoinedScores, Level, join_scores
from metrics.analysis.ranking import pairwise_accuracy
from metrics.analysis.results import (
    MIN_SYSTEMS,
    CorrelationCell,
    CorrelationStudy,
    MetricComparison,
    MetricCorrelations,
    RankAgreement,
    ScoreDistribution,
    StudyConfig,
    SystemScores,
)
from metrics.analysis.scores import ScoreRow, load_score_csv
from metrics.analysis.significance import (
    assign_clusters,
    benjamini_hochberg,
    holm,
    paired_bootstrap_pvalues,
    williams_test,
)

Progress = Callable[[float, str], None]


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def run_study(
    metric_rows: Iterable[ScoreRow],
    human_rows: Iterable[ScoreRow],
    config: StudyConfig,
    *,
    progress: Progress | None = None,
) -> CorrelationStudy:
    """Join the rows at ``config.level`` and analyse them (see :func:`analyse`)."""
    joined = join_scores(metric_rows, human_rows, level=config.level)
    return analyse(joined, config, progress=progress)


def correlate_csv(
    metric_scores: str | os.PathLike[str] | TextIO,
    human_scores: str | os.PathLike[str] | TextIO,
    config: StudyConfig,
    *,
    progress: Progress | None = None,
) -> CorrelationStudy:
    """Load two score CSVs (see :func:`load_score_csv`) and analyse them.

    Raises ScoreFileError, naming the file, row and column, when a file is malformed.
    """
    metric_rows = load_score_csv(metric_scores, kind="metric")
    human_rows = load_score_csv(human_scores, kind="human")
    return run_study(metric_rows, human_rows, config, progress=progress)


def analyse(
    joined: JoinedScores, config: StudyConfig, *, progress: Progress | None = None
) -> CorrelationStudy:
    """Every statistic of the study; ``progress(fraction, message)`` is called between steps."""
    if joined.level != config.level:
        raise ValueError(f"scores were joined at the {joined.level} level, not {config.level}")
    rng = np.random.default_rng(config.seed)
    pending: list[dict[str, Any]] = []
    comparisons: list[MetricComparison] = []
    systems: list[SystemScores] = []
    inter: list[MetricCorrelations] = []
    distributions: list[ScoreDistribution] = []
    warnings: list[str] = []
    notes = _notes(config)

    for number, group in enumerate(joined.groups):
        if progress:
            progress(number / max(len(joined.groups), 1), f"group {group.group}")
        warnings += _coverage_warnings(group, joined.level)
        metric_cols = [joined.metrics.index(m) for m in group.metrics]
        dim_cols = [joined.dimensions.index(d) for d in group.dimensions]
        x = group.metric_values[:, metric_cols]
        y = group.human_values[:, dim_cols]
        grids = {method: correlate(x, y, method) for method in config.methods}
        boots = _bootstrap(group, metric_cols, dim_cols, x, y, config, rng)
        if config.bootstrap and group.metric_items and _one_score_per_system(group):
            warnings.append(
                f"{group.group}: no bootstrap interval, every system has a single score on "
                "both sides (give item-level rows to resample)."
            )
        for method, grid in grids.items():
            pending += _cells(group, grid, boots.get(method), config, joined.level)
            comparisons += _comparisons(group, x, y, grid, boots.get(method), config)
        if joined.level == "system" and group.units:
            systems.append(_system_scores(group, x, y))
        detail = group.metric_detail[:, metric_cols]
        if group.metrics:
            inter += [_metric_correlations(group, detail, method) for method in config.methods]
        for i, metric in enumerate(group.metrics):
            d = z_density(detail[:, i])
            distributions.append(
                ScoreDistribution(
                    group.group,
                    metric,
                    d.n,
                    d.mean,
                    d.std,
                    tuple(d.grid),
                    tuple(d.density),
                    d.undefined,
                )
            )

    cells = _adjust(pending, config.methods)
    clusters = {
        (c.group, c.dimension, c.method, metric): rank
        for c in comparisons
        for metric, rank in zip(c.metrics, c.clusters, strict=True)
    }
    cells = [
        dataclasses.replace(c, cluster=clusters.get((c.group, c.dimension, c.method, c.metric)))
        for c in cells
    ]
    few = sorted({c.group for c in cells if c.warning})
    if few:
        warnings.append(
            f"Fewer than {MIN_SYSTEMS} systems in {', '.join(few)}: no Spearman or Kendall "
            "correlation there can reach p < 0.05 (their exact p is at least 2/n!, 1/12 at 4 "
            "systems), and Pearson's p rests on the system scores being normally distributed, "
            "which so few systems cannot show."
        )
    if progress:
        progress(1.0, "done")
    return CorrelationStudy(
        config=config,
        groups=tuple(g.group for g in joined.groups),
        metrics=joined.metrics,
        dimensions=joined.dimensions,
        coverage=tuple(g.coverage for g in joined.groups),
        cells=tuple(cells),
        comparisons=tuple(comparisons),
        systems=tuple(systems),
        metric_correlations=tuple(inter),
        distributions=tuple(distributions),
        warnings=tuple(warnings),
        notes=notes,
    )


def few_systems_warning(method: Method, n: int) -> str:
    """What a correlation over fewer than MIN_SYSTEMS systems can and cannot tell, truthfully.

    A rank correlation's exact two-sided p is at least 2/n! (:func:`min_exact_p`): 1/12 at 4
    systems, so below 5 systems none reaches 0.05 whatever the data. Pearson's t-test p can be
    small there, but it is only valid if the scores are normal, which 4 points cannot check.
    """
    if method == "pearson":
        return f"only {n} systems: Pearson's p rests on normally distributed scores"
    return f"only {n} systems: p cannot go below {min_exact_p(n):.3g} (exact), so not below 0.05"


def _notes(config: StudyConfig) -> tuple[str, ...]:
    notes = [
        "Pearson's r, Spearman's rho and Kendall's tau-b with two-sided p-values as in "
        "scipy.stats; n is the number of units with both scores. Up to n = "
        f"{EXACT_MAX_N} the Spearman and Kendall p-values are exact: over all n! pairings of "
        "the scores, ties kept (scipy.stats.permutation_test); Pearson's assume normality.",
        "p_holm (family-wise error, Holm 1979) and p_bh (false discovery rate, Benjamini & "
        "Hochberg 1995) adjust the p-values over all cells of one method.",
        "Clusters: metrics sorted by correlation; a metric opens a new cluster when a metric of "
        f"the current one is significantly better (one-sided p <= {config.alpha}); Williams "
        "test for Pearson and Spearman (Graham & Baldwin 2014), paired bootstrap for Kendall.",
    ]
    if config.bootstrap:
        resampled = (
            "items inside each system, system means recomputed"
            if config.level == "system"
            else f"{config.level}s"
        )
        notes.append(
            f"{config.confidence:.0%} percentile bootstrap intervals from {config.bootstrap} "
            f"resamples of {resampled} (seed {config.seed})."
        )
    elif "kendall" in config.methods:
        notes.append("Kendall clusters need bootstrap resamples (none were requested).")
    return tuple(notes)


def _coverage_warnings(group: GroupScores, level: Level) -> list[str]:
    c = group.coverage
    out = []
    if c.metric_only:
        out.append(
            f"{c.group}: {len(c.metric_only)} {level} unit(s) have metric scores but no human "
            f"score (e.g. {', '.join(c.metric_only[:3])}); they are not correlated."
        )
    if c.human_only:
        out.append(
            f"{c.group}: {len(c.human_only)} {level} unit(s) have human scores but no metric "
            f"score (e.g. {', '.join(c.human_only[:3])}); they are not correlated."
        )
    return out


def _one_score_per_system(group: GroupScores) -> bool:
    """Nothing to resample: system means given directly, one row per system on both sides."""
    return all(len(items) == 1 for items in (*group.metric_items, *group.human_items))


def _bootstrap(
    group: GroupScores,
    metric_cols: list[int],
    dim_cols: list[int],
    x: np.ndarray,
    y: np.ndarray,
    config: StudyConfig,
    rng: np.random.Generator,
) -> dict[Method, BootstrapResult]:
    if not config.bootstrap or len(group.units) < 2 or not metric_cols or not dim_cols:
        return {}
    if group.metric_items:
        if _one_score_per_system(group):
            return {}
        return bootstrap_systems(
            [items[:, metric_cols] for items in group.metric_items],
            [items[:, dim_cols] for items in group.human_items],
            config.methods,
            samples=config.bootstrap,
            rng=rng,
            confidence=config.confidence,
        )
    return bootstrap_units(
        x, y, config.methods, samples=config.bootstrap, rng=rng, confidence=config.confidence
    )


def _cells(
    group: GroupScores,
    grid: CorrelationGrid,
    boot: BootstrapResult | None,
    config: StudyConfig,
    level: Level,
) -> list[dict[str, Any]]:
    out = []
    for j, dimension in enumerate(group.dimensions):
        for i, metric in enumerate(group.metrics):
            n = int(grid.n[i, j])
            cell: dict[str, Any] = {
                "group": group.group,
                "dimension": dimension,
                "metric": metric,
                "method": grid.method,
                "n": n,
                "value": _number(grid.value[i, j]),
                "p_value": _number(grid.p_value[i, j]),
                "undefined": str(grid.reason[i, j]),
            }
            if level == "system" and n < MIN_SYSTEMS:
                cell["warning"] = few_systems_warning(grid.method, n)
            if boot is not None and cell["value"] is not None:
                defined = int(boot.defined[i, j])
                missing = config.bootstrap - defined
                if defined * 2 < config.bootstrap:
                    cell["ci_note"] = (
                        f"interval undefined: {missing} of {config.bootstrap} resamples undefined"
                    )
                else:
                    cell["ci_low"] = _number(boot.low[i, j])
                    cell["ci_high"] = _number(boot.high[i, j])
                    if missing:
                        cell["ci_note"] = (
                            f"{missing} of {config.bootstrap} resamples undefined, left out"
                        )
            out.append(cell)
    return out


def _adjust(pending: list[dict[str, Any]], methods: Iterable[str]) -> list[CorrelationCell]:
    for method in methods:
        family = [c for c in pending if c["method"] == method]
        p = np.array([np.nan if c["p_value"] is None else c["p_value"] for c in family])
        for c, p_holm, p_bh in zip(family, holm(p), benjamini_hochberg(p), strict=True):
            c["p_holm"], c["p_bh"] = _number(p_holm), _number(p_bh)
    return [CorrelationCell(**c) for c in pending]


def _comparisons(
    group: GroupScores,
    x: np.ndarray,
    y: np.ndarray,
    grid: CorrelationGrid,
    boot: BootstrapResult | None,
    config: StudyConfig,
) -> list[MetricComparison]:
    method = grid.method
    if method == "kendall" and boot is None:
        return []
    out = []
    for j, dimension in enumerate(group.dimensions):
        defined = [i for i in range(len(group.metrics)) if not np.isnan(grid.value[i, j])]
        if len(defined) < 2:
            continue
        order = sorted(defined, key=lambda i: -grid.value[i, j])
        if boot is not None and method == "kendall":
            p_all = paired_bootstrap_pvalues(boot.replicates[:, :, j])
            p = p_all[np.ix_(order, order)]
            test = "paired bootstrap"
        else:
            p = _williams_matrix(x[:, order], y[:, j], method)
            test = "Williams"
        p_upper = np.where(np.triu(np.ones_like(p, dtype=bool), k=1), p, np.nan)
        out.append(
            MetricComparison(
                group=group.group,
                dimension=dimension,
                method=method,
                test=test,
                metrics=tuple(group.metrics[i] for i in order),
                clusters=tuple(assign_clusters(p_upper, config.alpha)),
                p_better=tuple(tuple(_number(v) for v in row) for row in p_upper),
            )
        )
    return out


def _williams_matrix(x: np.ndarray, h: np.ndarray, method: Method) -> np.ndarray:
    """p[a, b]: Williams p-value that metric a correlates better with h than metric b."""
    size = x.shape[1]
    if not np.isnan(x).any() and not np.isnan(h).any():
        # Williams' test needs only the coefficients.
        r_h = correlate(x, h[:, None], method, exact_p=False).value[:, 0]
        r_mm = correlate(x, x, method, y_label="metric scores", exact_p=False).value
        _, p = williams_test(r_h[:, None], r_h[None, :], r_mm, x.shape[0])
        return p
    p = np.full((size, size), np.nan)
    for a in range(size):
        for b in range(a + 1, size):
            rows = ~np.isnan(x[:, a]) & ~np.isnan(x[:, b]) & ~np.isnan(h)
            pair = x[rows][:, [a, b]]
            r_h = correlate(pair, h[rows][:, None], method, exact_p=False).value[:, 0]
            r_ab = correlate(pair[:, :1], pair[:, 1:], method, exact_p=False).value[0, 0]
            p[a, b] = williams_test(r_h[0], r_h[1], r_ab, int(rows.sum()))[1]
    return p


def _system_scores(group: GroupScores, x: np.ndarray, y: np.ndarray) -> SystemScores:
    rho = correlate(x, y, "spearman")
    agreement = []
    for j, dimension in enumerate(group.dimensions):
        for i, metric in enumerate(group.metrics):
            accuracy, pairs = pairwise_accuracy(y[:, j], x[:, i])
            agreement.append(
                RankAgreement(
                    metric=metric,
                    dimension=dimension,
                    systems=int(rho.n[i, j]),
                    spearman=_number(rho.value[i, j]),
                    p_value=_number(rho.p_value[i, j]),
                    pairwise_accuracy=accuracy,
                    pairs=pairs,
                    undefined=str(rho.reason[i, j]),
                )
            )
    return SystemScores(
        group=group.group,
        systems=group.units,
        dimensions=group.dimensions,
        metrics=group.metrics,
        human=tuple(tuple(_number(v) for v in row) for row in y),
        metric=tuple(tuple(_number(v) for v in row) for row in x),
        human_items=tuple(int((~np.isnan(m)).any(axis=1).sum()) for m in group.human_items),
        metric_items=tuple(int((~np.isnan(m)).any(axis=1).sum()) for m in group.metric_items),
        agreement=tuple(agreement),
    )


def _metric_correlations(
    group: GroupScores, detail: np.ndarray, method: Method
) -> MetricCorrelations:
    grid = metric_correlations(detail, method)
    clustering = cluster_metrics(grid)
    order = clustering.order
    return MetricCorrelations(
        group=group.group,
        method=method,
        units=detail.shape[0],
        metrics=tuple(group.metrics[i] for i in order),
        values=tuple(tuple(_number(grid.value[a, b]) for b in order) for a in order),
        linkage=tuple(tuple(row) for row in clustering.linkage),
        excluded=tuple((group.metrics[i], reason) for i, reason in clustering.excluded.items()),
    )
