"""Quality review of collected dialogues (MSDE §3.1).

Experts accept or reject a submitted dialogue; the worker's utterances must be fluent, natural,
appropriate, coherent and knowledge-accurate. A campaign's `ReviewPolicy` says how many experts
review each dialogue and how their decisions combine. When the rule resolves, the dialogue becomes
`accepted` (it can then be rated) or `rejected` with a reason the worker sees before re-collecting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from annotation.models import Review, ReviewPolicy
from chat.models import Campaign, Dialogue
from chat.services.side_by_side import partner_reject
from core.errors import ServiceError
from core.i18n import pick_text

# Reason templates of MSDE §3.1, shown as checkboxes; the stored value is the key.
REASON_TEMPLATES: dict[str, dict[str, str]] = {
    "fluent": {"zh-hans": "表达不流畅", "en": "Not fluent", "ja": "流暢でない"},
    "natural": {"zh-hans": "不自然", "en": "Not natural", "ja": "不自然"},
    "appropriate": {"zh-hans": "内容不得体", "en": "Not appropriate", "ja": "内容が不適切"},
    "coherent": {"zh-hans": "前后不连贯", "en": "Not coherent", "ja": "前後のつながりがない"},
    "knowledge": {
        "zh-hans": "知识使用不准确",
        "en": "Knowledge used inaccurately",
        "ja": "知識の使い方が不正確",
    },
}
COMMENT_MAX_LENGTH = 2000
# More reviewers than this per dialogue is almost surely a typo (MSDE used 3).
MAX_REVIEWERS = 20


class ReviewError(ServiceError):
    """A review that cannot be recorded; the message starts with the field at fault, which
    `field` also holds (pages attach the message to that form field)."""

    location_style = "in_message"


def review_policy_for(campaign: Campaign) -> ReviewPolicy:
    """The campaign's policy, or an unsaved one with the defaults (one reviewer)."""
    try:
        return campaign.review_policy
    except ReviewPolicy.DoesNotExist:
        return ReviewPolicy(campaign=campaign)


def resolve_decision(
    *, rule: str, reviewers: int, decisions: Sequence[str]
) -> Review.Decision | None:
    """The outcome of `decisions` (accept/reject, in order) under `rule`, or None while open."""
    accepts = sum(d == Review.Decision.ACCEPT for d in decisions)
    rejects = len(decisions) - accepts
    if rule == ReviewPolicy.Rule.ANY_REJECT:
        if rejects:
            return Review.Decision.REJECT
        return Review.Decision.ACCEPT if accepts >= reviewers else None
    if rule == ReviewPolicy.Rule.MAJORITY:
        needed = reviewers // 2 + 1
        if accepts >= needed:
            return Review.Decision.ACCEPT
        # Rejected once a majority of accepts can no longer be reached.
        if accepts + (reviewers - len(decisions)) < needed:
            return Review.Decision.REJECT
        return None
    if rule == ReviewPolicy.Rule.ALL:
        if len(decisions) < reviewers:
            return None
        return Review.Decision.ACCEPT if rejects == 0 else Review.Decision.REJECT
    raise ReviewError(
        _("decision_rule：未知的决定规则 %(rule)r") % {"rule": rule}, field="decision_rule"
    )


def check_can_review(*, dialogue: Dialogue, reviewer: User) -> None:
    """Raise PermissionDenied or ReviewError when `reviewer` may not review `dialogue` now."""
    if dialogue.worker_id == reviewer.pk:
        raise PermissionDenied(_("不能审核自己收集的对话。"))
    if dialogue.status != Dialogue.Status.SUBMITTED:
        raise ReviewError(
            _("dialogue：对话 %(id)s 的状态是「%(status)s」，只有已提交的对话可以审核")
            % {"id": dialogue.pk, "status": dialogue.get_status_display()},
            field="dialogue",
        )
    if Review.objects.filter(dialogue=dialogue, reviewer=reviewer).exists():
        raise _already_reviewed(dialogue)


def _already_reviewed(dialogue: Dialogue) -> ReviewError:
    return ReviewError(
        _("dialogue：您已经审核过对话 %(id)s") % {"id": dialogue.pk}, field="dialogue"
    )


def _clean_reasons(decision: str, reasons: Iterable[str], comment: str) -> list[str]:
    if decision not in Review.Decision.values:
        raise ReviewError(
            _("decision：必须是 accept（通过）或 reject（退回），收到 %(decision)r")
            % {"decision": decision},
            field="decision",
        )
    cleaned = []
    for reason in reasons:
        if reason not in REASON_TEMPLATES:
            known = ", ".join(REASON_TEMPLATES)
            raise ReviewError(
                _("reasons：未知的退回理由 %(reason)r（可选：%(known)s）")
                % {"reason": reason, "known": known},
                field="reasons",
            )
        if reason not in cleaned:
            cleaned.append(reason)
    if len(comment) > COMMENT_MAX_LENGTH:
        raise ReviewError(
            _("comment：说明超过了 %(n)d 个字符") % {"n": COMMENT_MAX_LENGTH}, field="comment"
        )
    if decision == Review.Decision.REJECT and not cleaned and not comment.strip():
        raise ReviewError(_("reasons：退回时至少要选一个理由或写一段说明"), field="reasons")
    if decision == Review.Decision.ACCEPT and cleaned:
        raise ReviewError(_("reasons：通过的对话不能带退回理由"), field="reasons")
    return cleaned


