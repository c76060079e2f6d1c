"""Reads of dialogues for export and for the researcher pages."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from chat.models import Campaign, Dialogue, StaticRun


def dialogue_export_queryset(
    *,
    campaign: Campaign,
    static_run: StaticRun | None = None,
    statuses: Iterable[str] | None = None,
) -> QuerySet[Dialogue]:
    """A campaign's dialogues (optionally of one static run, some statuses), oldest first."""
    dialogues = Dialogue.objects.filter(campaign=campaign)
    if static_run is not None:
        dialogues = dialogues.filter(static_run=static_run)
    if statuses:
        dialogues = dialogues.filter(status__in=list(statuses))
    return dialogues.order_by("pk")


def campaign_get(*, name: str) -> Campaign | None:
    return Campaign.objects.filter(name=name).first()
