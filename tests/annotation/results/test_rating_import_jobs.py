"""A ratings file over `INLINE_MAX_ROWS` rows is imported by a worker (issue 23 item 12): the
file is stored until the job ends, the page and the API show its progress, a cancel or a bad
row saves nothing and says why."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Rating, RatingImport, RatingJob
from annotation.services import rating_import_jobs
from annotation.services.rating_import_jobs import (
    count_rows,
    rating_import_run,
    rating_import_submit,
)
from core.jobs import JOB_KINDS, JobStatus, job_cancel
from core.jobs import job_progress as real_job_progress
from tests.annotation.results.factories import dialogue_with_turns
from tests.chat.factories import BackendFactory, CampaignFactory

MSDE = """dialogue_id,rater,question,value
d1,alice,info,2
d1,alice,coh,1
d1,alice,know,2
d2,alice,info,1
d2,alice,coh,2
d2,alice,know,0
d1,bob,info,1
d1,bob,coh,1
d1,bob,know,0
"""


@pytest.fixture
def campaign(db):
    campaign = CampaignFactory(name="大批评分")
    backend = BackendFactory(name="S1")
    for external_id in ("d1", "d2"):
        dialogue_with_turns(campaign, backend, skill_key="knowledge", external_id=external_id)
    return campaign


@pytest.fixture
def small_threshold(monkeypatch):
    """Files of more than 4 rows go to a worker."""
    monkeypatch.setattr(rating_import_jobs, "INLINE_MAX_ROWS", 4)


@pytest.fixture
def eager(run_jobs_inline):
    """A job sent runs at once, in this process."""


def upload(text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("big.csv", text.encode("utf-8"), content_type="text/csv")


def submit(text: str) -> RatingImport:
    job = rating_import_submit(
        fileobj=io.BytesIO(text.encode()), campaign_name="大批评分", rubric_ref="msde"
    )
    assert isinstance(job, RatingImport)
    return job


def test_rows_are_counted_without_the_header_and_blank_lines():
    assert count_rows(MSDE.encode()) == 9
    assert count_rows(b"dialogue_id,rater,question,value\n\nd1,a,info,1\n  \n") == 1


def test_a_small_file_is_imported_at_once_and_a_large_one_is_stored_for_a_worker(
    campaign, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(rating_import_jobs, "INLINE_MAX_ROWS", 9)
    result = rating_import_submit(
        fileobj=io.BytesIO(MSDE.encode()), campaign_name="大批评分", rubric_ref="msde"
    )
    assert not isinstance(result, RatingImport) and result.ratings == 9
    monkeypatch.setattr(rating_import_jobs, "INLINE_MAX_ROWS", 8)
    with django_capture_on_commit_callbacks() as callbacks:
        job = submit(MSDE.replace("d1,bob,info,1", "d1,bob,info,2"))
    assert (job.status, job.rows, bytes(job.data)) == ("pending", 9, MSDE.replace(
        "d1,bob,info,1", "d1,bob,info,2").encode())  # fmt: skip
    assert len(callbacks) == 1 and job.progress_total == 100
    assert "rating_import" in JOB_KINDS and JOB_KINDS["rating_import"].model is RatingImport
    assert Rating.objects.get(question="info", assignment__rater__username="bob").value == 1.0
    rating_import_run(import_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.progress_done, bytes(job.data)) == ("done", 100, b"")
    assert job.result == {
        "ratings": 9, "dialogues": 2, "raters": 2, "new_raters": [], "incomplete": 0,
    }  # fmt: skip
    assert job.rating_job == RatingJob.objects.get()
    assert Rating.objects.get(question="info", assignment__rater__username="bob").value == 2.0


def test_arguments_are_refused_before_any_job(campaign, small_threshold):
    from annotation.services.rating_import import RatingImportError

    with pytest.raises(RatingImportError, match="no campaign named"):
        rating_import_submit(
            fileobj=io.BytesIO(MSDE.encode()), campaign_name="无", rubric_ref="msde"
        )
    assert not RatingImport.objects.exists()


def test_a_bad_row_fails_the_job_with_the_row_and_column_and_saves_nothing(
    campaign, small_threshold
):
    job = submit(MSDE.replace("d2,alice,coh,2", "d2,alice,coh,7"))
    rating_import_run(import_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("row 6, column 'value': ")
    assert bytes(job.data) == b"" and job.finished_at is not None
    assert not RatingJob.objects.exists() and not Rating.objects.exists()


def test_a_cancelled_pending_import_is_never_run_and_drops_its_file(
    campaign, small_threshold, researcher_client
):
    job = submit(MSDE)
    response = researcher_client.post(reverse("annotation:rating-import-cancel", args=[job.pk]))
    assert response.status_code == 302
    job.refresh_from_db()
    assert (job.status, bytes(job.data)) == ("cancelled", b"")
    rating_import_run(import_id=job.pk)  # the task arrives after the cancel
    assert not RatingJob.objects.exists() and not Rating.objects.exists()
    page = researcher_client.get(reverse("annotation:rating-import", args=[job.pk]))
    assert "已取消导入，没有保存任何数据。" in page.content.decode()


def test_the_page_polls_a_progress_bar_with_a_cancel_until_the_job_ends(
    campaign, small_threshold, researcher_client, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = researcher_client.post(
            reverse("annotation:ratings-import"),
            {"file": upload(MSDE), "campaign": "大批评分", "rubric": "msde:1"},
        )
    job = RatingImport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:rating-import", args=[job.pk])
    assert job.filename == "big.csv" and len(callbacks) == 1
    page = researcher_client.get(response["Location"]).content.decode()
    assert 'hx-trigger="every 1s"' in page and 'role="progressbar"' in page
    assert reverse("annotation:rating-import-cancel", args=[job.pk]) in page
    partial = researcher_client.get(response["Location"], HTTP_HX_REQUEST="true")
    assert partial.content.decode().lstrip().startswith('<section class="card" id="import-status"')

    callbacks[0]()  # the commit: the task is sent, and Celery runs it at once
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    page = researcher_client.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in page and "progressbar" not in page
    assert "已导入 9 条评分（2 段对话，2 位评分人）" in page
    assert reverse("annotation:job-results", args=[job.rating_job_id]) in page


def test_the_api_answers_202_with_the_imports_url(
    campaign, small_threshold, researcher_client, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            "/api/ratings/import/", {"file": upload(MSDE), "campaign": "大批评分", "rubric": "msde"}
        )
    assert response.status_code == 202
    body = response.json()
    job = RatingImport.objects.get()
    assert body["id"] == job.pk and body["rows"] == 9 and body["status"] == "pending"
    assert body["url"].endswith(f"/api/ratings/imports/{job.pk}/")
    assert response["Location"] == body["url"]
    status = researcher_client.get(f"/api/ratings/imports/{job.pk}/").json()
    assert (status["status"], status["progress_done"], status["error"]) == ("done", 100, "")
    assert status["job"] == RatingJob.objects.get().pk and status["result"]["ratings"] == 9
    again = researcher_client.post(f"/api/ratings/imports/{job.pk}/cancel/").json()
    assert again["status"] == "done"  # an ended import stays as it ended


def test_the_api_reports_a_failed_import(
    campaign, small_threshold, researcher_client, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            "/api/ratings/import/",
            {"file": upload(MSDE.replace("d1,bob", "d9,bob")), "campaign": "大批评分",
             "rubric": "msde"},
        )  # fmt: skip
    status = researcher_client.get(response.json()["url"]).json()
    assert status["status"] == "failed" and status["job"] is None
    assert (
        status["error"]
        == "row 8, column 'dialogue_id': no dialogue with id 'd9' in campaign '大批评分'"
    )


def test_the_command_shows_a_progress_line(campaign, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(MSDE)
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_ratings", str(path), campaign="大批评分", rubric="msde", stdout=out, stderr=err
    )
    assert f"\rimporting {path}: 100%" in err.getvalue() and "Imported 9 ratings" in out.getvalue()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_progress_is_seen_while_the_import_runs_and_a_cancel_rolls_it_back(
    monkeypatch, small_threshold
):
    """Progress goes out through a connection of its own, so another request sees it while the
    import's transaction is open (and sees none of its ratings); a cancel then stops the import
    at its next step and nothing is saved."""
    campaign = CampaignFactory(name="大批评分")
    backend = BackendFactory(name="S1")
    for external_id in ("d1", "d2"):
        dialogue_with_turns(campaign, backend, skill_key="knowledge", external_id=external_id)
    monkeypatch.setattr(rating_import_jobs, "PROGRESS_INTERVAL_S", 0.0)
    seen: list[tuple[int, int]] = []

    def spy(model, pk, *, done):
        real_job_progress(model, pk, done=done)
        seen.append((RatingImport.objects.get(pk=pk).progress_done, Rating.objects.count()))

    monkeypatch.setattr(rating_import_jobs, "job_progress", spy)
    job = submit(MSDE)
    rating_import_run(import_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and Rating.objects.count() == 9
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert seen[0][0] < 50 < seen[-2][0] < 100 == seen[-1][0]
    assert {ratings for _, ratings in seen} == {0}  # all or nothing: none visible before the end

    def cancel_midway(model, pk, *, done):
        real_job_progress(model, pk, done=done)
        if done >= 40:
            job_cancel(job=RatingImport.objects.get(pk=pk))

    Rating.objects.all().delete()
    RatingJob.objects.all().delete()
    monkeypatch.setattr(rating_import_jobs, "job_progress", cancel_midway)
    second = submit(MSDE)
    rating_import_run(import_id=second.pk)
    second.refresh_from_db()
    assert (second.status, bytes(second.data)) == ("cancelled", b"")
    assert not RatingJob.objects.exists() and not Rating.objects.exists()


def test_an_import_whose_worker_died_is_sent_again_with_its_file_kept(
    campaign, small_threshold, sent_jobs, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from core import jobs

    job = submit(MSDE)
    RatingImport.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, lease_owner="dead", attempts=1,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        result = jobs.jobs_sweep()
    assert result.redispatched == {"rating_import": [job.pk]}
    assert [(sent.kind, sent.pk) for sent in sent_jobs] == [("rating_import", job.pk)]
    job.refresh_from_db()
    assert bytes(job.data) == MSDE.encode()
    rating_import_run(import_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and Rating.objects.count() == 9
