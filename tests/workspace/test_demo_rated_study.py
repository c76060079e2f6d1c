"""The demo's rated study is enough for a report with real structure (issue 11, item 13): its
four systems differ, a lexical metric run over it correlates with the simulated MSDE ratings,
and the researcher home offers the metric run, then the report."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import RatingJob
from chat.models import Campaign
from core.models import JobStatus
from metrics.services import metric_run_scoring, metric_runs
from metrics.services.reports import report_compute, report_create
from workspace.demo import RATED_STUDY

pytestmark = pytest.mark.django_db


def _cell(report, metric: str, dimension: str) -> dict:
    (cell,) = [
        c
        for c in report.results["cells"]
        if c["metric"] == metric
        and c["dimension"] == dimension
        and c["method"] == "pearson"
        and c["group"] == "knowledge"
    ]
    return cell


def test_the_rated_study_yields_a_report_with_non_trivial_correlations(researcher_client):
    call_command("load_demo", stdout=io.StringIO())
    call_command("load_demo", stdout=io.StringIO())  # idempotent: one study, one job
    study = Campaign.objects.get(name=RATED_STUDY)
    assert study.dialogues.count() == 96 and study.backends.count() == 4
    (job,) = RatingJob.objects.filter(campaign=study)
    assert job.status == RatingJob.Status.CLOSED

    home = researcher_client.get(reverse("home")).content.decode()
    assert f"?campaign={study.pk}" in home  # the next step: metrics on the rated study

    run = metric_runs.metric_run_create(
        name="lexical", metrics=["f1", "bleu-2", "dist-2"], campaign=study
    )
    for chunk_id in run.chunks.values_list("pk", flat=True):
        metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
    run.refresh_from_db()
    assert run.status == JobStatus.DONE
    home = researcher_client.get(reverse("home")).content.decode()
    assert f"metric_runs={run.pk}&amp;rating_jobs={job.pk}" in home  # then the report

    report = report_create(
        name="demo",
        config={
            "metric_runs": [run.pk],
            "rating_jobs": [job.pk],
            "level": "dialogue",
            "bootstrap": 50,
        },
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE, report.error
    # Replies that state the scenario's knowledge overlap its reference and are rated richer.
    info = _cell(report, "f1", "info")
    assert info["n"] == 96 and info["value"] > 0.3 and info["p_value"] < 0.01
    # Not every metric tracks every dimension: coherence is another matter.
    assert abs(_cell(report, "f1", "coh")["value"]) < info["value"]


def test_the_simulated_raters_are_not_offered_new_work_until_they_can_log_in(researcher_client):
    from django.contrib.auth.models import User

    from annotation.selectors.rating import experts

    call_command("load_demo", stdout=io.StringIO())
    assert User.objects.filter(username__startswith="simulated-rater-").count() == 3
    assert set(experts().values_list("username", flat=True)) == {"expert", "expert2", "expert3"}
    form = researcher_client.get(reverse("annotation:job-create")).content.decode()
    assert "simulated-rater-1" not in form and "expert2" in form
    rater = User.objects.get(username="simulated-rater-1")
    rater.set_password("now-they-can-log-in")
    rater.save()
    assert "simulated-rater-1" in set(experts().values_list("username", flat=True))


def test_the_msde_step_preselects_the_preset_and_the_demo_scores_every_neural_metric_but_bleurt(
    researcher_client,
):
    from metrics.models import MetricScore
    from metrics.selectors.metric_runs import run_metric_status

    call_command("load_demo", stdout=io.StringIO())
    study = Campaign.objects.get(name=RATED_STUDY)
    home = researcher_client.get(reverse("home")).content.decode()
    step = f"{reverse('metrics:metric-run-create')}?campaign={study.pk}&amp;metrics=msde16"
    assert step in home
    form = researcher_client.get(step.replace("&amp;", "&"))
    assert form.status_code == 200
    assert form.context["form"]["metrics"].value() == ["msde16"]
    assert re.search(r'value="msde16"[^>]*checked', form.content.decode())

    run = metric_runs.metric_run_create(name="msde", metrics=["msde16"], campaign=study)
    for chunk_id in run.chunks.values_list("pk", flat=True):
        metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    status = {row["name"]: str(row["status"]) for row in run_metric_status(run=run)}
    # Only BLEURT, a learned metric with no checkpoint to ship, stays unavailable.
    assert status.pop("bleurt").startswith("unavailable: no BLEURT checkpoint")
    assert status == dict.fromkeys(status, "ok") and len(status) == 15
    # The study's responses are its systems' replies, one per dialogue, each with a reference.
    turn_scores = MetricScore.objects.filter(run=run, metric="f1", level="turn")
    assert turn_scores.count() == 96
    # The neural metrics ran on the demo's own vectors, and say so in their signatures.
    for metric in ("sentence-cosine", "embedding-average", "greedy-matching", "bertscore-f1"):
        assert "demo-quality-zh-ppmi-svd" in run.signatures[metric]
    # They are not constant: the grounded system and the random replies score apart.
    by_system = dict(
        MetricScore.objects.filter(
            run=run, metric="bertscore-f1", level="system", group=""
        ).values_list("backend__name", "value")
    )
    assert by_system["知识模板"] != by_system["随机回复"]
