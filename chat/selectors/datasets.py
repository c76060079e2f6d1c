"""Queries of the chat app (the reads); views, the API and commands call these."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from chat.models import Dataset, Sample
from core.access import Role, has_role

# --- Datasets ---


def dataset_list(
    *,
    user: AbstractBaseUser | AnonymousUser,
    skill: str | None = None,
    language: str | None = None,
) -> QuerySet[Dataset]:
    """Datasets a user may manage: researchers (and admins) see all of them, others none.

    `skill` filters by skill key; a mixed-skill dataset (skill None) matches no skill filter.
    """
    if not has_role(user, Role.RESEARCHER):
        return Dataset.objects.none()
    datasets = Dataset.objects.select_related("skill", "created_by")
    if skill is not None:
        datasets = datasets.filter(skill__key=skill)
    if language is not None:
        datasets = datasets.filter(language=language)
    return datasets


def dataset_get(*, name: str) -> Dataset | None:
    return Dataset.objects.select_related("skill").filter(name=name).first()


def sample_list(*, dataset: Dataset, skill: str | None = None) -> QuerySet[Sample]:
    """A dataset's samples in file order."""
    samples = Sample.objects.filter(dataset=dataset).select_related("skill").order_by("index")
    if skill is not None:
        samples = samples.filter(skill__key=skill)
    return samples
