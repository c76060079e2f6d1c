"""Seed 001's multi-turn score of a rate-while-chatting campaign, checked against the seed's
formula by hand: Σ points / (chats × 2 categories × 4 indicators × 5 turns) × 100, where every
finished chat counts, whatever its tester left unrated."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.models import Assignment
from annotation.selectors.human_scores import (
    campaign_rater_shortfalls,
    job_scores,
    normalised_system_scores,
)
from annotation.selectors.rating import model_turns
from annotation.services.live import live_job_for, live_rating_save
from chat.models import Dialogue
from chat.services.collection import dialogue_submit
from core.access import Role
from tests.annotation.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DialogueFactory,
    TurnFactory,
    skill,
)
from tests.annotation.results.factories import MULTI_KEYS
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _chat(campaign, backend, worker, replies: int) -> Dialogue:
    dialogue = DialogueFactory(
        campaign=campaign,
        backend=backend,
        worker=worker,
        status=Dialogue.Status.IN_PROGRESS,
        skill=skill("chitchat"),
        grounding={},
    )
    for i in range(replies):
        TurnFactory(dialogue=dialogue, index=2 * i, speaker="user", text=f"问{i}")
        TurnFactory(dialogue=dialogue, index=2 * i + 1, speaker="system", text=f"答{i}")
    return dialogue


def _rate(dialogue: Dialogue, worker, yes_per_reply: list[int]) -> None:
    for turn, yes in zip(model_turns(dialogue), yes_per_reply, strict=False):
        answers = {key: int(i < yes) for i, key in enumerate(MULTI_KEYS)}
        live_rating_save(turn=turn, user=worker, answers=answers)


def test_a_chat_ended_before_any_reply_was_rated_counts_as_zero_in_the_system_score():
    """The issue's case: a tester presses "cannot continue" before rating anything. The chat
    has no live assignment, and it must still be in the denominator, the completeness and the
    tester count."""
    campaign = CampaignFactory(rate_while_chatting=True, min_turns=1, max_turns=10)
    backend = BackendFactory(name="sys-a")
    CampaignBackendFactory(campaign=campaign, backend=backend, alias="模型 A")
    workers = [make_user(f"tester-{i}", Role.CROWDWORKER) for i in range(4)]

    full = _chat(campaign, backend, workers[0], 5)
    _rate(full, workers[0], [8, 8, 8, 8, 8])  # 40 points
    dialogue_submit(dialogue=full)
    half = _chat(campaign, backend, workers[1], 2)
    _rate(half, workers[1], [4])  # 4 points; the second reply left unrated
    dialogue_submit(dialogue=half, cannot_continue=True)
    unrated = _chat(campaign, backend, workers[2], 1)
    dialogue_submit(dialogue=unrated, cannot_continue=True)  # nothing rated at all
    held = _chat(campaign, backend, workers[3], 1)
    _rate(held, workers[3], [8])  # still being held: not a finished test yet
    Dialogue.objects.filter(pk__in=[full.pk, half.pk]).update(status=Dialogue.Status.ACCEPTED)
    job = live_job_for(campaign)
    assert not Assignment.objects.filter(job=job, dialogue=unrated).exists()

    scores = job_scores(job=job)
    by_chat = {s.unit: (s.points, s.max_points, s.n_unanswered) for s in scores.unit_scores}
    assert by_chat == {
        full.pk: (40.0, 40.0, 0),
        half.pk: (4.0, 40.0, 8),
        unrated.pk: (0.0, 40.0, 8),
    }
    # 44 of 3 chats × 2 × 4 × 5 = 120 points (the old count, without the unrated chat: 55.0)
    (pooled,) = [s for s in normalised_system_scores(job=job) if s.skill is None]
    assert (pooled.score, pooled.n_dialogues) == (pytest.approx(100 * 44 / 120), 3)
    completeness = scores.completeness()
    assert (completeness["n_units"], completeness["n_incomplete_units"]) == (3, 2)
    (shortfall,) = campaign_rater_shortfalls(campaign_id=campaign.pk)
    assert [(s.backend, s.n_raters) for s in shortfall.shortfalls] == [("sys-a", 3)]


def test_a_rejected_live_chat_leaves_the_score_and_its_re_collection_counts():
    campaign = CampaignFactory(rate_while_chatting=True, min_turns=1, max_turns=10)
    backend = BackendFactory(name="sys-b")
    CampaignBackendFactory(campaign=campaign, backend=backend, alias="模型 B")
    worker = make_user("tester-r", Role.CROWDWORKER)
    rejected = _chat(campaign, backend, worker, 1)
    _rate(rejected, worker, [8])
    dialogue_submit(dialogue=rejected)
    Dialogue.objects.filter(pk=rejected.pk).update(status=Dialogue.Status.REJECTED)
    again = _chat(campaign, backend, worker, 1)
    _rate(again, worker, [2])
    Dialogue.objects.filter(pk=again.pk).update(
        status=Dialogue.Status.SUBMITTED, submitted_at=timezone.now()
    )

    scores = job_scores(job=live_job_for(campaign))
    assert [(s.unit, s.points) for s in scores.unit_scores] == [(again.pk, 2.0)]