def rejection_text(reviews: Iterable[Review], *, language: str = "") -> str:
    """What the worker reads: each rejecting reviewer's reasons and comment.

    The reasons are written in `language` when the campaign fixes its workers' language, else
    in Chinese with English in brackets (the worker's page language is not known here)."""

    def label(texts: dict[str, str]) -> str:
        if language:
            return pick_text(texts, language)
        return f"{texts['zh-hans']} ({texts['en']})"

    lines = []
    for review in reviews:
        if review.decision != Review.Decision.REJECT:
            continue
        labels = [label(REASON_TEMPLATES[r]) for r in review.reasons if r in REASON_TEMPLATES]
        separator = "; " if language == "en" else "；"
        parts = [separator.join(labels)] if labels else []
        if review.comment.strip():
            parts.append(review.comment.strip())
        lines.append(" — ".join(parts))
    return "\n".join(lines)


@transaction.atomic
def review_submit(
    *,
    dialogue: Dialogue,
    reviewer: User,
    decision: str,
    reasons: Iterable[str] = (),
    comment: str = "",
) -> Review:
    """Record one expert's decision; resolve the dialogue's status when the policy says so."""
    cleaned = _clean_reasons(decision, reasons, comment)
    # Lock the dialogue so two reviewers finishing at once resolve the rule once, in order.
    dialogue = Dialogue.objects.select_for_update().select_related("campaign").get(pk=dialogue.pk)
    check_can_review(dialogue=dialogue, reviewer=reviewer)
    try:
        with transaction.atomic():
            review = Review.objects.create(
                dialogue=dialogue,
                reviewer=reviewer,
                decision=decision,
                reasons=cleaned,
                comment=comment.strip(),
            )
    except IntegrityError as exc:
        raise _already_reviewed(dialogue) from exc
    policy = review_policy_for(dialogue.campaign)
    reviews = list(Review.objects.filter(dialogue=dialogue).order_by("created_at", "id"))
    outcome = resolve_decision(
        rule=policy.decision_rule,
        reviewers=policy.reviewers_per_dialogue,
        decisions=[r.decision for r in reviews],
    )
    if outcome == Review.Decision.ACCEPT:
        dialogue.status = Dialogue.Status.ACCEPTED
        dialogue.rejection_reason = ""
        dialogue.save(update_fields=["status", "rejection_reason", "updated_at"])
    elif outcome == Review.Decision.REJECT:
        dialogue.status = Dialogue.Status.REJECTED
        dialogue.rejection_reason = rejection_text(
            reviews, language=dialogue.campaign.interface_language
        )
        dialogue.save(update_fields=["status", "rejection_reason", "updated_at"])
        # A side-by-side conversation is re-collected whole: its other side goes back too.
        partner_reject(dialogue=dialogue)
    return review


@transaction.atomic
def review_policy_set(
    *, campaign: Campaign, reviewers_per_dialogue: int, decision_rule: str
) -> ReviewPolicy:
    """Create or change the campaign's policy. Dialogues already resolved keep their status;
    the new numbers apply to the reviews still to come."""
    if isinstance(reviewers_per_dialogue, bool) or not isinstance(reviewers_per_dialogue, int):
        raise ReviewError(
            _("reviewers_per_dialogue：必须是整数，收到 %(value)r")
            % {"value": reviewers_per_dialogue},
            field="reviewers_per_dialogue",
        )
    if not 1 <= reviewers_per_dialogue <= MAX_REVIEWERS:
        raise ReviewError(
            _("reviewers_per_dialogue：每段对话的审核人数必须在 1 到 %(max)d 之间，收到 %(value)d")
            % {"max": MAX_REVIEWERS, "value": reviewers_per_dialogue},
            field="reviewers_per_dialogue",
        )
    if decision_rule not in ReviewPolicy.Rule.values:
        known = ", ".join(ReviewPolicy.Rule.values)
        raise ReviewError(
            _("decision_rule：必须是 %(known)s 之一，收到 %(rule)r")
            % {"known": known, "rule": decision_rule},
            field="decision_rule",
        )
    policy, _created = ReviewPolicy.objects.update_or_create(
        campaign=campaign,
        defaults={
            "reviewers_per_dialogue": reviewers_per_dialogue,
            "decision_rule": decision_rule,
        },
    )
    return policy
