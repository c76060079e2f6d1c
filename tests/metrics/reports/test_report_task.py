"""The report task end to end on a real Celery worker: results and every file."""

from __future__ import annotations

import json
import subprocess
import time
import zipfile
from io import BytesIO

import pytest
from openpyxl import load_workbook

from metrics.models import JobStatus, Report
from metrics.selectors.reports import report_figures, report_file
from metrics.services.reports import report_create
from tests.metrics.reports.factories import (
    QUALITY,
    SYSTEMS,
    dialogue_score,
    finished_run,
    msde_study,
    turn_scores,
)

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def wait_until_finished(report: Report, worker: subprocess.Popen, timeout: float = 240) -> Report:
    deadline = time.monotonic() + timeout
    seen_progress = set()
    while time.monotonic() < deadline:
        report.refresh_from_db()
        seen_progress.add(report.progress_done)
        if report.status in (JobStatus.DONE, JobStatus.FAILED):
            return report
        time.sleep(0.2)
    worker.terminate()
    output = worker.communicate(timeout=30)[0].decode(errors="replace")[-3000:]
    raise AssertionError(
        f"report still {report.status} after {timeout} s (progress seen: {seen_progress}); "
        f"worker output:\n{output}"
    )


def test_a_worker_computes_the_report_and_writes_every_file(celery_worker_process) -> None:
    study = msde_study(dialogues_per_system=2, skills=("knowledge", "chitchat"))
    run = finished_run(study.static, "静态打分", metrics=["f1", "dist-1"])
    for i, dialogue in enumerate(study.answers):
        q = QUALITY[dialogue.backend.name]
        dialogue_score(run, dialogue, "f1", q / 10 + 0.01 * (i % 3))
        turn_scores(run, dialogue, "dist-1", [0.5 + 0.02 * ((q * 7 + i) % 5)])

    report = report_create(
        name="MSDE 表 11–13",
        config={"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "bootstrap": 200},
    )
    report = wait_until_finished(report, celery_worker_process)

    assert report.status == JobStatus.DONE, report.error
    assert report.progress_done == report.progress_total == 100
    assert set(report.results["groups"]) == {"knowledge", "chitchat"}
    assert report.provenance["rubrics"][0]["rubric"] == "likert"

    workbook = load_workbook(report_file(report, "xlsx"))
    assert {"correlations", "correlations_ci", "average_over_groups", "data", "notes"} <= set(
        workbook.sheetnames
    )
    sheet = workbook["correlations"]
    bold = [c.value for row in sheet.iter_rows() for c in row if c.font.bold and c.value]
    assert "f1" in [c.value for row in sheet.iter_rows() for c in row] and bold

    latex = report_file(report, "latex").read_text(encoding="utf-8")
    for rule in (r"\toprule", r"\midrule", r"\bottomrule", r"\usepackage{booktabs}"):
        assert rule in latex
    assert r"\usepackage{xeCJK}" in latex  # system names are Chinese

    results = json.loads(report_file(report, "json").read_text(encoding="utf-8"))
    assert results == report.results
    csv_text = report_file(report, "csv").read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].startswith("group,dimension,metric,method")
    assert len(csv_text.splitlines()) == 1 + len(report.results["cells"])

    figures = report_figures(report)
    with zipfile.ZipFile(BytesIO(report_file(report, "zip").read_bytes())) as archive:
        names = set(archive.namelist())
        assert archive.testzip() is None
    assert {"results.json", "tables.xlsx", "tables.tex", "README.txt"} <= names
    assert {f"figures/{name}" for name in figures} <= names
    assert {"csv/correlations.csv", "csv/systems.csv"} <= names
    for system in SYSTEMS:
        assert system in json.dumps(report.results, ensure_ascii=False)
    kinds = {name.split("_", 1)[0] for name in figures}
    assert kinds == {"heatmap", "systems", "metrics", "distributions"}
    assert all(name.endswith((".png", ".svg")) for name in figures)


def test_a_report_that_cannot_be_computed_fails_with_the_reason(celery_worker_process) -> None:
    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, metrics=["f1"])
    for dialogue in study.answers:
        dialogue_score(run, dialogue, "f1", 0.5)
    study.job.assignments.all().delete()  # a job without ratings yet
    report = report_create(
        name="无评分", config={"metric_runs": [run.pk], "rating_jobs": [study.job.pk]}
    )
    report = wait_until_finished(report, celery_worker_process)
    assert report.status == JobStatus.FAILED
    assert "no submitted ratings" in report.error
