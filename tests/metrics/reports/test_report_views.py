"""Report pages and API: researchers only; create, progress, tables, downloads, re-run, import."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse

from metrics.models import JobStatus, MetricRun, Report
from metrics.services.reports import report_compute, report_create
from tests.downloads import streamed_bytes
from tests.metrics.reports.factories import QUALITY, dialogue_score, finished_run, msde_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored():
    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, "静态打分", metrics=["f1"])
    for dialogue in study.answers:
        dialogue_score(run, dialogue, "f1", QUALITY[dialogue.backend.name] / 10)
    return study, run


@pytest.fixture
def done_report(scored) -> Report:
    study, run = scored
    report = report_create(
        name="MSDE 系统级",
        config={"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "bootstrap": 50},
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    return report


@pytest.mark.parametrize(
    "url",
    [
        reverse("metrics:report-list"),
        reverse("metrics:report-create"),
        reverse("metrics:score-import"),
        reverse("api-report-list"),
    ],
)
def test_experts_and_crowdworkers_are_refused(url, expert_client, crowdworker_client) -> None:
    assert expert_client.get(url).status_code == 403
    assert crowdworker_client.get(url).status_code == 403


def test_report_pages_and_files_are_refused_to_an_expert(done_report, expert_client) -> None:
    for url in (
        reverse("metrics:report-detail", args=[done_report.pk]),
        reverse("metrics:report-download", args=[done_report.pk, "xlsx"]),
        reverse("metrics:report-figure", args=[done_report.pk, "heatmap_pearson.png"]),
        reverse("api-report-detail", args=[done_report.pk]),
        reverse("api-report-download", args=[done_report.pk, "zip"]),
    ):
        assert expert_client.get(url).status_code == 403
    assert expert_client.post(reverse("api-report-rerun", args=[done_report.pk])).status_code == 403
    assert Report.objects.count() == 1


def test_anonymous_users_go_to_the_login_page(client) -> None:
    response = client.get(reverse("metrics:report-list"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_form_has_msde_defaults_and_creates_a_pending_report(
    scored, researcher_client, django_capture_on_commit_callbacks
) -> None:
    study, run = scored
    page = researcher_client.get(reverse("metrics:report-create"))
    html = page.content.decode()
    assert page.status_code == 200
    for name, value in (
        ("methods", "pearson"),
        ("methods", "spearman"),
        ("level", "system"),
        ("grouping", "skill"),
    ):
        assert re.search(rf'name="{name}" value="{value}"[^>]*checked', html), value
    assert not re.search(r'value="kendall"[^>]*checked', html)
    assert 'name="bootstrap" value="1000"' in html and 'name="seed" value="0"' in html
    with django_capture_on_commit_callbacks() as callbacks:
        response = researcher_client.post(
            reverse("metrics:report-create"),
            {
                "name": "系统级相关性",
                "metric_runs": [run.pk],
                "rating_jobs": [study.job.pk],
                "level": "system",
                "grouping": "skill",
                "system_scores": "mean",
                "methods": ["pearson", "spearman"],
                "bootstrap": 1000,
                "seed": 0,
            },
        )
    report = Report.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("metrics:report-detail", args=[report.pk])
    assert report.status == JobStatus.PENDING and len(callbacks) == 1
    assert report.config["metrics"] == ["f1"] and report.config["bootstrap"] == 1000

    progress = researcher_client.get(response["Location"])
    assert 'id="report-progress"' in progress.content.decode()
    assert 'hx-trigger="every 1s"' in progress.content.decode()


def test_a_refused_configuration_shows_the_message_at_the_field(scored, researcher_client) -> None:
    study, run = scored
    response = researcher_client.post(
        reverse("metrics:report-create"),
        {
            "name": "对话级",
            "metric_runs": [run.pk],
            "rating_jobs": [study.job.pk],
            "level": "dialogue",
            "grouping": "skill",
            "system_scores": "mean",
            "methods": ["pearson"],
            "bootstrap": 0,
            "seed": 0,
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="field-level"' in html and "choose the system level" in html
    assert not Report.objects.exists()


def test_the_polling_partial_refreshes_the_page_once_done(done_report, researcher_client) -> None:
    url = reverse("metrics:report-detail", args=[done_report.pk])
    response = researcher_client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200 and response["HX-Refresh"] == "true"
    Report.objects.filter(pk=done_report.pk).update(status=JobStatus.RUNNING, progress_done=42)
    partial = researcher_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'aria-valuenow="42"' in partial and "<h1>" not in partial


def test_the_detail_page_shows_tables_warnings_figures_and_provenance(
    done_report, researcher_client
) -> None:
    html = researcher_client.get(
        reverse("metrics:report-detail", args=[done_report.pk])
    ).content.decode()
    assert 'id="correlations"' in html and "系统甲" in html
    assert 'class="num best"' in html and "▲" in html
    assert ">nan<" not in html.lower()
    assert 'id="systems"' in html and 'id="metric-matrix"' in html
    assert "heatmap_pearson.png" in html and "distributions_knowledge.png" in html
    assert "likert v1" in html and "scorers" in html
    for fmt in ("csv", "xlsx", "json", "latex", "zip"):
        assert reverse("metrics:report-download", args=[done_report.pk, fmt]) in html


def test_undefined_correlations_read_undefined_and_few_systems_warn(
    scored, researcher_client
) -> None:
    study, run = scored
    constant = finished_run(study.static, "常数", metrics=["len"])
    for dialogue in study.answers[:3]:
        dialogue_score(constant, dialogue, "len", 1.0)
    report = report_create(
        name="常数指标",
        config={"metric_runs": [constant.pk], "rating_jobs": [study.job.pk], "bootstrap": 0},
    )
    report_compute(report_id=report.pk)
    html = researcher_client.get(
        reverse("metrics:report-detail", args=[report.pk])
    ).content.decode()
    assert '<span class="undefined">无定义</span>' in html
    assert 'id="report-warnings"' in html and "不可能达到 p &lt; 0.05" in html
    assert "仅有人工分" in html


def test_downloads_and_figures_are_served(done_report, researcher_client) -> None:
    xlsx = researcher_client.get(reverse("metrics:report-download", args=[done_report.pk, "xlsx"]))
    assert xlsx.status_code == 200
    assert f"report-{done_report.pk}-report.xlsx" in xlsx["Content-Disposition"]
    assert streamed_bytes(xlsx)[:2] == b"PK"
    png = researcher_client.get(
        reverse("metrics:report-figure", args=[done_report.pk, "heatmap_pearson.png"])
    )
    assert png["Content-Type"] == "image/png"
    assert streamed_bytes(png)[:4] == b"\x89PNG"
    assert xlsx.is_async and png.is_async, "under ASGI a file must stream, not be read whole"
    for name in ("report.json", "nope.png", "..%2Freport.json"):
        url = f"/metrics/reports/{done_report.pk}/figures/{name}"
        assert researcher_client.get(url).status_code == 404
    bad = reverse("metrics:report-download", args=[done_report.pk, "docx"])
    assert researcher_client.get(bad).status_code == 404


def test_rerun_button_creates_a_new_report_with_the_same_config(
    done_report, researcher_client
) -> None:
    response = researcher_client.post(reverse("metrics:report-rerun", args=[done_report.pk]))
    again = Report.objects.exclude(pk=done_report.pk).get()
    assert response["Location"] == reverse("metrics:report-detail", args=[again.pk])
    assert again.config == done_report.config and again.provenance == {"rerun_of": done_report.pk}


def test_api_creates_lists_retrieves_and_reruns(scored, researcher_client, done_report) -> None:
    study, run = scored
    bad = researcher_client.post(
        reverse("api-report-list"),
        {"name": "x", "config": {"metric_runs": [run.pk], "rating_jobs": [], "seed": -1}},
        content_type="application/json",
    )
    assert bad.status_code == 400
    assert set(bad.json()["errors"]) == {"rating_jobs", "seed"}

    created = researcher_client.post(
        reverse("api-report-list"),
        {"name": "API 报告", "config": {"metric_runs": [run.pk], "rating_jobs": [study.job.pk]}},
        content_type="application/json",
    )
    assert created.status_code == 201 and created.json()["status"] == "pending"
    listed = researcher_client.get(reverse("api-report-list")).json()
    assert listed["count"] == 2

    detail = researcher_client.get(reverse("api-report-detail", args=[done_report.pk])).json()
    assert detail["status"] == "done" and detail["progress_done"] == 100
    assert detail["results"]["config"]["level"] == "system"
    assert set(detail["downloads"]) == {"json", "csv", "xlsx", "latex", "zip"}
    assert "heatmap_pearson.svg" in detail["figures"]
    zipped = researcher_client.get(detail["downloads"]["zip"])
    assert zipped.status_code == 200 and streamed_bytes(zipped)[:2] == b"PK"
    pending = researcher_client.get(reverse("api-report-detail", args=[created.json()["id"]]))
    assert pending.json()["results"] is None and pending.json()["downloads"] == {}

    rerun = researcher_client.post(reverse("api-report-rerun", args=[done_report.pk]))
    assert rerun.status_code == 201 and rerun.json()["config"] == done_report.config


def test_api_imports_scores_and_names_the_bad_row(scored, researcher_client) -> None:
    study, _run = scored
    good = io.BytesIO(
        ("group,unit,metric,value\n" + f"knowledge,{study.rated[0].pk},外部,0.5\n").encode()
    )
    good.name = "good.csv"
    response = researcher_client.post(
        reverse("api-metric-run-import"),
        {"file": good, "name": "外部", "campaign": study.interactive.pk, "level": "dialogue"},
    )
    assert response.status_code == 201, response.content
    assert response.json()["scores"] == 1 and response.json()["source"] == "imported"

    bad = io.BytesIO(b"group,unit,metric,value\nknowledge,1,x,oops\n")
    bad.name = "bad.csv"
    response = researcher_client.post(
        reverse("api-metric-run-import"),
        {"file": bad, "name": "坏", "campaign": study.interactive.pk, "level": "dialogue"},
    )
    assert response.status_code == 400
    assert response.json()["row"] == 2 and response.json()["column"] == "value"
    assert MetricRun.objects.filter(source="imported").count() == 1


def test_the_import_page_shows_the_error_and_stores_nothing(scored, researcher_client) -> None:
    study, _run = scored
    bad = io.BytesIO(b"group,unit,metric,value\nknowledge,999999,x,0.1\n")
    bad.name = "bad.csv"
    response = researcher_client.post(
        reverse("metrics:score-import"),
        {"file": bad, "name": "坏", "campaign": study.interactive.pk, "level": "dialogue"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="import-error"' in html and "row 2, column &#x27;unit&#x27;" in html
    assert not MetricRun.objects.filter(source="imported").exists()


def test_the_detail_page_warns_about_systems_with_fewer_raters_than_the_rubric(
    done_report, researcher_client
) -> None:
    url = reverse("metrics:report-detail", args=[done_report.pk])
    assert 'id="rater-shortfalls-' not in researcher_client.get(url).content.decode()
    (rubric,) = done_report.provenance["rubrics"]
    rubric.update(min_raters=3, rater_shortfalls=[{"backend": "系统甲", "n_raters": 2}])
    done_report.save(update_fields=["provenance"])
    html = researcher_client.get(url).content.decode()
    warning = html[html.index(f'id="rater-shortfalls-{rubric["job"]}"') :]
    assert "至少 3 位评分人" in warning[:600] and "系统甲：2 位评分人" in warning[:900]


def test_the_form_offers_only_metrics_with_scores_and_rated_dimensions_by_label(
    scored, researcher_client
) -> None:
    from tests.metrics.reports.factories import finished_run as run_with

    study, run = scored
    run.metrics = ["f1", "bleurt"]  # bleurt was unavailable: no score
    run.save()
    run_with(study.static, "未打分", metrics=["meteor"])
    html = researcher_client.get(reverse("metrics:report-create")).content.decode()
    assert 'name="metrics" value="f1"' in html
    assert 'value="bleurt"' not in html and 'value="meteor"' not in html
    assert re.search(r'name="dimensions" value="naturalness"[^>]*>\s*[^<(]+\(naturalness\)', html)
    assert 'value="overall"' in html


def test_the_report_page_names_dimensions_by_their_labels(done_report, researcher_client):
    html = researcher_client.get(
        reverse("metrics:report-detail", args=[done_report.pk])
    ).content.decode()
    header = html[
        html.index('id="correlations"') : html.index("</thead>", html.index('id="correlations"'))
    ]
    assert "naturalness" not in header and "总体" in header


def test_each_poll_updates_the_heading_status_with_the_bar(done_report, researcher_client):
    # The page opened while the report was queued; its heading said "queued" next to the
    # polled bar at 90 %. Each poll now swaps the heading's status tag too (out of band).
    Report.objects.filter(pk=done_report.pk).update(status=JobStatus.PENDING, progress_done=0)
    url = reverse("metrics:report-detail", args=[done_report.pk])
    page = researcher_client.get(url).content.decode()
    assert '<span class="tag status-pending" id="report-status">排队中</span>' in page
    Report.objects.filter(pk=done_report.pk).update(status=JobStatus.RUNNING, progress_done=90)
    response = researcher_client.get(url, headers={"HX-Request": "true"})
    partial = response.content.decode()
    assert response.status_code == 200
    assert (
        '<span class="tag status-running" id="report-status" hx-swap-oob="true">运行中</span>'
        in partial
    )
    assert 'aria-valuenow="90"' in partial and "排队" not in partial
