"""The rubric editor's two input modes: a structured form (one row per question) and raw JSON.

Both turn what was posted into a spec dict for `annotation.services.rubrics`; the spec
validator's errors (`questions[3].max: must be greater than min`) are then placed next to the
field they name. Fields the structured form does not show (level definitions, Japanese labels,
measurement, instructions, categories) ride along in a hidden JSON field per row, so editing a
preset in the form keeps them.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from annotation.rubric_spec import OVERALL_MODES, QUESTION_TYPES

EDITOR_LANGUAGES = (("zh", "zh-hans"), ("en", "en"), ("ja", "ja"))  # form suffix, spec language
QUESTION_FIELDS = (
    "key",
    "type",
    "level",
    "label",
    "help",
    "skills",
    "gate",
    "positive",
    "min",
    "max",
    "points",
    "step",
    "options",
    "category",
    "max_turns",
)
_TYPE_FIELDS = {
    "scale": ("min", "max", "step"),
    "likert": ("points", "step"),
    "yesno": ("positive",),
    "choice": ("options",),
    "text": (),
}
# What each type keeps of the fields only the JSON mode edits.
_HIDDEN_BY_TYPE = {
    "scale": ("levels", "measurement"),
    "likert": ("levels", "measurement"),
    "yesno": ("measurement",),
    "choice": ("measurement",),
    "text": (),
}
_TOP_HIDDEN = ("instructions", "categories")
_ROW = re.compile(r"^q-(\d+)-(\w+)$")
_PATH = re.compile(r"^questions\[(\d+)\](?:\.(\w+))?")


@dataclass
class QuestionRow:
    """One question as the form shows it (strings, as typed) and the errors placed on it."""

    index: int
    values: dict[str, Any]
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class EditorForm:
    top: dict[str, Any]
    rows: list[QuestionRow]
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    general: list[str] = field(default_factory=list)

    def place(self, errors: list[tuple[str, str]]) -> None:
        """Put each (path, message) next to its field; what has no field goes on top."""
        for path, message in errors:
            match = _PATH.match(path)
            if match:
                position, name = int(match.group(1)), match.group(2)
                if position < len(self.rows):
                    row = self.rows[position]
                    slot = name if name in QUESTION_FIELDS else "extra"
                    row.errors[slot].append(f"{path}: {message}")
                    continue
            name = path.split(".", 1)[0]
            if name in ("key", "title", "overall", "min_raters"):
                self.errors[name].append(f"{path}: {message}")
            else:
                self.general.append(f"{path}: {message}")


def editor_from_spec(spec: dict[str, Any]) -> EditorForm:
    """The form's values for an existing spec."""
    title = spec.get("title") or {}
    top = {
        "key": spec.get("key", ""),
        "overall": spec.get("overall", "mean"),
        "min_raters": spec.get("min_raters", 1),
        "extra": _dump(
            {k: spec[k] for k in _TOP_HIDDEN if k in spec} | _other_languages(title, "title")
        ),
    }
    for suffix, language in EDITOR_LANGUAGES:
        top[f"title_{suffix}"] = title.get(language, "")
    rows = [
        QuestionRow(index=i, values=_row_values(question))
        for i, question in enumerate(spec.get("questions") or [])
    ]
    return EditorForm(top=top, rows=rows)


def blank_row(index: int) -> QuestionRow:
    return QuestionRow(
        index=index,
        values={
            "type": "yesno",
            "level": "dialogue",
            "positive": "yes",
            "skills": [],
            "extra": "{}",
        },
    )


def editor_from_post(data: QueryDict) -> tuple[EditorForm, dict[str, Any], list[tuple[str, str]]]:
    """The posted form, the spec it describes, and the problems found before validation
    (unparsable hidden JSON, option lines)."""
    problems: list[tuple[str, str]] = []
    top = {name: data.get(name, "").strip() for name in ("key", "overall", "min_raters", "extra")}
    for suffix, _ in EDITOR_LANGUAGES:
        top[f"title_{suffix}"] = data.get(f"title_{suffix}", "").strip()
    indices = sorted({int(m.group(1)) for name in data for m in [_ROW.match(name)] if m})
    rows = []
    for index in indices:
        values = {
            name: data.get(f"q-{index}-{name}", "").strip()
            for name in QUESTION_FIELDS + ("extra",)
            if name not in ("label", "help", "skills")
        }
        values["gate"] = bool(data.get(f"q-{index}-gate"))
        values["skills"] = data.getlist(f"q-{index}-skills")
        for suffix, _ in EDITOR_LANGUAGES:
            for name in ("label", "help"):
                values[f"{name}_{suffix}"] = data.get(f"q-{index}-{name}_{suffix}", "").strip()
        rows.append(QuestionRow(index=index, values=values))
    form = EditorForm(top=top, rows=rows)

    extra = _load(top["extra"], "extra", problems)
    title = _texts(top, "title") | extra.pop("title", {})
    spec: dict[str, Any] = {"key": top["key"], "version": 1, "title": title}
    spec["overall"] = top["overall"]
    spec["min_raters"] = _number(top["min_raters"]) if top["min_raters"] else 1
    spec.update({k: v for k, v in extra.items() if k in _TOP_HIDDEN})
    spec["questions"] = [
        _question(row, f"questions[{position}]", problems) for position, row in enumerate(rows)
    ]
    return form, spec, problems


