"""Reads for correlation reports: platform scores as the score rows the analysis joins.

Units per level (see docs/correlation.md, "Reports on platform data"):

* ``turn``: a turn's primary key; ``dialogue``: a dialogue's primary key;
* ``system``: a backend's name, with ``item`` = the dialogue's primary key, so the system-level
  bootstrap resamples the dialogues inside each system. MSDE correlates each system's *mean*
  metric score over its responses with its mean human score: a system's metric score is the mean
  over its dialogues of the per-dialogue score (``system_scores="mean"``, the default). With
  ``system_scores="corpus"`` the runs' system-level rows (corpus BLEU and the like) are used as
  they are, one value per system.

A dialogue-level metric score is the run's dialogue-level value when the run has any for that
metric, else the mean of the metric's turn-level values over the dialogue's turns.

Groups: the dialogue's skill key (``grouping="skill"``), its dataset's name (``"dataset"``: the
scenario's dataset, else the static run's, else the campaign name for imported dialogues without
a scenario), or one group ``""`` (``"none"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from django.db.models import QuerySet
from django.utils.translation import gettext as _

from annotation.models import Assignment, Rating, RatingJob
from annotation.rubric_spec import as_spec
from annotation.scoring import OVERALL
from annotation.selectors.human_scores import human_scores
from annotation.selectors.rating import localized
from chat.models import Dialogue
from core.errors import ServiceError
from core.i18n import interface_language
from metrics.analysis.results import CorrelationCell, CorrelationStudy
from metrics.analysis.scores import ScoreRow
from metrics.analysis.tables import correlation_table
from metrics.models import JobStatus, MetricRun, MetricScore, Report
from metrics.reporting.bundle import EXTENSIONS, REPORT_FORMATS, ReportFormat
from metrics.selectors.report_text import report_text

Grouping = Literal["skill", "dataset", "none"]
GROUPINGS: tuple[Grouping, ...] = ("skill", "dataset", "none")
SystemScores = Literal["mean", "corpus"]
SYSTEM_SCORES: tuple[SystemScores, ...] = ("mean", "corpus")
_CHUNK = 500  # ids per IN (...) query
# Files of a computed report, by download format; figures go to figures/<name>.png|svg.
FORMAT_FILES: dict[ReportFormat, str] = {
    fmt: ("correlations" if fmt == "csv" else "report") + EXTENSIONS[fmt] for fmt in REPORT_FORMATS
}


class ReportDataError(ServiceError):
    """The selected scores cannot be combined (the same unit scored by two runs, say)."""


@dataclass(frozen=True)
class _DialogueInfo:
    skill: str
    dataset: str
    backend: str


def report_dir(report: Report) -> Path:
    """Where a report's files live: ``VAR_DIR/reports/<id>/``."""
    return Path(settings.VAR_DIR) / "reports" / str(report.pk)


def report_study(report: Report) -> CorrelationStudy | None:
    """The computed study of a finished report (None before)."""
    if report.status != JobStatus.DONE or not report.results:
        return None
    return CorrelationStudy.from_dict(report.results)


def report_file(report: Report, fmt: str) -> Path | None:
    """The written file of one download format, None when the report has none."""
    if fmt not in FORMAT_FILES or not report.files_dir:
        return None
    path = Path(report.files_dir) / FORMAT_FILES[fmt]
    return path if path.is_file() else None


def _figure_folder(report: Report, language: str | None) -> Path | None:
    """The folder of the report's figures drawn in `language` (the active one by default);
    reports made before figures were drawn per language have only the one set."""
    if not report.files_dir:
        return None
    folder = Path(report.files_dir) / "figures"
    localized = folder / interface_language(language)
    return localized if localized.is_dir() else folder


def report_figures(report: Report, language: str | None = None) -> list[str]:
    """File names of the report's figures (PNG and SVG) in `language`, sorted."""
    folder = _figure_folder(report, language)
    if folder is None or not folder.is_dir():
        return []
    return sorted(p.name for p in folder.glob("*") if p.is_file())


