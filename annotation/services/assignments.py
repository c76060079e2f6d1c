"""Who rates what: assignment of a job's dialogues to its raters, deadlines, blocking, and the
answers themselves (autosave, submit).

Invariants (tests/annotation/rating/test_assignment_invariants.py checks them):

- each dialogue gets `raters_per_dialogue` distinct raters when enough are eligible;
- never the expert who collected the dialogue or who reviewed it and voted to reject;
- loads (active real assignments) stay balanced: no rater is given an item while a rater with
  two fewer items could have taken it; without exclusions loads differ by at most 1;
- each rater sees items in a random order seeded by (job seed, job, rater) — reproducible, and
  different per rater;
- an expired or revoked item goes back to the pool and is given to a rater who never held it.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Assignment, GoldItem, JobRater, Rating, RatingJob, Review
from annotation.rubric_spec import AnswerError, Question, as_spec, validate_answer
from annotation.selectors.rating import (
    ACTIVE_STATUSES,
    OPEN_STATUSES,
    job_dialogues,
    model_turns,
)
from annotation.services.quality import Onboarding, job_quality, onboarding_result
from chat.models import Dialogue

_ORDER_MAX = 2**31 - 1


class RatingJobError(ValueError):
    """A job operation or setting that cannot be done. The message starts with the field at
    fault (`name：…`, `answers[2]：…`), which `field` also holds for pages to attach it."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class RatingRuleError(AnswerError):
    """An answer refused by this app's rules (job closed, gate first …), with a localized
    message; a plain `AnswerError` comes from the rubric kernel and is English."""


class IncompleteError(RatingRuleError):
    """Submit refused: required answers are missing (`missing` names them)."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(_("还有未回答的问题：%(missing)s") % {"missing": "、".join(missing)})


def answer_error_text(exc: AnswerError) -> str:
    """The text a page shows for a refused answer: this app's messages as they are; a rubric
    kernel's English message kept, after a Chinese explanation."""
    if isinstance(exc, RatingRuleError):
        return str(exc)
    return _("评分量表不接受这个答案：%(error)s") % {"error": exc}


# --- planning (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """One dialogue: how many more raters it needs, and who may not (or no longer) rate it."""

    dialogue: Hashable
    missing: int
    excluded: frozenset[Hashable] = frozenset()
    holders: frozenset[Hashable] = frozenset()  # raters holding an active assignment for it


@dataclass
class Plan:
    new: list[tuple[Hashable, Hashable]] = field(default_factory=list)  # (dialogue, rater)
    moves: dict[Hashable, Hashable] = field(default_factory=dict)  # movable key → new rater


def plan_assignments(
    *,
    needs: Sequence[Need],
    raters: Sequence[Hashable],
    loads: Mapping[Hashable, int],
    movable: Sequence[tuple[Hashable, Hashable, Hashable]] = (),
    seed: int = 0,
) -> Plan:
    """Give each need's missing raters, least-loaded first, then rebalance.

    `loads` counts each rater's fixed work (started or submitted); `movable` lists (key,
    dialogue, rater) of items not started yet, which may be handed to another rater. Dialogues
    with the fewest eligible raters go first. Rebalancing moves a new or movable item from a
    rater to one with at least two fewer items who may take it, until no such move remains.
    """
    rng = random.Random(seed)
    load = {r: loads.get(r, 0) for r in raters}
    by_dialogue = {need.dialogue: need for need in needs}
    holders: dict[Hashable, set[Hashable]] = {n.dialogue: set(n.holders) for n in needs}
    # items: [key, dialogue, rater]; key None = a new assignment
    items: list[list[Any]] = []
    for key, dialogue, rater in movable:
        items.append([key, dialogue, rater])
        holders[dialogue].add(rater)
        load[rater] += 1

    def eligible(need: Need) -> list[Hashable]:
        return [r for r in raters if r not in need.excluded and r not in holders[need.dialogue]]

    for need in sorted(needs, key=lambda n: (len(eligible(n)), str(n.dialogue))):
        if need.missing <= 0:
            continue
        candidates = eligible(need)
        ties = {r: rng.random() for r in candidates}
        for rater in sorted(candidates, key=lambda r: (load[r], ties[r]))[: need.missing]:
            items.append([None, need.dialogue, rater])
            holders[need.dialogue].add(rater)
            load[rater] += 1

    # Each move lowers Σ load², so the loop ends.
    moved = True
    while moved:
        moved = False
        for item in sorted(items, key=lambda i: -load[i[2]]):
            _, dialogue, rater = item
            need = by_dialogue[dialogue]
            for other in sorted(raters, key=lambda r: load[r]):
                if load[other] > load[rater] - 2:
                    break
                if other in need.excluded or other in holders[dialogue]:
                    continue
                holders[dialogue].discard(rater)
                holders[dialogue].add(other)
                load[rater] -= 1
                load[other] += 1
                item[2] = other
                moved = True
                break
    plan = Plan()
    for key, dialogue, rater in items:
        if key is None:
            plan.new.append((dialogue, rater))
        else:
            plan.moves[key] = rater
    return plan


