"""Correlation reports on platform data: configure, compute (in a worker), re-run.

A report joins metric scores (one or more metric runs, computed or imported) with human scores
(one or more rating jobs) at the turn, dialogue or system level and stores the study
(:func:`metrics.analysis.run_study`) as JSON plus every download file under
``VAR_DIR/reports/<id>/``. The configuration is checked with messages naming the field, stored
resolved (the metric and dimension lists written out), and the provenance (rubric key and version
of each job, the scorers' version and each run's metric signatures) is recorded when the study is
computed, so :func:`report_rerun` reproduces it and shows what changed.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import RatingJob
from annotation.selectors.human_scores import rater_shortfalls
from core.errors import ServiceError
from core.i18n import INTERFACE_LANGUAGES, interface_language
from core.jobs import (
    Heartbeat,
    JobCancelled,
    job_cancel,
    job_claim,
    job_finish,
    job_progress,
    job_send_on_commit,
    new_lease_owner,
)
from metrics.analysis import METHODS, StudyConfig
from metrics.analysis.join import LEVELS
from metrics.analysis.results import CorrelationStudy
from metrics.models import JobStatus, MetricRun, MetricScore, Report
from metrics.reporting import report_bytes, zip_bytes
from metrics.reporting.figure_text import FigureText
from metrics.scorers.base import Settings
from metrics.selectors.report_text import figure_text
from metrics.services.metric_run_scoring import dialogue_only_metrics

if TYPE_CHECKING:
    from metrics.reporting.figures import RenderedFigures
from metrics.selectors.reports import (
    FORMAT_FILES,
    GROUPINGS,
    SYSTEM_SCORES,
    ReportDataError,
    dimension_labels,
    human_score_rows,
    job_dimensions,
    metric_score_rows,
    report_dir,
    run_metric_names,
)
from metrics.services import report_extensions

logger = logging.getLogger(__name__)

NAME_MAX_LENGTH = 160  # Report.name
MAX_BOOTSTRAP = 10_000
MAX_SEED = 2**32 - 1
PROGRESS_STEPS = 100
DEFAULTS: dict[str, Any] = {
    "metrics": [],
    "dimensions": [],
    "level": "system",
    "grouping": "skill",
    "system_scores": "mean",
    "methods": ["pearson", "spearman"],
    "bootstrap": 1000,
    "seed": 0,
    # The pairwise section (metrics.services.pairwise): None = none; a dict of its options.
    "pairwise": None,
    # The "Human + judge" section (metrics.services.ppi): None = none; {predictor, question,
    # job, alpha}.
    "ppi": None,
}
CONFIG_FIELDS = ("metric_runs", "rating_jobs", *DEFAULTS)


class ReportConfigError(ServiceError):
    """A report configuration that cannot be used; ``errors`` maps each field to its message."""

    location_style = "in_message"

    def __init__(self, errors: Mapping[str, str]) -> None:
        message = "; ".join(f"{field}: {message}" for field, message in errors.items())
        super().__init__(message, field=next(iter(errors), None), errors=errors)


# --- configuration ---


def _id_list(value: Any) -> list[int] | None:
    if not isinstance(value, (list, tuple)) or not value:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return list(dict.fromkeys(value))


def _name_list(value: Any) -> list[str] | None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return None
    return list(dict.fromkeys(v.strip() for v in value if v.strip()))


def _integer(value: Any, low: int, high: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return None
    return value


def report_config_check(data: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a configuration; return it complete and resolved, or raise ReportConfigError.

    Missing optional fields take :data:`DEFAULTS`; empty ``metrics``/``dimensions`` mean every
    metric of the runs / every dimension of the jobs' rubrics and are written out, so a re-run
    uses exactly the same ones.
    """
    errors: dict[str, str] = {}
    unknown = sorted(set(data) - set(CONFIG_FIELDS))
    if unknown:
        errors[unknown[0]] = f"unknown field (known: {', '.join(CONFIG_FIELDS)})"
    config = {**DEFAULTS, **{k: v for k, v in data.items() if k in CONFIG_FIELDS}}
    # Each check adds to `errors` (the first problem per field), in this order.
    run_ids, runs = _check_runs(config, errors)
    job_ids, jobs = _check_jobs(config, errors)
    _check_choices(config, errors)
    if runs and "metric_runs" not in errors:
        _check_metrics(runs, config, errors)
    if jobs and "rating_jobs" not in errors:
        _check_dimensions(jobs, config, errors)
    if runs and jobs and not errors.get("metric_runs"):
        _check_campaigns_meet(runs, jobs, config["level"], errors)
    if config["pairwise"] is not None and "pairwise" not in errors:
        from metrics.services.pairwise import PairwiseConfigError, pairwise_config_check

        try:
            config["pairwise"] = pairwise_config_check(
                config["pairwise"], campaign_ids=_campaigns(runs, jobs)
            )
        except PairwiseConfigError as exc:
            errors["pairwise"] = str(exc)
    if config["ppi"] is not None and not {"ppi", "metric_runs", "rating_jobs"} & set(errors):
        from metrics.services.ppi import PPIError, ppi_config_check

        try:
            config["ppi"] = ppi_config_check(
                config["ppi"], run_ids=run_ids or [], job_ids=job_ids or []
            )
        except PPIError as exc:
            errors["ppi"] = str(exc)
    if errors:
        raise ReportConfigError(errors)
    config["metric_runs"], config["rating_jobs"] = run_ids, job_ids
    return {field: config[field] for field in CONFIG_FIELDS}


