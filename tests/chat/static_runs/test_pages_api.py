"""Static-run pages and API: create, progress, answers (escaped), failures, cancel, retry, roles."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from chat.models import Dialogue, StaticRun, StaticRunItem, Turn
from chat.services import static_runs as services
from tests.chat.static_runs.helpers import make_dataset, retrieval_backend

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(sent_jobs) -> list:
    """The jobs sent to a worker, as they are sent (`tests.conftest.SentJob`)."""
    return sent_jobs


@pytest.fixture
def run_with_answers():
    """A run of one backend over 3 samples: one answered (with markup), one failed, one pending."""
    dataset = make_dataset(n=3)
    backend = retrieval_backend("检索-A", dataset)
    run = services.static_run_create(name="展示", dataset=dataset, backends=[backend])
    first, second, _ = run.items.order_by("sample__index")
    dialogue = Dialogue.objects.create(
        campaign=run.campaign,
        backend=backend,
        scenario=first.sample,
        skill=first.sample.skill,
        language="zh",
        status="accepted",
        static_run=run,
    )
    Turn.objects.create(dialogue=dialogue, index=0, speaker="user", text=first.sample.context[0])
    Turn.objects.create(
        dialogue=dialogue,
        index=1,
        speaker="system",
        text="<img src=x onerror=alert(1)>回答",
        references=first.sample.references,
    )
    StaticRunItem.objects.filter(pk=first.pk).update(status="done", dialogue=dialogue, attempts=1)
    StaticRunItem.objects.filter(pk=second.pk).update(
        status="failed", error="timeout: no answer within 10 s", attempts=1
    )
    StaticRun.objects.filter(pk=run.pk).update(status="failed", progress_done=2)
    run.refresh_from_db()
    return run


def test_the_create_form_starts_the_run_after_commit(
    researcher_client, django_capture_on_commit_callbacks, queued
):
    dataset = make_dataset()
    backend = retrieval_backend("检索-A", dataset)
    assert researcher_client.get(reverse("chat:static-run-create")).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            reverse("chat:static-run-create"),
            {"name": "r", "dataset": dataset.pk, "backends": [backend.pk], "seed": "0"},
        )
    run = StaticRun.objects.get()
    assert response.status_code == 302 and [(job.kind, job.pk) for job in queued] == [
        ("static_run", run.pk)
    ]
    assert run.items.count() == 10


def test_the_create_form_shows_what_is_wrong_and_saves_nothing(researcher_client, queued):
    dataset = make_dataset()
    backend = retrieval_backend("检索-A", dataset)
    response = researcher_client.post(
        reverse("chat:static-run-create"),
        {
            "name": "r",
            "dataset": dataset.pk,
            "backends": [backend.pk],
            "sample_size": "50",
            "seed": "0",
        },
    )
    assert response.status_code == 400
    assert "数据集只有 10 个样本" in response.content.decode()
    assert not StaticRun.objects.exists() and queued == []


def test_the_detail_page_shows_progress_answers_escaped_and_failures(
    researcher_client, run_with_answers
):
    response = researcher_client.get(reverse("chat:static-run-detail", args=[run_with_answers.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "&lt;img src=x onerror=alert(1)&gt;回答" in body and "<img src=x" not in body
    assert "timeout: no answer within 10 s" in body  # the failures table
    assert 'id="retry-run"' in body and 'id="cancel-run"' not in body
    assert "已完成 1 / 3（67%），失败 1，待生成 1" in body
    assert "every 1s" not in body  # a finished run is not polled


def test_a_running_run_is_polled_and_offers_cancel(researcher_client, queued):
    dataset = make_dataset(n=2)
    run = services.static_run_create(
        name="r", dataset=dataset, backends=[retrieval_backend("检索-A", dataset)]
    )
    StaticRun.objects.filter(pk=run.pk).update(status="running")
    url = reverse("chat:static-run-detail", args=[run.pk])
    body = researcher_client.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in body and 'id="cancel-run"' in body
    partial = researcher_client.get(url + "?part=progress", headers={"HX-Request": "true"})
    assert "<html" not in partial.content.decode() and "HX-Refresh" not in partial
    assert (
        researcher_client.post(reverse("chat:static-run-cancel", args=[run.pk])).status_code == 302
    )
    assert StaticRun.objects.get(pk=run.pk).cancel_requested


def test_retry_from_the_page_requeues_the_failed_items(
    researcher_client, run_with_answers, queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            reverse("chat:static-run-retry", args=[run_with_answers.pk])
        )
    assert response.status_code == 302 and [(job.kind, job.pk) for job in queued] == [
        ("static_run", run_with_answers.pk)
    ]
    run_with_answers.refresh_from_db()
    assert run_with_answers.status == "pending"
    assert run_with_answers.items.filter(status="pending").count() == 2


def test_the_api_creates_lists_retrieves_cancels_and_retries(
    researcher, queued, django_capture_on_commit_callbacks
):
    api = APIClient()
    api.force_authenticate(researcher)
    dataset = make_dataset()
    retrieval_backend("检索-A", dataset)
    retrieval_backend("检索-B", dataset, method="bm25")
    bad = api.post(
        reverse("api-static-run-list"),
        {"name": "r", "dataset": dataset.name, "backends": ["检索-A"], "sample_size": 99},
        format="json",
    )
    assert bad.status_code == 400 and "sample_size" in bad.json()["errors"]
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post(
            reverse("api-static-run-list"),
            {
                "name": "r",
                "dataset": dataset.name,
                "backends": ["检索-A", "检索-B"],
                "sample_size": 4,
                "seed": 1,
            },
            format="json",
        )
    assert created.status_code == 201, created.json()
    data = created.json()
    assert data["backends"] == ["检索-A", "检索-B"] and data["status"] == "pending"
    assert data["progress"] == {"total": 8, "done": 0, "failed": 0, "pending": 8, "percent": 0}
    assert [(job.kind, job.pk) for job in queued] == [("static_run", data["id"])]
    listed = api.get(reverse("api-static-run-list")).json()
    assert [r["id"] for r in listed["results"]] == [data["id"]]
    detail = api.get(reverse("api-static-run-detail", args=[data["id"]])).json()
    assert detail["progress"]["total"] == 8
    busy = api.post(reverse("api-static-run-retry", args=[data["id"]]))
    assert busy.status_code == 400
    cancelled = api.post(reverse("api-static-run-cancel", args=[data["id"]]))
    assert cancelled.json()["status"] == "cancelled"
    with django_capture_on_commit_callbacks(execute=True):
        retried = api.post(reverse("api-static-run-retry", args=[data["id"]]))
    assert retried.status_code == 200
    assert retried.json()["queued"] == 8 and retried.json()["run"]["status"] == "pending"


def test_only_researchers_reach_static_runs(
    crowdworker_client, expert_client, crowdworker, run_with_answers
):
    urls = [
        reverse("chat:static-run-list"),
        reverse("chat:static-run-create"),
        reverse("chat:static-run-detail", args=[run_with_answers.pk]),
        reverse("chat:static-run-export", args=[run_with_answers.pk]),
    ]
    for who in (crowdworker_client, expert_client):
        for url in urls:
            assert who.get(url).status_code == 403, url
        retry = reverse("chat:static-run-retry", args=[run_with_answers.pk])
        assert who.post(retry).status_code == 403
    api = APIClient()
    api.force_authenticate(crowdworker)
    assert api.get(reverse("api-static-run-list")).status_code == 403
    cancel = reverse("api-static-run-cancel", args=[run_with_answers.pk])
    assert api.post(cancel).status_code == 403
    run_with_answers.refresh_from_db()
    assert run_with_answers.status == "failed" and not run_with_answers.cancel_requested


def test_the_list_page_shows_the_runs(researcher_client, run_with_answers):
    body = researcher_client.get(reverse("chat:static-run-list")).content.decode()
    assert "展示" in body and "2 / 3" in body


def test_the_answers_table_pages_through_the_contexts(researcher_client, queued):
    dataset = make_dataset(n=25)
    run = services.static_run_create(
        name="r", dataset=dataset, backends=[retrieval_backend("检索-A", dataset)]
    )
    url = reverse("chat:static-run-detail", args=[run.pk])
    first = researcher_client.get(url).content.decode()
    assert "#s0<" in first and "#s9<" in first and "#s10<" not in first and "1 / 3" in first
    third = researcher_client.get(url + "?part=answers&page=3", headers={"HX-Request": "true"})
    body = third.content.decode()
    assert "<html" not in body and "#s20<" in body and "#s24<" in body and "#s19<" not in body
