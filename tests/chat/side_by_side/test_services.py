"""Side-by-side conversations: assignment (balanced pairs, a stored random order), the vote,
and the two sides kept in step (send, abandon, timeout, review, re-collection)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.services.review import review_submit
from chat.models import Campaign, CampaignBackend, Dialogue, Participant, SideBySide, Turn
from chat.services import scenario_assignment
from chat.services import side_by_side_chat as sbs
from chat.services.collection import CollectionError
from core.access import Role
from tests.chat.factories import BackendFactory, DatasetFactory, SampleFactory, skill
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _campaign(*, backends: int = 3, scenarios: int = 4, **fields: object) -> Campaign:
    dataset = DatasetFactory(skill=skill("chitchat"))
    for _ in range(scenarios):
        SampleFactory(dataset=dataset, skill=skill("chitchat"))
    campaign = Campaign.objects.create(
        name=f"并排-{Campaign.objects.count()}",
        mode=Campaign.Mode.SIDE_BY_SIDE,
        status=Campaign.Status.ACTIVE,
        max_turns=3,
        min_turns=1,
        **fields,
    )
    campaign.skills.add(skill("chitchat"))
    campaign.datasets.add(dataset)
    for position in range(backends):
        CampaignBackend.objects.create(
            campaign=campaign, backend=BackendFactory(), alias=f"模型 {'ABCDEF'[position]}"
        )
    return campaign


def _worker(campaign: Campaign, name: str) -> Participant:
    user = make_user(name, Role.CROWDWORKER)
    return Participant.objects.create(campaign=campaign, user=user, external_id=name)


def _conversation(campaign: Campaign, name: str = "w") -> tuple[Participant, SideBySide]:
    participant = _worker(campaign, name)
    left = scenario_assignment.scenario_assign_next(participant=participant)
    assert left is not None
    return participant, SideBySide.objects.get(left=left)


def _answer(
    conversation: SideBySide, left_text: str = "好的。", right_text: str = "没问题。"
) -> None:
    for dialogue, text in ((conversation.left, left_text), (conversation.right, right_text)):
        last = dialogue.turns.order_by("-index").first()
        assert last is not None  # the utterance being answered
        Turn.objects.create(
            dialogue=dialogue, index=last.index + 1, speaker=Turn.Speaker.SYSTEM, text=text
        )


def test_a_conversation_is_two_dialogues_of_one_scenario_in_a_stored_random_order() -> None:
    campaign = _campaign(backends=2, scenarios=40)
    swaps = []
    for n in range(24):
        _, conversation = _conversation(campaign, f"w{n}")
        left, right = conversation.left, conversation.right
        assert left.scenario_id == right.scenario_id and left.worker_id == right.worker_id
        assert left.backend_id != right.backend_id
        assert conversation.swapped == (left.backend_id > right.backend_id)
        swaps.append(conversation.swapped)
    # A fair coin: 24 draws all on one side has probability 2 × 2⁻²⁴.
    assert True in swaps and False in swaps


def test_uniform_pairing_keeps_the_pairs_balanced() -> None:
    campaign = _campaign(backends=3, scenarios=10)
    pairs: Counter[tuple[int, int]] = Counter()
    for n in range(9):
        _, conversation = _conversation(campaign, f"w{n}")
        pair = sorted((conversation.left.backend_id, conversation.right.backend_id))
        pairs[(pair[0], pair[1])] += 1
        if n % 3 == 2:  # after each round of three, every pair has had its turn
            assert sorted(pairs.values()) == [n // 3 + 1] * 3
    assert sorted(pairs.values()) == [3, 3, 3]


def test_adaptive_pairing_assigns_from_the_votes() -> None:
    campaign = _campaign(backends=3, scenarios=10, pairing=Campaign.Pairing.ADAPTIVE)
    seen = set()
    for n in range(6):
        participant, conversation = _conversation(campaign, f"w{n}")
        seen.add(frozenset((conversation.left.backend_id, conversation.right.backend_id)))
        sbs.side_by_side_post(worker=participant.user, pk=conversation.pk, text="你好你好你好")
        _answer(conversation)
        sbs.side_by_side_vote(worker=participant.user, pk=conversation.pk, outcome="a")
    # Unseen pairs come first under eq. 9: the first conversations cover every pair.
    assert len(seen) == 3


def test_the_vote_is_stored_with_its_turn_and_a_leak_is_flagged() -> None:
    campaign = _campaign(backends=2)
    participant, conversation = _conversation(campaign)
    worker = participant.user
    sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="你好，最近怎么样？")
    _answer(conversation)
    with pytest.raises(CollectionError):  # per turn: the vote before the next utterance
        sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="再聊聊天气吧好不好")
    vote = sbs.side_by_side_vote(
        worker=worker, pk=conversation.pk, outcome="b", reason="更自然"
    ).vote
    assert (vote.turn, vote.outcome, vote.reason) == (1, "b", "更自然")
    assert vote.system_a_id == conversation.left.backend_id
    assert vote.system_b_id == conversation.right.backend_id
    assert vote.item == f"sbs:{conversation.pk}" and vote.voter.startswith("w")
    assert vote.voter_user_id == worker.pk and vote.identity_leak == ""
    assert vote.source.kind == "side_by_side"
    with pytest.raises(CollectionError):  # one vote per turn
        sbs.side_by_side_vote(worker=worker, pk=conversation.pk, outcome="a")
    sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="再聊聊天气吧好不好")
    _answer(conversation, left_text="我是 ChatGPT，由 OpenAI 训练。")
    second = sbs.side_by_side_vote(worker=worker, pk=conversation.pk, outcome="a").vote
    assert second.turn == 2 and second.identity_leak == "chatgpt"


def test_voting_at_the_end_is_once_and_finishing_needs_it() -> None:
    campaign = _campaign(backends=2, vote_timing=Campaign.VoteTiming.END)
    participant, conversation = _conversation(campaign)
    worker = participant.user
    sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="你好，最近怎么样？")
    _answer(conversation)
    sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="今天天气真不错啊")
    _answer(conversation)
    with pytest.raises(CollectionError):
        sbs.side_by_side_submit(worker=worker, pk=conversation.pk)
    vote = sbs.side_by_side_vote(worker=worker, pk=conversation.pk, outcome="tie").vote
    assert vote.turn == 2
    with pytest.raises(CollectionError):
        sbs.side_by_side_vote(worker=worker, pk=conversation.pk, outcome="a")
    with pytest.raises(CollectionError):  # the vote judged the conversation: no turn after it
        sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="还想再聊一句可以吗")
    sbs.side_by_side_submit(worker=worker, pk=conversation.pk)
    statuses = set(
        Dialogue.objects.filter(pk__in=[conversation.left_id, conversation.right_id]).values_list(
            "status", flat=True
        )
    )
    assert statuses == {Dialogue.Status.SUBMITTED}


def test_an_utterance_is_saved_on_both_sides_or_neither() -> None:
    campaign = _campaign(backends=2)
    participant, conversation = _conversation(campaign)
    with pytest.raises(CollectionError):
        sbs.side_by_side_post(worker=participant.user, pk=conversation.pk, text="")
    assert not Turn.objects.filter(dialogue__in=[conversation.left, conversation.right]).exists()
    sbs.side_by_side_post(worker=participant.user, pk=conversation.pk, text="你好，最近怎么样？")
    texts = [
        list(Turn.objects.filter(dialogue=d).values_list("text", flat=True))
        for d in (conversation.left, conversation.right)
    ]
    assert texts == [["你好，最近怎么样？"], ["你好，最近怎么样？"]]


def test_a_reviewer_rejecting_one_side_rejects_both_and_they_are_recollected_together() -> None:
    campaign = _campaign(backends=2, vote_timing=Campaign.VoteTiming.END)
    participant, conversation = _conversation(campaign)
    worker = participant.user
    sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="你好，最近怎么样？")
    _answer(conversation)
    sbs.side_by_side_vote(worker=worker, pk=conversation.pk, outcome="a")
    sbs.side_by_side_submit(worker=worker, pk=conversation.pk)
    reviewer = make_user("rita", Role.EXPERT)
    review_submit(
        dialogue=conversation.left, reviewer=reviewer, decision="reject", comment="太短了"
    )
    conversation.left.refresh_from_db()
    conversation.right.refresh_from_db()
    assert conversation.left.status == conversation.right.status == Dialogue.Status.REJECTED
    assert conversation.right.rejection_reason == conversation.left.rejection_reason
    status = scenario_assignment.worker_status(participant=participant)
    assert [d.pk for d in status.rejected] == [conversation.left_id]  # one per conversation
    fresh = scenario_assignment.dialogue_recollect(dialogue=conversation.right)
    again = SideBySide.objects.get(left=fresh)
    assert again.recollection_of_id == conversation.pk and again.swapped == conversation.swapped
    assert again.right.backend_id == conversation.right.backend_id
    assert again.right.recollection_of_id == conversation.right_id


def test_abandoning_or_timing_out_one_side_ends_both() -> None:
    campaign = _campaign(backends=2)
    participant, conversation = _conversation(campaign)
    scenario_assignment.dialogue_abandon(dialogue=conversation.left, reason="unfamiliar")
    conversation.right.refresh_from_db()
    assert conversation.right.status == Dialogue.Status.ABANDONED
    assert conversation.right.abandon_reason == "unfamiliar"

    _, other = _conversation(campaign, "late")
    Dialogue.objects.filter(pk=other.left_id).update(updated_at=timezone.now() - timedelta(hours=2))
    released = scenario_assignment.scenario_holds_release_expired(campaign=campaign)
    assert released == 2
    assert set(
        Dialogue.objects.filter(pk__in=[other.left_id, other.right_id]).values_list(
            "abandon_reason", flat=True
        )
    ) == {"timeout"}


def test_another_workers_conversation_is_a_404() -> None:
    from django.http import Http404

    campaign = _campaign(backends=2)
    _, conversation = _conversation(campaign)
    stranger = make_user("mallory", Role.CROWDWORKER)
    with pytest.raises(Http404):
        sbs.side_by_side_post(worker=stranger, pk=conversation.pk, text="你好你好你好")


def test_a_side_by_side_campaign_needs_two_backends() -> None:
    from chat.services.campaigns import campaign_readiness_problems

    campaign = _campaign(backends=1)
    assert any("两个" in problem for problem in campaign_readiness_problems(campaign))
