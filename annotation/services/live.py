"""Live per-turn rating in the chat (seed 001's multi-turn protocol).

Testers rate each model reply for relevance and divergence while chatting. The ratings live in
the campaign's *live job*: a `RatingJob` flagged `is_live`, created on first use with the
`yesno-multi-turn` preset, where the crowdworker is the rater of their own dialogue (one
assignment per dialogue). Answers go through the same `rating_save` as the annotation page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from annotation.models import Assignment, Rating, RatingJob, Rubric
from annotation.rubric_spec import Question, applicable_questions, as_spec
from annotation.selectors.rating import localized, model_turns
from annotation.services.ratings import (
    RatingRuleError,
    missing_answers,
    missing_slots,
    rating_save,
)
from chat.models import Campaign, Dialogue, Turn
from chat.selectors.collection import AnswersOwed

LIVE_RUBRIC_KEY = "yesno-multi-turn"


def live_rubric() -> Rubric:
    """The latest version of the multi-turn yes/no preset."""
    rubric = Rubric.objects.filter(key=LIVE_RUBRIC_KEY).order_by("-version").first()
    if rubric is None:
        raise RatingRuleError(_("缺少量表 %(key)s（由迁移 0002 载入）") % {"key": LIVE_RUBRIC_KEY})
    return rubric


def _live_job_name(campaign: Campaign) -> str:
    """A readable, unique name for the campaign's live job: the campaign's name and what the job
    is, in the campaign's crowdworker language (the job is created by a worker's first rating,
    so there is no researcher's language to use) or the site's default. Job names are unique;
    should a researcher already have taken this one, the campaign's number tells them apart."""
    with translation.override(campaign.interface_language or settings.LANGUAGE_CODE):
        name = _("%(campaign)s · 聊天时逐轮评分") % {"campaign": campaign.name}
    name = name[:160]
    if RatingJob._base_manager.filter(name=name).exists():
        suffix = f" #{campaign.pk}"
        name = name[: 160 - len(suffix)] + suffix
    return name


def live_job_for(campaign: Campaign) -> RatingJob:
    """The campaign's live job, created on first use (a race creates it once)."""
    job = RatingJob.objects.filter(campaign=campaign, is_live=True).first()
    if job is not None:
        return job
    try:
        with transaction.atomic():
            return RatingJob.objects.create(
                name=_live_job_name(campaign),
                campaign=campaign,
                rubric=live_rubric(),
                raters_per_dialogue=1,
                status=RatingJob.Status.OPEN,
                is_live=True,
            )
    except IntegrityError:
        return RatingJob.objects.get(campaign=campaign, is_live=True)


@dataclass(frozen=True)
class LiveGuide:
    """What the worker reads before rating replies in the chat: the rubric's instructions and
    its categories, each with the labels of the turn questions asked under it."""

    title: str
    instructions: str
    categories: tuple[tuple[str, tuple[str, ...]], ...]
    max_turns: int | None


def live_guide(*, dialogue: Dialogue, language: str) -> LiveGuide | None:
    """The rating guide for a rate-while-chatting campaign's chat page; None when the campaign
    does not rate while chatting. Reads the live job's rubric (or the preset before the first
    rating), without creating the job."""
    campaign = dialogue.campaign
    if not campaign.rate_while_chatting:
        return None
    spec = as_spec(_live_rubric_of(campaign).spec)
    questions = applicable_questions(spec, dialogue.skill.key, "turn")
    groups: dict[str, list[str]] = {}
    for q in questions:
        label = localized(spec.categories.get(q.category or "", {}), language) if q.category else ""
        groups.setdefault(label, []).append(localized(q.label, language) or q.key)
    limits = {q.max_turns for q in questions if q.max_turns is not None}
    return LiveGuide(
        title=localized(spec.title, language),
        instructions=localized(spec.instructions, language),
        categories=tuple((label, tuple(labels)) for label, labels in groups.items()),
        max_turns=max(limits) if limits else None,
    )


def live_turn_limit(campaign: Campaign) -> int | None:
    """The chat turn limit a rate-while-chatting campaign's rubric sets: the smallest
    `max_turns` of its turn-level questions (seed 001: multi-turn tests are locked at 5 turns),
    None when the campaign does not rate while chatting or the rubric sets no limit.

    The rubric is the live job's when it exists, else the one it will be created with.
    """
    if not campaign.rate_while_chatting:
        return None
    limits = [
        q.max_turns
        for q in as_spec(_live_rubric_of(campaign).spec).questions
        if q.level == "turn" and q.max_turns is not None
    ]
    return min(limits) if limits else None


def _live_job(campaign_id: int | None) -> RatingJob | None:
    if campaign_id is None:  # a campaign being created has no job yet
        return None
    return (
        RatingJob.objects.filter(campaign_id=campaign_id, is_live=True)
        .select_related("rubric")
        .first()
    )


def _live_rubric_of(campaign: Campaign) -> Rubric:
    """The live job's rubric, or the one it will be created with."""
    job = _live_job(campaign.pk)
    return job.rubric if job is not None else live_rubric()


