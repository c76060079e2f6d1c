"""Pairwise (ACUTE-Eval) rating jobs: which pairs of dialogues go to which raters, and which
raters' votes the analyses keep.

The pairing itself is the pure planner of `annotation.pairwise`; this module gathers the job's
state for it and applies its placements. Answers and their votes are in `pairwise_answers.py`.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import Q

from annotation.models import Assignment, GoldItem, JobRater, RatingJob
from annotation.pairwise import (
    Pair,
    item_position,
    left_first,
    pairs_for_scenarios,
    place_pairs,
)
from annotation.selectors.rating import ACTIVE_STATUSES, job_dialogues
from annotation.services.quality import job_quality
from chat.models import Dialogue, Vote


def _seed(job: RatingJob) -> str:
    return f"{job.seed}:{job.pk}"


def job_pairs(job: RatingJob) -> list[Pair]:
    """The job's pairs: every comparison (`all_job_pairs`), or only the drawn ones when the job
    rates a random subset of them (`pair_sample_size`, drawn by `pair_sample_draw`)."""
    pairs = all_job_pairs(job)
    if job.pair_sample_size is None:
        return pairs
    drawn = {tuple(key) for key in job.pair_design.get("drawn", ())}
    return [p for p in pairs if p.key in drawn]


def pair_sample_draw(job: RatingJob) -> list[tuple[int, int]]:
    """Draw a pair-sampling job's comparisons once and record the design on the job, so later
    dialogues and reopenings do not change what is rated. A simple random sample without
    replacement of `pair_sample_size` of the N comparisons (`random.Random(sample_seed)` over
    the comparisons in key order, reproducible): each has inclusion probability π = n/N
    (all of them, π = 1, when n ≥ N). Returns the drawn keys."""
    if job.pair_sample_size is None:
        return []
    if job.pair_design:
        return [(int(a), int(b)) for a, b in job.pair_design["drawn"]]
    keys = sorted(p.key for p in all_job_pairs(job))
    size = min(job.pair_sample_size, len(keys))
    drawn = sorted(random.Random(job.sample_seed).sample(keys, size))
    job.pair_design = {
        "kind": "random",
        "seed": job.sample_seed,
        "size": job.pair_sample_size,
        "population": [list(key) for key in keys],
        "drawn": [list(key) for key in drawn],
        "inclusion": size / len(keys) if keys else None,
    }
    RatingJob.objects.filter(pk=job.pk).update(pair_design=job.pair_design)
    return drawn


def all_job_pairs(job: RatingJob) -> list[Pair]:
    """Every comparison of the job: per scenario (sample and skill), every pair of systems once.

    A system with several accepted dialogues of a scenario (a quota above one) is represented
    by its earliest, so each scenario compares each pair of systems exactly once. Dialogues
    without a scenario (imported ones) cannot be paired and are left out."""
    scenarios: dict[Hashable, dict[Hashable, int]] = defaultdict(dict)
    gold_b = GoldItem.objects.filter(job=job, dialogue_b__isnull=False).values("dialogue_b")
    rows = (
        job_dialogues(job)
        .exclude(pk__in=gold_b)
        .filter(scenario__isnull=False)
        .order_by("pk")
        .values_list("pk", "scenario_id", "skill_id", "backend_id")
    )
    for pk, scenario, skill, backend in rows:
        scenarios[(scenario, skill)].setdefault(backend, pk)
    return pairs_for_scenarios(scenarios)


@dataclass(frozen=True)
class PairShortfall:
    pairs: int  # pairs with fewer raters than the job asks for
    missing: int  # rater slots still open


def pairwise_shortfall(job: RatingJob) -> PairShortfall:
    """How many pairs lack raters (too few eligible raters who saw neither dialogue)."""
    holders = _holders(job)
    short = [
        job.raters_per_dialogue - len(holders.get(p.key, ()))
        for p in job_pairs(job)
        if len(holders.get(p.key, ())) < job.raters_per_dialogue
    ]
    return PairShortfall(len(short), sum(short))


def _pair_key(assignment: Assignment, keys: dict[frozenset[int], tuple[int, int]]) -> tuple | None:
    return keys.get(frozenset((assignment.dialogue_id, assignment.dialogue_b_id or 0)))


def _holders(job: RatingJob) -> dict[tuple[int, int], set[int]]:
    keys = {frozenset(p.key): p.key for p in job_pairs(job)}
    holders: dict[tuple[int, int], set[int]] = defaultdict(set)
    real = Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL, status__in=ACTIVE_STATUSES)
    for a in real.only("dialogue_id", "dialogue_b_id", "rater_id"):
        key = _pair_key(a, keys)
        if key is not None:
            holders[key].add(a.rater_id)
    return holders


def pairwise_generate(*, job: RatingJob, raters: list[int], due: datetime) -> int:
    """Create the job's onboarding, real and gold pair assignments; idempotent. `raters` are
    the raters eligible for real work. Returns how many assignments were created."""
    created = _generate_onboarding(job, due)
    pair_sample_draw(job)
    pairs = job_pairs(job)
    keys = {frozenset(p.key): p.key for p in pairs}
    holders: dict[tuple[int, int], set[int]] = defaultdict(set)
    seen: dict[int, set[int]] = defaultdict(set)
    loads: dict[int, int] = defaultdict(int)
    for a in Assignment.objects.filter(job=job).only(
        "dialogue_id", "dialogue_b_id", "rater_id", "status", "kind"
    ):
        # Every dialogue a rater was ever shown counts, whatever became of the assignment.
        seen[a.rater_id].update(d for d in (a.dialogue_id, a.dialogue_b_id) if d)
        if a.kind == Assignment.Kind.REAL and a.status in ACTIVE_STATUSES:
            loads[a.rater_id] += 1
            key = _pair_key(a, keys)
            if key is not None:
                holders[key].add(a.rater_id)
    workers = dict(
        Dialogue.objects.filter(pk__in=[d for p in pairs for d in p.key]).values_list(
            "pk", "worker_id"
        )
    )
    excluded = {d: {w} for d, w in workers.items() if w is not None}
    placements = place_pairs(
        pairs=pairs,
        raters=raters,
        per_pair=job.raters_per_dialogue,
        holders=holders,
        seen=seen,
        excluded=excluded,
        loads=loads,
        seed=_seed(job),
    )
    Assignment.objects.bulk_create(
        [
            Assignment(
                job=job,
                dialogue_id=p.left,
                dialogue_b_id=p.right,
                rater_id=p.rater,
                kind=Assignment.Kind.REAL,
                order=_order(job, p.rater, p.left, p.right),
                due_at=due,
            )
            for p in placements
        ]
    )
    created += len(placements)
    for p in placements:
        seen[p.rater].update((p.left, p.right))
    created += _generate_gold(job, raters, seen, due)
    return created


def _order(job: RatingJob, rater: int, left: int, right: int) -> int:
    return item_position(seed=_seed(job), rater=rater, pair=(left, right))


def _placed(job: RatingJob, item: GoldItem, rater: int, kind: str, due: datetime) -> Assignment:
    """A gold or onboarding pair for a rater, its sides drawn like a real pair's."""
    assert item.dialogue_b_id is not None
    key = (item.dialogue_id, item.dialogue_b_id)
    first = left_first(seed=_seed(job), pair=key, rater=rater)
    left, right = key if first else key[::-1]
    order = 0 if kind == Assignment.Kind.ONBOARDING else _order(job, rater, left, right)
    return Assignment(
        job=job,
        dialogue_id=left,
        dialogue_b_id=right,
        rater_id=rater,
        kind=kind,
        is_gold=kind == Assignment.Kind.GOLD,
        order=order,
        due_at=due,
    )