def report_figure(report: Report, name: str, language: str | None = None) -> Path | None:
    """A figure by file name, drawn in `language`; only names the report actually has (no path
    tricks)."""
    folder = _figure_folder(report, language)
    if folder is None or name not in report_figures(report, language):
        return None
    return folder / name


def report_pairwise_files(report: Report) -> list[str]:
    """The files of the report's pairwise section (names its computation recorded)."""
    if not report.files_dir or report.status != JobStatus.DONE:
        return []
    section = (report.results or {}).get("extensions", {}).get("pairwise") or {}
    return [str(name) for name in section.get("files", [])]


def report_pairwise_file(report: Report, name: str) -> Path | None:
    """One file of the pairwise section, only by a name the section lists (no path tricks)."""
    if name not in report_pairwise_files(report):
        return None
    path = Path(report.files_dir) / name
    return path if path.is_file() else None


def report_section_file(report: Report, section: str, name: str) -> Path | None:
    """One file of a report extension's section (e.g. ``ppi``), only by a name the section
    lists (no path tricks), once the report is done."""
    if not report.files_dir or report.status != JobStatus.DONE:
        return None
    stored = (report.results or {}).get("extensions", {}).get(section) or {}
    if name not in [str(n) for n in stored.get("files", [])]:
        return None
    path = Path(report.files_dir) / name
    return path if path.is_file() else None


def report_list() -> QuerySet[Report]:
    """Every report; researchers share their studies (access is checked by the caller)."""
    return Report.objects.select_related("created_by").order_by("-created_at")


def report_metric_runs() -> QuerySet[MetricRun]:
    """Finished metric runs a report can use, newest first."""
    return (
        MetricRun.objects.filter(status=JobStatus.DONE)
        .select_related("campaign", "static_run")
        .order_by("-created_at")
    )


def report_rating_jobs() -> QuerySet[RatingJob]:
    """Rating jobs with human scores to correlate: a pairwise job's answers are votes (the
    report's pairwise section reads them), not scores."""
    return (
        RatingJob.objects.exclude(mode=RatingJob.Mode.PAIRWISE)
        .select_related("campaign", "rubric")
        .order_by("-created_at")
    )


def run_metric_names(*, runs: Iterable[MetricRun]) -> list[str]:
    """Metric names the runs list or have scores for, in first-seen order."""
    runs = list(runs)
    names: dict[str, None] = {}
    for run in runs:
        names.update(dict.fromkeys(run.metrics))
    scored = (
        MetricScore.objects.filter(run__in=runs)
        .order_by("metric")
        .values_list("metric", flat=True)
        .distinct()
    )
    names.update(dict.fromkeys(scored))
    return list(names)


def scored_metric_names(*, runs: Iterable[MetricRun]) -> list[str]:
    """Metric names with at least one score in the runs (what a report can correlate): the
    runs' listed order first, then any other scored name; unavailable metrics are left out."""
    runs = list(runs)
    scored = set(
        MetricScore.objects.filter(run__in=runs)
        .order_by()
        .values_list("metric", flat=True)
        .distinct()
    )
    listed = [m for run in runs for m in run.metrics if m in scored]
    return list(dict.fromkeys([*listed, *sorted(scored)]))


def rated_dimensions(*, jobs: Iterable[RatingJob]) -> list[str]:
    """The jobs' dimensions (as :func:`job_dimensions`) that have a submitted rating."""
    jobs = list(jobs)
    answered = set(
        Rating.objects.filter(
            assignment__job__in=jobs,
            assignment__status=Assignment.Status.SUBMITTED,
            value__isnull=False,
        )
        .order_by()
        .values_list("question", flat=True)
        .distinct()
    )
    if not answered:
        return []
    return [d for d in job_dimensions(jobs=jobs) if d in answered or d == OVERALL]


def dimension_labels(*, jobs: Iterable[RatingJob], language: str) -> dict[str, str]:
    """Each dimension key's label in the page's language (keys stay in the files)."""
    labels: dict[str, str] = {}
    for job in jobs:
        spec = as_spec(job.rubric.spec)
        for question in spec.questions:
            labels.setdefault(question.key, localized(question.label, language) or question.key)
    labels[OVERALL] = str(_("总体"))
    return labels


