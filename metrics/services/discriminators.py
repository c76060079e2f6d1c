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

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from chat.models import Dataset
from core.errors import ServiceError
from core.jobs import (
    Heartbeat,
    JobCancelled,
    job_cancel,
    job_claim,
    job_finish,
    job_progress,
    job_retry,
    job_send_on_commit,
    new_lease_owner,
)
from metrics.models import JobStatus, TrainedDiscriminator
from metrics.scorers.discriminator import TABLE2_MODELS, DiscriminatorConfig
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


class DiscriminatorError(ServiceError):
    """A training request that cannot run; the message names the field."""

    location_style = "prefix"

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message, field=field or None)


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
    created_by: User | None = None,
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
            # Seed 003 trains on a GPU: the gpu queue where the deployment has one.
            job_send_on_commit("trained_discriminator", discriminator.pk)
    return discriminator


def discriminator_train(discriminator_id: int) -> TrainedDiscriminator:
    """Run the training job (idempotent: a finished version is left as it is, one a live
    worker holds too; one whose worker died trains again from the start). A cancel stops it
    after the current epoch."""
    discriminator = TrainedDiscriminator.objects.select_related("dataset").get(pk=discriminator_id)
    owner = new_lease_owner()
    if not job_claim(TrainedDiscriminator, discriminator.pk, owner=owner):
        discriminator.refresh_from_db()
        return discriminator
    TrainedDiscriminator.objects.filter(pk=discriminator.pk).update(progress_done=0, error="")
    with Heartbeat(TrainedDiscriminator, discriminator.pk, owner=owner) as beat:
        _train(discriminator, owner, beat)
    discriminator.refresh_from_db()
    return discriminator


def _train(discriminator: TrainedDiscriminator, owner: str, beat: Heartbeat) -> None:
    from metrics.scorers.discriminator import train_discriminator  # torch: on the worker only

    stored = dict(discriminator.config)
    preset, vectors, seed = stored.pop("preset"), stored.pop("vectors"), stored.pop("seed")
    config = DiscriminatorConfig(**stored)

    def on_epoch(_: dict[str, float]) -> None:
        job_progress(TrainedDiscriminator, discriminator.pk, add=1)
        beat.check()  # the cancel checkpoint

    try:
        queries, responses = _pairs(discriminator.dataset)
        result = train_discriminator(
            queries, responses, config, vectors=vectors or None, seed=seed, on_epoch=on_epoch
        )
        directory = storage_dir(discriminator)
        if directory.exists():
            shutil.rmtree(directory)
        result.model.save(directory)
    except JobCancelled:
        job_finish(TrainedDiscriminator, discriminator.pk, status=JobStatus.CANCELLED, owner=owner)
        return
    except Exception as exc:  # the job records any failure for the researcher
        job_finish(
            TrainedDiscriminator,
            discriminator.pk,
            status=JobStatus.FAILED,
            owner=owner,
            error=f"{type(exc).__name__}: {exc}",
        )
        raise
    job_finish(
        TrainedDiscriminator,
        discriminator.pk,
        status=JobStatus.DONE,
        owner=owner,
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
    )


def discriminator_cancel(discriminator: TrainedDiscriminator) -> bool:
    """Stop a pending or running training (a running one after its current epoch)."""
    return job_cancel(job=discriminator)


def discriminator_retry(discriminator: TrainedDiscriminator) -> TrainedDiscriminator:
    """Train again a version that is not done and that no worker holds (failed, cancelled, or
    its worker died)."""
    job_retry(
        job=discriminator,
        refused=DiscriminatorError,
        done="this version is trained already",
        kind="trained_discriminator",
    )
    return discriminator
