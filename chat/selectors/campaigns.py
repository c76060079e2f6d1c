"""Queries about campaigns: lists, progress per (backend, skill) cell, participants."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import (
    Campaign,
    CampaignBackend,
    CampaignOpening,
    Dialogue,
    Participant,
    Sample,
    Skill,
)
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
    return (
        Campaign.objects.select_related("opening_dataset")
        .prefetch_related("skills", "datasets", "campaign_backends__backend")
        .get(pk=pk)
    )


@dataclass(frozen=True)
class OpeningUse:
    """A campaign opening and how many of its dialogues opened with it."""

    opening: CampaignOpening
    used: int


def opening_usage(*, campaign: Campaign) -> list[OpeningUse]:
    """The campaign's drawn openings in drawing order, each with the number of dialogues that
    opened with it (every status but abandoned, whose slot went back to the pool)."""
    rows = (
        CampaignOpening.objects.filter(campaign=campaign)
        .select_related("sample")
        .annotate(used=Count("dialogues", filter=~Q(dialogues__status=Dialogue.Status.ABANDONED)))
        .order_by("position")
    )
    return [OpeningUse(opening=row, used=row.used) for row in rows]


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
    # Dialogues given back (skipped, abandoned, timed out), by reason label, most frequent first.
    abandoned: list[tuple[str, int]] = field(default_factory=list)

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.collected / self.quota)) if self.quota else 0

    @property
    def abandoned_total(self) -> int:
        return sum(n for _, n in self.abandoned)


def campaign_progress(*, campaign: Campaign, now: datetime | None = None) -> CampaignProgress:
    """Per (backend, skill): collected (submitted + accepted), in progress, rejected, quota.

    In-progress dialogues whose reservation expired are not counted (their slot is free).
    """
    return campaigns_progress(campaigns=[campaign], now=now)[campaign.pk]


def campaigns_progress(
    *, campaigns: Sequence[Campaign], now: datetime | None = None
) -> dict[int, CampaignProgress]:
    """:func:`campaign_progress` of several campaigns (a list page) in four queries in all."""
    now = now or timezone.now()
    if not campaigns:
        return {}
    ids = [campaign.pk for campaign in campaigns]
    skills_of: dict[int, list[Skill]] = defaultdict(list)
    for link in Campaign.skills.through.objects.filter(campaign_id__in=ids).select_related("skill"):
        skills_of[link.campaign_id].append(link.skill)
    scenario_counts: Counter[tuple[int, int]] = Counter()
    for campaign_id, skill_id, n in (
        Sample.objects.filter(dataset__campaigns__in=ids)
        .values_list("dataset__campaigns", "skill_id")
        .annotate(n=Count("pk"))
    ):
        scenario_counts[(campaign_id, skill_id)] += n
    # A reservation older than its campaign's timeout is free again: not in progress.
    live = Q()
    for campaign in campaigns:
        cutoff = now - timedelta(minutes=campaign.reservation_timeout_minutes)
        live |= Q(campaign_id=campaign.pk) & ~(
            Q(status=Dialogue.Status.IN_PROGRESS) & Q(updated_at__lt=cutoff)
        )
    counts: Counter[tuple[int, int, int, str]] = Counter()
    for campaign_id, backend_id, skill_id, status, n in (
        Dialogue.objects.filter(live)
        .values_list("campaign_id", "backend_id", "skill_id", "status")
        .annotate(n=Count("pk"))
    ):
        counts[(campaign_id, backend_id, skill_id, status)] += n
    backends_of: dict[int, list[CampaignBackend]] = defaultdict(list)
    for cb in (
        CampaignBackend.objects.filter(campaign_id__in=ids).select_related("backend").order_by("pk")
    ):
        backends_of[cb.campaign_id].append(cb)
    progress: dict[int, CampaignProgress] = {}
    cells_of: dict[int, list[ProgressCell]] = {}
    for campaign in campaigns:
        cells: list[ProgressCell] = []
        skills = sorted(skills_of[campaign.pk], key=lambda skill: skill.pk)
        for cb in backends_of[campaign.pk]:
            for skill in skills:
                key = (campaign.pk, cb.backend_id, skill.pk)
                accepted = counts[(*key, Dialogue.Status.ACCEPTED)]
                cells.append(
                    ProgressCell(
                        backend_id=cb.backend_id,
                        alias=cb.alias,
                        backend_name=cb.backend.name,
                        skill=skill.key,
                        quota=campaign.quota_per_cell
                        or scenario_counts.get((campaign.pk, skill.pk), 0),
                        collected=counts[(*key, Dialogue.Status.SUBMITTED)] + accepted,
                        accepted=accepted,
                        in_progress=counts[(*key, Dialogue.Status.IN_PROGRESS)],
                        rejected=counts[(*key, Dialogue.Status.REJECTED)],
                    )
                )
        cells_of[campaign.pk] = cells
    labels = dict(Dialogue.AbandonReason.choices)
    abandoned: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for campaign_id, reason, n in (
        Dialogue.objects.filter(campaign_id__in=ids, status=Dialogue.Status.ABANDONED)
        .values_list("campaign_id", "abandon_reason")
        .annotate(n=Count("pk"))
        .order_by("campaign_id", "-n", "abandon_reason")
    ):
        abandoned[campaign_id].append((str(labels.get(reason) or _("未记录原因")), n))
    for campaign in campaigns:
        cells = cells_of[campaign.pk]
        progress[campaign.pk] = CampaignProgress(
            cells=cells,
            collected=sum(c.collected for c in cells),
            in_progress=sum(c.in_progress for c in cells),
            rejected=sum(c.rejected for c in cells),
            quota=sum(c.quota for c in cells),
            abandoned=abandoned[campaign.pk],
        )
    return progress


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


# URL names of the crowdworker pages that belong to one campaign, and what their argument is.
_CAMPAIGN_PAGES_BY_TOKEN = {"chat:campaign-join"}
_CAMPAIGN_PAGES_BY_PK = {"chat:live-next", "chat:live-completion"}
_DIALOGUE_PAGES = {
    "chat:live-dialogue",
    "chat:live-send",
    "chat:live-retry",
    "chat:live-grounding",
    "chat:live-submit",
    "chat:live-recollect",
}
# Rating each reply while chatting (annotation's live form, shown under the reply in the chat).
_TURN_PAGES = {"annotation:live-turn-rating"}


def campaign_page_language(*, url_name: str, kwargs: dict[str, Any]) -> str:
    """The interface language a campaign fixes for one of its crowdworker pages; "" when the
    page belongs to no campaign or its campaign leaves the choice to the worker's browser."""
    if url_name in _CAMPAIGN_PAGES_BY_TOKEN:
        rows = Campaign.objects.filter(invite_token=kwargs.get("token", ""))
    elif url_name in _CAMPAIGN_PAGES_BY_PK:
        rows = Campaign.objects.filter(pk=kwargs.get("pk"))  # type: ignore[misc]  # these URLs have a pk
    elif url_name in _DIALOGUE_PAGES:
        rows = Campaign.objects.filter(dialogues__pk=kwargs.get("pk"))  # type: ignore[misc]  # these URLs have a pk
    elif url_name in _TURN_PAGES:
        rows = Campaign.objects.filter(dialogues__turns__pk=kwargs.get("turn_id"))  # type: ignore[misc]  # these URLs have a turn_id
    else:
        return ""
    return rows.values_list("interface_language", flat=True).first() or ""