def job_dimensions(*, jobs: Iterable[RatingJob]) -> list[str]:
    """Scored question keys of the jobs' rubrics, then "overall" when a rubric derives one."""
    names: dict[str, None] = {}
    overall = False
    for job in jobs:
        spec = as_spec(job.rubric.spec)
        names.update(dict.fromkeys(q.key for q in spec.questions if q.scored))
        overall = overall or spec.overall != "none"
    if overall:
        names[OVERALL] = None
    return list(names)


def _dialogue_info(ids: Iterable[int]) -> dict[int, _DialogueInfo]:
    ids = sorted(set(ids))
    out: dict[int, _DialogueInfo] = {}
    for start in range(0, len(ids), _CHUNK):
        rows = Dialogue.objects.filter(pk__in=ids[start : start + _CHUNK]).values_list(
            "pk",
            "skill__key",
            "backend__name",
            "scenario__dataset__name",
            "static_run__dataset__name",
            "campaign__name",
        )
        for pk, skill, backend, scenario_dataset, run_dataset, campaign in rows:
            dataset = scenario_dataset or run_dataset or campaign
            out[pk] = _DialogueInfo(skill=skill, dataset=dataset, backend=backend)
    return out


def _group(info: _DialogueInfo, grouping: Grouping) -> str:
    if grouping == "skill":
        return info.skill
    if grouping == "dataset":
        return info.dataset
    return ""


def _check_unique(seen: dict[tuple[Any, ...], int], key: tuple[Any, ...], run: int) -> None:
    other = seen.setdefault(key, run)
    if other != run:
        names = dict(MetricRun.objects.filter(pk__in=[other, run]).values_list("pk", "name"))
        raise ReportDataError(
            f"metric {key[0]!r} scores the same unit ({key[1]} {key[2]}) in two runs, "
            f"'{names.get(other, other)}' and '{names.get(run, run)}'; choose one of them"
        )


def metric_score_rows(
    *,
    run_ids: Sequence[int],
    metrics: Sequence[str],
    level: str,
    grouping: Grouping,
    system_scores: SystemScores = "mean",
) -> list[ScoreRow]:
    """The runs' scores of ``metrics`` as rows for ``level`` (see the module docstring)."""
    base = MetricScore.objects.filter(run_id__in=run_ids, metric__in=metrics)
    seen: dict[tuple[Any, ...], int] = {}
    if level == "system" and system_scores == "corpus":
        rows = []
        for run, metric, backend, group, value in base.filter(level="system").values_list(
            "run_id", "metric", "backend__name", "group", "value"
        ):
            _check_unique(seen, (metric, "system", f"{backend}/{group}"), run)
            rows.append(ScoreRow("" if grouping == "none" else group, backend, metric, value))
        return rows

    turns = list(
        base.filter(level="turn").values_list(
            "run_id", "metric", "value", "turn_id", "turn__dialogue_id"
        )
    )
    if level == "turn":
        info = _dialogue_info(dialogue for *_, dialogue in turns)
        rows = []
        for run, metric, value, turn, dialogue in turns:
            _check_unique(seen, (metric, "turn", turn), run)
            rows.append(ScoreRow(_group(info[dialogue], grouping), str(turn), metric, value))
        return rows

    dialogues = list(
        base.filter(level="dialogue").values_list("run_id", "metric", "value", "dialogue_id")
    )
    with_dialogue_scores = {(run, metric) for run, metric, *_ in dialogues}
    per_dialogue: list[tuple[int, str, float, int]] = []
    for run, metric, value, dialogue in dialogues:
        _check_unique(seen, (metric, "dialogue", dialogue), run)
        per_dialogue.append((run, metric, value, dialogue))
    for run, metric, value, turn, dialogue in turns:
        if (run, metric) not in with_dialogue_scores:
            _check_unique(seen, (metric, "turn", turn), run)
            per_dialogue.append((run, metric, value, dialogue))
    info = _dialogue_info(dialogue for *_, dialogue in per_dialogue)
    rows = []
    for _run, metric, value, dialogue in per_dialogue:
        meta = info[dialogue]
        group = _group(meta, grouping)
        if level == "system":
            # Rows of one item (a dialogue's turns) are averaged before the system mean.
            rows.append(ScoreRow(group, meta.backend, metric, value, item=str(dialogue)))
        else:
            rows.append(ScoreRow(group, str(dialogue), metric, value))
    return rows