def _generate_onboarding(job: RatingJob, due: datetime) -> int:
    """Every active rater gets every onboarding pair; one that expired or was taken back goes
    back to the same rater (without it they could never pass)."""
    items = list(GoldItem.objects.filter(job=job, purpose=GoldItem.Purpose.ONBOARDING))
    if not items:
        return 0
    members = JobRater.objects.filter(job=job, state=JobRater.State.ACTIVE)
    Assignment.objects.filter(
        job=job,
        kind=Assignment.Kind.ONBOARDING,
        rater__in=members.values("rater"),
        status__in=(Assignment.Status.EXPIRED, Assignment.Status.REVOKED),
    ).update(status=Assignment.Status.PENDING, started_at=None, due_at=due)
    have = {
        (frozenset((d, b)), r)
        for d, b, r in Assignment.objects.filter(
            job=job, kind=Assignment.Kind.ONBOARDING
        ).values_list("dialogue_id", "dialogue_b_id", "rater_id")
    }
    new = [
        _placed(job, item, member.rater_id, Assignment.Kind.ONBOARDING, due)
        for member in members
        for item in items
        if (frozenset((item.dialogue_id, item.dialogue_b_id)), member.rater_id) not in have
    ]
    Assignment.objects.bulk_create(new)
    return len(new)


def _generate_gold(
    job: RatingJob, raters: list[int], seen: dict[int, set[int]], due: datetime
) -> int:
    """Gold pairs at `gold_rate` of each rater's real pairs (rounded up), never a pair with a
    dialogue the rater has seen; chosen by a seeded shuffle so a rerun picks the same ones."""
    rate = job_quality(job).gold_rate
    items = list(GoldItem.objects.filter(job=job, purpose=GoldItem.Purpose.GOLD).order_by("id"))
    if not rate or not items:
        return 0
    created = 0
    for rater in raters:
        mine = Assignment.objects.filter(job=job, rater_id=rater, status__in=ACTIVE_STATUSES)
        real = mine.filter(kind=Assignment.Kind.REAL).count()
        wanted = math.ceil(rate * real) - mine.filter(kind=Assignment.Kind.GOLD).count()
        pool = [
            item
            for item in items
            if item.dialogue_id not in seen[rater] and item.dialogue_b_id not in seen[rater]
        ]
        random.Random(f"{_seed(job)}:{rater}").shuffle(pool)
        for item in pool[: max(wanted, 0)]:
            _placed(job, item, rater, Assignment.Kind.GOLD, due).save()
            seen[rater].update((item.dialogue_id, item.dialogue_b_id or item.dialogue_id))
            created += 1
    return created


# --- which votes the analyses keep ------------------------------------------------------------


def job_votes(job: RatingJob) -> Q:
    """The filter for a pairwise job's votes (its source's)."""
    return Q(source_id=job.vote_source_id) if job.vote_source_id else Q(pk__in=[])


def pairwise_votes_exclude(*, job: RatingJob, rater: User, reason: str) -> int:
    """Keep a rater's votes in this job out of the analyses, saying why (ACUTE-Eval drops the
    work of a rater below the onboarding threshold). Returns how many votes changed."""
    if not job.vote_source_id:
        return 0
    return (
        Vote.objects.filter(job_votes(job), voter_user=rater)
        .filter(excluded_reason="")
        .update(excluded_reason=reason[:200])
    )


def pairwise_votes_include(*, job: RatingJob, rater: User) -> int:
    """The researcher's switch back: count a rater's votes in this job again."""
    if not job.vote_source_id:
        return 0
    return (
        Vote.objects.filter(job_votes(job), voter_user=rater)
        .exclude(excluded_reason="")
        .update(excluded_reason="")
    )
