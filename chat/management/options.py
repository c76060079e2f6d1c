"""Command-line options several commands share (of chat's and of the apps above it)."""

from __future__ import annotations

from django.core.management.base import CommandError

from chat.models import Campaign, StaticRun


def campaign_and_static_run(
    *, campaign_name: str, static_run_id: int | None
) -> tuple[Campaign, StaticRun | None]:
    """The campaign ``--campaign`` names and, when ``--static-run`` is given, that static run of
    it; a :class:`CommandError` naming the option when either does not exist."""
    campaign = Campaign.objects.filter(name=campaign_name).first()
    if campaign is None:
        raise CommandError(f"--campaign: no campaign named {campaign_name!r}")
    if static_run_id is None:
        return campaign, None
    static_run = StaticRun.objects.filter(pk=static_run_id, campaign=campaign).first()
    if static_run is None:
        raise CommandError(f"--static-run: no static run {static_run_id} in {campaign.name!r}")
    return campaign, static_run
