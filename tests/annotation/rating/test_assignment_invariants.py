"""Assignment invariants, property-based on the planner and checked on the database."""

from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Assignment, JobRater, Review
from annotation.services.rating_assignments import (
    Need,
    assignments_expire_overdue,
    assignments_generate,
    assignments_plan,
    order_key,
    rater_block,
    rater_unblock,
)
from annotation.services.rating_jobs import job_create, job_open
from chat.models import Dialogue
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts, rubric


@st.composite
def scenarios(draw, with_exclusions: bool):
    n_raters = draw(st.integers(1, 8))
    raters = list(range(n_raters))
    k = draw(st.integers(1, 5))
    n_dialogues = draw(st.integers(0, 25))
    needs = []
    for d in range(n_dialogues):
        excluded = (
            frozenset(draw(st.sets(st.sampled_from(raters), max_size=3)))
            if with_exclusions
            else frozenset()
        )
        needs.append(Need(dialogue=d, missing=k, excluded=excluded))
    seed = draw(st.integers(0, 10_000))
    return needs, raters, k, seed


def _loads(plan, raters):
    loads = Counter(dict.fromkeys(raters, 0))
    loads.update(r for _, r in plan.new)
    return loads


@given(scenarios(with_exclusions=False))
@settings(max_examples=200)
def test_without_exclusions_each_dialogue_gets_k_raters_and_loads_differ_by_at_most_one(case):
    needs, raters, k, seed = case
    plan = assignments_plan(needs=needs, raters=raters, loads={}, seed=seed)
    per_dialogue = defaultdict(list)
    for dialogue, rater in plan.new:
        per_dialogue[dialogue].append(rater)
    for need in needs:
        got = per_dialogue[need.dialogue]
        assert len(got) == len(set(got)) == min(k, len(raters))
    loads = _loads(plan, raters)
    assert max(loads.values()) - min(loads.values()) <= 1


@given(scenarios(with_exclusions=True))
@settings(max_examples=300)
def test_with_exclusions_nobody_excluded_rates_and_no_move_could_balance_better(case):
    needs, raters, k, seed = case
    plan = assignments_plan(needs=needs, raters=raters, loads={}, seed=seed)
    per_dialogue = defaultdict(set)
    for dialogue, rater in plan.new:
        assert rater not in per_dialogue[dialogue], "a rater twice on one dialogue"
        per_dialogue[dialogue].add(rater)
    loads = _loads(plan, raters)
    for need in needs:
        got = per_dialogue[need.dialogue]
        assert not got & need.excluded
        assert len(got) == min(k, len(set(raters) - need.excluded))
        # balanced "when possible": no rater with ≥ 2 fewer items could take one of these
        for rater in got:
            for other in set(raters) - need.excluded - got:
                assert loads[other] > loads[rater] - 2


@given(st.integers(0, 1000), st.integers(1, 50), st.integers(1, 50))
def test_order_is_reproducible_and_differs_per_rater(seed, rater_a, dialogue):
    class Job:  # order_key reads only seed and pk
        pk = 7

    job = Job()
    job.seed = seed
    assert order_key(job=job, rater_id=rater_a, dialogue_id=dialogue) == order_key(
        job=job, rater_id=rater_a, dialogue_id=dialogue
    )
    orders = [
        sorted(range(30), key=lambda d, r=r: order_key(job=job, rater_id=r, dialogue_id=d))
        for r in (rater_a, rater_a + 1000)
    ]
    assert orders[0] != orders[1]


def _job(campaign, raters, k=3, **kwargs):
    job = job_create(
        name=f"job-{campaign.pk}",
        campaign=campaign,
        rubric=rubric("msde"),
        created_by=None,
        raters=raters,
        raters_per_dialogue=k,
        **kwargs,
    )
    return job_open(job=job)


def _active(job):
    return Assignment.objects.filter(
        job=job,
        kind=Assignment.Kind.REAL,
        status__in=[Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS, "submitted"],
    )


@pytest.mark.django_db
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_dialogues=st.integers(1, 9), n_raters=st.integers(3, 6), seed=st.integers(0, 99))
def test_database_assignment_respects_collectors_and_rejecting_reviewers(
    n_dialogues, n_raters, seed
):
    Assignment.objects.all().delete()
    campaign = CampaignFactory()
    pool = experts(n_raters, prefix=f"h{campaign.pk}-")
    dialogues = []
    for i in range(n_dialogues):
        collector = pool[i % n_raters] if i % 2 == 0 else None
        dialogue = dialogue_with_turns(campaign=campaign, worker=collector)
        if i % 3 == 0:
            rejecter = pool[(i + 1) % n_raters]
            Review.objects.create(dialogue=dialogue, reviewer=rejecter, decision="reject")
        dialogues.append(dialogue)
    dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED)  # not accepted yet
    job = _job(campaign, pool, k=3, seed=seed)
    for dialogue in dialogues:
        raters = set(_active(job).filter(dialogue=dialogue).values_list("rater_id", flat=True))
        forbidden = {dialogue.worker_id} | set(
            Review.objects.filter(dialogue=dialogue, decision="reject").values_list(
                "reviewer_id", flat=True
            )
        )
        assert not raters & forbidden
        assert len(raters) == min(3, n_raters - len(forbidden - {None}))
    assert _active(job).count() == sum(
        min(3, n_raters - len({d.worker_id} - {None}) - (1 if i % 3 == 0 else 0))
        for i, d in enumerate(dialogues)
    )
    assert assignments_generate(job=job) == 0, "generation is idempotent"


