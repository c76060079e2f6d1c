"""The LIC 2021 multi-skill layout used by MSDE's test sets: one sample per line.

`{"subtrack", "goal", "situation", "profile" (or "user_profile"), "knowledge", "history",
"response"}`; the skill comes from `subtrack`. Extra fields (e.g. MSDE's `lurker`) are ignored:
they describe the competition, not the sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .durecdial import parse_goal_path, strip_step_marker
from .errors import DatasetImportError
from .fields import (
    SampleRecord,
    as_goal,
    as_persona_sentences,
    as_profile,
    as_text,
    as_text_list,
    as_triples,
    make_grounding,
    optional_text,
    reference_list,
    require,
)

# LIC 2021's subtrack names (PaddlePaddle/Knover, projects/lic2021) → our skill keys. The MSDE
# data README spells the recommendation subtrack out in full, so that spelling is accepted too.
SUBTRACK_SKILLS = {
    "chitchat": "chitchat",
    "knowledge": "knowledge",
    "recommend": "recommendation",
    "recommendation": "recommendation",
    "persona": "persona",
}


def parse_line(line: int, obj: dict[str, Any]) -> Iterator[SampleRecord]:
    subtrack = as_text(require(obj, "subtrack", line=line), line=line, field="subtrack")
    skill = SUBTRACK_SKILLS.get(subtrack)
    if skill is None:
        raise DatasetImportError(
            f"unknown subtrack '{subtrack}' (expected one of: {', '.join(SUBTRACK_SKILLS)})",
            line=line,
            field="subtrack",
        )
    if "profile" in obj and "user_profile" in obj:
        raise DatasetImportError(
            "give either 'profile' or 'user_profile', not both", line=line, field="user_profile"
        )
    profile_key = "user_profile" if "user_profile" in obj else "profile"
    persona: dict[str, list[str]] = {}
    user_profile: dict[str, str | list[str]] = {}
    if profile_key in obj:
        # A persona line's profile is the bot's persona; elsewhere it describes the user.
        if skill == "persona":
            persona["bot"] = as_persona_sentences(obj[profile_key], line=line, field=profile_key)
        else:
            user_profile = as_profile(obj[profile_key], line=line, field=profile_key)
    goal_value = obj.get("goal", [])
    # Recommendation lines carry DuRecDial's goal path string; knowledge lines DuConv's triples.
    goal: list[str | list[str]]
    if isinstance(goal_value, str):
        # An empty string is how some lines say "no goal", like `[]` elsewhere.
        goal = (
            list(parse_goal_path(goal_value, line=line, field="goal")) if goal_value.strip() else []
        )
    else:
        goal = as_goal(goal_value, line=line, field="goal")
    history = as_text_list(require(obj, "history", line=line), line=line, field="history")
    references = reference_list(obj, "response", line=line)
    if skill == "recommendation":
        # DuRecDial's rule: every utterance may open with its goal step's `[n]`, the response
        # (the reference every metric scores against) as much as the history.
        history = [strip_step_marker(turn) for turn in history]
        references = [strip_step_marker(reference) for reference in references]
    yield SampleRecord(
        line=line,
        external_id=str(line),
        skill=skill,
        context=history,
        references=references,
        grounding=make_grounding(
            knowledge=as_triples(obj.get("knowledge", []), line=line, field="knowledge"),
            goal=goal,
            user_profile=user_profile,
            persona=persona,
            situation=optional_text(obj, "situation", line=line),
        ),
    )
