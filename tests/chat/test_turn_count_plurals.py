"""Counts of turns are pluralised (ngettext): an English page says "1 turn", never "1 turns"."""

from __future__ import annotations

import pytest
from django.utils import translation

from chat.models import Dialogue
from chat.selectors.collection import ChatState, with_finish_hint


def _state(**fields) -> ChatState:
    values = {
        "status": Dialogue.Status.IN_PROGRESS,
        "turns_done": 0,
        "max_turns": 1,
        "min_turns": 1,
        "awaiting_reply": False,
        "items_total": 0,
        "items_ticked": 0,
        "can_send": True,
        "can_finish": False,
    }
    return ChatState(**{**values, **fields})


@pytest.mark.parametrize(
    ("count", "english"),
    [(1, "The dialogue needs at least 1 turn."), (3, "The dialogue needs at least 3 turns.")],
)
def test_the_minimum_turns_hint_is_pluralised(count, english):
    with translation.override("en"):
        assert with_finish_hint(_state(min_turns=count, max_turns=5)).finish_hint == english


def test_the_full_chat_hint_is_pluralised():
    with translation.override("en"):
        hint = with_finish_hint(_state(turns_done=1, min_turns=1, max_turns=1)).finish_hint
    assert hint == "Use and tick all the information, or chat for the full 1 turn."
    with translation.override("zh-hans"):
        hint = with_finish_hint(_state(turns_done=2, min_turns=1, max_turns=2)).finish_hint
    assert hint == "请用完并勾选全部信息，或聊满 2 轮。"
