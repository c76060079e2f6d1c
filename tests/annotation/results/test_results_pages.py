"""The job results partial, downloads, the ratings upload and the results API; researchers only."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Rating, RatingJob
from tests.annotation.results.factories import (
    SINGLE_SECOND,
    dialogue_with_turns,
    job_for,
    rate,
    single,
)
from tests.chat.factories import BackendFactory, CampaignFactory
from tests.downloads import streamed_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def job():
    """Seed 001 single-turn: two systems, 6 raters agreeing and one contrarian."""
    job = job_for("yesno-single-turn", name="单轮评测")
    good, weak = BackendFactory(name="GoodBot"), BackendFactory(name="WeakBot")
    items = [dialogue_with_turns(job.campaign, b) for b in (good, good, weak, weak)]
    for r in range(6):
        for i, item in enumerate(items):
            rate(job, item, f"agree{r}", single(9 if i < 2 else 3 + (r + i) % 2))
    for i, item in enumerate(items):
        rate(job, item, "contrarian", single(0 if i < 2 else 10, grammatical=int(i >= 2)))
    return job


def results_url(job: RatingJob) -> str:
    return reverse("annotation:job-results", args=[job.pk])


def test_the_results_partial_shows_agreement_deviation_scores_and_charts(researcher_client, job):
    response = researcher_client.get(results_url(job), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html  # a partial for the job page
    # Labels on the page, keys only in the files (and a tooltip).
    assert 'id="agreement"' in html and "<code>relevance_content</code>" not in html
    assert 'title="relevance_content"' in html
    assert "<code>overall</code>" not in html and "总体" in html
    # The reversed question says what its score counts (the share of acceptable replies).
    assert "（得分 = 回答“否”的比例）" in html
    deviation = html[html.index('id="rater-deviation"') :]
    flagged = deviation[deviation.index('class="flagged"') :]
    assert "contrarian" in flagged[:200]
    assert deviation.count('class="flagged"') == 1
    assert "0–100" in html and "GoodBot" in html and "WeakBot" in html
    assert html.count("<svg") == len({"overall", "grammatical", "unacceptable"}) + 10
    for what, fmt in (("raw", "csv"), ("system", "jsonl")):
        assert reverse("annotation:job-export", args=[job.pk, what, fmt]) in html


def test_opened_directly_the_results_are_a_page(researcher_client, job):
    html = researcher_client.get(results_url(job)).content.decode()
    assert "<html" in html and "单轮评测" in html and 'id="system-scores"' in html


def test_the_raw_download_has_one_row_per_rater_dialogue_and_question(researcher_client, job):
    url = reverse("annotation:job-export", args=[job.pk, "raw", "csv"])
    response = researcher_client.get(url)
    assert response["Content-Disposition"] == f'attachment; filename="ratings-job{job.pk}-raw.csv"'
    rows = list(csv.DictReader(io.StringIO(streamed_bytes(response).decode())))
    # 7 raters × 4 items × 12 questions
    assert len(rows) == 7 * 4 * 12 and rows[0]["backend"] in ("GoodBot", "WeakBot")
    assert (
        researcher_client.get(
            reverse("annotation:job-export", args=[job.pk, "raw", "xlsx"])
        ).status_code
        == 404
    )


def test_the_results_api_matches_the_page(researcher_client, job):
    data = researcher_client.get(f"/api/rating-jobs/{job.pk}/results/").json()
    pooled = {n["backend"]: n["score"] for n in data["normalised"] if n["skill"] is None}
    # GoodBot: 6 raters × 9 yes × 2 items + contrarian's 0 + 0 → 108 / (2 × 10 × 7) × 100
    assert pooled["GoodBot"] == pytest.approx(108 / 140 * 100)
    assert [r["username"] for r in data["raters"] if r["flagged"]] == ["contrarian"]
    overall = [s for s in data["systems"] if s["dimension"] == "overall"]
    assert [(s["unit"], s["rank"]) for s in overall] == [("GoodBot", 1), ("WeakBot", 2)]
    scores = researcher_client.get(f"/api/rating-jobs/{job.pk}/human-scores/?level=dialogue")
    assert {s["backend"] for s in scores.json()} == {"GoodBot", "WeakBot"}
    export = researcher_client.get(f"/api/rating-jobs/{job.pk}/export/?what=system&fmt=jsonl")
    assert export.status_code == 200 and export["Content-Type"].startswith("application/x-ndjson")
    bad = researcher_client.get(f"/api/rating-jobs/{job.pk}/export/?what=all")
    assert bad.status_code == 400


def upload(text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("ratings.csv", text.encode("utf-8"), content_type="text/csv")


@pytest.fixture
def imported_campaign():
    campaign = CampaignFactory(name="已评对话")
    dialogue_with_turns(campaign, BackendFactory(name="S"), skill_key="chitchat", external_id="a")
    return campaign


LIKERT_CSV = (
    "dialogue_id,rater,question,value\n"
    "a,ann,naturalness,4\na,ann,topic_following,3\na,ann,topic_providing,5\n"
)


def test_the_upload_page_imports_and_shows_the_results(researcher_client, imported_campaign):
    response = researcher_client.post(
        reverse("annotation:ratings-import"),
        {"file": upload(LIKERT_CSV), "campaign": "已评对话", "rubric": "likert:1"},
    )
    job = RatingJob.objects.get(campaign=imported_campaign)
    assert response.status_code == 302 and response["Location"] == results_url(job)
    assert Rating.objects.filter(assignment__job=job).count() == 3


def test_the_upload_page_names_the_bad_row_and_saves_nothing(researcher_client, imported_campaign):
    response = researcher_client.post(
        reverse("annotation:ratings-import"),
        {
            "file": upload(LIKERT_CSV.replace(",5", ",6")),
            "campaign": "已评对话",
            "rubric": "likert:1",
        },
    )
    assert response.status_code == 400
    assert "row 4, column &#x27;value&#x27;" in response.content.decode()
    assert not RatingJob.objects.exists()


def test_the_import_api(researcher_client, imported_campaign):
    ok = researcher_client.post(
        "/api/ratings/import/",
        {"file": upload(LIKERT_CSV), "campaign": "已评对话", "rubric": "likert"},
    )
    assert ok.status_code == 201 and ok.json()["ratings"] == 3
    bad = researcher_client.post(
        "/api/ratings/import/",
        {"file": upload(LIKERT_CSV.replace("a,ann,naturalness", "zz,ann,naturalness")),
         "campaign": "已评对话", "rubric": "likert"},
    )  # fmt: skip
    assert bad.status_code == 400
    assert bad.json()["row"] == 2 and bad.json()["column"] == "dialogue_id"


@pytest.mark.parametrize("client_name", ["expert_client", "crowdworker_client"])
def test_experts_and_crowdworkers_get_403_on_results_and_exports(request, client_name, job):
    client = request.getfixturevalue(client_name)
    for url in (
        results_url(job),
        reverse("annotation:job-export", args=[job.pk, "raw", "csv"]),
        reverse("annotation:ratings-import"),
        f"/api/rating-jobs/{job.pk}/results/",
        f"/api/rating-jobs/{job.pk}/human-scores/",
        f"/api/rating-jobs/{job.pk}/export/",
    ):
        assert client.get(url).status_code == 403, url
    assert client.post("/api/ratings/import/", {}).status_code == 403


def test_a_job_without_ratings_shows_empty_tables(researcher_client):
    job = job_for("msde", name="空任务")
    response = researcher_client.get(results_url(job), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "还没有已提交的评分。" in response.content.decode()


def test_systems_with_fewer_raters_than_the_rubric_asks_are_warned_about(researcher_client):
    """Seed 001 single-turn asks for ≥ 3 raters: a system rated by two is named on the page."""
    job = job_for("yesno-single-turn", name="评分人不足")
    full, thin = BackendFactory(name="FullBot"), BackendFactory(name="ThinBot")
    for backend, raters in ((full, 3), (thin, 2)):
        item = dialogue_with_turns(job.campaign, backend)
        for r in range(raters):
            rate(job, item, f"{backend.name}-r{r}", single(8))
    html = researcher_client.get(results_url(job), HTTP_HX_REQUEST="true").content.decode()
    warning = html[html.index('id="rater-shortfalls"') :]
    assert "至少 3 位评分人" in warning[:600]
    assert (
        "ThinBot：1/1 段对话少于 3 位评分人（最少 2 位）" in warning
        and "FullBot" not in warning[: warning.index("</div>")]
    )


def test_no_shortfall_warning_when_every_system_has_enough_raters(researcher_client, job):
    html = researcher_client.get(results_url(job), HTTP_HX_REQUEST="true").content.decode()
    assert 'id="rater-shortfalls"' not in html


def test_the_results_show_the_pooled_yes_no_kappa_under_both_gate_conventions(
    researcher_client, job
):
    html = researcher_client.get(results_url(job), HTTP_HX_REQUEST="true").content.decode()
    table = html[html.index('id="pooled-kappa"') :]
    assert 'data-convention="missing"' in table and 'data-convention="zero"' in table
    assert "计为 0（与得分一致）" in table and "这是本平台的解释" in table


@pytest.mark.parametrize(
    ("url", "field", "detail"),
    [
        ("human-scores/?level=system", "level", "level: must be dialogue or turn"),
        ("export/?what=everything", "what", "what: must be one of"),
        ("export/?fmt=xml", "fmt", "fmt: must be one of"),
    ],
)
def test_a_refused_query_parameter_answers_in_the_one_error_shape(
    researcher_client, job, url, field, detail
):
    response = researcher_client.get(f"/api/rating-jobs/{job.pk}/{url}")
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == field and body["detail"].startswith(detail)
    assert {"line", "row", "column", "errors"} <= set(body)


@pytest.fixture
def gated_job():
    """Three raters on two answers; one fails the gate on the first answer (no second level);
    the second answer has only two raters (seed 001 asks for three)."""
    job = job_for("yesno-single-turn", name="门槛")
    bot = BackendFactory(name="GateBot")
    first, second = (dialogue_with_turns(job.campaign, bot) for _ in range(2))
    rate(job, first, "a", single(6))
    rate(job, first, "b", single(4))
    rate(job, first, "c", {"grammatical": 0, "unacceptable": 0})
    rate(job, second, "a", single(7))
    rate(job, second, "b", single(7))
    return job


def test_per_question_agreement_is_given_under_both_gate_conventions(researcher_client, gated_job):
    from annotation.selectors.agreement import job_agreement

    rows = {(a.question, a.convention): a for a in job_agreement(job=gated_job)}
    key = SINGLE_SECOND[0]
    # Dropped, rater c's skip leaves two raters of the question; counted as 0, it has three.
    assert rows[(key, "missing")].n_raters == 2
    assert rows[(key, "zero")].n_raters == 3
    html = researcher_client.get(results_url(gated_job), HTTP_HX_REQUEST="true").content.decode()
    table = html[html.index('id="agreement"') : html.index('id="pooled-kappa"')]
    assert 'data-convention="missing"' in table and 'data-convention="zero"' in table
    assert "门槛题未通过后跳过的第二层问题在此表中不计入" not in html


def test_the_results_api_gives_both_conventions_the_pooled_kappa_and_the_shortfalls(
    researcher_client, gated_job
):
    data = researcher_client.get(f"/api/rating-jobs/{gated_job.pk}/results/").json()
    assert {a["convention"] for a in data["agreement"]} == {"missing", "zero"}
    assert [k["convention"] for k in data["pooled_kappa"]] == ["missing", "zero"]
    assert data["rubric"]["min_raters"] == 3
    (short,) = data["rater_shortfalls"]
    assert short["backend"] == "GateBot" and short["per_item"] is True
    assert (short["n_raters"], short["items_short"], short["items"]) == (2, 1, 2)
    schema = researcher_client.get("/api/schema/").content.decode()
    assert "JobPooledKappaOutput" in schema and "JobRaterShortfallOutput" in schema
