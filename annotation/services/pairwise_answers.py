"""Answering a pairwise (ACUTE-Eval) item: a side and a one-line reason per question, each
stored as a rating of the item and, for real pairs, as a vote in the votes table — in the same
transaction, so an answer never exists without its vote or the other way round.

The rating keeps the side as it was shown (left = 0, right = 1), which is what the pattern
checks need ("always chooses the left side"); the vote names the systems with A = the dialogue
shown on the left, as `chat.Vote` defines.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Assignment, Rating
from annotation.pairwise import LEFT, REASON_MAX_LENGTH, RIGHT, comparative_questions
from annotation.rubric_spec import as_spec
from annotation.services.ratings import (
    RatingRuleError,
    assignment_submit,
    check_assignment_access,
    check_assignment_editable,
)
from chat.models import Vote
from chat.services.dialogue_io import worker_pseudonym

_SIDES = {"left": LEFT, "right": RIGHT, "0": LEFT, "1": RIGHT}


def _clean(question: str, side: object, reason: object) -> tuple[int, str]:
    chosen = _SIDES.get(str(side).strip().lower()) if side is not None else None
    if chosen is None:
        raise RatingRuleError(
            _("%(question)s：请选择左边或右边（必须二选一）") % {"question": question}
        )
    text = str(reason or "").strip()
    if not text:
        raise RatingRuleError(_("%(question)s.reason：请用一句话写明理由") % {"question": question})
    if "\n" in text or len(text) > REASON_MAX_LENGTH:
        raise RatingRuleError(
            _("%(question)s.reason：理由只写一行，最多 %(n)d 个字")
            % {"question": question, "n": REASON_MAX_LENGTH}
        )
    return chosen, text


@transaction.atomic
def pairwise_submit(
    *,
    assignment: Assignment,
    user: User,
    answers: Mapping[str, tuple[object, object]],
    now: datetime | None = None,
) -> Assignment:
    """Store every answer of a pairwise item ({question key: (side, reason)}) and submit it.

    Every question of the job needs a side ("left"/"right") and a one-line reason; a refusal
    names the question and stores nothing. A real pair's answers become votes of the job's
    source, one per question (voter = the rater's pseudonym in the campaign)."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("job__rubric", "dialogue__backend", "dialogue_b__backend")
        .get(pk=assignment.pk)
    )
    check_assignment_access(assignment=assignment, user=user)
    check_assignment_editable(assignment)
    job = assignment.job
    if not job.is_pairwise or assignment.dialogue_b is None:
        raise RatingRuleError(_("这一条不是成对比较"))
    questions = comparative_questions(as_spec(job.rubric.spec))
    unknown = sorted(set(answers) - {q.key for q in questions})
    if unknown:
        raise RatingRuleError(_("没有这些问题：%(keys)s") % {"keys": "、".join(unknown)})
    cleaned = {}
    for q in questions:
        side, reason = answers.get(q.key, (None, None))
        cleaned[q.key] = _clean(q.key, side, reason)
    now = now or timezone.now()
    for key, (side, reason) in cleaned.items():
        Rating.objects.update_or_create(
            assignment=assignment,
            question=key,
            turn=None,
            defaults={"value": float(side), "text": reason},
        )
        if assignment.kind == Assignment.Kind.REAL:
            _vote_write(assignment, user, key, side, reason, now)
    return assignment_submit(assignment=assignment, user=user, now=now)


def _vote_write(
    assignment: Assignment, user: User, question: str, side: int, reason: str, now: datetime
) -> Vote:
    job, left, right = assignment.job, assignment.dialogue, assignment.dialogue_b
    assert right is not None and job.vote_source_id is not None
    vote, _created = Vote.objects.update_or_create(
        source_id=job.vote_source_id,
        voter_user=user,
        dialogue_a=left,
        dialogue_b=right,
        question=question,
        defaults={
            "campaign_id": job.campaign_id,
            "item": str(left.scenario_id),
            "system_a_id": left.backend_id,
            "system_b_id": right.backend_id,
            "outcome": Vote.Outcome.A if side == LEFT else Vote.Outcome.B,
            "voter_kind": Vote.VoterKind.HUMAN,
            "voter": worker_pseudonym(campaign_id=job.campaign_id, user_id=user.pk),
            "reason": reason,
            "voted_at": now,
        },
    )
    return vote
