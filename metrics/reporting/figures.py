"""Report figures (matplotlib, Agg): correlation heatmaps, per-system scatter plots, score
distributions and metric-vs-metric heatmaps, as PNG and SVG bytes.

Figures are built on ``matplotlib.figure.Figure`` directly, never through pyplot, so a Celery
worker or a web process keeps no global figure state between reports.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from metrics.analysis.correlation import METHOD_LABELS
from metrics.analysis.results import CorrelationStudy, MetricCorrelations, SystemScores
from metrics.reporting.figure_text import ENGLISH, FigureText
from metrics.reporting.fonts import figure_style

FORMATS = ("png", "svg")
_CMAP = "RdBu_r"


def _slug(text: str) -> str:
    """A file-name-safe version of a group or dimension name (CJK letters kept)."""
    return re.sub(r"[^\w.-]+", "-", text).strip("-") or "x"


def _heatmap(ax: Axes, values: np.ndarray, rows: Sequence[str], columns: Sequence[str]) -> None:
    masked = np.ma.masked_invalid(values)
    image = ax.imshow(masked, cmap=_CMAP, vmin=-1, vmax=1, aspect="auto")
    ax.set_facecolor("#dddddd")  # undefined cells
    ax.set_xticks(range(len(columns)), labels=columns, rotation=60, ha="right")
    ax.set_yticks(range(len(rows)), labels=rows)
    if values.size <= 400:
        for (i, j), value in np.ndenumerate(values):
            if not np.isnan(value):
                color = "white" if abs(value) > 0.6 else "black"
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color=color)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.02)


def correlation_heatmap(study: CorrelationStudy, method: str, text: FigureText = ENGLISH) -> Figure:
    """Metrics × (group, dimension) correlations by one method; grey = undefined."""
    columns = study.columns()
    values = np.array(
        [
            [
                np.nan if (c := study.cell(g, d, m, method)) is None or c.value is None else c.value
                for g, d in columns
            ]
            for m in study.metrics
        ],
        dtype=float,
    ).reshape(len(study.metrics), len(columns))
    labels = [f"{text.group(g)} · {text.dimension(d)}" for g, d in columns]
    fig = Figure(figsize=(1.2 + 0.55 * max(len(columns), 3), 1.5 + 0.35 * len(study.metrics)))
    ax = fig.add_subplot()
    _heatmap(ax, values, study.metrics, labels)
    level = study.config.level
    ax.set_title(
        text.heatmap_title
        % {"method": METHOD_LABELS[method], "level": text.levels.get(level, level)}
    )
    return fig


def system_scatter(scores: SystemScores, dimension: str, text: FigureText = ENGLISH) -> Figure:
    """One panel per metric: system means, metric (x) against human (y), names as labels."""
    d = scores.dimensions.index(dimension)
    agreement = {(a.metric, a.dimension): a for a in scores.agreement}
    human = np.array([np.nan if r[d] is None else r[d] for r in scores.human], dtype=float)
    columns = min(4, max(len(scores.metrics), 1))
    lines = max(math.ceil(len(scores.metrics) / columns), 1)
    fig = Figure(figsize=(3.2 * columns, 2.8 * lines), layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(scores.metrics):
            ax.set_axis_off()
            continue
        metric = scores.metrics[k]
        x = np.array([np.nan if r[k] is None else r[k] for r in scores.metric], dtype=float)
        ax.scatter(x, human, s=18)
        for name, xi, yi in zip(scores.systems, x, human, strict=True):
            if not (np.isnan(xi) or np.isnan(yi)):
                ax.annotate(name, (xi, yi), fontsize=7, xytext=(3, 3), textcoords="offset points")
        rho = agreement[(metric, dimension)].spearman
        ax.set_title(f"{metric}  ρ={'—' if rho is None else f'{rho:.2f}'}", fontsize=9)
        ax.set_xlabel(metric, fontsize=8)
        ax.set_ylabel(text.dimension(dimension), fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(
        text.scatter_title
        % {"group": text.group(scores.group), "dimension": text.dimension(dimension)}
    )
    return fig


def distribution_figure(study: CorrelationStudy, group: str, text: FigureText = ENGLISH) -> Figure:
    """Kernel density of each metric's z-normalised scores in one group (seed 002 §4.2)."""
    fig = Figure(figsize=(7, 4.2))
    ax = fig.add_subplot()
    skipped = []
    for d in study.distributions:
        if d.group != group:
            continue
        if d.undefined:
            skipped.append(d.metric)
            continue
        ax.plot(d.grid, d.density, label=d.metric, linewidth=1.2)
    ax.set_xlabel(text.z_score)
    ax.set_ylabel(text.density)
    title = text.distribution_title % {"group": text.group(group)}
    if skipped:
        title += text.not_drawn % {"metrics": ", ".join(skipped)}
    ax.set_title(title, fontsize=10)
    if ax.lines:
        ax.legend(fontsize=7, ncols=2 if len(ax.lines) > 8 else 1)
    return fig


