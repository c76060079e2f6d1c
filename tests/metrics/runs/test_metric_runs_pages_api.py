"""Pages, API, downloads and the command of metric runs (chunks scored in-process)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from metrics.models import MetricRun
from metrics.scorers.registry import PRESETS
from metrics.services import metric_run_scoring
from metrics.services import metric_runs as services
from tests.downloads import streamed_bytes
from tests.metrics.runs.expected import stored_scores
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db

METRICS = ["f1", "bleu-2", "dist-1"]


def score_now(run: MetricRun) -> MetricRun:
    for chunk_id in run.chunks.values_list("pk", flat=True):
        metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
    metric_run_scoring.metric_run_finish(run_id=run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def scored_run(researcher):
    study = make_study(dialogues_per_cell=2)
    run = services.metric_run_create(
        name="页面", campaign=study.campaign, metrics=METRICS, created_by=researcher
    )
    return score_now(run)


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.force_authenticate(researcher)
    return client


def test_the_create_form_starts_a_run_and_enqueues_it_on_commit(
    researcher_client, django_capture_on_commit_callbacks, sent_jobs
):
    study = make_study(dialogues_per_cell=1)
    page = researcher_client.get(reverse("metrics:metric-run-create"))
    assert page.status_code == 200
    assert "sentence-transformers/all-MiniLM-L6-v2" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            reverse("metrics:metric-run-create"),
            {
                "name": "表单",
                "target": "campaign",
                "campaign": study.campaign.pk,
                "metrics": ["msde16"],
                "setting_lang": "zh",
                "setting_profile": "lic",
                "setting_bleu_smoothing": "exp",
                "setting_meteor_synonyms": "auto",
                "setting_embedding_oov": "mean",
                "setting_rouge_beta": "1.0",
                "setting_batch_size": "64",
            },
        )
    run = MetricRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("metrics:metric-run-detail", args=[run.pk])
    assert len(run.metrics) == 16
    assert run.metric_settings == {"profile": "lic"}
    chunks = run.chunks.values_list("pk", flat=True)
    assert [(job.kind, job.pk, job.queue) for job in sent_jobs] == [
        ("metric_run_chunk", pk, "metrics") for pk in chunks
    ]


def test_the_create_form_names_a_bad_upload_line(researcher_client):
    upload = io.BytesIO(b'{"id": "a", "hypothesis": "hi"}\n{"id": "a", "hypothesis": "ho"}\n')
    upload.name = "answers.jsonl"
    response = researcher_client.post(
        reverse("metrics:metric-run-create"),
        {
            "name": "上传",
            "target": "upload",
            "file": upload,
            "system": "外部",
            "skill": "chitchat",
            "metrics": ["dist-1"],
            "setting_lang": "zh",
            "setting_profile": "default",
            "setting_bleu_smoothing": "exp",
            "setting_meteor_synonyms": "auto",
            "setting_embedding_oov": "mean",
            "setting_rouge_beta": "1",
            "setting_batch_size": "64",
        },
    )
    assert response.status_code == 400
    assert "answers.jsonl line 2, field &#x27;id&#x27;: duplicate id" in response.content.decode()
    assert not MetricRun.objects.exists()


def test_detail_page_polls_while_running_and_shows_the_system_table(researcher_client, scored_run):
    url = reverse("metrics:metric-run-detail", args=[scored_run.pk])
    listing = researcher_client.get(reverse("metrics:metric-run-list")).content.decode()
    assert "页面" in listing and url in listing
    page = researcher_client.get(url).content.decode()
    assert 'hx-trigger="every 1s"' not in page  # done: no more polling
    assert "系统甲" in page and "系统乙" in page and "bleu-2|nrefs:1" in page
    MetricRun.objects.filter(pk=scored_run.pk).update(status="running")
    partial = researcher_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert partial.lstrip().startswith('<div id="run-live" hx-get=')
    assert "<html" not in partial


def test_turn_and_dialogue_pages_escape_model_text(researcher_client, scored_run):
    turn = scored_run.scores.filter(level="turn").first().turn
    turn.text = "<script>alert(1)</script>"
    turn.save()
    page = researcher_client.get(reverse("metrics:metric-run-turns", args=[scored_run.pk]))
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.content.decode()
    assert "<script>alert" not in page.content.decode()
    dialogues = researcher_client.get(
        reverse("metrics:metric-run-dialogues", args=[scored_run.pk]), {"skill": "knowledge"}
    )
    assert dialogues.status_code == 200
    assert dialogues.content.decode().count("<tr>") == 1 + 2 * 2  # header + 2 backends × 2


@pytest.mark.parametrize("level", ["turn", "dialogue", "system"])
def test_downloads_parse_back_to_the_stored_scores(researcher_client, scored_run, level):
    stored = {k: v for k, v in stored_scores(scored_run).items() if k[0] == level}
    base = reverse("metrics:metric-run-download", args=[scored_run.pk, level, "csv"])
    text = streamed_bytes(researcher_client.get(base)).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    jsonl = reverse("metrics:metric-run-download", args=[scored_run.pk, level, "jsonl"])
    lines = [
        json.loads(line)
        for line in streamed_bytes(researcher_client.get(jsonl)).decode().splitlines()
    ]
    assert len(rows) == len(lines) == len(stored)
    for row, line in zip(rows, lines, strict=True):
        assert row["metric"] == line["metric"] and float(row["value"]) == line["value"]
        assert line["signature"] == scored_run.signatures[line["metric"]]
        assert line["level"] == level and line["run"] == "页面"
        if level == "turn":
            key = ("turn", line["metric"], line["turn_id"])
        elif level == "dialogue":
            key = ("dialogue", line["metric"], line["dialogue_id"])
        else:
            key = ("system", line["metric"], line["backend"], line["skill"])
        assert stored[key] == line["value"]


def test_the_api_creates_lists_scores_cancels_and_resumes(api, django_capture_on_commit_callbacks):
    study = make_study(dialogues_per_cell=1)
    bad = api.post(
        "/api/metric-runs/",
        {"name": "x", "metrics": ["f1"], "campaign": study.campaign.pk, "settings": {"x": 1}},
        format="json",
    )
    assert bad.status_code == 400
    assert bad.json()["field"] == "settings" and "unknown setting(s) x" in bad.json()["detail"]
    created = api.post(
        "/api/metric-runs/",
        {"name": "api", "metrics": ["f1", "dist-1"], "campaign": study.campaign.pk},
        format="json",
    )
    assert created.status_code == 201, created.json()
    run = MetricRun.objects.get(pk=created.json()["id"])
    assert run.campaign == study.campaign
    assert created.json()["campaign_id"] == study.campaign.pk
    assert api.get("/api/metric-runs/").json()["count"] == 1
    assert api.post(f"/api/metric-runs/{run.pk}/cancel/").json()["status"] == "cancelled"
    assert api.post(f"/api/metric-runs/{run.pk}/cancel/").status_code == 409
    resumed = api.post(f"/api/metric-runs/{run.pk}/resume/").json()
    assert resumed["status"] == "pending"
    score_now(run)
    detail = api.get(f"/api/metric-runs/{run.pk}/").json()
    assert detail["status"] == "done" and detail["progress_done"] == detail["progress_total"]
    assert detail["metric_status"] == {"f1": "ok", "dist-1": "ok"}
    scores = api.get(
        f"/api/metric-runs/{run.pk}/scores/",
        {"level": "system", "metric": "f1", "backend": "系统甲", "skill": ""},
    ).json()
    assert [(s["backend"], s["skill"]) for s in scores["results"]] == [("系统甲", "")]
    download = api.get(f"/api/metric-runs/{run.pk}/scores-system.jsonl")
    assert download.status_code == 200
    assert api.get(f"/api/metric-runs/{run.pk}/scores/", {"level": "corpus"}).status_code == 400


@pytest.mark.parametrize("who", ["expert_client", "crowdworker_client"])
def test_only_researchers_may_see_runs(request, who, scored_run):
    client = request.getfixturevalue(who)
    for name, args in [
        ("metrics:metric-run-list", []),
        ("metrics:metric-run-create", []),
        ("metrics:metric-run-detail", [scored_run.pk]),
        ("metrics:metric-run-turns", [scored_run.pk]),
        ("metrics:metric-run-download", [scored_run.pk, "turn", "csv"]),
    ]:
        assert client.get(reverse(name, args=args)).status_code == 403
    cancel = reverse("metrics:metric-run-cancel", args=[scored_run.pk])
    assert client.post(cancel).status_code == 403
    assert client.get("/api/metric-runs/").status_code == 403
    assert client.get(f"/api/metric-runs/{scored_run.pk}/scores/").status_code == 403


def test_the_command_creates_a_run_and_names_bad_input(capsys, sent_jobs):
    study = make_study(dialogues_per_cell=1)
    with pytest.raises(CommandError, match="unknown metric\\(s\\) bleu-7"):
        call_command("run_metrics", "--campaign", study.campaign.name, "--metrics", "f1,bleu-7")
    with pytest.raises(CommandError, match="--metric-settings: not valid JSON"):
        call_command(
            "run_metrics",
            "--campaign",
            study.campaign.name,
            "--preset",
            "msde16",
            "--metric-settings",
            "{lang:",
        )
    call_command(
        "run_metrics",
        "--campaign",
        study.campaign.name,
        "--preset",
        "seed002-extra",
        "--metric-settings",
        '{"profile": "lic"}',
    )
    run = MetricRun.objects.get()
    assert run.metrics == list(PRESETS["seed002-extra"])
    assert run.metric_settings == {"profile": "lic"}
    assert f"metric run {run.pk}:" in capsys.readouterr().out


def test_score_csv_download_writes_formula_cells_as_text(researcher_client, scored_run):
    """A dialogue's imported external id that starts a formula is text in the CSV; negative
    scores stay numbers."""
    dialogue = scored_run.scores.filter(level="dialogue").first().dialogue
    dialogue.external_id = "=1+1"
    dialogue.save(update_fields=["external_id"])
    scored_run.scores.filter(dialogue=dialogue, level="dialogue").update(value=-0.5)
    url = reverse("metrics:metric-run-download", args=[scored_run.pk, "dialogue", "csv"])
    response = researcher_client.get(url)
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(streamed_bytes(response).decode())))
    mine = [r for r in rows if r["dialogue_id"] == str(dialogue.pk)]
    assert mine and {r["dialogue_external_id"] for r in mine} == {"'=1+1"}
    assert {r["value"] for r in mine} == {"-0.5"}
    assert scored_run.scores.filter(dialogue=dialogue, level="dialogue", value=-0.5).exists()


def test_the_api_takes_the_campaign_by_id_or_by_name_under_campaign_name(api):
    study = make_study(dialogues_per_cell=1)
    by_name = api.post(
        "/api/metric-runs/",
        {"name": "按名", "metrics": ["f1"], "campaign_name": study.campaign.name},
        format="json",
    )
    assert by_name.status_code == 201, by_name.json()
    assert MetricRun.objects.get(pk=by_name.json()["id"]).campaign == study.campaign
    # A name where the id belongs is refused with a message that points to campaign_name.
    named_id = api.post(
        "/api/metric-runs/",
        {"name": "错位", "metrics": ["f1"], "campaign": study.campaign.name},
        format="json",
    )
    assert named_id.status_code == 400
    assert "campaign_name" in named_id.json()["campaign"][0]
    unknown = api.post(
        "/api/metric-runs/", {"name": "无", "metrics": ["f1"], "campaign": 987654}, format="json"
    )
    assert unknown.status_code == 400 and "campaign" in unknown.json()
    assert not MetricRun.objects.filter(name__in=["错位", "无"]).exists()


def test_the_schema_documents_the_campaign_as_an_id(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    fields = schema["components"]["schemas"]["MetricRunInput"]["properties"]
    assert fields["campaign"]["type"] == "integer"
    assert fields["campaign_name"]["type"] == "string"
