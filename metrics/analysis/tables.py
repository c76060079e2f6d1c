"""Report tables as plain data: what a page, a spreadsheet or a paper shows.

* :func:`correlation_table` — MSDE Tables 11–13: rows = metrics, columns = group × dimension ×
  method, the best value of each column bold, and an "Average" row (the mean over metrics, the
  per-skill average MSDE §5.2–5.3 quotes);
* :func:`group_average_table` — each metric's correlation averaged over the groups (MSDE §5.3);
* :func:`cluster_table` — significance cluster of each metric per column (1 = top cluster);
* :func:`system_table` — per-system human and metric means with positions, then the Spearman
  correlation between the human ranking and each metric's ranking and the pairwise ranking
  accuracy (seed 004 Tables 3–4);
* :func:`coverage_table`, :func:`metric_correlation_table`.

Undefined correlations print as "—" with the reason in the table notes, never as NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metrics.analysis.correlation import METHOD_LABELS
from metrics.analysis.ranking import positions
from metrics.analysis.results import (
    MIN_SYSTEMS,
    CorrelationCell,
    CorrelationStudy,
    MetricCorrelations,
    SystemScores,
)

UNDEFINED = "—"
FEW_SYSTEMS_MARK = "†"


@dataclass(frozen=True)
class Cell:
    """A displayed cell: ``text`` as shown, ``value`` the number behind it (None if none)."""

    text: str
    value: float | None = None
    bold: bool = False


@dataclass(frozen=True)
class Row:
    labels: tuple[str, ...]
    cells: tuple[Cell, ...]
    rule_above: bool = False


@dataclass(frozen=True)
class Table:
    """``header`` rows span the data columns as (label, span); ``stub`` heads the label columns."""

    key: str
    title: str
    stub: tuple[str, ...]
    header: tuple[tuple[tuple[str, int], ...], ...]
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()


def number(value: float | None, digits: int = 2) -> str:
    return UNDEFINED if value is None else f"{value:.{digits}f}"


def _spans(keys: Sequence[tuple[str, ...]]) -> tuple[tuple[str, int], ...]:
    """Header spans over adjacent equal keys, labelled by each key's last part.

    Keys carry the enclosing headers too, so "info" under two groups makes two spans.
    """
    spans: list[tuple[tuple[str, ...], int]] = []
    for key in keys:
        if spans and spans[-1][0] == key:
            spans[-1] = (key, spans[-1][1] + 1)
        else:
            spans.append((key, 1))
    return tuple((key[-1], span) for key, span in spans)


def _bold_best(rows: list[list[Cell]]) -> list[list[Cell]]:
    """Bold the highest value of every column (all of them when tied)."""
    if not rows:
        return rows
    for j in range(len(rows[0])):
        values = [value for row in rows if (value := row[j].value) is not None]
        if not values:
            continue
        best = max(values)
        for row in rows:
            cell = row[j]
            if cell.value is not None and np.isclose(cell.value, best, rtol=0, atol=1e-12):
                row[j] = Cell(cell.text, cell.value, bold=True)
    return rows


def _average_row(rows: list[list[Cell]], digits: int = 2) -> list[Cell]:
    out = []
    for j in range(len(rows[0]) if rows else 0):
        values = [value for row in rows if (value := row[j].value) is not None]
        mean = float(np.mean(values)) if values else None
        out.append(Cell(number(mean, digits), mean))
    return out


def _correlation_text(cell: CorrelationCell, with_ci: bool) -> str:
    text = number(cell.value)
    if with_ci and cell.ci_low is not None and cell.ci_high is not None:
        text += f" [{cell.ci_low:.2f}, {cell.ci_high:.2f}]"
    if cell.warning:
        text += FEW_SYSTEMS_MARK
    return text


def _undefined_notes(cells: Sequence[CorrelationCell]) -> list[str]:
    reasons = sorted({c.undefined for c in cells if c.undefined})
    notes = [f"{UNDEFINED} undefined: {'; '.join(reasons)}."] if reasons else []
    if any(c.warning for c in cells):
        notes.append(
            f"{FEW_SYSTEMS_MARK} fewer than {MIN_SYSTEMS} systems: Spearman and Kendall cannot "
            "reach p < 0.05 (exact p >= 2/n!); Pearson's p assumes normally distributed scores."
        )
    return notes


def correlation_table(
    study: CorrelationStudy, *, groups: Sequence[str] | None = None, with_ci: bool = False
) -> Table:
    """MSDE Tables 11–13 layout for the given groups (all by default)."""
    methods = study.config.methods
    columns = [
        (group, dimension, method)
        for group, dimension in study.columns()
        if groups is None or group in groups
        for method in methods
    ]
    metrics = [m for m in study.metrics if any(study.cell(g, d, m, k) for g, d, k in columns)]
    used: list[CorrelationCell] = []
    body: list[list[Cell]] = []
    for metric in metrics:
        row = []
        for group, dimension, method in columns:
            cell = study.cell(group, dimension, metric, method)
            if cell is None:
                row.append(Cell(""))
                continue
            used.append(cell)
            row.append(Cell(_correlation_text(cell, with_ci), cell.value))
        body.append(row)
    body = _bold_best(body)
    rows = [Row((metric,), tuple(cells)) for metric, cells in zip(metrics, body, strict=True)]
    if body:
        rows.append(Row(("Average",), tuple(_average_row(body)), rule_above=True))
    scope = "all groups" if groups is None else ", ".join(groups)
    key = "correlations" + ("_ci" if with_ci else "")
    if groups is not None:
        key += "_" + "_".join(groups)
    notes = [
        f"Correlation with human scores at the {study.config.level} level; best per column bold.",
        *_undefined_notes(used),
    ]
    if with_ci:
        notes.append(f"[low, high]: {study.config.confidence:.0%} bootstrap interval.")
    return Table(
        key=key,
        title=f"Metric–human correlations ({scope})",
        stub=("Metric",),
        header=(
            _spans([(g,) for g, _, _ in columns]),
            _spans([(g, d) for g, d, _ in columns]),
            tuple((METHOD_LABELS[k], 1) for _, _, k in columns),
        ),
        rows=tuple(rows),
        notes=tuple(notes),
    )


def group_average_table(study: CorrelationStudy) -> Table:
    """Each metric's correlation averaged over the groups where it is defined (MSDE §5.3)."""
    methods = study.config.methods
    dimensions = [d for d in study.dimensions if any(d == dim for _, dim in study.columns())]
    columns = [(d, k) for d in dimensions for k in methods]
    body: list[list[Cell]] = []
    for metric in study.metrics:
        row = []
        for dimension, method in columns:
            values = [
                c.value
                for g in study.groups
                if (c := study.cell(g, dimension, metric, method)) is not None
                and c.value is not None
            ]
            mean = float(np.mean(values)) if values else None
            row.append(Cell(number(mean), mean))
        body.append(row)
    body = _bold_best(body)
    rows = [Row((m,), tuple(cells)) for m, cells in zip(study.metrics, body, strict=True)]
    if body:
        rows.append(Row(("Average",), tuple(_average_row(body)), rule_above=True))
    return Table(
        key="average_over_groups",
        title="Correlation averaged over groups",
        stub=("Metric",),
        header=(
            _spans([(d,) for d, _ in columns]),
            tuple((METHOD_LABELS[k], 1) for _, k in columns),
        ),
        rows=tuple(rows),
        notes=("Plain mean over the groups where the correlation is defined (MSDE §5.3).",),
    )


