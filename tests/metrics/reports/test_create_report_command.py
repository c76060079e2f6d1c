"""`create_report`: a correlation report on platform data from the command line."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from metrics.models import JobStatus, Report
from tests.metrics.reports.factories import QUALITY, dialogue_score, finished_run, msde_study

pytestmark = pytest.mark.django_db


def test_creates_a_validated_report_and_enqueues_it(
    sent_jobs, capsys, django_capture_on_commit_callbacks
):
    study = msde_study()
    run = finished_run(study.static)
    for dialogue in study.answers:
        dialogue_score(run, dialogue, "bleu-1", QUALITY[dialogue.backend.name] / 10)
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "create_report",
            "--name=系统级",
            f"--metric-runs={run.pk}",
            f"--rating-jobs={study.job.pk}",
            "--level=system",
            "--bootstrap=50",
        )
    report = Report.objects.get(name="系统级")
    assert report.status == JobStatus.PENDING
    assert report.config["metric_runs"] == [run.pk] and report.config["bootstrap"] == 50
    assert "created report '系统级'" in capsys.readouterr().out
    assert [(job.kind, job.pk) for job in sent_jobs] == [("report", report.pk)]


def test_bad_configuration_is_named():
    with pytest.raises(CommandError, match="--metric-runs: expected comma-separated ids"):
        call_command("create_report", "--name=x", "--metric-runs=a", "--rating-jobs=1")
    with pytest.raises(CommandError, match="metric_runs: metric run 999 does not exist"):
        call_command("create_report", "--name=x", "--metric-runs=999", "--rating-jobs=1")
    assert not Report.objects.exists()
