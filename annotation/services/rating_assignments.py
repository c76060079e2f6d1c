"""Who rates what: assignment of a job's dialogues to its raters, deadlines, blocking, and the
next item a rater works on. The answers themselves (autosave, submit) are in `ratings.py`.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Assignment, GoldItem, JobRater, RatingJob, Review
from annotation.selectors.rating import (
    ACTIVE_STATUSES,
    OPEN_STATUSES,
    draw_sample,
    job_dialogues,
    job_source_dialogues,
)
from annotation.selectors.sampling import sample_design_record
from annotation.services.pairwise import pairwise_generate, pairwise_votes_exclude
from annotation.services.quality import Onboarding, job_quality, onboarding_result
from chat.models import Dialogue
from core.errors import ServiceError

_ORDER_MAX = 2**31 - 1


class RatingJobError(ServiceError):
    """A job operation or setting that cannot be done. The message starts with the field at
    fault (`name：…`, `answers[2]：…`), which `field` also holds for pages to attach it."""

    location_style = "in_message"


# --- planning (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """One dialogue: how many more raters it needs, and who may not (or no longer) rate it."""

    dialogue: int
    missing: int
    excluded: frozenset[int] = frozenset()
    holders: frozenset[int] = frozenset()  # raters holding an active assignment for it


@dataclass
class Plan:
    new: list[tuple[int, int]] = field(default_factory=list)  # (dialogue, rater)
    moves: dict[int, int] = field(default_factory=dict)  # movable key → new rater


def assignments_plan(
    *,
    needs: Sequence[Need],
    raters: Sequence[int],
    loads: Mapping[int, int],
    movable: Sequence[tuple[int, int, int]] = (),
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
    holders: dict[int, set[int]] = {n.dialogue: set(n.holders) for n in needs}
    # items: [key, dialogue, rater]; key None = a new assignment
    items: list[list[Any]] = []
    for key, dialogue, rater in movable:
        items.append([key, dialogue, rater])
        holders[dialogue].add(rater)
        load[rater] += 1

    def eligible(need: Need) -> list[int]:
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
    by_dialogue: dict[int | None, set[int]] = defaultdict(set)
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
    job_sample_draw(job=job)
    if job.is_pairwise:
        return pairwise_generate(job=job, raters=_eligible_raters(job), due=due)
    created = _generate_onboarding(job, due)
    raters = _eligible_raters(job)
    dialogues = list(job_dialogues(job).only("id", "worker_id", "recollection_of_id"))
    held = _real_assignments(job, eligible=set(raters), dialogue_ids={d.pk for d in dialogues})
    plan = assignments_plan(
        needs=_needs(job, dialogues, held),
        raters=raters,
        loads=held.loads,
        movable=held.movable,
        seed=job.seed + job.pk,
    )
    _plan_apply(job, plan, held, due)
    created += len(plan.new)
    created += _generate_gold_and_duplicates(job, raters, due)
    return created


@dataclass
class _Held:
    """The job's real assignments as the planner sees them, per dialogue and rater."""

    ever: dict[int, set[int]]  # dialogue → raters who ever held it
    holders: dict[int, set[int]]  # dialogue → raters holding it and keeping it
    loads: dict[int, int]  # rater → active assignments kept
    movable: list[tuple[int, int, int]]  # (assignment, dialogue, rater): not started, may move
    movable_raters: dict[int, set[int]]  # dialogue → raters of its movable assignments


def _real_assignments(job: RatingJob, *, eligible: set[int], dialogue_ids: set[int]) -> _Held:
    """Sort the real assignments: an unopened pending one of an eligible rater on a dialogue still
    in the job may move to another rater; other active ones stay where they are."""
    held = _Held(defaultdict(set), defaultdict(set), defaultdict(int), [], defaultdict(set))
    real = Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).only(
        "id", "dialogue_id", "rater_id", "status", "started_at"
    )
    for a in real:
        held.ever[a.dialogue_id].add(a.rater_id)
        if a.status not in ACTIVE_STATUSES:
            continue
        if (
            a.status == Assignment.Status.PENDING
            and a.started_at is None
            and a.rater_id in eligible
            and a.dialogue_id in dialogue_ids
        ):
            held.movable.append((a.pk, a.dialogue_id, a.rater_id))
            held.movable_raters[a.dialogue_id].add(a.rater_id)
        else:
            held.holders[a.dialogue_id].add(a.rater_id)
            held.loads[a.rater_id] += 1
    return held