def live_answers_owed(dialogue: Dialogue, turns: Sequence[Turn]) -> AnswersOwed | None:
    """What the worker of a rate-while-chatting chat has not answered yet on its replies (the
    live rubric's turn questions, up to their `max_turns`), on the last reply and in all; None
    for other campaigns. Registered with chat (`chat_state` locks sending and finishing on it:
    seed 001's testers rate each reply before the chat goes on)."""
    campaign = dialogue.campaign
    if not campaign.rate_while_chatting:
        return None
    replies = [turn.pk for turn in turns if turn.speaker == Turn.Speaker.SYSTEM]
    if not replies:
        return AnswersOwed(last_reply=0, total=0)
    job = _live_job(campaign.pk)
    spec = as_spec((job.rubric if job is not None else live_rubric()).spec)
    answers: dict[tuple[str, int | None], Any] = {}
    if job is not None:
        ratings = Rating.objects.filter(
            assignment__job=job,
            assignment__dialogue_id=dialogue.pk,
            assignment__rater_id=dialogue.worker_id,
        ).values_list("question", "turn_id", "value", "text")
        answers = {
            (key, turn_id): text if value is None else value
            for key, turn_id, value, text in ratings
        }
    missing = missing_slots(
        [q for q in spec.questions if q.level == "turn"],
        skill=dialogue.skill.key,
        turn_ids=replies,
        answers=answers,
    )
    return AnswersOwed(
        last_reply=sum(1 for _, turn_id in missing if turn_id == replies[-1]),
        total=len(missing),
    )


def check_live_access(*, turn: Turn, user: User) -> None:
    dialogue = turn.dialogue
    if dialogue.worker_id != user.pk:
        raise PermissionDenied(_("只有这段对话的众包人员可以给它的回复评分。"))
    if not dialogue.campaign.rate_while_chatting:
        raise PermissionDenied(_("这个评测活动不在对话中给回复评分。"))
    if turn.speaker != Turn.Speaker.SYSTEM:
        raise RatingRuleError(_("只有模型的回复需要评分"))
    if dialogue.status not in (Dialogue.Status.IN_PROGRESS, Dialogue.Status.SUBMITTED):
        raise RatingRuleError(
            _("对话已是「%(status)s」状态，不能再评分") % {"status": dialogue.get_status_display()}
        )


def live_assignment(*, dialogue: Dialogue, user: User) -> Assignment:
    job = live_job_for(dialogue.campaign)
    assignment, _created = Assignment.objects.get_or_create(
        job=job,
        dialogue=dialogue,
        rater=user,
        kind=Assignment.Kind.REAL,
        defaults={"status": Assignment.Status.IN_PROGRESS, "started_at": timezone.now()},
    )
    return assignment


def live_questions(*, turn: Turn) -> tuple[list[Question], int]:
    """The live rubric's turn-level questions for this reply, and the reply's model-turn index.
    Beyond the rubric's `max_turns` (5 in seed 001) nothing is asked."""
    dialogue = turn.dialogue
    job = live_job_for(dialogue.campaign)
    positions = [t.pk for t in model_turns(dialogue)]
    if turn.pk not in positions:
        return [], -1
    index = positions.index(turn.pk)
    questions = [
        q
        for q in applicable_questions(as_spec(job.rubric.spec), dialogue.skill.key, "turn")
        if q.max_turns is None or index < q.max_turns
    ]
    return questions, index


def live_answers(*, turn: Turn, user: User) -> dict[str, float | str]:
    job = RatingJob.objects.filter(campaign=turn.dialogue.campaign_id, is_live=True).first()
    if job is None:
        return {}
    return {
        r.question: (r.value if r.value is not None else r.text)
        for r in Rating.objects.filter(assignment__job=job, assignment__rater=user, turn=turn)
    }


@transaction.atomic
def live_rating_save(*, turn: Turn, user: User, answers: Mapping[str, Any]) -> list[Rating]:
    """Save the worker's answers for one reply (all or nothing). The live assignment counts as
    submitted while every reply so far is fully rated."""
    check_live_access(turn=turn, user=user)
    questions, _index = live_questions(turn=turn)
    if not questions:
        raise RatingRuleError(_("这条回复超出了量表评分的轮次"))
    known = {q.key for q in questions}
    unknown = sorted(set(answers) - known)
    if unknown:
        raise RatingRuleError(_("这条回复没有这些问题：%(keys)s") % {"keys": "、".join(unknown)})
    assignment = live_assignment(dialogue=turn.dialogue, user=user)
    if assignment.status == Assignment.Status.SUBMITTED:
        Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.IN_PROGRESS)
        assignment.status = Assignment.Status.IN_PROGRESS
    saved = [
        rating_save(assignment=assignment, user=user, question=key, value=value, turn_id=turn.pk)
        for key, value in answers.items()
    ]
    assignment.refresh_from_db()
    if not missing_answers(assignment):
        now = timezone.now()
        Assignment.objects.filter(pk=assignment.pk).update(
            status=Assignment.Status.SUBMITTED, submitted_at=now
        )
    return saved


def live_categories(*, turn: Turn) -> dict[str, Any]:
    """The live rubric's category labels (key → label per language), to tag each question."""
    return dict(as_spec(live_job_for(turn.dialogue.campaign).rubric.spec).categories)