def order_key(*, job: RatingJob, rater_id: int, dialogue_id: int, salt: str = "") -> int:
    """A rater's random position for an item: reproducible from the job's seed, and different
    per rater (the hash takes the rater's id), whatever order items were assigned in."""
    text = f"{job.seed}:{job.pk}:{rater_id}:{dialogue_id}:{salt}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & _ORDER_MAX


# --- generating, expiring, blocking ------------------------------------------------------------


def _eligible_raters(job: RatingJob) -> list[int]:
    """Active raters who may take real work: no onboarding set, or onboarding passed."""
    members = JobRater.objects.filter(job=job, state=JobRater.State.ACTIVE).select_related("rater")
    return [
        m.rater_id
        for m in members
        if onboarding_result(job=job, rater=m.rater)[0] in (Onboarding.NONE, Onboarding.PASSED)
    ]


def _rejecters(dialogues: list[Dialogue]) -> dict[int, set[int]]:
    """Reviewers who voted to reject each dialogue (or the dialogue it re-collects)."""
    ids = {d.pk for d in dialogues} | {
        d.recollection_of_id for d in dialogues if d.recollection_of_id
    }
    by_dialogue: dict[int, set[int]] = defaultdict(set)
    for dialogue_id, reviewer_id in Review.objects.filter(
        dialogue__in=ids, decision=Review.Decision.REJECT
    ).values_list("dialogue_id", "reviewer_id"):
        by_dialogue[dialogue_id].add(reviewer_id)
    result = {}
    for d in dialogues:
        result[d.pk] = by_dialogue[d.pk] | by_dialogue.get(d.recollection_of_id, set())
    return result