def _campaigns(runs: list[MetricRun], jobs: list[RatingJob]) -> list[int]:
    return sorted({run.campaign_id for run in runs} | {job.campaign_id for job in jobs})


def _check_runs(
    config: dict[str, Any], errors: dict[str, str]
) -> tuple[list[int] | None, list[MetricRun]]:
    """The chosen run ids and the runs found; each must exist and be finished."""
    run_ids = _id_list(config.get("metric_runs"))
    if run_ids is None:
        errors["metric_runs"] = "choose at least one metric run (a list of run ids)"
        return None, []
    found = MetricRun.objects.in_bulk(run_ids)
    missing = [i for i in run_ids if i not in found]
    unfinished = [found[i] for i in run_ids if i in found and found[i].status != JobStatus.DONE]
    if missing:
        errors["metric_runs"] = f"metric run {missing[0]} does not exist"
    elif unfinished:
        run = unfinished[0]
        errors["metric_runs"] = (
            f"metric run {run.pk} ('{run.name}') is not finished (status: {run.status})"
        )
    return run_ids, [found[i] for i in run_ids if i in found]


def _check_jobs(
    config: dict[str, Any], errors: dict[str, str]
) -> tuple[list[int] | None, list[RatingJob]]:
    """The chosen rating job ids and the jobs found (with their rubrics); each must exist."""
    job_ids = _id_list(config.get("rating_jobs"))
    if job_ids is None and config.get("pairwise") is not None and not config.get("rating_jobs"):
        return [], []  # a pairwise study: its votes stand in for the ratings
    if job_ids is None:
        errors["rating_jobs"] = (
            "choose at least one rating job (a list of job ids), or a pairwise analysis"
        )
        return None, []
    found_jobs = RatingJob.objects.select_related("rubric").in_bulk(job_ids)
    missing = [i for i in job_ids if i not in found_jobs]
    if missing:
        errors["rating_jobs"] = f"rating job {missing[0]} does not exist"
    return job_ids, [found_jobs[i] for i in job_ids if i in found_jobs]


