from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import Dialogue
from chat.services.scenario_assignment import (
    AssignmentError,
    dialogue_recollect,
    scenario_assign_next,
    worker_status,
)
from tests.chat.campaigns.factories import participant, study

pytestmark = pytest.mark.django_db


def test_it_creates_an_in_progress_dialogue_with_the_scenario_grounding():
    campaign = study(backends=2, scenarios={"knowledge": 2})
    worker = participant(campaign)
    dialogue = scenario_assign_next(participant=worker)
    assert dialogue is not None
    assert dialogue.status == Dialogue.Status.IN_PROGRESS
    assert dialogue.worker == worker.user
    assert dialogue.skill.key == "knowledge" and dialogue.language == "zh"
    assert dialogue.grounding == dialogue.scenario.grounding
    assert dialogue.scenario.dataset in campaign.datasets.all()


def test_it_resumes_the_dialogue_in_progress():
    campaign = study()
    worker = participant(campaign)
    first = scenario_assign_next(participant=worker)
    assert scenario_assign_next(participant=worker) == first
    assert Dialogue.objects.count() == 1


def test_an_expired_reservation_is_abandoned_and_its_slot_given_to_the_next_worker():
    campaign = study(backends=1, scenarios={"knowledge": 1}, reservation_timeout_minutes=30)
    first = scenario_assign_next(participant=participant(campaign))
    late = participant(campaign)
    assert scenario_assign_next(participant=late) is None  # the only slot is reserved
    later = timezone.now() + timedelta(minutes=31)
    second = scenario_assign_next(participant=late, now=later)
    first.refresh_from_db()
    assert first.status == Dialogue.Status.ABANDONED
    assert (second.backend, second.scenario) == (first.backend, first.scenario)


def test_a_flagged_worker_gets_nothing_and_gives_back_their_reservation():
    campaign = study()
    worker = participant(campaign)
    dialogue = scenario_assign_next(participant=worker)
    worker.flagged = True
    worker.save()
    assert scenario_assign_next(participant=worker) is None
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.ABANDONED


def test_the_per_worker_cap_is_respected():
    campaign = study(backends=2, scenarios={"knowledge": 3}, per_worker_cap=2)
    worker = participant(campaign)
    for _ in range(2):
        dialogue = scenario_assign_next(participant=worker)
        Dialogue.objects.filter(pk=dialogue.pk).update(
            status=Dialogue.Status.SUBMITTED, submitted_at=timezone.now()
        )
    assert scenario_assign_next(participant=worker) is None
    status = worker_status(participant=worker)
    assert (status.done, status.cap, status.has_more, status.finished) == (2, 2, False, True)


def test_recollection_gives_the_same_backend_and_scenario_to_the_same_worker():
    campaign = study()
    worker = participant(campaign)
    dialogue = scenario_assign_next(participant=worker)
    Dialogue.objects.filter(pk=dialogue.pk).update(
        status=Dialogue.Status.REJECTED, submitted_at=timezone.now(), rejection_reason="太短"
    )
    dialogue.refresh_from_db()
    assert worker_status(participant=worker).rejected == [dialogue]
    again = dialogue_recollect(dialogue=dialogue)
    assert (again.backend, again.scenario, again.worker) == (
        dialogue.backend,
        dialogue.scenario,
        dialogue.worker,
    )
    assert again.recollection_of == dialogue and again.status == Dialogue.Status.IN_PROGRESS
    assert dialogue_recollect(dialogue=dialogue) == again  # idempotent while in progress
    assert worker_status(participant=worker).rejected == []


def test_only_a_rejected_dialogue_can_be_recollected():
    campaign = study()
    dialogue = scenario_assign_next(participant=participant(campaign))
    with pytest.raises(AssignmentError):
        dialogue_recollect(dialogue=dialogue)


def _submit(dialogue: Dialogue) -> None:
    Dialogue.objects.filter(pk=dialogue.pk).update(
        status=Dialogue.Status.SUBMITTED, submitted_at=timezone.now()
    )


def test_a_worker_who_had_the_least_collected_cell_gets_the_next_one():
    campaign = study(backends=2, scenarios={"knowledge": 1}, quota_per_cell=2)
    first, second = participant(campaign), participant(campaign)
    a = scenario_assign_next(participant=first)
    _submit(a)
    b = scenario_assign_next(participant=second)
    _submit(b)
    assert a.backend != b.backend
    # Both cells hold one dialogue; `first` already had scenario X with a.backend.
    again = scenario_assign_next(participant=first)
    assert again is not None and again.backend == b.backend
    _submit(again)
    last = scenario_assign_next(participant=second)
    assert last is not None and last.backend == a.backend
    _submit(last)
    assert scenario_assign_next(participant=participant(campaign)) is None  # every quota is met


def test_a_closed_campaign_lets_a_worker_finish_but_gives_nothing_new():
    campaign = study(backends=2, scenarios={"knowledge": 2})
    worker = participant(campaign)
    current = scenario_assign_next(participant=worker)
    campaign.status = "closed"
    campaign.save()
    assert scenario_assign_next(participant=worker) == current
    _submit(current)
    assert scenario_assign_next(participant=worker) is None
    assert scenario_assign_next(participant=participant(campaign)) is None