def cluster_table(study: CorrelationStudy) -> Table:
    """Significance cluster per metric and column; 1 is the top cluster, best marked bold."""
    base = correlation_table(study)
    columns = [(g, d, k) for g, d in study.columns() for k in study.config.methods]
    rows = []
    for row in base.rows[:-1]:
        metric = row.labels[0]
        cells = []
        for group, dimension, method in columns:
            cell = study.cell(group, dimension, metric, method)
            rank = None if cell is None else cell.cluster
            text = "" if rank is None else str(rank)
            cells.append(Cell(text, None if rank is None else float(rank), bold=rank == 1))
        rows.append(Row(row.labels, tuple(cells)))
    return Table(
        key="clusters",
        title="Significance clusters",
        stub=base.stub,
        header=base.header,
        rows=tuple(rows),
        notes=(
            "1 = top cluster: no metric of it correlates significantly better than another "
            f"(alpha = {study.config.alpha}); blank = not tested.",
        ),
    )


def system_table(scores: SystemScores) -> Table:
    """Per-system scores and positions; ranking agreement of each metric with the humans."""
    order = list(range(len(scores.systems)))
    if scores.dimensions:
        first = [v if v is not None else -np.inf for v in (r[0] for r in scores.human)]
        order.sort(key=lambda s: -first[s])
    names = [*scores.dimensions, *scores.metrics]
    columns = [
        np.array([np.nan if v is None else v for v in values], dtype=float)
        for matrix in (scores.human, scores.metric)
        for values in zip(*matrix, strict=True)
    ]
    ranks = [positions(column) for column in columns]
    rows = []
    for s in order:
        cells = []
        for column, rank in zip(columns, ranks, strict=True):
            if rank[s] is None:
                cells.append(Cell(UNDEFINED))
            else:
                cells.append(Cell(f"{column[s]:.4g} ({rank[s]})", float(column[s]), rank[s] == 1))
        cells.append(Cell(str(scores.human_items[s]), float(scores.human_items[s])))
        cells.append(Cell(str(scores.metric_items[s]), float(scores.metric_items[s])))
        rows.append(Row((scores.systems[s],), tuple(cells)))
    agreement = {(a.metric, a.dimension): a for a in scores.agreement}
    blanks = [Cell("")] * len(scores.dimensions)
    for label, attribute in (("Spearman", "spearman"), ("Pairwise acc.", "pairwise_accuracy")):
        for d_index, dimension in enumerate(scores.dimensions):
            values = [getattr(agreement[(m, dimension)], attribute) for m in scores.metrics]
            metric_cells = _bold_best([[Cell(number(v), v) for v in values]])[0]
            rows.append(
                Row(
                    (f"{label} vs {dimension}",),
                    (*blanks, *metric_cells, Cell(""), Cell("")),
                    rule_above=d_index == 0,
                )
            )
    notes = ["Score (position); systems ordered by the first human dimension."]
    if len(scores.systems) < MIN_SYSTEMS:
        notes.append(
            f"{FEW_SYSTEMS_MARK} only {len(scores.systems)} systems: the ranking correlations "
            "cannot reach p < 0.05 (exact p >= 2/n!)."
        )
    return Table(
        key=f"systems_{scores.group}",
        title=f"Systems: {scores.group}",
        stub=("System",),
        header=(
            tuple(
                (label, span)
                for label, span in (
                    ("Human", len(scores.dimensions)),
                    ("Metric", len(scores.metrics)),
                    ("Items", 2),
                )
                if span
            ),
            tuple((name, 1) for name in names) + (("human", 1), ("metric", 1)),
        ),
        rows=tuple(rows),
        notes=tuple(notes),
    )


