"""The report's Pairwise section: a pairwise study (votes with their conversations, no rating
job) reported with a metric run over those conversations — leaderboard, agreement, each metric's
pairwise accuracy — on the page, through the API and the command, in every download."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from openpyxl import load_workbook

from chat.models import Dialogue, Turn, Vote
from metrics.analysis import pairwise_accuracy
from metrics.models import JobStatus
from metrics.services import pairwise
from metrics.services.reports import ReportConfigError, report_compute, report_create
from tests.downloads import streamed_bytes
from tests.metrics.pairwise.factories import arena_study
from tests.metrics.reports.factories import dialogue_score, finished_run

pytestmark = pytest.mark.django_db(transaction=False)


def _length_run(campaign):
    """A metric run scoring each conversation's reply length (the factory's better systems write
    longer replies), and a `noise` metric that knows nothing."""
    run = finished_run(campaign, name="lengths", metrics=["length", "noise"])
    rng = np.random.default_rng(0)
    for dialogue in Dialogue.objects.filter(campaign=campaign):
        reply = dialogue.turns.filter(speaker=Turn.Speaker.SYSTEM).first()
        dialogue_score(run, dialogue, "length", float(len(reply.text.split())))
        dialogue_score(run, dialogue, "noise", float(rng.normal()))
    return run


def _computed(config):
    report = report_create(name="arena", config=config)
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE, report.error
    return report


def test_a_pairwise_report_without_rating_jobs_has_every_part_and_file():
    campaign = arena_study(items=60)
    run = _length_run(campaign)
    report = _computed({"metric_runs": [run.pk], "pairwise": {}, "bootstrap": 200})
    section = report.results["extensions"]["pairwise"]
    board = section["leaderboards"][0]
    assert board["systems"][0]["system"] == "alpha-bot"
    assert section["agreement"]["human_human"], "three voters per item agree or not"

    # Each metric's accuracy equals the kernel on the votes and the two replies' scores.
    votes = list(Vote.objects.filter(campaign=campaign).order_by("voted_at", "pk"))
    scores = {s.dialogue_id: s.value for s in run.scores.filter(metric="length", level="dialogue")}
    codes = {"a": 0, "b": 1, "tie": 2, "both_bad": 3}
    human = np.array([codes[v.outcome] for v in votes])
    a = np.array([scores[v.dialogue_a_id] for v in votes])
    b = np.array([scores[v.dialogue_b_id] for v in votes])
    expected = pairwise_accuracy.accuracy_without_ties(human, a, b, samples=200, seed=0)
    calibrated = pairwise_accuracy.calibrated_acc23(human, a, b, samples=200, seed=0)
    rows = {row["predictor"]: row for row in section["accuracy"]}
    assert rows["length"]["accuracy"] == pytest.approx(expected.value)
    assert rows["length"]["acc23"] == pytest.approx(calibrated.value)
    assert rows["length"]["epsilon"] == pytest.approx(calibrated.epsilon)
    assert rows["length"]["accuracy"] > 0.7 > rows["noise"]["accuracy"] - 0.2
    assert rows["length"]["system_tau"] == pytest.approx(1.0)

    names = set(section["files"])
    assert {"pairwise_leaderboard.csv", "pairwise.xlsx", "pairwise.tex", "pairwise.json"} <= names
    client_files = {name: Path(report.files_dir) / name for name in names}
    leaderboard_text = client_files["pairwise_leaderboard.csv"].read_text(encoding="utf-8-sig")
    table = list(csv.DictReader(io.StringIO(leaderboard_text)))
    assert [row["system"] for row in table][0] == "alpha-bot"
    book = load_workbook(client_files["pairwise.xlsx"])
    assert {"leaderboard", "accuracy", "agreement", "win_rates"} <= set(book.sheetnames)
    tex = client_files["pairwise.tex"].read_text(encoding="utf-8")
    assert "alpha-bot" in tex and r"\toprule" in tex
    with zipfile.ZipFile(report.files_dir + "/report.zip") as archive:
        assert "pairwise_accuracy.csv" in archive.namelist()
        assert "pairwise" in json.loads(archive.read("results.json"))["extensions"]


def test_the_report_refuses_pairwise_options_it_cannot_use():
    campaign = arena_study(items=10)
    run = _length_run(campaign)
    with pytest.raises(ReportConfigError, match="pairwise: unknown option 'who'"):
        report_create(name="x", config={"metric_runs": [run.pk], "pairwise": {"who": 1}})
    with pytest.raises(ReportConfigError, match="voters"):
        report_create(name="x", config={"metric_runs": [run.pk], "pairwise": {"voters": "cats"}})
    with pytest.raises(ReportConfigError, match="rating_jobs"):
        report_create(name="x", config={"metric_runs": [run.pk]})


def test_the_page_api_and_files_show_the_section(researcher_client):
    campaign = arena_study(items=30)
    run = _length_run(campaign)
    report = _computed({"metric_runs": [run.pk], "pairwise": {}, "bootstrap": 50})
    page = researcher_client.get(reverse("metrics:report-detail", args=[report.pk]))
    html = page.content.decode()
    assert 'id="pairwise"' in html and "alpha-bot" in html and "acc23" in html
    download = researcher_client.get(
        reverse("metrics:report-pairwise-file", args=[report.pk, "pairwise_accuracy.csv"])
    )
    assert download.status_code == 200 and b"length" in streamed_bytes(download)
    assert (
        researcher_client.get(
            reverse("metrics:report-pairwise-file", args=[report.pk, "report.zip"])
        ).status_code
        == 404
    )
    api = researcher_client.get(reverse("api-report-detail", args=[report.pk])).json()
    assert "pairwise_leaderboard.csv" in api["pairwise_files"]


def test_the_ranking_command_writes_the_leaderboard(tmp_path):
    campaign = arena_study(items=20)
    out = tmp_path / "ranking.csv"
    call_command(
        "rank_pairwise", "--study", campaign.name, "--bootstrap", "100", "--output", str(out)
    )
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 4 and rows[0]["rank"] == "1"
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no study named"):
        call_command("rank_pairwise", "--study", "nope", "--output", str(out))
    with pytest.raises(CommandError, match="SYSTEM=RATING"):
        call_command(
            "rank_pairwise", "--study", campaign.name, "--anchor", "x=y", "--output", str(out)
        )


def test_the_ranking_api_and_page(researcher_client):
    campaign = arena_study(items=20)
    url = reverse("api-pairwise-ranking")
    body = researcher_client.get(url, {"study": campaign.pk, "bootstrap": 100}).json()
    assert body["study"] == campaign.pk and len(body["systems"]) == 4
    assert "replicates" not in body
    as_csv = researcher_client.get(url, {"study": campaign.pk, "output": "csv", "bootstrap": 0})
    assert as_csv["Content-Type"].startswith("text/csv")
    bad = researcher_client.get(url, {"study": campaign.pk, "question": "nope"})
    assert bad.status_code == 400 and "nope" in bad.content.decode()
    assert researcher_client.get(url, {"study": 999999}).status_code == 404
    assert researcher_client.get(url, {"study": campaign.pk, "bootstrap": 10**9}).status_code == 400
    page = researcher_client.get(reverse("metrics:study-ranking", args=[campaign.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "forest-point" in html and "alpha-bot" in html


def test_the_ranking_section_is_the_services_one():
    campaign = arena_study(items=20)
    run = _length_run(campaign)
    section = pairwise.pairwise_report_section(
        {
            "metric_runs": [run.pk],
            "rating_jobs": [],
            "metrics": ["length"],
            "bootstrap": 0,
            "seed": 0,
            "pairwise": pairwise.PAIRWISE_DEFAULTS,
        }
    )
    assert section is not None and section["leaderboards"][0]["interval"] == "sandwich"


def test_the_ranking_page_and_the_pairwise_section_read_in_english(researcher_client):
    from tests.core.test_translations import untranslated_text

    campaign = arena_study(items=20)
    run = _length_run(campaign)
    report = _computed({"metric_runs": [run.pk], "pairwise": {}, "bootstrap": 20})
    researcher_client.post(reverse("set_language"), {"language": "en", "next": "/"})
    for url in (
        reverse("metrics:study-ranking", args=[campaign.pk]),
        reverse("metrics:report-detail", args=[report.pk]),
    ):
        html = researcher_client.get(url).content.decode()
        assert not untranslated_text(html), url
