"""Typed access to the fields of one parsed JSON line, and the normalised sample record.

Every check raises `DatasetImportError` naming the line and the field as the *source file* spells
it, so a researcher can find the mistake in their own file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import DatasetImportError

# The grounding keys a sample may carry (see docs/datasets.md); importers drop empty ones so that
# a chit-chat sample's grounding is `{}` and an export re-imports to the identical value.
GROUNDING_KEYS = ("knowledge", "goal", "user_profile", "persona", "situation")
# `user_unsaid` keeps DuLeMon's persona sentences the user has not revealed yet (see docs).
PERSONA_KEYS = ("bot", "user", "user_unsaid")

_JSON_TYPE_NAMES = {
    dict: "object",
    list: "list",
    str: "string",
    int: "int",
    float: "float",
    bool: "bool",
    type(None): "null",
}


@dataclass(slots=True)
class SampleRecord:
    """One sample as every importer yields it, before it becomes a `chat.Sample` row.

    `skill` is a skill key, or None when the line does not say and the dataset's skill applies.
    """

    line: int
    external_id: str
    skill: str | None
    context: list[str]
    references: list[str]
    grounding: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


def type_name(value: object) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def require(obj: Mapping[str, Any], key: str, *, line: int) -> Any:
    if key not in obj:
        raise DatasetImportError("missing field", line=line, field=key)
    return obj[key]


def as_text(value: object, *, line: int, field: str) -> str:
    if not isinstance(value, str):
        raise DatasetImportError(
            f"expected a string, got {type_name(value)}", line=line, field=field
        )
    # PostgreSQL's jsonb cannot store U+0000; refusing it here keeps SQLite and PostgreSQL alike.
    if "\x00" in value:
        raise DatasetImportError("contains a NUL character (U+0000)", line=line, field=field)
    return value


def as_text_list(value: object, *, line: int, field: str) -> list[str]:
    if not isinstance(value, list):
        raise DatasetImportError(
            f"expected a list of strings, got {type_name(value)}", line=line, field=field
        )
    return [as_text(item, line=line, field=f"{field}[{i}]") for i, item in enumerate(value)]


def as_object(value: object, *, line: int, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DatasetImportError(
            f"expected an object, got {type_name(value)}", line=line, field=field
        )
    return value


def as_triples(value: object, *, line: int, field: str) -> list[list[str]]:
    """Knowledge as `[[subject, predicate, object], ...]`, every element a string."""
    if not isinstance(value, list):
        raise DatasetImportError(
            f"expected a list of [subject, predicate, object] triples, got {type_name(value)}",
            line=line,
            field=field,
        )
    triples = []
    for i, item in enumerate(value):
        triple = as_text_list(item, line=line, field=f"{field}[{i}]")
        if len(triple) != 3:
            raise DatasetImportError(
                f"expected a [subject, predicate, object] triple, got {len(triple)} items",
                line=line,
                field=f"{field}[{i}]",
            )
        triples.append(triple)
    return triples


def as_goal(value: object, *, line: int, field: str) -> list[str | list[str]]:
    """A goal path: steps that are strings (DuRecDial) or lists of strings (DuConv's triples)."""
    if not isinstance(value, list):
        raise DatasetImportError(
            f"expected a list of goal steps, got {type_name(value)}", line=line, field=field
        )
    steps: list[str | list[str]] = []
    for i, step in enumerate(value):
        item_field = f"{field}[{i}]"
        if isinstance(step, list):
            steps.append(as_text_list(step, line=line, field=item_field))
        elif isinstance(step, str):
            steps.append(as_text(step, line=line, field=item_field))
        else:
            raise DatasetImportError(
                f"expected a string or a list of strings, got {type_name(step)}",
                line=line,
                field=item_field,
            )
    return steps


def as_profile(value: object, *, line: int, field: str) -> dict[str, str | list[str]]:
    """A user profile: an object whose values are strings or lists of strings (DuRecDial)."""
    obj = as_object(value, line=line, field=field)
    profile: dict[str, str | list[str]] = {}
    for key, item in obj.items():
        item_field = f"{field}.{key}"
        if isinstance(item, list):
            profile[key] = as_text_list(item, line=line, field=item_field)
        else:
            profile[key] = as_text(item, line=line, field=item_field)
    return profile


def as_persona_sentences(value: object, *, line: int, field: str) -> list[str]:
    """Persona sentences given as a list, or as an object such as `{"persona_0": "…", …}`."""
    if isinstance(value, dict):
        return [as_text(item, line=line, field=f"{field}.{key}") for key, item in value.items()]
    if isinstance(value, list):
        return as_text_list(value, line=line, field=field)
    raise DatasetImportError(
        f"expected a list of strings or an object of strings, got {type_name(value)}",
        line=line,
        field=field,
    )


def optional_text(obj: Mapping[str, Any], key: str, *, line: int) -> str:
    return as_text(obj[key], line=line, field=key) if key in obj else ""


def reference_list(obj: Mapping[str, Any], key: str, *, line: int) -> list[str]:
    """A single `response`: missing or empty means the line has no reference (hidden test sets)."""
    response = optional_text(obj, key, line=line)
    return [response] if response else []


def dialogue_turns(obj: Mapping[str, Any], *, line: int) -> tuple[str, list[str]]:
    """Which layout a line uses: a whole `conversation` (training files) or a test-style
    `history` (+ optional `response`); returns the field name and its utterances."""
    for key in ("conversation", "history"):
        if key in obj:
            return key, as_text_list(obj[key], line=line, field=key)
    raise DatasetImportError(
        "missing field (give a whole 'conversation', or a 'history' and its 'response')",
        line=line,
        field="conversation",
    )


def make_grounding(
    *,
    knowledge: list[list[str]] | None = None,
    goal: Sequence[str | list[str]] | None = None,
    user_profile: dict[str, str | list[str]] | None = None,
    persona: dict[str, list[str]] | None = None,
    situation: str = "",
) -> dict[str, Any]:
    """The grounding dict with empty parts left out, so equal content gives equal JSON."""
    grounding: dict[str, Any] = {}
    if knowledge:
        grounding["knowledge"] = knowledge
    if goal:
        grounding["goal"] = list(goal)
    if user_profile:
        grounding["user_profile"] = user_profile
    kept_persona = {key: sentences for key, sentences in (persona or {}).items() if sentences}
    if kept_persona:
        grounding["persona"] = kept_persona
    if situation:
        grounding["situation"] = situation
    return grounding


def history_sample(
    obj: Mapping[str, Any], turns: list[str], *, line: int, grounding: dict[str, Any] | None = None
) -> SampleRecord:
    """The one sample of a test-set line in the `history` + `response` layout."""
    return SampleRecord(
        line=line,
        external_id=str(line),
        skill=None,
        context=turns,
        references=reference_list(obj, "response", line=line),
        grounding=grounding if grounding is not None else {},
    )
