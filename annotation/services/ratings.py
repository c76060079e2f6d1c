"""The answers themselves: opening an item, saving (autosave) and submitting its answers, and
the rules an answer must pass (access, editable, gates, completeness)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Assignment, JobRater, Rating, RatingJob
from annotation.pairwise import comparative_questions
from annotation.rubric_spec import AnswerError, Question, as_spec, validate_answer
from annotation.selectors.rating import OPEN_STATUSES, model_turns
from annotation.services.pairwise import pairwise_votes_exclude
from annotation.services.quality import Onboarding, job_quality, onboarding_result
from annotation.services.rating_assignments import assignments_generate, assignments_revoke_open
from core.errors import ServiceError


class RatingRuleError(AnswerError, ServiceError):
    """An answer refused by this app's rules (job closed, gate first …), with a localized
    message; a plain `AnswerError` comes from the rubric kernel and is English."""


class IncompleteError(RatingRuleError):
    """Submit refused: required answers are missing (`missing` names them)."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(_("还有未回答的问题：%(missing)s") % {"missing": "、".join(missing)})

    def as_body(self) -> dict[str, Any]:
        return {**super().as_body(), "missing": self.missing}


def answer_error_text(exc: AnswerError) -> str:
    """The text a page shows for a refused answer: this app's messages as they are; a rubric
    kernel's English message kept, after a Chinese explanation."""
    if isinstance(exc, RatingRuleError):
        return str(exc)
    return _("评分量表不接受这个答案：%(error)s") % {"error": exc}


def check_assignment_access(*, assignment: Assignment, user: User) -> None:
    """Only the assignment's rater opens it; an expert never rates a dialogue they collected."""
    if assignment.rater_id != user.pk:
        raise PermissionDenied(_("这一条分配给了另一位评分专家。"))
    if not assignment.job.is_live and assignment.dialogue.worker_id == user.pk:
        raise PermissionDenied(_("不能给自己收集的对话评分。"))
    other = assignment.dialogue_b
    if other is not None and other.worker_id == user.pk:
        raise PermissionDenied(_("不能给自己收集的对话评分。"))


def check_assignment_editable(assignment: Assignment) -> None:
    if assignment.status not in OPEN_STATUSES:
        raise RatingRuleError(
            _("这一条已是「%(status)s」状态，答案不能再修改")
            % {"status": assignment.get_status_display()}
        )
    if assignment.job.status != RatingJob.Status.OPEN:
        raise RatingRuleError(_("评分任务不在进行中，不能作答"))


