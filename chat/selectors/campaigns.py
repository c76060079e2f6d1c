"""Queries about campaigns: lists, progress per (backend, skill) cell, participants."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from chat.models import Campaign, Dialogue, Participant, Sample
from core.access import Role, has_role


def campaign_list(
    *, user: AbstractBaseUser | AnonymousUser, status: str | None = None, mode: str | None = None
) -> QuerySet[Campaign]:
    """Campaigns a user may manage: researchers (and admins) see all of them, others none."""
    if not has_role(user, Role.RESEARCHER):
        return Campaign.objects.none()
    # Meta.ordering is ignored by aggregating queries: order explicitly (stable pagination).
    campaigns = (
        Campaign.objects.prefetch_related("skills")
        .annotate(
            n_backends=Count("campaign_backends", distinct=True),
            n_participants=Count("participants", distinct=True),
        )
        .order_by("-created_at", "-pk")
    )
    if status:
        campaigns = campaigns.filter(status=status)
    if mode:
        campaigns = campaigns.filter(mode=mode)
    return campaigns


def campaign_get(*, pk: int) -> Campaign:
    return Campaign.objects.prefetch_related(
        "skills", "datasets", "campaign_backends__backend"
    ).get(pk=pk)


@dataclass(frozen=True)
class ProgressCell:
    """One (backend, skill) cell of a campaign."""

    backend_id: int
    alias: str
    backend_name: str
    skill: str
    quota: int
    collected: int  # submitted + accepted
    accepted: int
    in_progress: int  # live reservations
    rejected: int

    @property
    def percent(self) -> int:
        """Collected share of the quota, 0–100 (for progress bars)."""
        if not self.quota:
            return 0
        return min(100, round(100 * self.collected / self.quota))

    @property
    def reserved_percent(self) -> int:
        if not self.quota:
            return 0
        return min(100 - self.percent, round(100 * self.in_progress / self.quota))


@dataclass(frozen=True)
class CampaignProgress:
    cells: list[ProgressCell]
    collected: int
    in_progress: int
    rejected: int
    quota: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.collected / self.quota)) if self.quota else 0


def campaign_progress(*, campaign: Campaign, now: datetime | None = None) -> CampaignProgress:
    """Per (backend, skill): collected (submitted + accepted), in progress, rejected, quota.

    In-progress dialogues whose reservation expired are not counted (their slot is free).
    """
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=campaign.reservation_timeout_minutes)
    skills = list(campaign.skills.order_by("pk"))
    scenario_counts = dict(
        Sample.objects.filter(dataset__in=campaign.datasets.all(), skill__in=skills)
        .values_list("skill_id")
        .annotate(n=Count("pk"))
        .values_list("skill_id", "n")
    )
    counts: Counter[tuple[int, int, str]] = Counter()
    rows = (
        Dialogue.objects.filter(campaign=campaign)
        .exclude(Q(status=Dialogue.Status.IN_PROGRESS) & Q(updated_at__lt=cutoff))
        .values_list("backend_id", "skill_id", "status")
        .annotate(n=Count("pk"))
    )
    for backend_id, skill_id, status, n in rows:
        counts[(backend_id, skill_id, status)] += n
    cells: list[ProgressCell] = []
    for cb in campaign.campaign_backends.select_related("backend").order_by("pk"):
        for skill in skills:
            key = (cb.backend_id, skill.pk)
            accepted = counts[(*key, Dialogue.Status.ACCEPTED)]
            cells.append(
                ProgressCell(
                    backend_id=cb.backend_id,
                    alias=cb.alias,
                    backend_name=cb.backend.name,
                    skill=skill.key,
                    quota=campaign.quota_per_cell or scenario_counts.get(skill.pk, 0),
                    collected=counts[(*key, Dialogue.Status.SUBMITTED)] + accepted,
                    accepted=accepted,
                    in_progress=counts[(*key, Dialogue.Status.IN_PROGRESS)],
                    rejected=counts[(*key, Dialogue.Status.REJECTED)],
                )
            )
    return CampaignProgress(
        cells=cells,
        collected=sum(c.collected for c in cells),
        in_progress=sum(c.in_progress for c in cells),
        rejected=sum(c.rejected for c in cells),
        quota=sum(c.quota for c in cells),
    )


def participant_list(*, campaign: Campaign) -> QuerySet[Participant]:
    """A campaign's workers, flagged first, with their dialogue counts by status."""
    mine = Q(user__dialogues__campaign=campaign)
    return (
        Participant.objects.filter(campaign=campaign)
        .select_related("user")
        .annotate(
            n_done=Count(
                "user__dialogues",
                filter=mine
                & Q(
                    user__dialogues__status__in=[
                        Dialogue.Status.SUBMITTED,
                        Dialogue.Status.ACCEPTED,
                    ]
                ),
            ),
            n_rejected=Count(
                "user__dialogues", filter=mine & Q(user__dialogues__status=Dialogue.Status.REJECTED)
            ),
            n_in_progress=Count(
                "user__dialogues",
                filter=mine & Q(user__dialogues__status=Dialogue.Status.IN_PROGRESS),
            ),
        )
        .order_by("-flagged", "joined_at")
    )