def _needs(job: RatingJob, dialogues: list[Dialogue], held: _Held) -> list[Need]:
    """Per dialogue: raters still missing, and who may not rate it (its collector, experts who
    voted to reject it, raters who held it before)."""
    rejecters = _rejecters(dialogues)
    needs = []
    for d in dialogues:
        excluded = (held.ever[d.pk] - held.holders[d.pk]) | rejecters[d.pk]
        if d.worker_id is not None:
            excluded.add(d.worker_id)
        holding = held.holders[d.pk] | held.movable_raters[d.pk]
        needs.append(
            Need(
                dialogue=d.pk,
                missing=job.raters_per_dialogue - len(holding),
                excluded=frozenset(excluded - held.movable_raters[d.pk]),
                holders=frozenset(held.holders[d.pk]),
            )
        )
    return needs


def _plan_apply(job: RatingJob, plan: Plan, held: _Held, due: datetime) -> None:
    """Move the reassigned items to their new raters and create the new ones."""
    current = {key: rater for key, _, rater in held.movable}
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


def job_sample_draw(*, job: RatingJob) -> list[int]:
    """Draw a sampling job's dialogues once (`draw_sample`) and keep them on the job, so later
    dialogues and reopenings do not change what is rated. Returns the sample (pks)."""
    if job.sample_size is None or job.sample:
        return list(job.sample)
    candidates: list[tuple[int, str, int | None]] = list(
        job_source_dialogues(job).values_list("pk", "backend__name", "scenario_id")
    )
    if job.stopping_rule:
        # A job in rounds samples each system on its own (a stratified simple random sample),
        # so that every round's inclusion probabilities are exact (annotation.selectors.sampling).
        candidates = [(pk, system, None) for pk, system, _ in candidates]
    job.sample = draw_sample(candidates, size=job.sample_size, seed=job.sample_seed)
    job.sample_design = sample_design_record(candidates, size=job.sample_size, seed=job.sample_seed)
    RatingJob.objects.filter(pk=job.pk).update(sample=job.sample, sample_design=job.sample_design)
    return list(job.sample)


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
            originals = [a for a in real if a.pk not in duplicated]
            rng.shuffle(originals)
            for original in originals[: max(wanted, 0)]:
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
def assignments_expire_overdue(*, job: RatingJob, now: datetime | None = None) -> int:
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
    expired = assignments_expire_overdue(job=job, now=now)
    if not expired:
        assignments_generate(job=job, now=now)
    return expired


def assignments_revoke_open(job: RatingJob, rater: User) -> int:
    return Assignment.objects.filter(job=job, rater=rater, status__in=OPEN_STATUSES).update(
        status=Assignment.Status.REVOKED
    )


@transaction.atomic
def rater_block(*, job: RatingJob, rater: User, reason: str, by: User | None) -> int:
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
    if job.is_pairwise:
        pairwise_votes_exclude(
            job=job, rater=rater, reason=_("已屏蔽：%(reason)s") % {"reason": member.reason}
        )
    revoked = assignments_revoke_open(job, rater)
    assignments_generate(job=job)
    return revoked


@transaction.atomic
def rater_unblock(*, job: RatingJob, rater: User, by: User | None) -> None:
    updated = JobRater.objects.filter(job=job, rater=rater).update(
        state=JobRater.State.ACTIVE, reason="", changed_by=by, updated_at=timezone.now()
    )
    if not updated:
        raise _not_a_rater(rater)
    assignments_generate(job=job)


def _not_a_rater(rater: User) -> RatingJobError:
    return RatingJobError(
        _("rater：%(name)s 不是本任务的评分专家") % {"name": rater.get_username()}, field="rater"
    )


# --- handing out the next item ----------------------------------------------------------------


def assignment_next(*, job: RatingJob, rater: User) -> Assignment | None:
    """The rater's next open item: onboarding first; real work only once onboarding passed."""
    job_refresh(job=job)
    state, _rate = onboarding_result(job=job, rater=rater)
    if state == Onboarding.FAILED:
        return None
    items = Assignment.objects.filter(job=job, rater=rater, status__in=OPEN_STATUSES)
    if state == Onboarding.PENDING:
        items = items.filter(kind=Assignment.Kind.ONBOARDING)
    return items.order_by("order", "id").first()