def metric_correlation_figure(
    matrices: Sequence[MetricCorrelations], text: FigureText = ENGLISH
) -> Figure:
    """Metric × metric heatmaps of one group, one panel per method, in clustering order."""
    size = max((len(m.metrics) for m in matrices), default=1)
    side = 1.5 + 0.4 * size
    fig = Figure(figsize=(side * len(matrices) + 1, side), layout="constrained")
    axes = fig.subplots(1, len(matrices), squeeze=False)[0]
    for ax, matrix in zip(axes, matrices, strict=True):
        values = np.array(
            [[np.nan if v is None else v for v in row] for row in matrix.values], dtype=float
        ).reshape(len(matrix.metrics), len(matrix.metrics))
        _heatmap(ax, values, matrix.metrics, matrix.metrics)
        ax.set_title(METHOD_LABELS[matrix.method], fontsize=10)
    fig.suptitle(text.metric_matrix_title % {"group": text.group(matrices[0].group)})
    return fig


def _figures(study: CorrelationStudy, text: FigureText) -> dict[str, Figure]:
    # No correlations (a pairwise report without rating jobs): no heatmap of nothing.
    figures = (
        {
            f"heatmap_{method}": correlation_heatmap(study, method, text)
            for method in study.config.methods
        }
        if study.cells
        else {}
    )
    for group in study.groups:
        matrices = [m for m in study.metric_correlations if m.group == group and m.metrics]
        if matrices:
            figures[f"metrics_{_slug(group)}"] = metric_correlation_figure(matrices, text)
        if any(d.group == group for d in study.distributions):
            figures[f"distributions_{_slug(group)}"] = distribution_figure(study, group, text)
    for scores in study.systems:
        if not scores.metrics:
            continue
        for dimension in scores.dimensions:
            name = f"systems_{_slug(scores.group)}_{_slug(dimension)}"
            figures[name] = system_scatter(scores, dimension, text)
    return figures


@dataclass(frozen=True)
class RenderedFigures:
    """Every figure file, and the warnings a reader must see (font degraded, missing glyphs)."""

    files: dict[str, bytes]
    warnings: tuple[str, ...]


def render_figures(
    study: CorrelationStudy, formats: Sequence[str] = FORMATS, text: FigureText = ENGLISH
) -> RenderedFigures:
    """Every report figure rendered in each format: {"heatmap_pearson.png": b"…", …}, with the
    words of `text` (English by default).

    Never fails for want of a font (see :mod:`metrics.reporting.fonts`): without one the figures
    are drawn all the same and ``warnings`` says so.
    """
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"unsupported figure format {sorted(unknown)[0]!r}")
    files: dict[str, bytes] = {}
    with figure_style() as notes:
        for name, fig in _figures(study, text).items():
            for fmt in formats:
                buffer = io.BytesIO()
                fig.savefig(buffer, format=fmt)
                files[f"{name}.{fmt}"] = buffer.getvalue()
    return RenderedFigures(files=files, warnings=tuple(notes.warnings()))


def with_warnings(study: CorrelationStudy, warnings: Sequence[str]) -> CorrelationStudy:
    """The study with figure warnings added (once), so every download and the page show them."""
    new = tuple(w for w in warnings if w not in study.warnings)
    return replace(study, warnings=study.warnings + new) if new else study


def figure_files(study: CorrelationStudy, formats: Sequence[str] = FORMATS) -> dict[str, bytes]:
    """The figure files of :func:`render_figures` (its warnings dropped)."""
    return render_figures(study, formats).files
