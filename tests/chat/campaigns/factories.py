"""Campaigns ready for assignment: backends, scenario datasets per skill, workers."""

from __future__ import annotations

from django.contrib.auth.models import User

from chat.models import Campaign, Participant
from chat.services.campaigns import campaign_create
from tests.chat.factories import BackendFactory, DatasetFactory, SampleFactory, UserFactory, skill


def scenario_dataset(skill_key: str, n: int, *, language: str = "zh"):
    dataset = DatasetFactory(skill=skill(skill_key), language=language, sample_count=n)
    for _ in range(n):
        SampleFactory(dataset=dataset, skill=skill(skill_key))
    return dataset


def study(
    *,
    backends: int = 2,
    scenarios: dict[str, int] | None = None,
    status: str = Campaign.Status.ACTIVE,
    **options,
) -> Campaign:
    """An interactive campaign over `backends` retrieval backends and `scenarios` per skill."""
    scenarios = scenarios or {"knowledge": 3}
    return campaign_create(
        name=f"study-{Campaign.objects.count()}-{User.objects.count()}",
        mode=Campaign.Mode.INTERACTIVE,
        skills=list(scenarios),
        backends=[BackendFactory() for _ in range(backends)],
        datasets=[scenario_dataset(key, n) for key, n in scenarios.items()],
        created_by=None,
        status=status,
        **options,
    )


def participant(campaign: Campaign, **extra) -> Participant:
    user = UserFactory()
    return Participant.objects.create(
        campaign=campaign, user=user, external_id=user.username, **extra
    )