@transaction.atomic
def assignments_generate(*, job: RatingJob, now: datetime | None = None) -> int:
    """Create (and rebalance) the job's assignments; idempotent. Returns how many were created."""
    job = RatingJob.objects.select_for_update().get(pk=job.pk)
    if job.status != RatingJob.Status.OPEN or job.is_live:
        return 0
    now = now or timezone.now()
    due = now + timedelta(hours=job.deadline_hours)
    created = _generate_onboarding(job, due)
    raters = _eligible_raters(job)
    dialogues = list(job_dialogues(job).only("id", "worker_id", "recollection_of_id"))
    dialogue_ids = {d.pk for d in dialogues}
    rejecters = _rejecters(dialogues)
    real = list(
        Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).only(
            "id", "dialogue_id", "rater_id", "status", "started_at"
        )
    )
    ever: dict[int, set[int]] = defaultdict(set)  # raters who ever held the dialogue
    holders: dict[int, set[int]] = defaultdict(set)
    loads: dict[int, int] = defaultdict(int)
    movable = []
    movable_raters: dict[int, set[int]] = defaultdict(set)
    eligible = set(raters)
    for a in real:
        ever[a.dialogue_id].add(a.rater_id)
        if a.status not in ACTIVE_STATUSES:
            continue
        if (
            a.status == Assignment.Status.PENDING
            and a.started_at is None
            and a.rater_id in eligible
            and a.dialogue_id in dialogue_ids
        ):
            movable.append((a.pk, a.dialogue_id, a.rater_id))
            movable_raters[a.dialogue_id].add(a.rater_id)
        else:
            holders[a.dialogue_id].add(a.rater_id)
            loads[a.rater_id] += 1
    needs = []
    for d in dialogues:
        excluded = (ever[d.pk] - holders[d.pk]) | rejecters[d.pk]
        if d.worker_id is not None:
            excluded.add(d.worker_id)
        held = holders[d.pk] | movable_raters[d.pk]
        needs.append(
            Need(
                dialogue=d.pk,
                missing=job.raters_per_dialogue - len(held),
                excluded=frozenset(excluded - movable_raters[d.pk]),
                holders=frozenset(holders[d.pk]),
            )
        )
    plan = plan_assignments(
        needs=needs, raters=raters, loads=loads, movable=movable, seed=job.seed + job.pk
    )
    current = {key: rater for key, _, rater in movable}
    for key, rater in plan.moves.items():
        if current[key] != rater:
            assignment = Assignment.objects.get(pk=key)
            assignment.rater_id = rater
            assignment.order = order_key(
                job=job, rater_id=rater, dialogue_id=assignment.dialogue_id
            )
            assignment.due_at = due
            assignment.save(update_fields=["rater", "order", "due_at"])
    Assignment.objects.bulk_create(
        [
            Assignment(
                job=job,
                dialogue_id=dialogue,
                rater_id=rater,
                kind=Assignment.Kind.REAL,
                order=order_key(job=job, rater_id=rater, dialogue_id=dialogue),
                due_at=due,
            )
            for dialogue, rater in plan.new
        ]
    )
    created += len(plan.new)
    created += _generate_gold_and_duplicates(job, raters, due)
    return created


def _generate_onboarding(job: RatingJob, due: datetime) -> int:
    items = list(GoldItem.objects.filter(job=job, purpose=GoldItem.Purpose.ONBOARDING))
    if not items:
        return 0
    members = JobRater.objects.filter(job=job, state=JobRater.State.ACTIVE)
    # Screening items that expired (or were taken back while the rater was blocked) are given
    # back to the same rater: without them the rater could never pass the screening.
    Assignment.objects.filter(
        job=job,
        kind=Assignment.Kind.ONBOARDING,
        rater__in=members.values("rater"),
        status__in=(Assignment.Status.EXPIRED, Assignment.Status.REVOKED),
    ).update(status=Assignment.Status.PENDING, started_at=None, due_at=due)
    have = set(
        Assignment.objects.filter(job=job, kind=Assignment.Kind.ONBOARDING).values_list(
            "dialogue_id", "rater_id"
        )
    )
    new = [
        Assignment(
            job=job,
            dialogue_id=item.dialogue_id,
            rater_id=member.rater_id,
            kind=Assignment.Kind.ONBOARDING,
            order=position,
            due_at=due,
        )
        for member in members
        for position, item in enumerate(items)
        if (item.dialogue_id, member.rater_id) not in have
    ]
    Assignment.objects.bulk_create(new)
    return len(new)