def parse_json(text: str) -> tuple[Any, list[tuple[str, str]]]:
    """The JSON mode's text as a spec, or the syntax error with its line and column."""
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        return None, [("json", f"line {exc.lineno}, column {exc.colno}: {exc.msg}")]


def spec_json(spec: dict[str, Any]) -> str:
    return json.dumps(spec, ensure_ascii=False, indent=2)


def choices() -> dict[str, Any]:
    return {"types": QUESTION_TYPES, "overall_modes": OVERALL_MODES}


def _question(row: QuestionRow, path: str, problems: list[tuple[str, str]]) -> dict[str, Any]:
    values = row.values
    qtype = values["type"]
    extra = _load(values.get("extra", ""), f"{path}.extra", problems)
    question: dict[str, Any] = {"key": values["key"], "type": qtype, "level": values["level"]}
    label = _texts(values, "label") | extra.pop("label", {})
    question["label"] = label
    help_text = _texts(values, "help") | extra.pop("help", {})
    if help_text:
        question["help"] = help_text
    if values["skills"]:
        question["skills"] = list(values["skills"])
    if values["gate"]:
        question["gate"] = True
    if values["category"]:
        question["category"] = values["category"]
    if values["max_turns"] and values["level"] == "turn":
        question["max_turns"] = _number(values["max_turns"])
    for name in _TYPE_FIELDS.get(qtype, ()):
        if name == "options":
            question["options"] = _options(values["options"], f"{path}.options", problems)
        elif name == "positive":
            if values["positive"] and values["positive"] != "yes":
                question["positive"] = values["positive"]
        elif values[name] != "":
            question[name] = _number(values[name])
    for name in _HIDDEN_BY_TYPE.get(qtype, ()):
        if name in extra:
            question[name] = extra[name]
    return question


def _row_values(question: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {
        "key": question.get("key", ""),
        "type": question.get("type", ""),
        "level": question.get("level", ""),
        "skills": list(question.get("skills") or []),
        "gate": bool(question.get("gate")),
        "positive": question.get("positive", "yes"),
        "category": question.get("category", ""),
        "max_turns": question.get("max_turns", ""),
        "min": question.get("min", ""),
        "max": question.get("max", ""),
        "points": question.get("points", ""),
        "step": question.get("step", ""),
        "options": "\n".join(_option_line(o) for o in question.get("options") or []),
    }
    hidden = {k: question[k] for k in ("levels", "measurement") if k in question}
    for name in ("label", "help"):
        texts = question.get(name) or {}
        for suffix, language in EDITOR_LANGUAGES:
            values[f"{name}_{suffix}"] = texts.get(language, "")
        hidden |= _other_languages(texts, name)
    values["extra"] = _dump(hidden)
    values["levels"] = question.get("levels") or {}
    return values


def _option_line(option: dict[str, Any]) -> str:
    label = option.get("label") or {}
    parts = [label.get(language, "") for _, language in EDITOR_LANGUAGES]
    while parts and not parts[-1]:
        parts.pop()
    if "score" in option:
        parts.append(str(option["score"]))
    return " | ".join(parts)


def _options(text: str, path: str, problems: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """One option per line: `中文 | English | 日本語 | score` (all but Chinese optional)."""
    options = []
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        parts = [part.strip() for part in line.split("|")]
        option: dict[str, Any] = {}
        if len(parts) > 1 and _is_number(parts[-1]):
            option["score"] = _number(parts.pop())
        if len(parts) > len(EDITOR_LANGUAGES):
            problems.append((path, f"{line!r}: write 中文 | English | 日本語 | score"))
        label = {
            lang: text for (_, lang), text in zip(EDITOR_LANGUAGES, parts, strict=False) if text
        }
        option["label"] = label
        options.append(option)
    return options


def _texts(values: dict[str, Any], name: str) -> dict[str, str]:
    return {
        language: values[f"{name}_{suffix}"]
        for suffix, language in EDITOR_LANGUAGES
        if values.get(f"{name}_{suffix}")
    }


def _other_languages(texts: dict[str, str], name: str) -> dict[str, Any]:
    shown = {language for _, language in EDITOR_LANGUAGES}
    others = {k: v for k, v in texts.items() if k not in shown}
    return {name: others} if others else {}


def _load(text: str, path: str, problems: list[tuple[str, str]]) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append((path, f"not JSON: {exc.msg}"))
        return {}
    if not isinstance(value, dict):
        problems.append((path, "must be a JSON object"))
        return {}
    return value


def _dump(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False) if value else "{}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(text: Any) -> Any:
    """An int or float when the text is one; else the text, for the validator to name."""
    if not isinstance(text, str):
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text
