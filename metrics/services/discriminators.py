"""Training learned response discriminators (seed 003) on a dataset, and using saved versions.

A version is trained on the dataset's (last context turn, first reference) pairs with 1:1 random
negatives, split 5% test and 90:10 train:validation (the kernel :func:`train_discriminator`), and
saved under ``VAR_DIR/discriminators/<id>/``; its directory is the ``discriminator_model`` setting
of the ``discriminator`` and ``ruber`` metrics.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from chat.models import Dataset
from metrics.models import JobStatus, TrainedDiscriminator
from metrics.scorers.discriminator import TABLE2_MODELS, DiscriminatorConfig, train_discriminator
from metrics.scorers.learned import training_pairs

# Settings a researcher may change besides the architecture preset (seed 003 §3.2 defaults).
TUNABLE = (
    "embedding_dim",
    "hidden_size",
    "mlp_hidden",
    "dropout",
    "l2",
    "learning_rate",
    "batch_size",
    "max_epochs",
    "patience",
    "max_tokens",
    "max_vocab",
)
MIN_PAIRS = 40


class DiscriminatorError(ValueError):
    """A training request that cannot run; the message names the field."""

    def __init__(self, message: str, *, field: str = "") -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


def storage_dir(discriminator: TrainedDiscriminator) -> Path:
    return Path(settings.VAR_DIR) / "discriminators" / str(discriminator.pk)


def _config(preset: str, language: str, overrides: dict[str, Any]) -> DiscriminatorConfig:
    if preset not in TABLE2_MODELS:
        raise DiscriminatorError(
            f"unknown model {preset!r}; choose from {', '.join(TABLE2_MODELS)}", field="preset"
        )
    unknown = sorted(set(overrides) - set(TUNABLE))
    if unknown:
        raise DiscriminatorError(f"unknown setting(s) {', '.join(unknown)}", field="config")
    try:
        return DiscriminatorConfig.preset(preset, language=language, **overrides)
    except (TypeError, ValueError) as exc:
        raise DiscriminatorError(str(exc), field="config") from exc


def _pairs(dataset: Dataset) -> tuple[list[str], list[str]]:
    samples = dataset.samples.order_by("index").values_list("context", "references")
    return training_pairs(list(samples))


def discriminator_create(
    *,
    name: str,
    dataset: Dataset,
    preset: str = "AB-LSTM-bi-MLP",
    overrides: dict[str, Any] | None = None,
    vectors: str = "",
    seed: int = 0,
    created_by: AbstractBaseUser | None = None,
    enqueue: bool = True,
) -> TrainedDiscriminator:
    """Validate a training request, save it and (unless ``enqueue`` is off: the command trains
    in its own process) enqueue the training job."""
    name = name.strip()
    if not name:
        raise DiscriminatorError("a name is required", field="name")
    if TrainedDiscriminator.objects.filter(name=name).exists():
        raise DiscriminatorError(f"a discriminator named {name!r} exists", field="name")
    config = _config(preset, dataset.language, overrides or {})
    if vectors and not Path(vectors).is_file():
        raise DiscriminatorError(f"no vectors file at {vectors!r}", field="vectors")
    queries, _ = _pairs(dataset)
    if len(queries) < MIN_PAIRS:
        raise DiscriminatorError(
            f"the dataset has {len(queries)} usable (context, reference) pairs; "
            f"training needs at least {MIN_PAIRS}",
            field="dataset",
        )
    with transaction.atomic():
        discriminator = TrainedDiscriminator.objects.create(
            name=name,
            dataset=dataset,
            config={"preset": preset, **asdict(config), "vectors": vectors, "seed": seed},
            progress_total=config.max_epochs,
            created_by=created_by,
        )
        if enqueue:
            transaction.on_commit(lambda: enqueue_training(discriminator))
    return discriminator


def enqueue_training(discriminator: TrainedDiscriminator) -> None:
    from metrics.tasks.training import train_discriminator_task

    # Model training goes to the gpu queue where this process sees a GPU (seed 003 trains on one).
    queue = "gpu" if torch.cuda.is_available() else "metrics"
    train_discriminator_task.apply_async(args=[discriminator.pk], queue=queue)


def discriminator_train(discriminator_id: int) -> TrainedDiscriminator:
    """Run the training job (idempotent: a finished version is left as it is)."""
    discriminator = TrainedDiscriminator.objects.select_related("dataset").get(pk=discriminator_id)
    if discriminator.status in (JobStatus.DONE, JobStatus.CANCELLED):
        return discriminator
    TrainedDiscriminator.objects.filter(pk=discriminator.pk).update(
        status=JobStatus.RUNNING, started_at=timezone.now(), progress_done=0, error=""
    )
    stored = dict(discriminator.config)
    preset, vectors, seed = stored.pop("preset"), stored.pop("vectors"), stored.pop("seed")
    config = DiscriminatorConfig(**stored)

    def on_epoch(_: dict[str, float]) -> None:
        TrainedDiscriminator.objects.filter(pk=discriminator.pk).update(
            progress_done=F("progress_done") + 1
        )

    try:
        queries, responses = _pairs(discriminator.dataset)
        result = train_discriminator(
            queries, responses, config, vectors=vectors or None, seed=seed, on_epoch=on_epoch
        )
        directory = storage_dir(discriminator)
        if directory.exists():
            shutil.rmtree(directory)
        result.model.save(directory)
    except Exception as exc:  # the job records any failure for the researcher
        TrainedDiscriminator.objects.filter(pk=discriminator.pk).update(
            status=JobStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        raise
    TrainedDiscriminator.objects.filter(pk=discriminator.pk).update(
        status=JobStatus.DONE,
        path=str(directory),
        progress_done=config.max_epochs,
        results={
            "preset": preset,
            "test": asdict(result.test),
            "validation": asdict(result.validation),
            "best_epoch": result.best_epoch,
            "epochs": len(result.history),
            "history": result.history,
            "sizes": result.sizes,
        },
        finished_at=timezone.now(),
    )
    discriminator.refresh_from_db()
    return discriminator


def discriminator_retry(discriminator: TrainedDiscriminator) -> TrainedDiscriminator:
    """Train a failed version again."""
    if discriminator.status != JobStatus.FAILED:
        raise DiscriminatorError("only a failed training can be retried", field="status")
    TrainedDiscriminator.objects.filter(pk=discriminator.pk).update(
        status=JobStatus.PENDING, progress_done=0, error=""
    )
    transaction.on_commit(lambda: enqueue_training(discriminator))
    discriminator.refresh_from_db()
    return discriminator
