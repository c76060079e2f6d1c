"""Checks a crowdworker's utterance must pass before it is sent, and flagging repeat offenders.

The settings live in `Campaign.acceptability` (defaults and meaning:
`chat.models.default_acceptability`). Messages are in the active language (the worker's), so
the chat page shows them as they are.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from chat.models import Campaign, Dialogue, Language, Participant
from chat.services.campaigns import acceptability_settings

# Capitals-only text is refused from this many Latin letters on ("OK", "USA" are fine).
ALL_CAPS_MIN_LETTERS = 6
# Near-copies are only judged on utterances of this many normalised characters: repeating a
# short "好的" or "yes" is ordinary conversation.
REPEAT_MIN_CHARS = 4
# Punctuation that makes a knowledge triple's object a sentence (a description, a comment)
# rather than a name: a name is said, a sentence may be copied.
SENTENCE_PUNCTUATION = frozenset("。！？；，,!?;")


@dataclass(frozen=True)
class Violation:
    code: str  # empty | too_short | all_caps | repeat | grounding_copy | unsafe
    message: str  # in the active language


def normalise(text: str) -> str:
    """NFKC, case-folded, letters and digits only (spaces and punctuation dropped)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN")


def _length(text: str, language: str) -> int:
    """Words for English; letters and digits (characters) for Chinese and Japanese."""
    if language == Language.EN:
        return sum(1 for token in text.split() if normalise(token))
    return len(normalise(text))


def _is_all_caps(text: str) -> bool:
    letters = [ch for ch in unicodedata.normalize("NFKC", text) if "a" <= ch.casefold() <= "z"]
    return len(letters) >= ALL_CAPS_MIN_LETTERS and all(ch.isupper() for ch in letters)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def _topics(grounding: dict[str, Any]) -> set[str]:
    """The names the dialogue is about: the triples' subjects and the topic-path entries that
    name a triple's subject or object. Saying them is the task, however long they are (a
    Japanese title such as 千と千尋の神隠し has more characters than most Chinese ones)."""
    knowledge = grounding.get("knowledge")
    triples = (
        [t for t in knowledge if isinstance(t, list | tuple)] if isinstance(knowledge, list) else []
    )
    parts = {normalise(part) for triple in triples for part in _strings(triple)}
    topics = {normalise(next(_strings(triple), "")) for triple in triples}
    topics |= {normalise(entry) for entry in _strings(grounding.get("goal") or [])} & parts
    topics.discard("")
    return topics


def _is_name(raw: str) -> bool:
    """A triple part that names something (a film, a book, a place, an award) rather than
    describing it: no sentence punctuation, and no English sentence's full stop."""
    text = raw.strip()
    return not (
        any(ch in SENTENCE_PUNCTUATION for ch in text) or ". " in text or text.endswith(".")
    )


def _entities(grounding: dict[str, Any]) -> list[str]:
    """Normalised entity names of the grounding, longest first: the topics (`_topics`) and
    every knowledge triple's subject and object that reads as a name (`_is_name`). Workers are
    asked to talk about them, so naming one is never copying (issue 22 item 12)."""
    knowledge = grounding.get("knowledge")
    triples = (
        [t for t in knowledge if isinstance(t, list | tuple)] if isinstance(knowledge, list) else []
    )
    names = set(_topics(grounding))
    for triple in triples:
        parts = list(_strings(triple))
        for raw in parts[:1] + parts[2:]:
            if _is_name(raw):
                names.add(normalise(raw))
    names.discard("")
    return sorted(names, key=len, reverse=True)


def _grounding_items(grounding: dict[str, Any]) -> list[str]:
    """Normalised grounding items: each triple joined, each profile/persona/goal line, strings
    (the topic names excepted, see `_topics`)."""
    items: list[str] = []
    for key, value in grounding.items():
        if key == "knowledge" and isinstance(value, list):
            for triple in value:
                items.append(normalise("".join(_strings(triple))))
                items.extend(normalise(part) for part in _strings(triple))
        elif isinstance(value, dict):
            for field, item in value.items():
                joined = "".join(_strings(item))
                items.append(normalise(joined))
                items.append(normalise(f"{field}{joined}"))
                items.extend(normalise(part) for part in _strings(item))
        else:
            items.extend(normalise(part) for part in _strings(value))
    topics = _topics(grounding)
    return [item for item in dict.fromkeys(items) if item and item not in topics]


