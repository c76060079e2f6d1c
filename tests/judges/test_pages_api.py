"""Judge pages and API: create, preview on a real dialogue, estimate, run, browse answers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judges import services
from judges.models import Judge, JudgeRun
from metrics.models import MetricRun
from tests.annotation.factories import rubric
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import answer_for, judge_backend
from tests.judges.test_judge_runs import run_all
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with FakeOpenAI(reply_fn=answer_for) as fake:
        yield fake


def test_a_researcher_creates_a_judge_previews_estimates_and_runs_it(researcher_client, server):
    backend = judge_backend(server)
    study = make_study(dialogues_per_cell=1)
    response = researcher_client.post(
        reverse("judges:judge-create"),
        {
            "name": "MSDE 裁判",
            "backend": backend.pk,
            "rubric": rubric("msde").pk,
            "mode": "direct",
            "n": 1,
            "aggregate": "mean",
            "structured": "auto",
            "max_attempts": 2,
            "price_input": 1.0,
            "price_output": 2.0,
        },
    )
    judge = Judge.objects.get(name="MSDE 裁判")
    assert response.status_code == 302
    page = researcher_client.get(reverse("judges:judge-detail", args=[judge.pk]))
    assert page.status_code == 200 and "MSDE 裁判" in page.text
    dialogue = study.dialogues[0]
    preview = researcher_client.get(
        reverse("judges:judge-preview", args=[judge.pk]),
        {"dialogue": dialogue.pk},
        HTTP_HX_REQUEST="true",
    )
    assert preview.status_code == 200
    assert "丰富度" in preview.text and dialogue.turns.last().text in preview.text
    estimate = researcher_client.post(
        reverse("judges:judge-estimate", args=[judge.pk]), {"campaign": study.campaign.pk}
    )
    assert "需发送的请求" in estimate.text
    started = researcher_client.post(
        reverse("judges:judge-run-start", args=[judge.pk]), {"campaign": study.campaign.pk}
    )
    run = MetricRun.objects.get(judge_run__judge=judge)
    assert started.status_code == 302 and started.url == reverse(
        "judges:judge-run-detail", args=[run.pk]
    )
    assert JudgeRun.objects.get(pk=run.pk).estimate["requests"] == len(study.dialogues)
    run_all(run)
    detail = researcher_client.get(
        reverse("judges:judge-run-detail", args=[run.pk]), {"dialogue": dialogue.pk}
    )
    assert detail.status_code == 200
    assert "理由：回复相关且信息丰富。" in detail.text and 'id="dialogue-view"' in detail.text


def test_a_bad_template_is_refused_on_its_field(researcher_client, server):
    response = researcher_client.post(
        reverse("judges:judge-create"),
        {
            "name": "坏模板",
            "backend": judge_backend(server).pk,
            "rubric": rubric("msde").pk,
            "mode": "direct",
            "n": 1,
            "aggregate": "mean",
            "structured": "auto",
            "max_attempts": 1,
            "price_input": 0,
            "price_output": 0,
            "template_zh": "$dialog $questions",
        },
    )
    assert response.status_code == 400
    assert "unknown placeholder $dialog" in response.text
    assert not Judge.objects.exists()


def test_experts_cannot_see_judges(expert_client):
    assert expert_client.get(reverse("judges:judge-list")).status_code == 403


def test_the_api_creates_versions_previews_runs_and_lists_answers(researcher_client, server):
    backend = judge_backend(server)
    study = make_study(dialogues_per_cell=1, skills=("chitchat",))
    created = researcher_client.post(
        "/api/judges/",
        {
            "name": "API 裁判",
            "backend": backend.name,
            "rubric": rubric("msde").pk,
            "sampling": {"temperature": 0},
        },
        content_type="application/json",
    )
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    bad = researcher_client.post(
        "/api/judges/",
        {
            "name": "坏",
            "backend": backend.name,
            "rubric": rubric("msde").pk,
            "sampling": {"temprature": 0},
        },
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json()["field"] == "sampling"
    version = researcher_client.post(
        f"/api/judges/{pk}/versions/", {"max_attempts": 1}, content_type="application/json"
    )
    assert version.status_code == 201 and version.json()["version"] == 2
    v2 = version.json()["id"]
    preview = researcher_client.post(
        f"/api/judges/{v2}/preview/",
        {"dialogue": study.dialogues[0].pk},
        content_type="application/json",
    )
    assert preview.json()["prompts"][0]["questions"] == ["info", "coh"]
    estimate = researcher_client.post(
        f"/api/judges/{v2}/estimate/",
        {"campaign": study.campaign.name},
        content_type="application/json",
    )
    assert estimate.json()["requests"] == len(study.dialogues)
    started = researcher_client.post(
        f"/api/judges/{v2}/runs/",
        {"campaign": study.campaign.name},
        content_type="application/json",
    )
    assert started.status_code == 201
    run = MetricRun.objects.get(pk=started.json()["run"])
    run_all(run)
    answers = researcher_client.get(f"/api/judge-runs/{run.pk}/answers/").json()
    assert answers["count"] == len(study.dialogues)
    assert answers["results"][0]["values"] == {"info": 2.0, "coh": 2.0}
    detail = researcher_client.get(f"/api/judge-runs/{run.pk}/").json()
    assert detail["status"] == "done" and detail["answers"] == {"ok": len(study.dialogues)}
    scores = researcher_client.get(f"/api/metric-runs/{run.pk}/scores/").json()
    assert scores["count"] > 0
    assert Judge.objects.get(pk=v2).key == Judge.objects.get(pk=pk).key
    assert services.judge_config(Judge.objects.get(pk=v2)).max_attempts == 1


def test_the_answer_list_follows_a_run_live_and_stops_polling_when_it_ends(
    researcher_client, server
):
    backend = judge_backend(server)
    study = make_study(dialogues_per_cell=1)
    judge = services.judge_create(name="实时裁判", backend=backend, rubric=rubric("msde"))
    started = researcher_client.post(
        reverse("judges:judge-run-start", args=[judge.pk]), {"campaign": study.campaign.pk}
    )
    assert started.status_code == 302
    run = MetricRun.objects.get(judge_run__judge=judge)
    url = reverse("judges:judge-run-detail", args=[run.pk])
    page = researcher_client.get(url, {"status": ""}).text
    assert 'id="answers"' in page and "还没有回答。" in page
    assert f'hx-get="{url}?status=&amp;part=answers"' in page  # polls with the page's filters

    run_all(run)
    assert JudgeRun.objects.get(pk=run.pk).metric_run.status == "done"
    answers = researcher_client.get(url, {"status": "", "part": "answers"}, HTTP_HX_REQUEST="true")
    assert answers.status_code == 200
    assert answers.text.lstrip().startswith('<div class="answers" id="answers"')
    assert "还没有回答。" not in answers.text and "理由：回复相关且信息丰富。" in answers.text
    assert "hx-get" not in answers.text  # the run ended: the list stops polling
