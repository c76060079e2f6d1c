"""The FED items and FULL follow-ups per language, and their override file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ITEMS_PATH = Path(__file__).parent.parent / "data" / "fed_items.json"
LANGUAGES = ("zh", "en", "ja")

Level = Literal["turn", "dialogue", "all"]


@dataclass(frozen=True)
class FollowupItem:
    """One FED quality: its stable key, level, display name (the FED-Cond-Tag follow-up) and
    follow-ups."""

    name: str
    level: Literal["turn", "dialogue"]
    tag: str
    positive: tuple[str, ...]
    negative: tuple[str, ...]


@dataclass(frozen=True)
class FollowupSet:
    """The items and FULL follow-ups of one language."""

    language: str
    items: tuple[FollowupItem, ...]
    full: tuple[str, ...]

    def select(
        self, level: Level = "all", names: Iterable[str] | None = None
    ) -> tuple[FollowupItem, ...]:
        """Items of ``level``, restricted to ``names`` (kept in the shipped order) when given."""
        if level not in ("turn", "dialogue", "all"):
            raise ValueError(f"level must be 'turn', 'dialogue' or 'all', not {level!r}")
        pool = [item for item in self.items if level == "all" or item.level == level]
        if names is None:
            return tuple(pool)
        wanted = list(dict.fromkeys(names))
        known = {item.name for item in pool}
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise ValueError(f"unknown {level}-level item(s) {unknown}; available: {sorted(known)}")
        if not wanted:
            raise ValueError("names selects no item")
        return tuple(item for item in pool if item.name in wanted)


def load_followups(
    language: str, override: str | os.PathLike[str] | Mapping[str, Any] | None = None
) -> FollowupSet:
    """The shipped FED items and FULL follow-ups of ``language``, edited by ``override``.

    ``override`` is a JSON file or a mapping laid out like one language block of
    ``data/fed_items.json``: ``{"items": [...], "full": [...]}``, both keys optional. An item whose
    ``name`` is shipped replaces the given fields of that item (e.g. only ``"negative"``); a new
    name adds an item and must give ``level``, ``tag``, ``positive`` and ``negative``. ``"full"``
    replaces FULL's follow-ups. Errors name the offending field.
    """
    shipped = json.loads(ITEMS_PATH.read_text(encoding="utf-8"))
    if language not in shipped:
        raise ValueError(f"no follow-ups shipped for language {language!r}; have {LANGUAGES}")
    block = shipped[language]
    items = {raw["name"]: _parse_item(raw, f"{language}.items", None) for raw in block["items"]}
    full = _strings(block["full"], f"{language}.full", allow_empty=False)
    if override is not None:
        data = _read_override(override)
        unknown_keys = set(data) - {"items", "full"}
        if unknown_keys:
            raise ValueError(
                f"override: unknown key(s) {sorted(unknown_keys)}; use 'items', 'full'"
            )
        raw_items = data.get("items", [])
        if not isinstance(raw_items, list):
            raise ValueError("override.items: expected a list of items")
        for position, raw in enumerate(raw_items):
            where = f"override.items[{position}]"
            if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
                raise ValueError(f"{where}: expected an object with a string 'name'")
            items[raw["name"]] = _parse_item(raw, where, items.get(raw["name"]))
        if "full" in data:
            full = _strings(data["full"], "override.full", allow_empty=False)
    return FollowupSet(language=language, items=tuple(items.values()), full=full)


def _read_override(override: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(override, Mapping):
        return override
    try:
        data = json.loads(Path(override).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"override {os.fspath(override)!r}: {exc}") from exc
    if not isinstance(data, Mapping):
        raise ValueError(f"override {os.fspath(override)!r}: expected a JSON object")
    return data


def _parse_item(raw: Mapping[str, Any], where: str, base: FollowupItem | None) -> FollowupItem:
    unknown = set(raw) - {"name", "level", "tag", "positive", "negative"}
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
    fields: dict[str, Any] = {} if base is None else dict(base.__dict__)
    fields["name"] = raw["name"]
    for key in ("level", "tag", "positive", "negative"):
        if key in raw:
            value = raw[key]
            if key == "level" and value not in ("turn", "dialogue"):
                raise ValueError(f"{where}.level: expected 'turn' or 'dialogue', not {value!r}")
            if key == "tag" and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{where}.tag: expected a non-empty string")
            if key in ("positive", "negative"):
                value = _strings(value, f"{where}.{key}", allow_empty=True)
            fields[key] = value
        elif base is None:
            raise ValueError(f"{where}: missing field {key!r}")
    if not fields["positive"] and not fields["negative"]:
        raise ValueError(f"{where}: an item needs at least one follow-up")
    return FollowupItem(**fields)


def _strings(value: Any, where: str, *, allow_empty: bool) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected a list of strings")
    for position, text in enumerate(value):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}[{position}]: expected a non-empty string")
    if not value and not allow_empty:
        raise ValueError(f"{where}: expected at least one follow-up")
    return tuple(value)
