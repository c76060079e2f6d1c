"""Training learned discriminators from the platform: service, Celery job, command, pages, API."""

import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from django.urls import reverse

from metrics.models import JobStatus, TrainedDiscriminator
from metrics.scorers.registry import score
from metrics.services import discriminators as services
from tests.chat.factories import DatasetFactory, SampleFactory
from tests.metrics.reference_free.test_response_discriminator import SMALL, topical_corpus

TINY = {**SMALL, "max_epochs": 4, "embedding_dim": 8, "hidden_size": 8, "mlp_hidden": 16}


def toy_dataset(pairs=400, language="en"):
    dataset = DatasetFactory(language=language)
    contexts, responses = topical_corpus(pairs)
    for index, (context, response) in enumerate(zip(contexts, responses, strict=True)):
        SampleFactory(
            dataset=dataset,
            index=index,
            external_id=f"p{index}",
            context=["hello", context],
            references=[response],
        )
    return dataset


@pytest.fixture
def var_dir(tmp_path):
    with override_settings(VAR_DIR=tmp_path):
        yield tmp_path


@pytest.mark.django_db
def test_requests_are_validated_with_the_field_named(var_dir):
    dataset = toy_dataset(pairs=45)
    with pytest.raises(services.DiscriminatorError, match="preset: unknown model 'CNN'"):
        services.discriminator_create(name="x", dataset=dataset, preset="CNN")
    with pytest.raises(services.DiscriminatorError, match="config: unknown setting"):
        services.discriminator_create(name="x", dataset=dataset, overrides={"layers": 3})
    with pytest.raises(services.DiscriminatorError, match="vectors: no vectors file"):
        services.discriminator_create(name="x", dataset=dataset, vectors="/nope.vec")
    small = toy_dataset(pairs=10)
    with pytest.raises(services.DiscriminatorError, match="dataset: the dataset has 10 usable"):
        services.discriminator_create(name="x", dataset=small)
    services.discriminator_create(name="x", dataset=dataset, overrides=TINY, enqueue=False)
    with pytest.raises(services.DiscriminatorError, match="name: a discriminator named 'x'"):
        services.discriminator_create(name="x", dataset=dataset)


@pytest.mark.django_db
def test_training_saves_a_version_usable_as_a_metric(var_dir):
    dataset = toy_dataset()
    version = services.discriminator_create(
        name="toy", dataset=dataset, preset="GRU-uni-MLP", overrides=TINY, enqueue=False
    )
    assert version.config["language"] == "en" and version.progress_total == 4
    version = services.discriminator_train(version.pk)
    assert version.status == JobStatus.DONE
    assert version.path.startswith(str(var_dir))
    assert set(version.results["test"]) >= {"accuracy", "precision", "recall", "f1"}
    assert version.results["sizes"]["test"] == 40  # 5% of 400 pairs, with 1:1 negatives
    assert 1 <= version.progress_done <= 4
    results = score(
        ["discriminator"],
        ["t3w2 t3w1 t3w0"],
        contexts=[["t3w0 t3w1 t3w2 t3w0"]],
        settings={"discriminator_model": version.path},
    )
    assert results["discriminator"].available
    assert 0.0 <= results["discriminator"].per_response[0] <= 1.0


@pytest.mark.django_db
def test_a_failure_is_recorded_and_can_be_retried(
    var_dir, monkeypatch, sent_jobs, django_capture_on_commit_callbacks
):
    dataset = toy_dataset(pairs=60)
    version = services.discriminator_create(
        name="f", dataset=dataset, overrides=TINY, enqueue=False
    )

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr("metrics.scorers.discriminator.model.train_discriminator", broken)
    with pytest.raises(RuntimeError):
        services.discriminator_train(version.pk)
    version.refresh_from_db()
    assert version.status == JobStatus.FAILED and "out of memory" in version.error
    with django_capture_on_commit_callbacks(execute=True):
        services.discriminator_retry(version)
    assert version.__class__.objects.get(pk=version.pk).status == JobStatus.PENDING
    assert [(job.kind, job.pk) for job in sent_jobs] == [("trained_discriminator", version.pk)]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_training_job_runs_on_a_real_worker(celery_worker_process, tmp_path):
    dataset = toy_dataset(pairs=200)
    with override_settings(VAR_DIR=tmp_path):
        version = services.discriminator_create(name="queued", dataset=dataset, overrides=TINY)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        version.refresh_from_db()
        if version.status in (JobStatus.DONE, JobStatus.FAILED):
            break
        time.sleep(0.5)
    assert version.status == JobStatus.DONE, version.error
    assert version.results["test"]["examples"] == 20


