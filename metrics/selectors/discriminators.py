"""Queries over trained discriminators."""

from __future__ import annotations

from django.db.models import QuerySet

from metrics.models import JobStatus, TrainedDiscriminator
from metrics.scorers.discriminator import TABLE2_MODELS


def discriminator_list() -> QuerySet[TrainedDiscriminator]:
    return TrainedDiscriminator.objects.select_related("dataset", "created_by")


def usable_discriminators() -> QuerySet[TrainedDiscriminator]:
    """Finished versions, usable as the ``discriminator_model`` setting of a metric run."""
    return discriminator_list().filter(status=JobStatus.DONE).exclude(path="")


def table2_rows(dataset_id: int | None = None) -> list[dict]:
    """Finished versions laid out like seed 003 Table 2 (its model order), test split."""
    order = {name: index for index, name in enumerate(TABLE2_MODELS)}
    versions = usable_discriminators()
    if dataset_id is not None:
        versions = versions.filter(dataset_id=dataset_id)
    rows = [
        {
            "discriminator": version,
            "model": version.results.get("preset", ""),
            **{
                key: version.results["test"][key]
                for key in ("accuracy", "precision", "recall", "f1")
            },
        }
        for version in versions
        if "test" in version.results
    ]
    return sorted(
        rows, key=lambda row: (row["discriminator"].dataset.name, order.get(row["model"], 99))
    )