def _check_choices(config: dict[str, Any], errors: dict[str, str]) -> None:
    """The fields with fixed choices or ranges: level, grouping, system scores, methods (put in
    their canonical order), bootstrap and seed."""
    level = config["level"]
    if level not in LEVELS:
        errors["level"] = f"must be one of {', '.join(LEVELS)}, not {level!r}"
    if config["grouping"] not in GROUPINGS:
        errors["grouping"] = f"must be one of {', '.join(GROUPINGS)}, not {config['grouping']!r}"
    if config["system_scores"] not in SYSTEM_SCORES:
        errors["system_scores"] = (
            f"must be one of {', '.join(SYSTEM_SCORES)}, not {config['system_scores']!r}"
        )
    elif config["system_scores"] == "corpus" and level != "system":
        errors["system_scores"] = "corpus-level scores can only be used at the system level"
    methods = _name_list(config["methods"])
    if not methods:
        errors["methods"] = f"choose at least one of {', '.join(METHODS)}"
    elif bad := [m for m in methods if m not in METHODS]:
        errors["methods"] = f"unknown method {bad[0]!r} (use {', '.join(METHODS)})"
    else:
        config["methods"] = [m for m in METHODS if m in methods]
    if _integer(config["bootstrap"], 0, MAX_BOOTSTRAP) is None:
        errors["bootstrap"] = f"must be a whole number from 0 (none) to {MAX_BOOTSTRAP}"
    if _integer(config["seed"], 0, MAX_SEED) is None:
        errors["seed"] = f"must be a whole number from 0 to {MAX_SEED}"


def _check_metrics(runs: list[MetricRun], config: dict[str, Any], errors: dict[str, str]) -> None:
    """The chosen metrics (empty: every metric of the runs, written out), and their levels."""
    available = run_metric_names(runs=runs)
    chosen = _name_list(config["metrics"])
    if chosen is None:
        errors["metrics"] = "must be a list of metric names"
    elif not available:
        errors["metric_runs"] = "the selected runs have no metric scores"
    elif bad := [m for m in chosen if m not in available]:
        errors["metrics"] = (
            f"unknown metric {bad[0]!r} (the selected runs have: {', '.join(available)})"
        )
    else:
        turnless = _turnless_selected(runs, available) if config["level"] == "turn" else {}
        config["metrics"] = chosen or [m for m in available if m not in turnless]
        if refused := [m for m in config["metrics"] if m in turnless]:
            run, items = turnless[refused[0]]
            errors["level"] = (
                f"{refused[0]} has no turn-level scores: run {run.pk} ('{run.name}') took "
                f"dialogue-level follow-up items ({', '.join(items)}), which FED's turn-level "
                "items do not hold; choose the dialogue or system level, or leave the metric out"
            )
    if not {"metrics", "metric_runs", "level"} & set(errors) and config["level"] in LEVELS:
        _check_levels(runs, config, errors)


def _turnless_selected(
    runs: list[MetricRun], names: list[str]
) -> dict[str, tuple[MetricRun, tuple[str, ...]]]:
    """The ``*-selected`` metrics that some run scored per dialogue only (their items include
    dialogue-level ones, :func:`dialogue_only_metrics`), with the first such run and its items:
    a turn-level report is refused for them when it is configured, not after it is computed."""
    found: dict[str, tuple[MetricRun, tuple[str, ...]]] = {}
    for run in runs:
        if run.source != MetricRun.Source.COMPUTED:
            continue  # imported scores: their settings are the file's, not the scorers'
        settings = Settings.from_dict(run.metric_settings)
        try:
            dialogue_only = dialogue_only_metrics(names, settings)
        except ValueError:
            continue  # its follow-up override is gone: the study says what has no turn scores
        for name in sorted(dialogue_only):
            found.setdefault(name, (run, settings.followup_items or ()))
    return found


def _check_dimensions(
    jobs: list[RatingJob], config: dict[str, Any], errors: dict[str, str]
) -> None:
    """The chosen rating dimensions (empty: every dimension of the jobs' rubrics, written out)."""
    available = job_dimensions(jobs=jobs)
    chosen = _name_list(config["dimensions"])
    if chosen is None:
        errors["dimensions"] = "must be a list of rating dimensions"
    elif bad := [d for d in chosen if d not in available]:
        errors["dimensions"] = (
            f"unknown dimension {bad[0]!r} (the jobs' rubrics have: {', '.join(available)})"
        )
    else:
        config["dimensions"] = chosen or available