@pytest.mark.django_db
def test_command_trains_and_prints_the_table2_row(var_dir, capsys):
    dataset = toy_dataset(pairs=120)
    call_command(
        "train_discriminator",
        "--name=cmd",
        f"--dataset={dataset.name}",
        "--preset=AB-LSTM-bi-SLP",
        '--config={"max_epochs": 2, "embedding_dim": 8, "hidden_size": 8, "mlp_hidden": 8}',
    )
    out = capsys.readouterr().out
    assert "AB-LSTM-bi-SLP" in out and "accuracy" in out
    assert TrainedDiscriminator.objects.get(name="cmd").status == JobStatus.DONE
    with pytest.raises(CommandError, match="no dataset named"):
        call_command("train_discriminator", "--name=x", "--dataset=missing")


@pytest.mark.django_db
def test_pages_and_api_are_for_researchers(
    researcher_client, expert_client, var_dir, sent_jobs, django_capture_on_commit_callbacks
):
    sent = sent_jobs
    dataset = toy_dataset(pairs=60)
    for url in (reverse("metrics:discriminator-list"), reverse("metrics:discriminator-create")):
        assert expert_client.get(url).status_code == 403
        assert researcher_client.get(url).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            reverse("metrics:discriminator-create"),
            {
                "name": "页面训练",
                "dataset": dataset.pk,
                "preset": "AB-LSTM-bi-MLP",
                "all_presets": "on",
                "max_epochs": 2,
                "patience": 1,
                "embedding_dim": 8,
                "hidden_size": 8,
                "learning_rate": 0.01,
                "batch_size": 16,
                "dropout": 0.0,
                "l2": 0.0,
                "seed": 1,
            },
        )
    assert response.status_code == 302
    assert len(sent) == 7  # every seed 003 Table 2 model
    version = TrainedDiscriminator.objects.get(name="页面训练-GRU-uni-MLP")
    page = researcher_client.get(reverse("metrics:discriminator-detail", args=[version.pk]))
    assert "progressbar" in page.content.decode()
    bad = researcher_client.post(
        reverse("metrics:discriminator-create"),
        {
            "name": "x",
            "dataset": toy_dataset(pairs=5).pk,
            "preset": "AB-LSTM-bi-MLP",
            "max_epochs": 2,
            "patience": 1,
            "embedding_dim": 8,
            "hidden_size": 8,
            "learning_rate": 0.01,
            "batch_size": 16,
            "dropout": 0.0,
            "l2": 0.0,
            "seed": 1,
        },
    )
    assert bad.status_code == 400 and "training needs at least 40" in bad.content.decode()

    api = reverse("api-discriminator-list")
    assert expert_client.get(api).status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        created = researcher_client.post(
            api,
            {"name": "api", "dataset": dataset.name, "config": {"max_epochs": 1}},
            content_type="application/json",
        )
    assert created.status_code == 201, created.content
    assert created.json()["status"] == "pending"
    refused = researcher_client.post(
        api,
        {"name": "api2", "dataset": dataset.name, "preset": "CNN"},
        content_type="application/json",
    )
    assert refused.status_code == 400
    detail = researcher_client.get(reverse("api-discriminator-detail", args=[created.json()["id"]]))
    assert detail.json()["name"] == "api"
    assert len(sent) == 8


@pytest.mark.django_db
def test_the_metric_run_form_offers_trained_versions(researcher_client, tmp_path):
    dataset = toy_dataset(pairs=45)
    TrainedDiscriminator.objects.create(
        name="已训练",
        dataset=dataset,
        status=JobStatus.DONE,
        path=str(tmp_path / "v1"),
        config={"preset": "GRU-uni-MLP"},
    )
    TrainedDiscriminator.objects.create(name="训练中", dataset=dataset, status=JobStatus.RUNNING)
    page = researcher_client.get(reverse("metrics:metric-run-create")).content.decode()
    assert "已训练 · GRU-uni-MLP" in page and str(tmp_path / "v1") in page
    assert "训练中" not in page
