"""Workers arriving at the same moment, each on its own database connection (threads)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection, connections

from chat.models import Dialogue
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.factories import participant, study

WORKERS = 12


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_simultaneous_arrivals_never_get_the_same_slot():
    if connection.vendor != "postgresql":
        pytest.skip("row locks are what is tested; SQLite runs one write transaction at a time")
    campaign = study(backends=2, scenarios={"knowledge": 4})  # 8 slots for 12 workers
    workers = [participant(campaign) for _ in range(WORKERS)]
    barrier = threading.Barrier(WORKERS)
    errors: list[BaseException] = []

    def arrive(worker) -> None:
        try:
            barrier.wait()
            scenario_assign_next(participant=worker)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=arrive, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    slots = Counter(
        Dialogue.objects.filter(campaign=campaign).values_list("backend_id", "scenario_id")
    )
    assert len(slots) == 8 and set(slots.values()) == {1}
    assert Dialogue.objects.filter(campaign=campaign).count() == 8
