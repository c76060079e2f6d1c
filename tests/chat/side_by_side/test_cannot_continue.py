"""A side-by-side chat that cannot go on (one side broke down) ends early on both sides."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import Dialogue
from chat.services import side_by_side_chat as sbs
from chat.services.collection import CollectionError
from tests.chat.side_by_side.test_services import _answer, _campaign, _conversation

pytestmark = pytest.mark.django_db


def test_after_a_turn_the_worker_may_end_both_sides_as_cannot_continue(client) -> None:
    campaign = _campaign(backends=2)
    campaign.min_turns = 3  # the finish rule does not hold after one turn
    campaign.save(update_fields=["min_turns"])
    participant, conversation = _conversation(campaign)
    worker = participant.user
    with pytest.raises(CollectionError):  # nothing said yet: nothing to end
        sbs.side_by_side_submit(worker=worker, pk=conversation.pk, cannot_continue=True)
    sbs.side_by_side_post(worker=worker, pk=conversation.pk, text="你好你好你好")
    _answer(conversation, right_text="……")
    state = sbs.conversation_state(conversation=conversation)
    assert state.left.can_end_early and state.right.can_end_early and not state.can_finish
    client.force_login(worker)
    page = client.get(reverse("chat:sbs-page", args=[conversation.pk])).content.decode()
    assert 'id="cannot-continue"' in page
    client.post(reverse("chat:sbs-submit", args=[conversation.pk]), {"cannot_continue": "1"})
    for dialogue in (conversation.left, conversation.right):
        dialogue.refresh_from_db()
        assert dialogue.status == Dialogue.Status.SUBMITTED and dialogue.cannot_continue
