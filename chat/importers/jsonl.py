"""The platform's own generic JSON Lines format (the export format too): one sample per line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import DatasetImportError
from .fields import (
    GROUNDING_KEYS,
    PERSONA_KEYS,
    SampleRecord,
    as_goal,
    as_object,
    as_profile,
    as_text,
    as_text_list,
    as_triples,
    make_grounding,
    reference_list,
    require,
    type_name,
)

# Unknown keys are refused rather than ignored: a misspelt "reference" or "knowlege" would
# otherwise import silently without the data the researcher meant to give.
LINE_KEYS = ("id", "skill", "context", "response", "references", "grounding", "metadata")
EXTERNAL_ID_MAX_LENGTH = 200  # chat.Sample.external_id


def _unknown_key(obj: dict[str, Any], allowed: tuple[str, ...], *, line: int, prefix: str) -> None:
    for key in obj:
        if key not in allowed:
            raise DatasetImportError(
                f"unknown field (expected one of: {', '.join(allowed)})",
                line=line,
                field=f"{prefix}{key}",
            )


def _external_id(obj: dict[str, Any], *, line: int) -> str:
    if "id" not in obj:
        return str(line)
    value = obj["id"]
    # bool is an int subclass; `true` as an id is a mistake, not the number 1.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise DatasetImportError(
            f"expected a string or an integer, got {type_name(value)}", line=line, field="id"
        )
    text = as_text(value, line=line, field="id")
    if not text.strip():
        raise DatasetImportError("must not be empty", line=line, field="id")
    if len(text) > EXTERNAL_ID_MAX_LENGTH:
        raise DatasetImportError(
            f"longer than {EXTERNAL_ID_MAX_LENGTH} characters", line=line, field="id"
        )
    return text


def _persona(value: object, *, line: int) -> dict[str, list[str]]:
    obj = as_object(value, line=line, field="grounding.persona")
    _unknown_key(obj, PERSONA_KEYS, line=line, prefix="grounding.persona.")
    return {
        key: as_text_list(sentences, line=line, field=f"grounding.persona.{key}")
        for key, sentences in obj.items()
    }


def _metadata(value: object, *, line: int) -> dict[str, Any]:
    """Free labels (`{"topic": "旅游"}`): an object whose values are text, numbers or booleans."""
    obj = as_object(value, line=line, field="metadata")
    for key, item in obj.items():
        if not isinstance(item, str | int | float | bool):
            raise DatasetImportError(
                f"expected text, a number or a boolean, got {type_name(item)}",
                line=line,
                field=f"metadata.{key}",
            )
        if isinstance(item, str):
            as_text(item, line=line, field=f"metadata.{key}")
    return dict(obj)


def parse_grounding(value: object, *, line: int) -> dict[str, Any]:
    obj = as_object(value, line=line, field="grounding")
    _unknown_key(obj, GROUNDING_KEYS, line=line, prefix="grounding.")
    return make_grounding(
        knowledge=as_triples(obj.get("knowledge", []), line=line, field="grounding.knowledge"),
        goal=as_goal(obj.get("goal", []), line=line, field="grounding.goal"),
        user_profile=as_profile(
            obj.get("user_profile", {}), line=line, field="grounding.user_profile"
        ),
        persona=_persona(obj.get("persona", {}), line=line),
        situation=as_text(obj.get("situation", ""), line=line, field="grounding.situation"),
    )


def parse_line(line: int, obj: dict[str, Any]) -> Iterator[SampleRecord]:
    _unknown_key(obj, LINE_KEYS, line=line, prefix="")
    if "response" in obj and "references" in obj:
        raise DatasetImportError(
            "give either 'response' or 'references', not both", line=line, field="references"
        )
    skill = None
    if "skill" in obj:
        skill = as_text(obj["skill"], line=line, field="skill")
    if "references" in obj:
        references = as_text_list(obj["references"], line=line, field="references")
    else:
        references = reference_list(obj, "response", line=line)
    yield SampleRecord(
        line=line,
        external_id=_external_id(obj, line=line),
        skill=skill,
        context=as_text_list(require(obj, "context", line=line), line=line, field="context"),
        references=references,
        grounding=parse_grounding(obj.get("grounding", {}), line=line),
        metadata=_metadata(obj.get("metadata", {}), line=line),
    )