@pytest.mark.django_db
def test_each_rater_sees_a_different_reproducible_random_order():
    campaign = CampaignFactory()
    pool = experts(3)
    for _ in range(8):
        dialogue_with_turns(campaign=campaign)
    job = _job(campaign, pool, k=3, seed=5)

    def sequence(rater):
        return list(_active(job).filter(rater=rater).order_by("order").values_list("dialogue_id"))

    first = [sequence(r) for r in pool]
    assert len({tuple(s) for s in first}) > 1
    Assignment.objects.filter(job=job).delete()
    assignments_generate(job=job)
    assert [sequence(r) for r in pool] == first


@pytest.mark.django_db
def test_expired_items_go_to_a_rater_who_never_held_them():
    campaign = CampaignFactory()
    pool = experts(4)
    dialogue = dialogue_with_turns(campaign=campaign)
    job = _job(campaign, pool, k=2, deadline_hours=24)
    before = set(_active(job).values_list("rater_id", flat=True))
    assert len(before) == 2
    expired = assignments_expire_overdue(job=job, now=timezone.now() + timedelta(hours=25))
    assert expired == 2
    after = set(_active(job).values_list("rater_id", flat=True))
    assert len(after) == 2 and not after & before
    assert Assignment.objects.filter(job=job, dialogue=dialogue, status="expired").count() == 2


@pytest.mark.django_db
def test_blocking_a_rater_returns_their_open_items_to_the_pool():
    campaign = CampaignFactory()
    pool = experts(4)
    for _ in range(6):
        dialogue_with_turns(campaign=campaign)
    job = _job(campaign, pool, k=3)
    blocked = pool[0]
    held = set(_active(job).filter(rater=blocked).values_list("dialogue_id", flat=True))
    assert held
    revoked = rater_block(job=job, rater=blocked, reason="乱答", by=None)
    assert revoked == len(held)
    assert not _active(job).filter(rater=blocked).exists()
    for dialogue_id in held:
        assert _active(job).filter(dialogue_id=dialogue_id).count() == 3
    assert JobRater.objects.get(job=job, rater=blocked).state == JobRater.State.BLOCKED
    loads = Counter(_active(job).values_list("rater_id", flat=True))
    assert max(loads.values()) - min(loads.values()) <= 1

    rater_unblock(job=job, rater=blocked, by=None)
    assert JobRater.objects.get(job=job, rater=blocked).state == JobRater.State.ACTIVE
    # Unblocked, the rater takes back a share of the items not started yet (never their old ones).
    regained = set(_active(job).filter(rater=blocked).values_list("dialogue_id", flat=True))
    assert not regained & held


@pytest.mark.django_db
def test_the_periodic_task_expires_overdue_work_and_assigns_new_dialogues():
    from annotation.tasks import expire_overdue_assignments

    campaign = CampaignFactory()
    pool = experts(3)
    dialogue_with_turns(campaign=campaign)
    job = _job(campaign, pool, k=1, deadline_hours=1)
    assert expire_overdue_assignments() == 0
    late = dialogue_with_turns(campaign=campaign)  # accepted after the job opened
    expire_overdue_assignments()
    assert _active(job).filter(dialogue=late).count() == 1
    Assignment.objects.filter(job=job).update(due_at=timezone.now() - timedelta(minutes=1))
    assert expire_overdue_assignments() == 2
    assert _active(job).count() == 2


def test_beat_runs_the_rating_assignments_sweep_on_the_configured_interval(settings):
    # It was never scheduled: overdue work waited until an expert happened to open a page.
    from config.celery import app

    app.loader.import_default_modules()
    entries = [e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"].startswith("annot")]
    assert entries == [
        {
            "task": "annotation.expire_overdue_assignments",
            "schedule": settings.ASSIGNMENT_SWEEP_INTERVAL,
            "options": {"queue": "default", "expires": settings.ASSIGNMENT_SWEEP_INTERVAL},
        }
    ]
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks, entry["task"]