def human_score_rows(
    *,
    jobs: Sequence[RatingJob],
    dimensions: Sequence[str],
    level: str,
    grouping: Grouping,
) -> list[ScoreRow]:
    """The jobs' human scores (mean over raters per unit) of ``dimensions`` as rows."""
    wanted = set(dimensions)
    scores = [
        score
        for job in jobs
        for score in human_scores(job=job, level="turn" if level == "turn" else "dialogue")
        if score.dimension in wanted
    ]
    info = _dialogue_info(s.dialogue_id for s in scores) if grouping == "dataset" else {}
    rows = []
    for s in scores:
        if grouping == "skill":
            group = s.skill
        elif grouping == "dataset":
            group = info[s.dialogue_id].dataset
        else:
            group = ""
        if level == "turn":
            if s.turn_id is None:
                continue
            rows.append(ScoreRow(group, str(s.turn_id), s.dimension, s.value))
        elif level == "dialogue":
            rows.append(ScoreRow(group, str(s.dialogue_id), s.dimension, s.value))
        else:
            rows.append(ScoreRow(group, s.backend, s.dimension, s.value, item=str(s.dialogue_id)))
    return rows


# --- the report page ---


@dataclass(frozen=True)
class PageCell:
    """One correlation as the page shows it; ``title`` holds the details shown on hover."""

    value: float | None
    bold: bool = False
    undefined: str = ""
    ci: str = ""
    title: str = ""
    few_systems: bool = False
    blank: bool = False


@dataclass(frozen=True)
class PageRow:
    label: str
    cells: tuple[PageCell, ...]
    average: bool = False


@dataclass(frozen=True)
class CorrelationPage:
    """The MSDE-style table: header rows as (label, span), metric rows, then the average row."""

    header: tuple[tuple[tuple[str, int], ...], ...]
    rows: tuple[PageRow, ...]


def _page_cell(cell: CorrelationCell | None, bold: bool) -> PageCell:
    if cell is None:
        return PageCell(value=None, blank=True)
    details = [f"n = {cell.n}"]
    if cell.p_value is not None:
        details.append(f"p = {cell.p_value:.3g}, p_holm = {cell.p_holm or 0:.3g}")
    ci = ""
    if cell.ci_low is not None and cell.ci_high is not None:
        ci = f"[{cell.ci_low:.2f}, {cell.ci_high:.2f}]"
        details.append(f"95% CI {ci}")
    if cell.ci_note:
        details.append(cell.ci_note)
    if cell.cluster is not None:
        details.append(f"cluster {cell.cluster}")
    if cell.undefined:
        details.append(cell.undefined)
    if cell.warning:
        details.append(report_text(cell.warning))
    return PageCell(
        value=cell.value,
        bold=bold,
        undefined=cell.undefined if cell.value is None else "",
        ci=ci,
        title="; ".join(details),
        few_systems=bool(cell.warning),
    )


def correlation_page(
    study: CorrelationStudy, labels: dict[str, str] | None = None
) -> CorrelationPage:
    """Rows = metrics, columns = group × dimension × method, as :func:`correlation_table`;
    ``labels`` names the dimensions on the page (the files keep the keys)."""
    table = correlation_table(study)
    columns = [(g, d, k) for g, d in study.columns() for k in study.config.methods]
    rows = []
    for row in table.rows:
        label = row.labels[0]
        if row.rule_above:  # the average over metrics
            cells = tuple(PageCell(value=c.value, title="mean over metrics") for c in row.cells)
            rows.append(PageRow(label, cells, average=True))
            continue
        cells = tuple(
            _page_cell(study.cell(g, d, label, k), shown.bold)
            for (g, d, k), shown in zip(columns, row.cells, strict=True)
        )
        rows.append(PageRow(label, cells))
    header = table.header
    if labels:
        header = tuple(
            tuple((labels.get(label, label), span) for label, span in spans) for spans in header
        )
    return CorrelationPage(header=header, rows=tuple(rows))