def coverage_table(study: CorrelationStudy) -> Table:
    rows = tuple(
        Row(
            (c.group,),
            tuple(
                Cell(str(v), float(v)) for v in (c.matched, len(c.metric_only), len(c.human_only))
            ),
        )
        for c in study.coverage
    )
    return Table(
        key="coverage",
        title=f"Units joined at the {study.config.level} level",
        stub=("Group",),
        header=((("both sides", 1), ("metric only", 1), ("human only", 1)),),
        rows=rows,
        notes=("Units on one side only are not correlated.",),
    )


def metric_correlation_table(matrix: MetricCorrelations) -> Table:
    rows = tuple(
        Row((metric,), tuple(Cell(number(v), v) for v in values))
        for metric, values in zip(matrix.metrics, matrix.values, strict=True)
    )
    notes = [f"{METHOD_LABELS[matrix.method]} over {matrix.units} scored units, clustered order."]
    notes += [f"{metric} left out: {reason}." for metric, reason in matrix.excluded]
    return Table(
        key=f"metrics_{matrix.group}_{matrix.method}",
        title=f"Metric × metric ({matrix.group}, {METHOD_LABELS[matrix.method]})",
        stub=("Metric",),
        header=(tuple((m, 1) for m in matrix.metrics),),
        rows=rows,
        notes=tuple(notes),
    )