def _generate_gold_and_duplicates(job: RatingJob, raters: list[int], due: datetime) -> int:
    """Per rater, gold items at `gold_rate` of their real items (rounded up) and duplicates of
    `duplicate_rate` of them; chosen by a seeded shuffle so a rerun picks the same ones."""
    settings = job_quality(job)
    if settings.gold_rate == 0 and settings.duplicate_rate == 0:
        return 0
    gold_items = list(
        GoldItem.objects.filter(job=job, purpose=GoldItem.Purpose.GOLD)
        .select_related("dialogue")
        .order_by("id")
    )
    created = 0
    for rater in raters:
        mine = list(Assignment.objects.filter(job=job, rater_id=rater, status__in=ACTIVE_STATUSES))
        real = sorted((a for a in mine if a.kind == Assignment.Kind.REAL), key=lambda a: a.pk)
        rng = random.Random(f"{job.seed}:{job.pk}:{rater}")
        if settings.gold_rate and gold_items:
            held = set(
                Assignment.objects.filter(
                    job=job, rater_id=rater, kind=Assignment.Kind.GOLD
                ).values_list("dialogue_id", flat=True)
            )
            active = sum(a.kind == Assignment.Kind.GOLD for a in mine)
            wanted = math.ceil(settings.gold_rate * len(real)) - active
            pool = [
                g for g in gold_items if g.dialogue_id not in held and g.dialogue.worker_id != rater
            ]
            rng.shuffle(pool)
            for item in pool[: max(wanted, 0)]:
                Assignment.objects.create(
                    job=job,
                    dialogue_id=item.dialogue_id,
                    rater_id=rater,
                    kind=Assignment.Kind.GOLD,
                    is_gold=True,
                    order=order_key(job=job, rater_id=rater, dialogue_id=item.dialogue_id),
                    due_at=due,
                )
                created += 1
        if settings.duplicate_rate and real:
            duplicated = set(
                Assignment.objects.filter(
                    job=job, rater_id=rater, kind=Assignment.Kind.DUPLICATE
                ).values_list("duplicate_of_id", flat=True)
            )
            wanted = math.ceil(settings.duplicate_rate * len(real)) - len(duplicated)
            pool = [a for a in real if a.pk not in duplicated]
            rng.shuffle(pool)
            for original in pool[: max(wanted, 0)]:
                Assignment.objects.create(
                    job=job,
                    dialogue_id=original.dialogue_id,
                    rater_id=rater,
                    kind=Assignment.Kind.DUPLICATE,
                    duplicate_of=original,
                    order=order_key(
                        job=job, rater_id=rater, dialogue_id=original.dialogue_id, salt="dup"
                    ),
                    due_at=due,
                )
                created += 1
    return created


@transaction.atomic
def expire_overdue(*, job: RatingJob, now: datetime | None = None) -> int:
    """Expire open assignments past their deadline and give their items to other raters."""
    now = now or timezone.now()
    expired = Assignment.objects.filter(job=job, status__in=OPEN_STATUSES, due_at__lt=now).update(
        status=Assignment.Status.EXPIRED
    )
    if expired:
        assignments_generate(job=job, now=now)
    return expired


def job_refresh(*, job: RatingJob, now: datetime | None = None) -> int:
    """Expire overdue work and assign what is new (dialogues accepted since, raters added or
    unblocked). Called lazily whenever an expert fetches work, and by a periodic task."""
    expired = expire_overdue(job=job, now=now)
    if not expired:
        assignments_generate(job=job, now=now)
    return expired


def _revoke_open(job: RatingJob, rater: AbstractBaseUser) -> int:
    return Assignment.objects.filter(job=job, rater=rater, status__in=OPEN_STATUSES).update(
        status=Assignment.Status.REVOKED
    )


@transaction.atomic
def rater_block(
    *, job: RatingJob, rater: AbstractBaseUser, reason: str, by: AbstractBaseUser | None
) -> int:
    """Block a rater in a job; their open items go back to the pool. Returns how many."""
    if not reason.strip():
        raise RatingJobError(_("reason：请写明屏蔽这位评分专家的理由"), field="reason")
    member = JobRater.objects.filter(job=job, rater=rater).first()
    if member is None:
        raise _not_a_rater(rater)
    member.state = JobRater.State.BLOCKED
    member.reason = reason.strip()
    member.changed_by = by
    member.save(update_fields=["state", "reason", "changed_by", "updated_at"])
    revoked = _revoke_open(job, rater)
    assignments_generate(job=job)
    return revoked


@transaction.atomic
def rater_unblock(*, job: RatingJob, rater: AbstractBaseUser, by: AbstractBaseUser | None) -> None:
    updated = JobRater.objects.filter(job=job, rater=rater).update(
        state=JobRater.State.ACTIVE, reason="", changed_by=by, updated_at=timezone.now()
    )
    if not updated:
        raise _not_a_rater(rater)
    assignments_generate(job=job)


def _not_a_rater(rater: AbstractBaseUser) -> RatingJobError:
    return RatingJobError(
        _("rater：%(name)s 不是本任务的评分专家") % {"name": rater.get_username()}, field="rater"
    )


# --- working on an item ------------------------------------------------------------------------


