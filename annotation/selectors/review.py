"""Reads for the review of collected dialogues."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from annotation.models import Review
from chat.models import Dialogue
from core.json import UnicodeJSONEncoder


def review_queue(*, reviewer: AbstractBaseUser) -> QuerySet[Dialogue]:
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


def review_next(*, reviewer: AbstractBaseUser) -> Dialogue | None:
    return review_queue(reviewer=reviewer).first()


def review_status_counts() -> dict[str, Any]:
    """Dialogues per status, and reviews per decision (the researcher's review-queue summary)."""
    dialogues = dict(
        Dialogue.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    decisions = dict(
        Review.objects.values_list("decision").annotate(n=Count("id")).values_list("decision", "n")
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
    return alias or "—"


def reviews_of(*, dialogue: Dialogue) -> QuerySet[Review]:
    return Review.objects.filter(dialogue=dialogue).select_related("reviewer")


def campaign_review_progress(*, campaign_id: int) -> dict[str, int]:
    counts = Dialogue.objects.filter(campaign_id=campaign_id).aggregate(
        submitted=Count("id", filter=Q(status=Dialogue.Status.SUBMITTED)),
        accepted=Count("id", filter=Q(status=Dialogue.Status.ACCEPTED)),
        rejected=Count("id", filter=Q(status=Dialogue.Status.REJECTED)),
    )
    return counts


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return " · ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "；".join(f"{k}: {_text(v)}" for k, v in value.items())
    return json.dumps(value, cls=UnicodeJSONEncoder, ensure_ascii=False)


def grounding_sections(grounding: Any) -> list[dict[str, Any]]:
    """The grounding shown beside a dialogue: knowledge triples as a table, goals, profile,
    persona and situation as lists; any other key as text. Values stay untrusted (escaped)."""
    if not isinstance(grounding, dict):
        return []
    titles = {
        "knowledge": _("知识"),
        "goal": _("对话目标"),
        "user_profile": _("用户画像"),
        "persona": _("人设"),
        "situation": _("情境"),
    }
    sections = []
    for key, value in grounding.items():
        if value in (None, "", [], {}):
            continue
        title = titles.get(key, key)
        if key == "knowledge" and isinstance(value, list):
            rows = [
                [_text(c) for c in row] if isinstance(row, list) else [_text(row)] for row in value
            ]
            sections.append({"key": key, "title": title, "kind": "table", "rows": rows})
        elif key == "persona" and isinstance(value, dict):
            names = {"bot": _("机器人"), "user": _("用户")}
            items = [f"{names.get(k, k)}：{_text(v)}" for k, v in value.items()]
            sections.append({"key": key, "title": title, "kind": "list", "items": items})
        elif isinstance(value, dict):
            items = [f"{k}：{_text(v)}" for k, v in value.items()]
            sections.append({"key": key, "title": title, "kind": "list", "items": items})
        elif isinstance(value, list):
            items = [_text(v) for v in value]
            sections.append({"key": key, "title": title, "kind": "list", "items": items})
        else:
            sections.append({"key": key, "title": title, "kind": "text", "text": _text(value)})
    return sections


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
