"""Reads for the review of collected dialogues."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Coalesce

from annotation.models import Review
from chat.models import Dialogue
from core.i18n import display_alias


def review_queue(*, reviewer: User) -> QuerySet[Dialogue]:
    """Submitted dialogues `reviewer` may review: not their own, not yet reviewed by them, and
    still short of the campaign's number of reviewers; oldest submission first."""
    return (
        Dialogue.objects.filter(status=Dialogue.Status.SUBMITTED)
        .exclude(worker=reviewer)
        .exclude(reviews__reviewer=reviewer)
        .annotate(
            n_reviews=Count("reviews", distinct=True),
            n_needed=Coalesce(F("campaign__review_policy__reviewers_per_dialogue"), Value(1)),
        )
        .filter(n_reviews__lt=F("n_needed"))
        .select_related("campaign", "skill")
        .order_by("submitted_at", "id")
    )


def review_next(*, reviewer: User) -> Dialogue | None:
    return review_queue(reviewer=reviewer).first()


def review_status_counts(
    *, campaign_id: int | None = None, static_run_id: int | None = None
) -> dict[str, Any]:
    """Dialogues per status, and reviews per decision: the whole platform's review queue, or
    one campaign's (and static run's) when given, as a rating job's page shows its own."""
    dialogues_qs = Dialogue.objects.all()
    reviews_qs = Review.objects.all()
    if campaign_id is not None:
        dialogues_qs = dialogues_qs.filter(campaign_id=campaign_id)
        reviews_qs = reviews_qs.filter(dialogue__campaign_id=campaign_id)
    if static_run_id is not None:
        dialogues_qs = dialogues_qs.filter(static_run_id=static_run_id)
        reviews_qs = reviews_qs.filter(dialogue__static_run_id=static_run_id)
    dialogues = dict(
        dialogues_qs.order_by()
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    decisions = dict(
        reviews_qs.order_by()
        .values_list("decision")
        .annotate(n=Count("id"))
        .values_list("decision", "n")
    )
    return {"dialogues": dialogues, "decisions": decisions}


def dialogue_for_display(*, dialogue_id: int) -> Dialogue:
    """A dialogue with what a blind reviewer or rater sees (turns, skill, campaign aliases)."""
    return (
        Dialogue.objects.select_related("campaign", "skill", "scenario")
        .prefetch_related("turns")
        .get(pk=dialogue_id)
    )


def model_alias(dialogue: Dialogue) -> str:
    """The blind alias of the dialogue's model in its campaign (never the backend name)."""
    alias = (
        dialogue.campaign.campaign_backends.filter(backend_id=dialogue.backend_id)
        .values_list("alias", flat=True)
        .first()
    )
    return display_alias(alias) if alias else "—"


def reviews_of(*, dialogue: Dialogue) -> QuerySet[Review]:
    return Review.objects.filter(dialogue=dialogue).select_related("reviewer")


def campaign_review_progress(*, campaign_id: int) -> dict[str, int]:
    counts = Dialogue.objects.filter(campaign_id=campaign_id).aggregate(
        submitted=Count("id", filter=Q(status=Dialogue.Status.SUBMITTED)),
        accepted=Count("id", filter=Q(status=Dialogue.Status.ACCEPTED)),
        rejected=Count("id", filter=Q(status=Dialogue.Status.REJECTED)),
    )
    return counts


def policy_overview(*, campaign_id: int, limit: int = 100) -> dict[str, Any]:
    """What the review-policy page shows: dialogues per review status, and the submitted
    dialogues still waiting for a decision with the reviews done so far (oldest first)."""
    waiting = (
        Dialogue.objects.filter(campaign_id=campaign_id, status=Dialogue.Status.SUBMITTED)
        .select_related("skill")
        .annotate(
            n_reviews=Count("reviews", distinct=True),
            n_accept=Count("reviews", filter=Q(reviews__decision=Review.Decision.ACCEPT)),
            n_reject=Count("reviews", filter=Q(reviews__decision=Review.Decision.REJECT)),
        )
        .order_by("submitted_at", "id")
    )
    return {
        "counts": campaign_review_progress(campaign_id=campaign_id),
        "waiting": list(waiting[:limit]),
        "n_reviews": Review.objects.filter(dialogue__campaign_id=campaign_id).count(),
        "limit": limit,
    }