def _copies_grounding(text: str, grounding: dict[str, Any], min_chars: int) -> bool:
    """Copying is `min_chars` consecutive characters shared with one grounding item: the one
    threshold the campaign form shows (「照抄判定的连续字数」, 20 by default; 0 turns it off).
    Entity names are taken out of the utterance first (each replaced by a character that no
    normalised item contains), so naming a book or a place, however long its name, never
    counts, and a run is only what the worker copied around them."""
    if min_chars <= 0:
        return False
    for name in _entities(grounding):
        text = text.replace(name, "\x00")
    for item in _grounding_items(grounding):
        if len(item) < min_chars:
            continue
        match = SequenceMatcher(None, text, item, autojunk=False).find_longest_match()
        if match.size >= min_chars:
            return True
    return False


def _repeats(text: str, earlier: list[str], similarity: float) -> bool:
    if len(text) < REPEAT_MIN_CHARS:
        return False
    return any(
        text == before or SequenceMatcher(None, text, before, autojunk=False).ratio() >= similarity
        for before in earlier
        if before
    )


def _unsafe_word(text: str, words: list[str]) -> str | None:
    folded = unicodedata.normalize("NFKC", text).casefold()
    for word in words:
        needle = unicodedata.normalize("NFKC", word).casefold().strip()
        if not needle:
            continue
        if needle.isascii():
            # Latin words match whole words only ("ass" must not match "class").
            if re.search(rf"(?<![0-9a-z]){re.escape(needle)}(?![0-9a-z])", folded):
                return word
        elif needle in folded:
            return word
    return None


def utterance_check(
    *, campaign: Campaign, dialogue: Dialogue, text: str, earlier: Sequence[str]
) -> list[Violation]:
    """Every rule the utterance breaks (empty when it may be sent). `earlier`: the texts of the
    dialogue's turns so far, which the caller has just read (the send reads them anyway)."""
    rules = acceptability_settings(campaign)
    normalised = normalise(text)
    if not normalised:
        return [Violation("empty", _("请输入内容后再发送。"))]
    violations: list[Violation] = []
    language = dialogue.language
    if language == Language.EN:
        minimum = rules["min_words"]
        if minimum and _length(text, language) < minimum:
            violations.append(
                Violation(
                    "too_short",
                    _("这句话太短了：请至少写 %(n)d 个词。") % {"n": minimum},
                )
            )
    else:
        minimum = rules["min_chars"]
        if minimum and _length(text, language) < minimum:
            violations.append(
                Violation(
                    "too_short",
                    _("这句话太短了：请至少写 %(n)d 个字。") % {"n": minimum},
                )
            )
    if rules["reject_all_caps"] and _is_all_caps(text):
        violations.append(Violation("all_caps", _("请不要全部使用大写字母。")))
    if rules["reject_repeats"]:
        before = [normalise(t) for t in earlier]
        if _repeats(normalised, before, rules["repeat_similarity"]):
            violations.append(
                Violation("repeat", _("这句话与对话中之前的一句相同或几乎相同，请换一种说法。"))
            )
    if rules["reject_grounding_copy"] and _copies_grounding(
        normalised, dialogue.grounding or {}, rules["grounding_copy_chars"]
    ):
        violations.append(
            Violation("grounding_copy", _("请不要直接复制左侧的知识或资料，请用自己的话来说。"))
        )
    word = _unsafe_word(text, rules["safety_words"])
    if word is not None:
        violations.append(
            Violation("unsafe", _("内容包含不允许使用的词语「%(word)s」。") % {"word": word})
        )
    return violations


@transaction.atomic
def violation_record(*, participant: Participant) -> bool:
    """Count one refused utterance; True once the worker is (now or already) flagged."""
    Participant.objects.filter(pk=participant.pk).update(violations=F("violations") + 1)
    fresh = (
        Participant.objects.select_for_update().select_related("campaign").get(pk=participant.pk)
    )
    threshold = acceptability_settings(fresh.campaign)["flag_threshold"]
    if threshold and fresh.violations >= threshold and not fresh.flagged:
        fresh.flagged = True
        fresh.save(update_fields=["flagged"])
    participant.violations, participant.flagged = fresh.violations, fresh.flagged
    return fresh.flagged
