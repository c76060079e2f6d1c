"""Query counts per page on the demo data stay flat: a page never issues a query per row.

Wall-clock figures live in benchmarks/page_speed.py; here only the number of SQL queries is
checked, with more rows than one so an N+1 loop would show.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from chat.models import Campaign, Dialogue, Participant, Turn
from chat.services.participation import participant_join
from chat.services.scenario_assignment import scenario_assign_next

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    call_command("load_demo", stdout=io.StringIO())
    campaign = Campaign.objects.get(name="演示·知识对话采集")
    dialogues = []
    for n in range(4):
        user = participant_join(campaign=campaign, external_id=f"q-{n}", source="test")
        dialogue = scenario_assign_next(
            participant=Participant.objects.get(campaign=campaign, user=user)
        )
        for i in range(3):
            Turn.objects.create(dialogue=dialogue, index=2 * i, speaker="user", text="问")
            Turn.objects.create(dialogue=dialogue, index=2 * i + 1, speaker="system", text="答")
        dialogues.append(dialogue)
    Dialogue.objects.filter(pk__in=[d.pk for d in dialogues[1:]]).update(status="submitted")
    return campaign, dialogues


def _as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("who", "page", "most"),
    [
        # The demo's rated study puts every next-step branch to work (metrics, then a report).
        # A researcher's pages read their workspace memberships once (core.access).
        ("researcher", "home", 24),
        # The campaign page counts its pairwise votes in one query (chat.selectors.votes).
        ("researcher", "campaign", 20),
        ("worker", "home", 10),
        ("worker", "chat", 8),
        ("expert", "home", 22),
        ("expert", "review", 12),
    ],
)
def test_pages_answer_in_a_bounded_number_of_queries(
    demo, who, page, most, django_assert_max_num_queries
) -> None:
    from django.contrib.auth.models import User

    campaign, dialogues = demo
    user = dialogues[0].worker if who == "worker" else User.objects.get(username=who)
    url = {
        "home": reverse("home"),
        "campaign": reverse("chat:campaign-detail", args=[campaign.pk]),
        "chat": reverse("chat:live-dialogue", args=[dialogues[0].pk]),
        "review": reverse("annotation:review-dialogue", args=[dialogues[1].pk]),
    }[page]
    client = _as(user)
    client.get(url)  # warm caches (content types, sessions)
    with django_assert_max_num_queries(most):
        assert client.get(url).status_code == 200


def _side_by_side_conversation():
    from chat.models import CampaignBackend, SideBySide
    from core.access import Role
    from tests.chat.factories import BackendFactory, DatasetFactory, SampleFactory, skill
    from tests.conftest import make_user

    dataset = DatasetFactory(skill=skill("chitchat"))
    SampleFactory(dataset=dataset, skill=skill("chitchat"))
    campaign = Campaign.objects.create(
        name="并排·查询数",
        mode=Campaign.Mode.SIDE_BY_SIDE,
        status=Campaign.Status.ACTIVE,
        max_turns=5,
    )
    campaign.skills.add(skill("chitchat"))
    campaign.datasets.add(dataset)
    for alias in ("模型 A", "模型 B"):
        CampaignBackend.objects.create(campaign=campaign, backend=BackendFactory(), alias=alias)
    user = make_user("pat", Role.CROWDWORKER)
    participant = Participant.objects.create(campaign=campaign, user=user, external_id="pat")
    left = scenario_assign_next(participant=participant)
    return user, SideBySide.objects.get(left=left)


def _answer_both(conversation) -> None:
    for dialogue in (conversation.left, conversation.right):
        last = dialogue.turns.order_by("-index").first()
        Turn.objects.create(dialogue=dialogue, index=last.index + 1, speaker="system", text="答")


def test_the_side_by_side_send_and_vote_answer_in_a_bounded_number_of_queries(
    monkeypatch, django_assert_max_num_queries
) -> None:
    """The send is the first-chunk path of both replies (issue 27's load target): both sides
    are saved together (the conversation and both dialogues read locked in one query, both
    sides' turns in one, both utterances in one insert), not one single-chat send after the
    other; the vote's answer renders the controls from what the vote read."""
    from chat.services import replies

    async def dispatched(*, utterance_id: int) -> bool:  # the reply's job: Redis, no query
        return True

    monkeypatch.setattr(replies, "reply_dispatch", dispatched)
    user, conversation = _side_by_side_conversation()
    client = _as(user)
    send = reverse("chat:sbs-send", args=[conversation.pk])
    vote = reverse("chat:sbs-vote", args=[conversation.pk])
    streamed = {"HTTP_ACCEPT": "text/event-stream"}  # as the page's script sends
    assert client.post(send, {"text": "你好，第一句。"}, **streamed).status_code == 200
    _answer_both(conversation)
    assert client.post(vote, {"outcome": "a"}, HTTP_HX_REQUEST="true").status_code == 200
    # The session, the user and their roles (3), then the send's transaction: the three rows
    # locked, the turns, the votes, the insert, the update (+ its savepoint pair in a test).
    with django_assert_max_num_queries(10):
        response = client.post(send, {"text": "第二句话。"}, **streamed)
    assert response.status_code == 200
    assert Turn.objects.filter(dialogue__in=[conversation.left, conversation.right]).count() == 6
    _answer_both(conversation)
    # The vote: the rows, the turns, the votes, the names, the vote source, the insert.
    with django_assert_max_num_queries(11):
        response = client.post(vote, {"outcome": "b"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b'id="sbs-controls"' in response.content
