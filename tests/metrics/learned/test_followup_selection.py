"""FED-Selected item selection from the platform: rated dialogues in, chosen items out."""

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment, Rating, RatingJob, Rubric
from metrics.models import FollowupSelection, JobStatus
from metrics.scorers import followup
from metrics.services import followup_selection as services
from tests.chat.factories import DialogueFactory, TurnFactory, UserFactory
from tests.metrics.reference_free.conftest import build_tiny_causal_lm

UTTERANCES = ["Hi there!", "Hello, how are you?", "Fine, thanks.", "What do you do?", "I paint."]


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-gpt2-selection"))


def rated_job(n_dialogues=10):
    rubric = Rubric.objects.get(key="likert", version=1)
    first = DialogueFactory(language="en")
    job = RatingJob.objects.create(name="likert-job", campaign=first.campaign, rubric=rubric)
    rater = UserFactory()
    rng = np.random.default_rng(0)
    for index in range(n_dialogues):
        dialogue = first if index == 0 else DialogueFactory(campaign=first.campaign, language="en")
        for position in range(1 + index % 4):
            TurnFactory(
                dialogue=dialogue,
                index=position,
                speaker="user" if position % 2 == 0 else "system",
                text=UTTERANCES[(index + position) % len(UTTERANCES)],
            )
        assignment = Assignment.objects.create(
            job=job, dialogue=dialogue, rater=rater, status=Assignment.Status.SUBMITTED
        )
        for question in ("naturalness", "topic_following", "topic_providing"):
            Rating.objects.create(
                assignment=assignment, question=question, value=float(rng.integers(1, 6))
            )
    return job


@pytest.mark.django_db
def test_selection_reports_items_folds_and_held_out_correlations(lm_dir):
    job = rated_job()
    selection = services.selection_create(
        name="sel",
        job=job,
        dimension="naturalness",
        model_path=str(lm_dir),
        language="en",
        max_items=2,
        enqueue=False,
    )
    assert selection.progress_total == 10
    selection = services.selection_execute(selection.pk)
    assert selection.status == JobStatus.DONE, selection.error
    results = selection.results
    names = {item.name for item in followup.load_followups("en").items}
    assert 1 <= len(results["items"]) <= 2 and set(results["items"]) <= names
    assert len(results["folds"]) == 2 and len(results["per_item"]) == 18
    assert results["spearman"] == pytest.approx(
        np.mean([fold["test_spearman"] for fold in results["folds"]])
    )
    assert results["variant"] == "fed-cond-selected"
    assert selection.progress_done == 10


@pytest.mark.django_db
def test_bad_requests_name_the_field(lm_dir, tmp_path):
    job = rated_job(n_dialogues=4)
    base = {"name": "s", "job": job, "model_path": str(lm_dir), "language": "en", "enqueue": False}
    with pytest.raises(services.SelectionError, match="dimension: 'info' is not"):
        services.selection_create(**{**base, "dimension": "info"})
    with pytest.raises(services.SelectionError, match="language: follow-ups exist"):
        services.selection_create(**{**base, "dimension": "overall", "language": "fr"})
    with pytest.raises(services.SelectionError, match="model_path"):
        missing = str(tmp_path / "none")
        services.selection_create(**{**base, "dimension": "overall", "model_path": missing})
    with pytest.raises(services.SelectionError, match="job: the job has 4 dialogue"):
        services.selection_create(**{**base, "dimension": "overall"})


@pytest.mark.django_db
def test_pages_are_for_researchers(researcher_client, expert_client, lm_dir, sent_jobs):
    job = rated_job()
    for url in (reverse("metrics:followup-list"), reverse("metrics:followup-create")):
        assert expert_client.get(url).status_code == 403
        assert researcher_client.get(url).status_code == 200
    form = {
        "name": "页面",
        "job": job.pk,
        "dimension": "overall",
        "model_path": str(lm_dir),
        "language": "en",
        "variant": "joint",
        "criterion": "spearman",
        "seed": 0,
        "layout": "fed",
        "normalisation": "mean",
    }
    response = researcher_client.post(reverse("metrics:followup-create"), form)
    assert response.status_code == 302
    bad = researcher_client.post(reverse("metrics:followup-create"), {**form, "dimension": "x"})
    assert (
        bad.status_code == 400 and "&#x27;x&#x27; is not a dialogue-level" in bad.content.decode()
    )