def check_assignment_access(*, assignment: Assignment, user: AbstractBaseUser) -> None:
    """Only the assignment's rater opens it; an expert never rates a dialogue they collected."""
    if assignment.rater_id != user.pk:
        raise PermissionDenied(_("这一条分配给了另一位评分专家。"))
    if not assignment.job.is_live and assignment.dialogue.worker_id == user.pk:
        raise PermissionDenied(_("不能给自己收集的对话评分。"))


def check_assignment_editable(assignment: Assignment) -> None:
    if assignment.status not in OPEN_STATUSES:
        raise RatingRuleError(
            _("这一条已是「%(status)s」状态，答案不能再修改")
            % {"status": assignment.get_status_display()}
        )
    if assignment.job.status != RatingJob.Status.OPEN:
        raise RatingRuleError(_("评分任务不在进行中，不能作答"))


def next_assignment(*, job: RatingJob, rater: AbstractBaseUser) -> Assignment | None:
    """The rater's next open item: onboarding first; real work only once onboarding passed."""
    job_refresh(job=job)
    state, _rate = onboarding_result(job=job, rater=rater)
    if state == Onboarding.FAILED:
        return None
    items = Assignment.objects.filter(job=job, rater=rater, status__in=OPEN_STATUSES)
    if state == Onboarding.PENDING:
        items = items.filter(kind=Assignment.Kind.ONBOARDING)
    return items.order_by("order", "id").first()


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
    user: AbstractBaseUser,
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
    rating, _created = Rating.objects.update_or_create(
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
            stale = stale.filter(turn_id=turn_id)
        stale.delete()
    if assignment.status == Assignment.Status.PENDING:
        assignment_start(assignment=assignment)
    return rating


def missing_answers(assignment: Assignment) -> list[str]:
    """Required answers not given yet, named `key` or `key (turn n)` with n counted from 1.

    Free-text questions are optional; questions a failed gate rules out are not required.
    """
    spec = as_spec(assignment.job.rubric.spec)
    skill = assignment.dialogue.skill.key
    turns = model_turns(assignment.dialogue)
    answers = {
        (r.question, r.turn_id): (r.value if r.value is not None else r.text)
        for r in Rating.objects.filter(assignment=assignment)
    }
    asked = [q for q in spec.questions if q.applies_to(skill) and q.type != "text"]
    failed: set[int | None] = set()
    for gate in (q for q in asked if q.gate):
        for turn in _question_turns(gate, turns):
            value = answers.get((gate.key, turn))
            if value is not None and gate.score(value) == 0.0:
                failed.add(turn)
    missing = []
    for question in asked:
        for position, turn in enumerate(_question_turns(question, turns)):
            if not question.gate and (None in failed or (turn is not None and turn in failed)):
                continue
            if (question.key, turn) not in answers:
                missing.append(
                    question.key if turn is None else f"{question.key} (turn {position + 1})"
                )
    return missing


def _question_turns(question: Question, turns: Sequence[Any]) -> list[int | None]:
    if question.level == "dialogue":
        return [None]
    limit = len(turns) if question.max_turns is None else min(len(turns), question.max_turns)
    return [t.pk for t in turns[:limit]]


@transaction.atomic
def assignment_submit(
    *, assignment: Assignment, user: AbstractBaseUser, now: datetime | None = None
) -> Assignment:
    """Submit an item; refused (naming them) while required answers are missing. A finished
    onboarding set that fails the threshold takes the rater off the job's real work."""
    assignment = (
        Assignment.objects.select_for_update()
        .select_related("job__rubric", "dialogue__skill")
        .get(pk=assignment.pk)
    )
    check_assignment_access(assignment=assignment, user=user)
    check_assignment_editable(assignment)
    missing = missing_answers(assignment)
    if missing:
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
        JobRater.objects.filter(job=job, rater=rater).update(
            state=JobRater.State.FAILED_SCREENING,
            reason=_("入门筛选准确率 %(rate)s，低于通过线 %(threshold)s")
            % {"rate": f"{0 if rate is None else rate:.0%}", "threshold": f"{threshold:.0%}"},
            updated_at=timezone.now(),
        )
        _revoke_open(job, rater)
        assignments_generate(job=job)
    elif state == Onboarding.PASSED:
        assignments_generate(job=job)
