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