def _check_campaigns_meet(
    runs: list[MetricRun], jobs: list[RatingJob], level: str, errors: dict[str, str]
) -> None:
    """At the turn and dialogue levels the runs and the jobs must share a campaign."""
    if level not in ("turn", "dialogue"):
        return
    run_campaigns = {run.campaign_id for run in runs}
    if not run_campaigns & {job.campaign_id for job in jobs}:
        errors.setdefault(
            "level",
            f"at the {level} level units are {level}s of one campaign, but the rating jobs "
            "rate other campaigns than the metric runs score; choose the system level to "
            "join systems across campaigns (MSDE: static run vs interactive ratings)",
        )


def _check_levels(runs: list[MetricRun], config: dict[str, Any], errors: dict[str, str]) -> None:
    scores = MetricScore.objects.filter(run__in=runs, metric__in=config["metrics"])
    if config["level"] == "system" and config["system_scores"] == "corpus":
        if not scores.filter(level="system").exists():
            errors["system_scores"] = (
                "the selected runs have no system-level (corpus) scores for these metrics"
            )
    elif config["level"] == "turn":
        if not scores.filter(level="turn").exists():
            errors["level"] = "the selected runs have no turn-level scores for these metrics"
    elif not scores.filter(level__in=("turn", "dialogue")).exists():
        errors["level"] = "the selected runs have no turn- or dialogue-level scores to average"


# --- create, re-run ---


def report_cancel(*, report: Report) -> bool:
    """Stop a pending or running report (a running one at its next progress step); False when
    it had already ended."""
    return job_cancel(job=report)


@transaction.atomic
def report_create(
    *,
    name: str,
    config: Mapping[str, Any],
    created_by: User | None = None,
    rerun_of: Report | None = None,
) -> Report:
    """Check the configuration, save the report and compute it in a worker after commit."""
    name = name.strip()
    problems = {}
    if not name:
        problems["name"] = "a report name is required"
    elif len(name) > NAME_MAX_LENGTH:
        problems["name"] = f"longer than {NAME_MAX_LENGTH} characters"
    try:
        resolved = report_config_check(config)
    except ReportConfigError as exc:
        raise ReportConfigError({**problems, **exc.errors}) from None
    if problems:
        raise ReportConfigError(problems)
    report = Report.objects.create(
        name=name,
        config=resolved,
        created_by=created_by,
        provenance={"rerun_of": rerun_of.pk} if rerun_of else {},
    )
    job_send_on_commit("report", report.pk)
    return report


def report_rerun(*, report: Report, created_by: User | None = None) -> Report:
    """A new report with the same configuration (same seed: the same resamples).

    Its provenance names the original, and once computed lists what changed since (rubric
    versions, metric signatures, the scorers' version), which explains differing numbers.
    """
    return report_create(
        name=report.name, config=report.config, created_by=created_by, rerun_of=report
    )


# --- compute (Celery worker) ---


def _provenance(config: Mapping[str, Any]) -> dict[str, Any]:
    # The scorer registry imports torch: only the worker, which computes, pays for it.
    from metrics.scorers.registry import SCORERS_VERSION

    jobs = RatingJob.objects.select_related("rubric", "campaign").filter(
        pk__in=config["rating_jobs"]
    )
    runs = MetricRun.objects.select_related("campaign").filter(pk__in=config["metric_runs"])
    return {
        "scorers_version": SCORERS_VERSION,
        "rubrics": [
            {
                "job": job.pk,
                "job_name": job.name,
                "campaign": job.campaign.name,
                "rubric": job.rubric.key,
                "version": job.rubric.version,
                # seed 001's ≥ 3 raters per item (single turn) / ≥ 5 testers per system (live)
                "min_raters": job.rubric.spec.get("min_raters", 1),
                "rater_shortfalls": [dataclasses.asdict(s) for s in rater_shortfalls(job=job)],
            }
            for job in sorted(jobs, key=lambda j: j.pk)
        ],
        "metric_runs": [
            {
                "run": run.pk,
                "name": run.name,
                "campaign": run.campaign.name,
                "source": run.source,
                "signatures": {m: run.signatures[m] for m in sorted(run.signatures)},
                "unavailable": run.unavailable,
            }
            for run in sorted(runs, key=lambda r: r.pk)
        ],
    }


