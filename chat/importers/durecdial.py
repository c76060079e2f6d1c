"""DuRecDial (conversational recommendation): situation, goal path, user profile, knowledge.

A training line holds a whole conversation; it becomes one sample per bot turn, the preceding
turns as context, as the LIC 2021 baseline (PaddlePaddle/Knover, `to_sample_for_durecdial`) does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from .errors import DatasetImportError
from .fields import (
    SampleRecord,
    as_profile,
    as_text,
    as_text_list,
    as_triples,
    dialogue_turns,
    history_sample,
    make_grounding,
    optional_text,
    require,
    type_name,
)

_STEP_MARKER = re.compile(r"^\s*\[(\d+)\]\s*")
_USER_OPENS = re.compile(r"User\s*主动")
_BOT_OPENS = re.compile(r"Bot\s*主动")


def strip_step_marker(text: str) -> str:
    """`"[2] 好的 …"` → `"好的 …"`: DuRecDial prefixes turns with the number of their goal step."""
    return _STEP_MARKER.sub("", text, count=1)


def parse_goal_path(value: object, *, line: int, field: str) -> list[str]:
    """`"[1] 寒暄 ( … ) --> [2] 电影推荐 ( … )"` → `["寒暄 ( … )", "电影推荐 ( … )"]`.

    Segments without a `[n]` marker (the `......` that test files put after the revealed steps)
    are skipped, as Knover's `goal_processing` skips them. A list of step strings is accepted too.
    """
    if isinstance(value, str):
        text = as_text(value, line=line, field=field)
        steps = [
            _STEP_MARKER.sub("", segment, count=1).strip()
            for segment in text.split("-->")
            if _STEP_MARKER.match(segment)
        ]
    elif isinstance(value, list):
        steps = [
            strip_step_marker(step).strip() for step in as_text_list(value, line=line, field=field)
        ]
    else:
        raise DatasetImportError(
            f"expected a goal path string ('[1] … --> [2] …') or a list of strings, "
            f"got {type_name(value)}",
            line=line,
            field=field,
        )
    steps = [step for step in steps if step]
    if not steps:
        raise DatasetImportError("no goal steps of the form '[1] …'", line=line, field=field)
    return steps


def bot_opens(goal: list[str]) -> bool:
    """Whether the bot speaks the conversation's first utterance.

    The first step says who takes the initiative ("User 主动" / "Bot 主动"); when it does not,
    fall back on Knover's rule: the bot opens exactly when the first step is a greeting (寒暄).
    """
    first = goal[0]
    if _USER_OPENS.search(first):
        return False
    if _BOT_OPENS.search(first):
        return True
    return first.split("(", 1)[0].strip() == "寒暄"


def parse_line(line: int, obj: dict[str, Any]) -> Iterator[SampleRecord]:
    goal = parse_goal_path(require(obj, "goal", line=line), line=line, field="goal")
    grounding = make_grounding(
        knowledge=as_triples(obj.get("knowledge", []), line=line, field="knowledge"),
        goal=goal,
        user_profile=as_profile(obj.get("user_profile", {}), line=line, field="user_profile"),
        situation=optional_text(obj, "situation", line=line),
    )
    layout, turns = dialogue_turns(obj, line=line)
    turns = [strip_step_marker(turn) for turn in turns]
    if layout == "history":
        sample = history_sample(obj, turns, line=line, grounding=grounding)
        # The reference is the bot's next utterance and carries the same marker as the turns.
        yield replace(sample, references=[strip_step_marker(r) for r in sample.references])
        return
    first_bot_turn = 0 if bot_opens(goal) else 1
    if len(turns) <= first_bot_turn:
        raise DatasetImportError(
            f"has no bot turn ({len(turns)} utterances, the "
            f"{'bot' if first_bot_turn == 0 else 'user'} opens)",
            line=line,
            field="conversation",
        )
    for turn in range(first_bot_turn, len(turns), 2):
        yield SampleRecord(
            line=line,
            external_id=f"{line}-{turn}",
            skill=None,
            context=turns[:turn],
            references=[turns[turn]],
            grounding=grounding,
        )
