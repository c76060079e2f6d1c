"""Assignment invariants over random campaigns and arrival sequences (hypothesis).

Each example builds its own campaign inside the test transaction, so examples do not see each
other's dialogues.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.models import Campaign, Dialogue
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.factories import participant, study

pytestmark = pytest.mark.django_db

SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

designs = st.fixed_dictionaries(
    {
        "backends": st.integers(1, 3),
        "scenarios": st.dictionaries(
            st.sampled_from(["chitchat", "knowledge", "recommendation", "persona"]),
            st.integers(1, 4),
            min_size=1,
            max_size=2,
        ),
        "quota_per_cell": st.sampled_from([0, 0, 1, 2, 3, 5, 7]),
    }
)

HOLDING = (Dialogue.Status.IN_PROGRESS, Dialogue.Status.SUBMITTED, Dialogue.Status.ACCEPTED)


def _submit(dialogue: Dialogue) -> None:
    Dialogue.objects.filter(pk=dialogue.pk).update(
        status=Dialogue.Status.SUBMITTED, submitted_at=timezone.now()
    )


def _state(campaign: Campaign):
    """(cell counts, pair counts, quota per cell, scenarios per skill) of the holding dialogues."""
    backend_ids = list(campaign.campaign_backends.values_list("backend_id", flat=True))
    scenarios: dict[int, list[int]] = {}
    for dataset in campaign.datasets.all():
        for sample in dataset.samples.all():
            scenarios.setdefault(sample.skill_id, []).append(sample.pk)
    pairs = Counter(
        Dialogue.objects.filter(campaign=campaign, status__in=HOLDING).values_list(
            "backend_id", "scenario_id"
        )
    )
    cells = {
        (b, skill_id): sum(pairs[(b, s)] for s in ids)
        for b in backend_ids
        for skill_id, ids in scenarios.items()
    }
    quotas = {
        (b, skill_id): campaign.quota_per_cell or len(ids)
        for b in backend_ids
        for skill_id, ids in scenarios.items()
    }
    return cells, pairs, quotas, scenarios, backend_ids


def _assert_balanced_and_paired(campaign: Campaign) -> None:
    cells, pairs, quotas, scenarios, backend_ids = _state(campaign)
    for cell, count in cells.items():
        assert count <= quotas[cell], f"cell {cell} over quota"
        if count < quotas[cell]:
            # Balance: no cell is more than one ahead of a cell that still has room.
            assert max(cells.values()) <= count + 1, f"unbalanced: {cells}"
    for ids in scenarios.values():
        rounds = math.ceil((campaign.quota_per_cell or len(ids)) / len(ids))
        for b in backend_ids:
            per_scenario = [pairs[(b, s)] for s in ids]
            assert max(per_scenario) <= rounds
            # Rounds: a backend repeats no scenario before it has had every scenario of the skill.
            assert max(per_scenario) - min(per_scenario) <= 1, f"backend {b}: {per_scenario}"
        for s in ids:
            # Pairing: before any backend repeats a scenario, every backend has had it.
            if any(pairs[(b, s)] >= 2 for b in backend_ids):
                assert all(pairs[(b, s)] >= 1 for b in backend_ids), f"scenario {s}: {pairs}"


@SETTINGS
@given(design=designs, leave_open=st.lists(st.booleans(), min_size=1, max_size=25))
def test_fresh_workers_fill_every_cell_balanced_and_paired(design, leave_open):
    campaign = study(**design)
    total = sum(quota for quota in _state(campaign)[2].values())
    for step in range(total + 2):
        dialogue = scenario_assign_next(participant=participant(campaign))
        if step >= total:
            assert dialogue is None, "a slot was given beyond the quotas"
            continue
        assert dialogue is not None, "a fresh worker got nothing while slots remain"
        if not leave_open[step % len(leave_open)]:
            _submit(dialogue)
        _assert_balanced_and_paired(campaign)
    cells, pairs, quotas, scenarios, backend_ids = _state(campaign)
    assert cells == quotas
    for ids in scenarios.values():
        # Paired subsets: every backend was collected on exactly the same scenarios.
        collected = [{s for s in ids if pairs[(b, s)]} for b in backend_ids]
        assert all(subset == collected[0] for subset in collected)


@SETTINGS
@given(
    design=designs,
    cap=st.integers(0, 4),
    arrivals=st.lists(st.integers(0, 3), min_size=1, max_size=25),
)
def test_returning_workers_never_repeat_a_pair_and_stay_under_their_cap(design, cap, arrivals):
    campaign = study(per_worker_cap=cap, **design)
    workers = [participant(campaign) for _ in range(4)]
    for index in arrivals:
        worker = workers[index]
        dialogue = scenario_assign_next(participant=worker)
        if dialogue is not None:
            _submit(dialogue)
        mine = list(
            Dialogue.objects.filter(campaign=campaign, worker=worker.user).values_list(
                "backend_id", "scenario_id"
            )
        )
        assert len(mine) == len(set(mine)), "a worker got the same scenario with a backend twice"
        if cap:
            assert len(mine) <= cap
        cells, pairs, quotas, scenarios, backend_ids = _state(campaign)
        assert all(cells[cell] <= quotas[cell] for cell in cells)
        for ids in scenarios.values():
            rounds = math.ceil((campaign.quota_per_cell or len(ids)) / len(ids))
            assert all(pairs[(b, s)] <= rounds for b in backend_ids for s in ids)


@SETTINGS
@given(
    design=designs,
    steps=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 45)), min_size=1, max_size=30),
)
def test_expired_reservations_are_released_and_reassigned(design, steps):
    campaign = study(reservation_timeout_minutes=30, **design)
    workers = [participant(campaign) for _ in range(5)]
    start = timezone.now()
    clock = start
    for index, minutes in steps:
        clock += timedelta(minutes=minutes)
        dialogue = scenario_assign_next(participant=workers[index], now=clock)
        if dialogue is not None:
            # A new reservation is idle from now on (the test's clock, not the wall clock).
            Dialogue.objects.filter(pk=dialogue.pk).update(updated_at=clock)
        # Nothing still counted as in progress has been idle past the timeout (the arriving
        # worker's own reservation is refreshed by resuming it).
        cutoff = clock - timedelta(minutes=30)
        assert not Dialogue.objects.filter(
            campaign=campaign, status=Dialogue.Status.IN_PROGRESS, updated_at__lt=cutoff
        ).exists()
        cells, pairs, quotas, _, _ = _state(campaign)
        assert all(cells[cell] <= quotas[cell] for cell in cells)
    abandoned = Dialogue.objects.filter(campaign=campaign, status=Dialogue.Status.ABANDONED)
    for dialogue in abandoned:
        assert dialogue.updated_at - timedelta(minutes=30) >= start - timedelta(seconds=1)
