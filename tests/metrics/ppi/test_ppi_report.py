"""The report's "Human + judge" section: computed with the report, on its page, in every file."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from metrics.models import JobStatus, Report
from metrics.services.reports import ReportConfigError, report_compute, report_create
from tests.downloads import streamed_bytes
from tests.metrics.ppi.factories import SYSTEMS, sampled_study

pytestmark = pytest.mark.django_db


def test_the_section_is_computed_shown_and_downloadable(researcher_client) -> None:
    study = sampled_study()
    report = report_create(
        name="人工 + 裁判",
        config={
            "metric_runs": [study.run.pk],
            "rating_jobs": [study.job.pk],
            "level": "dialogue",
            "bootstrap": 100,
            "ppi": {"predictor": "judge:q-v1:overall"},
        },
    )
    assert report.config["ppi"] == {
        "predictor": ["judge:q-v1:overall"],
        "question": "overall",
        "job": study.job.pk,
        "alpha": 0.1,
    }
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE, report.error
    section = report.results["extensions"]["ppi"]
    assert [row["system"] for row in section["systems"]] == sorted(SYSTEMS)
    assert {"ppi_estimates.csv", "ppi.xlsx", "ppi.tex", "ppi.json"} <= set(section["files"])

    page = researcher_client.get(reverse("metrics:report-detail", args=[report.pk]))
    assert page.status_code == 200
    assert "人工 + 裁判：预测增强估计（PPI++）" in page.content.decode()

    response = researcher_client.get(
        reverse("metrics:report-ppi-file", args=[report.pk, "ppi_estimates.csv"])
    )
    rows = list(csv.DictReader(io.StringIO(streamed_bytes(response).decode("utf-8-sig"))))
    assert [row["system"] for row in rows] == sorted(SYSTEMS)
    first = section["systems"][0]
    assert float(rows[0]["ppi_low"]) == pytest.approx(first["ppi"]["low"])
    tex = streamed_bytes(
        researcher_client.get(reverse("metrics:report-ppi-file", args=[report.pk, "ppi.tex"]))
    ).decode()
    assert "Human + predictor" in tex
    stored = json.loads(
        streamed_bytes(
            researcher_client.get(reverse("metrics:report-ppi-file", args=[report.pk, "ppi.json"]))
        )
    )
    assert stored["systems"][0]["ppi"]["estimate"] == pytest.approx(first["ppi"]["estimate"])
    missing = researcher_client.get(reverse("metrics:report-ppi-file", args=[report.pk, "x.csv"]))
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("ppi", "message"),
    [
        ({"predictor": "bleu"}, "unknown metric 'bleu'"),
        ({"predictor": "length", "question": "nope"}, "no scored question 'nope'"),
        ({"predictor": "length", "alpha": 0.9}, "alpha"),
        ({"predictor": "length", "size": 3}, "unknown option 'size'"),
        ("length", "must be an object"),
    ],
)
def test_bad_ppi_options_name_the_problem(ppi, message) -> None:
    study = sampled_study(rate_sample=False, per_system=3, sample_size=2)
    with pytest.raises(ReportConfigError, match=message) as caught:
        report_create(
            name="x",
            config={"metric_runs": [study.run.pk], "rating_jobs": [study.job.pk], "ppi": ppi},
        )
    assert caught.value.field == "ppi"


def test_the_report_form_adds_the_section(researcher_client) -> None:
    study = sampled_study(per_system=4, sample_size=2)
    form = researcher_client.get(reverse("metrics:report-create")).content.decode()
    assert 'name="ppi_predictor" value="judge:q-v1:overall"' in form
    response = researcher_client.post(
        reverse("metrics:report-create"),
        {
            "name": "表单里的人工 + 裁判",
            "metric_runs": [study.run.pk],
            "rating_jobs": [study.job.pk],
            "level": "dialogue",
            "grouping": "skill",
            "system_scores": "mean",
            "methods": ["pearson"],
            "bootstrap": 0,
            "seed": 0,
            "ppi_predictor": ["judge:q-v1:overall", "length"],
            "ppi_question": "naturalness",
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    report = Report.objects.get(name="表单里的人工 + 裁判")
    assert report.config["ppi"]["predictor"] == ["judge:q-v1:overall", "length"]
    assert report.config["ppi"]["question"] == "naturalness"
