"""Issue 26's "done when": a researcher imports an arena-style vote file with its conversations,
runs a metric run and a pairwise judge run on those conversations, and gets a report with the
Bradley–Terry leaderboard, the win-rate matrix, judge–human and human–human agreement with and
without ties, and every metric's and the judge's pairwise accuracy — by the API and commands
(the page is checked in test_report_section)."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from chat.models import Campaign, Vote
from judges import services as judge_services
from metrics.models import JobStatus, MetricRun, Report
from metrics.services.metric_runs import metric_run_create
from metrics.services.reports import report_compute
from tests.annotation.factories import rubric
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import judge_backend
from tests.judges.test_judge_runs import run_all
from tests.metrics.pairwise.factories import arena_lines

pytestmark = pytest.mark.django_db


def prefer_the_longer_reply(payload) -> str:
    """The judge prefers the longer dialogue on every question (as the voters mostly do)."""
    user = payload["messages"][-1]["content"]
    a = re.split(r"## Dialogue B", user.split("## Dialogue A", 1)[1])[0]
    b = user.split("## Dialogue B", 1)[1]
    winner = "A" if len(a) > len(b.split("\n\n#", 1)[0]) else "B"
    return json.dumps({"rationale": "longer", "winners": {"info": winner, "coh": winner}})


def test_an_arena_study_from_file_to_report(researcher_client, tmp_path):
    path = tmp_path / "arena.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in arena_lines(items=30)))
    with path.open("rb") as fileobj:
        response = researcher_client.post(
            reverse("api-vote-import"),
            {"file": fileobj, "study": "arena 2024", "voter_kind": "human"},
        )
    assert response.status_code == 201, response.content
    campaign = Campaign.objects.get(pk=response.json()["study_id"])

    metric_run = metric_run_create(campaign=campaign, metrics=["length", "dist-1"], name="lexical")
    metric_run = run_all(metric_run)
    assert metric_run.status == JobStatus.DONE, metric_run.error

    with FakeOpenAI() as server:
        server.set_behaviour(reply_fn=prefer_the_longer_reply)
        judge = judge_services.judge_create(
            name="pair judge", backend=judge_backend(server), rubric=rubric("msde"), mode="pairwise"
        )
        judge_run = run_all(judge_services.judge_run_create(judge=judge, campaign=campaign))
    assert judge_run.status == JobStatus.DONE, judge_run.error
    judge_votes = Vote.objects.filter(campaign=campaign, voter_kind="judge", question="")
    assert judge_votes.count() == 2 * 30  # both orders of every voted pair, overall

    out = io.StringIO()
    call_command(
        "create_report",
        "--name",
        "arena",
        "--metric-runs",
        f"{metric_run.pk},{judge_run.pk}",
        "--pairwise",
        "--bootstrap",
        "100",
        stdout=out,
    )
    report = Report.objects.get(name="arena")
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE, report.error

    body = researcher_client.get(reverse("api-report-detail", args=[report.pk])).json()
    section = body["results"]["extensions"]["pairwise"]
    board = section["leaderboards"][0]
    assert board["systems"][0]["system"] == "alpha-bot" and board["win_rate"]
    agreement = section["agreement"]
    assert {row["with_ties"] for row in agreement["human_human"]} == {True, False}
    judge_rows = [row for row in agreement["judge_human"] if row["question"] == ""]
    assert {row["with_ties"] for row in judge_rows} == {True, False}
    assert all(row["total"] > 0 for row in judge_rows)
    predictors = {(row["predictor"], row["kind"]) for row in section["accuracy"]}
    assert ("length", "metric") in predictors and ("dist-1", "metric") in predictors
    assert (judge.metric_prefix, "judge") in predictors
    for name in ("pairwise_leaderboard.csv", "pairwise_accuracy.csv", "pairwise.xlsx"):
        url = body["pairwise_files"][name]
        assert researcher_client.get(url).status_code == 200
    assert not MetricRun.objects.filter(status=JobStatus.FAILED).exists()