def _changes(original: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between the provenance of the original report and of its re-run."""
    changes = []
    if original.get("scorers_version") != current["scorers_version"]:
        changes.append(
            f"scorers version {original.get('scorers_version')} → {current['scorers_version']}"
        )
    before = {r["job"]: r for r in original.get("rubrics", [])}
    for rubric in current["rubrics"]:
        old = before.get(rubric["job"])
        if old and (old["rubric"], old["version"]) != (rubric["rubric"], rubric["version"]):
            changes.append(
                f"rating job {rubric['job_name']}: rubric {old['rubric']} v{old['version']} → "
                f"{rubric['rubric']} v{rubric['version']}"
            )
    runs = {r["run"]: r for r in original.get("metric_runs", [])}
    for run in current["metric_runs"]:
        old_signatures = runs.get(run["run"], {}).get("signatures", {})
        for metric, signature in run["signatures"].items():
            if metric in old_signatures and old_signatures[metric] != signature:
                changes.append(f"metric run {run['name']}: {metric} signature changed")
    return changes


def _set_progress(report_id: int, done: int, beat: Heartbeat) -> None:
    """A progress step, and the cancel checkpoint."""
    beat.check()
    job_progress(Report, report_id, done=min(done, PROGRESS_STEPS))


def _render_figures(study: CorrelationStudy, text: FigureText) -> RenderedFigures:
    """The figures, or none with a warning: figures are never worth losing the tables for."""
    from metrics.reporting.figures import RenderedFigures, render_figures  # matplotlib: worker

    try:
        return render_figures(study, text=text)
    except Exception as exc:
        logger.exception("report figures failed")
        return RenderedFigures(
            files={},
            warnings=(
                f"The figures could not be drawn ({type(exc).__name__}: {exc}); "
                "tables and downloads are complete.",
            ),
        )


def _write_files(
    report: Report, study: CorrelationStudy, sections: Mapping[str, Any]
) -> tuple[Path, CorrelationStudy]:
    """Write every download into a fresh directory, then move it into place whole.

    ``sections``: the report extensions' sections, whose files are written beside the others
    and into the ZIP, and which the JSON carries as its ``extensions``. Returns the directory
    and the study with the figures' warnings added (a degraded font, characters the font
    lacks), which the page, the JSON and the ZIP's README then show.
    """
    extra = report_extensions.files_of(sections)
    from metrics.reporting.figures import with_warnings

    target = report_dir(report)
    staging = target.with_name(f"{target.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "figures").mkdir(parents=True)
    for name, data in extra.items():
        (staging / name).write_bytes(data)
    # The figures' words are drawn in: one set per interface language, under figures/<language>/
    # (the page serves its reader's), and the default language's set in figures/ for the ZIP.
    jobs = RatingJob.objects.filter(pk__in=report.config.get("rating_jobs", []))
    by_language: dict[str, RenderedFigures] = {}
    for language in INTERFACE_LANGUAGES:
        labels = dimension_labels(jobs=jobs.select_related("rubric"), language=language)
        text = figure_text(language=language, groups=study.groups, dimensions=labels)
        by_language[language] = _render_figures(study, text)
    rendered = by_language[interface_language(settings.LANGUAGE_CODE)]
    for figures in by_language.values():
        study = with_warnings(study, figures.warnings)
    for name, data in rendered.files.items():
        (staging / "figures" / name).write_bytes(data)
    for language, figures in by_language.items():
        (staging / "figures" / language).mkdir()
        for name, data in figures.files.items():
            (staging / "figures" / language / name).write_bytes(data)
    (staging / FORMAT_FILES["zip"]).write_bytes(
        zip_bytes(study, figures=rendered.files, extensions=sections, extra_files=extra)
    )
    for fmt, name in FORMAT_FILES.items():
        if fmt != "zip":
            (staging / name).write_bytes(report_bytes(study, fmt, extensions=sections))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target, study


def report_compute(*, report_id: int) -> None:
    """Compute a pending report (idempotent: a report a live worker holds is left alone; one
    whose worker died is computed again from the start).

    Progress runs 0–100: loading scores is the first 10 steps, the study 10–90, files the rest.
    A configuration that no longer fits the data (a run deleted, the same unit in two runs)
    fails the report with the reason; unexpected errors fail it too and are re-raised. A cancel
    stops it at the next progress step.
    """
    owner = new_lease_owner()
    if not job_claim(Report, report_id, owner=owner):
        return  # another worker holds it, or it is finished or cancelled
    Report.objects.filter(pk=report_id).update(
        progress_done=0, progress_total=PROGRESS_STEPS, error=""
    )
    with Heartbeat(Report, report_id, owner=owner) as beat:
        _compute(report_id, owner, beat)


def _compute(report_id: int, owner: str, beat: Heartbeat) -> None:
    report = Report.objects.get(pk=report_id)
    try:
        config = report_config_check(report.config)
        provenance = _provenance(config)
        original = report.provenance.get("rerun_of")
        if original is not None:
            provenance["rerun_of"] = original
            before = Report.objects.filter(pk=original).values_list("provenance", flat=True)
            if before:
                provenance["changes"] = _changes(before[0], provenance)
        jobs = list(RatingJob.objects.filter(pk__in=config["rating_jobs"]))
        human = human_score_rows(
            jobs=jobs,
            dimensions=config["dimensions"],
            level=config["level"],
            grouping=config["grouping"],
        )
        _set_progress(report_id, 5, beat)
        metric = metric_score_rows(
            run_ids=config["metric_runs"],
            metrics=config["metrics"],
            level=config["level"],
            grouping=config["grouping"],
            system_scores=config["system_scores"],
        )
        if jobs and not human:  # (no jobs: a pairwise report, its votes stand in for ratings)
            raise ReportDataError(
                "the selected rating jobs have no submitted ratings of the chosen dimensions "
                f"at the {config['level']} level"
            )
        if not metric:
            raise ReportDataError("the selected metric runs have no scores at this level")
        _set_progress(report_id, 10, beat)
        from metrics.analysis.study import run_study  # scipy: on the worker only

        study = run_study(
            metric,
            human,
            StudyConfig(
                level=config["level"],
                methods=tuple(config["methods"]),
                bootstrap=config["bootstrap"],
                seed=config["seed"],
            ),
            progress=lambda fraction, _message: _set_progress(
                report_id, 10 + int(80 * fraction), beat
            ),
        )
        if not jobs:  # a pairwise report: no human scores to align the metrics with
            study = dataclasses.replace(study, coverage=(), warnings=())
        beat.check()
        sections = report_extensions.compute_all(config)
        beat.check()
        files, study = _write_files(report, study, sections)
    except JobCancelled:
        job_finish(Report, report_id, status=JobStatus.CANCELLED, owner=owner)
        return
    except (ReportConfigError, ReportDataError) as exc:
        job_finish(Report, report_id, status=JobStatus.FAILED, owner=owner, error=str(exc))
        return
    except Exception as exc:
        job_finish(
            Report,
            report_id,
            status=JobStatus.FAILED,
            owner=owner,
            error=f"internal error: {type(exc).__name__}: {exc}",
        )
        raise
    job_finish(
        Report,
        report_id,
        status=JobStatus.DONE,
        owner=owner,
        progress_done=PROGRESS_STEPS,
        results={**study.to_dict(), "extensions": sections},
        provenance=provenance,
        files_dir=str(files),
    )