def assignment_start(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Mark the item opened (time per item counts from here); idempotent."""
    if assignment.started_at is None and assignment.status == Assignment.Status.PENDING:
        Assignment.objects.filter(pk=assignment.pk, started_at__isnull=True).update(
            started_at=now or timezone.now(), status=Assignment.Status.IN_PROGRESS
        )
        assignment.refresh_from_db(fields=["started_at", "status"])
    return assignment


def _scope_gates(questions: Iterable[Question], question: Question) -> list[Question]:
    """The gates that decide whether `question` is asked: dialogue-level gates always; for a
    turn-level question also the turn-level gates of the same turn."""
    return [q for q in questions if q.gate and (q.level == "dialogue" or question.level == "turn")]


@transaction.atomic
def rating_save(
    *,
    assignment: Assignment,
    user: User,
    question: str,
    value: Any,
    turn_id: int | None = None,
) -> Rating:
    """Save (or revise) one answer. Concurrent saves of the same answer leave one row with the
    last value: the assignment row is locked, and the unique constraints back it up."""
    assignment = (
        Assignment.objects.select_for_update()
        .select_related("job__rubric", "dialogue__skill")
        .get(pk=assignment.pk)
    )
    check_assignment_access(assignment=assignment, user=user)
    check_assignment_editable(assignment)
    if assignment.job.is_pairwise:
        raise RatingRuleError(_("成对比较任务的答案要选一边并写理由，请在比较页面作答"))
    spec = as_spec(assignment.job.rubric.spec)
    skill = assignment.dialogue.skill.key
    turns = model_turns(assignment.dialogue)
    turn_index = None
    if turn_id is not None:
        positions = {t.pk: i for i, t in enumerate(turns)}
        if turn_id not in positions:
            raise RatingRuleError(
                _("%(question)s：轮次 %(turn)s 不是这段对话的模型回复")
                % {"question": question, "turn": turn_id}
            )
        turn_index = positions[turn_id]
    cleaned = validate_answer(spec, question, value, turn=turn_index, skill=skill)
    asked = [q for q in spec.questions if q.applies_to(skill)]
    current = spec.question(question)
    existing = {
        (r.question, r.turn_id): r.value for r in Rating.objects.filter(assignment=assignment)
    }
    if not current.gate:
        for gate in _scope_gates(asked, current):
            gate_turn = None if gate.level == "dialogue" else turn_id
            answer = existing.get((gate.key, gate_turn))
            if answer is None:
                raise RatingRuleError(
                    _("%(question)s：请先回答第一级问题「%(gate)s」")
                    % {"question": question, "gate": gate.key}
                )
            if gate.score(answer) == 0.0:
                raise RatingRuleError(
                    _("%(question)s：第一级问题「%(gate)s」未通过，此题不再询问")
                    % {"question": question, "gate": gate.key}
                )
    text = cleaned if isinstance(cleaned, str) else ""
    number = None if isinstance(cleaned, str) else cleaned
    rating, _created = Rating.objects.update_or_create(  # type: ignore[misc]  # turn_id None: a dialogue-level rating
        assignment=assignment,
        question=question,
        turn_id=turn_id,
        defaults={"value": number, "text": text},
    )
    if current.gate and number is not None and current.score(number) == 0.0:
        # A failed gate makes the second level moot: drop what it gates.
        gated = [
            q.key
            for q in asked
            if not q.gate and (current.level == "dialogue" or q.level == "turn")
        ]
        stale = Rating.objects.filter(assignment=assignment, question__in=gated)
        if current.level == "turn":
            stale = stale.filter(turn_id=turn_id)  # type: ignore[misc]  # turn_id None: dialogue level
        stale.delete()
    if assignment.status == Assignment.Status.PENDING:
        assignment_start(assignment=assignment)
    return rating


def missing_answers(assignment: Assignment) -> list[str]:
    """Required answers not given yet, named `key` or `key (turn n)` with n counted from 1.

    Free-text questions are optional; questions a failed gate rules out are not required.
    In a pairwise job every comparative question needs a side and a reason.
    """
    spec = as_spec(assignment.job.rubric.spec)
    if assignment.job.is_pairwise:
        given = {
            r.question
            for r in Rating.objects.filter(assignment=assignment, value__isnull=False)
            if r.text.strip()
        }
        return [q.key for q in comparative_questions(spec) if q.key not in given]
    turns = model_turns(assignment.dialogue)
    answers = {
        (r.question, r.turn_id): (r.value if r.value is not None else r.text)
        for r in Rating.objects.filter(assignment=assignment)
    }
    positions = {turn.pk: position for position, turn in enumerate(turns)}
    return [
        key if turn is None else f"{key} (turn {positions[turn] + 1})"
        for key, turn in missing_slots(
            spec.questions,
            skill=assignment.dialogue.skill.key,
            turn_ids=[t.pk for t in turns],
            answers=answers,
        )
    ]


def missing_slots(
    questions: Sequence[Question],
    *,
    skill: str,
    turn_ids: Sequence[int],
    answers: dict[tuple[str, int | None], Any],
) -> list[tuple[str, int | None]]:
    """The (question key, model Turn pk or None) slots still unanswered among `questions`, for
    a dialogue of `skill` whose model turns are `turn_ids` (in order), given `answers` keyed
    the same way. Free-text questions are optional; a failed gate rules out the questions of
    its scope; a turn-level question is asked up to its `max_turns`."""
    asked = [q for q in questions if q.applies_to(skill) and q.type != "text"]
    failed: set[int | None] = set()
    for gate in (q for q in asked if q.gate):
        for turn in _question_turns(gate, turn_ids):
            value = answers.get((gate.key, turn))
            if value is not None and gate.score(value) == 0.0:
                failed.add(turn)
    missing: list[tuple[str, int | None]] = []
    for question in asked:
        for turn in _question_turns(question, turn_ids):
            if not question.gate and (None in failed or (turn is not None and turn in failed)):
                continue
            if (question.key, turn) not in answers:
                missing.append((question.key, turn))
    return missing


def _question_turns(question: Question, turn_ids: Sequence[int]) -> list[int | None]:
    if question.level == "dialogue":
        return [None]
    limit = len(turn_ids) if question.max_turns is None else min(len(turn_ids), question.max_turns)
    return list(turn_ids[:limit])


def unanswered_count_as_zero(assignment: Assignment) -> bool:
    """Whether the item may be submitted with unanswered questions, which then score 0.

    Seed 001's 0–100 score (`normalised_100`) has a fixed full score, so a tester may leave a
    question unanswered (it earns nothing); other rubrics average answers, so every required
    one is needed. Onboarding items are checked against gold answers: always complete.
    """
    return (
        as_spec(assignment.job.rubric.spec).overall == "normalised_100"
        and assignment.kind == Assignment.Kind.REAL
    )


@transaction.atomic
def assignment_submit(
    *,
    assignment: Assignment,
    user: User,
    now: datetime | None = None,
    confirm_unanswered: bool = False,
) -> Assignment:
    """Submit an item; refused (naming them) while required answers are missing, unless the
    rater confirms after the warning and the rubric counts unanswered questions as 0
    (`unanswered_count_as_zero`). A finished onboarding set that fails the threshold takes the
    rater off the job's real work."""
    assignment = (
        Assignment.objects.select_for_update()
        .select_related("job__rubric", "dialogue__skill")
        .get(pk=assignment.pk)
    )
    check_assignment_access(assignment=assignment, user=user)
    check_assignment_editable(assignment)
    missing = missing_answers(assignment)
    if missing and not (confirm_unanswered and unanswered_count_as_zero(assignment)):
        raise IncompleteError(missing)
    now = now or timezone.now()
    assignment.status = Assignment.Status.SUBMITTED
    assignment.started_at = assignment.started_at or now
    assignment.submitted_at = now
    assignment.save(update_fields=["status", "started_at", "submitted_at"])
    if assignment.kind == Assignment.Kind.ONBOARDING:
        _after_onboarding_item(assignment)
    return assignment


def _after_onboarding_item(assignment: Assignment) -> None:
    job, rater = assignment.job, assignment.rater
    state, rate = onboarding_result(job=job, rater=rater)
    if state == Onboarding.FAILED:
        threshold = job_quality(job).onboarding_threshold
        reason = _("入门筛选准确率 %(rate)s，低于通过线 %(threshold)s") % {
            "rate": f"{0 if rate is None else rate:.0%}",
            "threshold": f"{threshold:.0%}",
        }
        JobRater.objects.filter(job=job, rater=rater).update(
            state=JobRater.State.FAILED_SCREENING, reason=reason, updated_at=timezone.now()
        )
        if job.is_pairwise:
            pairwise_votes_exclude(job=job, rater=rater, reason=reason)
        assignments_revoke_open(job, rater)
        assignments_generate(job=job)
    elif state == Onboarding.PASSED:
        assignments_generate(job=job)
