"""Static runs end to end with a real Celery worker process on the configured broker."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from chat.models import Dialogue, StaticRun, StaticRunItem
from chat.services import static_runs as services
from core.jobs import jobs_sweep
from core.models import JobStatus
from tests.chat.fake_openai import FakeOpenAI
from tests.chat.static_runs.helpers import (
    make_dataset,
    openai_backend,
    retrieval_backend,
    run_finished,
    wait_for,
)
from tests.conftest import REPO_ROOT
from tests.downloads import streamed_bytes
from tests.helpers import database_url_for_subprocess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_a_run_created_in_the_ui_is_answered_by_the_worker_with_both_retrieval_backends(
    celery_worker_process, researcher_client
):
    dataset = make_dataset()
    tfidf = retrieval_backend("检索-TFIDF", dataset)
    bm25 = retrieval_backend("检索-BM25", dataset, method="bm25")

    response = researcher_client.post(
        reverse("chat:static-run-create"),
        {
            "name": "两种检索",
            "dataset": dataset.pk,
            "backends": [tfidf.pk, bm25.pk],
            "sample_size": "6",
            "seed": "3",
            "campaign_name": "",
        },
    )
    run = StaticRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:static-run-detail", args=[run.pk])

    wait_for(lambda: run_finished(run), timeout=90, what="the worker to finish the run")
    assert run.status == JobStatus.DONE, run.error
    assert (run.progress_done, run.progress_total) == (12, 12)
    assert Dialogue.objects.filter(static_run=run, status="accepted").count() == 12

    progress = researcher_client.get(
        reverse("chat:static-run-detail", args=[run.pk]) + "?part=progress",
        headers={"HX-Request": "true"},
    )
    assert progress.status_code == 200 and progress["HX-Refresh"] == "true"
    assert "100%" in progress.content.decode() and "every 1s" not in progress.content.decode()

    export = researcher_client.get(reverse("chat:static-run-export", args=[run.pk]))
    lines = streamed_bytes(export).decode().splitlines()
    assert len(lines) == 12


def test_a_run_resumes_after_the_worker_is_killed_without_duplicate_answers(
    celery_worker_process,
):
    dataset = make_dataset(n=8)
    with FakeOpenAI(reply="慢慢地回答", token_delay=0.08) as server:
        backend = openai_backend("慢模型", server.base_url, limit=1)
        run = services.static_run_create(name="会崩溃", dataset=dataset, backends=[backend])
        services.static_run_start(run=run)  # no transaction here: queued at once

        def answered() -> int:
            return StaticRunItem.objects.filter(run=run, status="done").count()

        wait_for(lambda: answered() >= 2, timeout=60, what="two answers")
        os.kill(celery_worker_process.pid, signal.SIGKILL)
        celery_worker_process.wait(timeout=10)
        run.refresh_from_db()
        assert run.status == JobStatus.RUNNING and answered() < 8

        env = {**os.environ, "DATABASE_URL": database_url_for_subprocess()}
        second = subprocess.Popen(
            celery_worker_process.args,
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # The dead worker's lease runs out (JOB_LEASE_SECONDS; skipped here), then the
            # sweeper that Celery beat runs sends the run again (tests/core/test_job_recovery.py
            # does it all with a real beat and real time).
            StaticRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now())
            assert jobs_sweep().redispatched == {"static_run": [run.pk]}
            wait_for(lambda: run_finished(run), timeout=90, what="the resumed run")
        finally:
            second.terminate()
            second.wait(timeout=15)

    assert run.status == JobStatus.DONE, run.error
    assert run.progress_done == 8
    per_item = Dialogue.objects.filter(static_run=run).values("static_item").annotate(n=Count("id"))
    assert len(per_item) == 8 and {row["n"] for row in per_item} == {1}
    assert Dialogue.objects.count() == 8