@pytest.mark.django_db
def test_a_selection_scores_its_items_with_its_own_layout_normalisation_and_max_length(lm_dir):
    """Issue 22.6: the selection scores items under its scorer inputs, as the scorer does when
    called directly on the same dialogues (and not as under the default inputs)."""
    job = rated_job()
    inputs = {"layout": "eos", "normalisation": "sum", "max_length": 80}
    selection = services.selection_create(
        name="eos",
        job=job,
        dimension="naturalness",
        model_path=str(lm_dir),
        language="en",
        max_items=2,
        enqueue=False,
        **inputs,
    )
    assert (selection.layout, selection.normalisation, selection.max_length) == ("eos", "sum", 80)
    selection = services.selection_execute(selection.pk)
    assert selection.status == JobStatus.DONE, selection.error

    human = services._human(job, "naturalness")
    dialogue_ids = sorted(human)
    dialogues = services._dialogue_texts(dialogue_ids)
    target = np.array([human[pk] for pk in dialogue_ids])

    def direct(**scorer):
        norm = scorer.pop("normalisation", "mean")
        loaded = followup.FollowupScorer.load(lm_dir, **scorer)
        return followup.followup_item_scores(
            dialogues, loaded, "en", conditional=True, normalisation=norm
        )

    expected = direct(layout="eos", max_length=80, normalisation="sum")
    items, correlation = followup.best_item_subset(
        expected.values, target, expected.names, max_items=2
    )
    assert selection.results["items"] == list(items)
    assert selection.results["correlation_all"] == pytest.approx(correlation)
    per_item = [row["correlation"] for row in selection.results["per_item"]]
    wanted = [services._correlation(column, target, "spearman") for column in expected.values.T]
    assert per_item == pytest.approx(wanted)
    default = direct()
    assert not np.allclose(default.values, expected.values)


@pytest.mark.django_db
def test_bad_scorer_inputs_name_the_field(lm_dir):
    job = rated_job()
    base = {
        "name": "s",
        "job": job,
        "dimension": "overall",
        "model_path": str(lm_dir),
        "language": "en",
        "enqueue": False,
    }
    with pytest.raises(services.SelectionError, match="layout: layout must be one of fed, eos"):
        services.selection_create(**base, layout="bos")
    with pytest.raises(services.SelectionError, match="normalisation: normalisation must be"):
        services.selection_create(**base, normalisation="max")
    with pytest.raises(services.SelectionError, match="max_length: max_length must be at least 8"):
        services.selection_create(**base, max_length=4)


@pytest.mark.django_db
def test_the_form_takes_the_scorer_inputs(researcher_client, lm_dir, sent_jobs):
    job = rated_job()
    form = {
        "name": "布局",
        "job": job.pk,
        "dimension": "overall",
        "model_path": str(lm_dir),
        "language": "en",
        "variant": "cond",
        "criterion": "spearman",
        "seed": 0,
        "layout": "eos",
        "normalisation": "sum",
        "max_length": 64,
    }
    response = researcher_client.post(reverse("metrics:followup-create"), form)
    assert response.status_code == 302
    selection = FollowupSelection.objects.get(name="布局")
    assert (selection.layout, selection.normalisation, selection.max_length) == ("eos", "sum", 64)
    page = researcher_client.get(reverse("metrics:followup-detail", args=[selection.pk]))
    assert "layout:eos · norm:sum · max_len:64" in page.content.decode()


@pytest.mark.django_db
def test_the_api_starts_a_selection_with_its_scorer_inputs(
    researcher, lm_dir, sent_jobs, django_capture_on_commit_callbacks
):
    job = rated_job()
    api = APIClient()
    api.force_authenticate(researcher)
    body = {
        "name": "api",
        "job": job.pk,
        "dimension": "naturalness",
        "model_path": str(lm_dir),
        "language": "en",
        "layout": "eos",
        "normalisation": "sum",
        "max_length": 80,
    }
    bad = api.post("/api/followup-selections/", {**body, "layout": "bos"}, format="json")
    assert bad.status_code == 400 and "layout" in bad.json()
    refused = api.post("/api/followup-selections/", {**body, "dimension": "x"}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "dimension"
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/followup-selections/", body, format="json")
    assert created.status_code == 201, created.json()
    data = api.get(f"/api/followup-selections/{created.json()['id']}/").json()
    assert (data["layout"], data["normalisation"], data["max_length"]) == ("eos", "sum", 80)
    assert data["status"] == "pending" and [(s.kind, s.pk) for s in sent_jobs] == [
        ("followup_selection", data["id"])
    ]
    assert [row["id"] for row in api.get("/api/followup-selections/").json()] == [data["id"]]


@pytest.mark.django_db
def test_the_command_selects_under_the_scorer_inputs_it_is_given(lm_dir, capsys):
    job = rated_job()
    call_command(
        "select_followup_items",
        "--name=cli",
        f"--job={job.pk}",
        "--dimension=naturalness",
        f"--model={lm_dir}",
        "--language=en",
        "--max-items=2",
        "--layout=eos",
        "--normalisation=sum",
    )
    selection = FollowupSelection.objects.get(name="cli")
    assert selection.status == JobStatus.DONE
    assert (selection.layout, selection.normalisation) == ("eos", "sum")
    out = capsys.readouterr().out
    assert ", ".join(selection.results["items"]) in out
    assert f'run setting: {{"followup_selection": {selection.pk}}}' in out
    with pytest.raises(CommandError, match="failed: max_length 4096 exceeds the model's limit"):
        call_command(
            "select_followup_items",
            "--name=long",
            f"--job={job.pk}",
            f"--model={lm_dir}",
            "--language=en",
            "--max-length=4096",
        )
    assert FollowupSelection.objects.get(name="long").status == JobStatus.FAILED
    with pytest.raises(CommandError, match="max_length: max_length must be at least 8"):
        call_command(
            "select_followup_items",
            "--name=short",
            f"--job={job.pk}",
            f"--model={lm_dir}",
            "--language=en",
            "--max-length=4",
        )
