"""The interface languages and how texts stored per language are picked for a page.

Rubric labels, campaign instructions and review reasons are stored as `{language: text}` with
the interface's language codes (``zh-hans``, ``en``, ``ja``). A page shows the text in its own
language and otherwise falls back: Chinese pages to English, English and Japanese pages to
English and then Chinese (a Japanese reader is more likely to read English than Chinese prose).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import translation

#: The codes of settings.LANGUAGES, in the order the language switch lists them.
INTERFACE_LANGUAGES: tuple[str, ...] = ("zh-hans", "en", "ja")

_FALLBACKS = {
    "zh-hans": ("zh-hans", "en", "ja"),
    "en": ("en", "zh-hans", "ja"),
    "ja": ("ja", "en", "zh-hans"),
}


def interface_language(code: str | None = None) -> str:
    """The interface language for a Django language code (`ja-jp` → `ja`, `zh-cn` → `zh-hans`);
    the active language when `code` is None; the default language for anything unknown."""
    code = (code if code is not None else translation.get_language()) or settings.LANGUAGE_CODE
    code = code.lower()
    if code in _FALLBACKS:
        return code
    if code.startswith("zh"):
        return "zh-hans"
    base = code.split("-")[0]
    return base if base in _FALLBACKS else settings.LANGUAGE_CODE


def fallback_order(code: str | None = None) -> tuple[str, ...]:
    """The languages to try, best first, for texts shown on a page in `code`."""
    return _FALLBACKS[interface_language(code)]


def pick_text(texts: Mapping[str, Any] | str | None, code: str | None = None) -> str:
    """The text of `texts` for a page in `code` (the active language by default).

    `texts` maps interface language codes to strings; a plain string is returned as is. Data may
    also use the short `zh` code of dataset languages, which counts as Chinese.
    """
    if not texts:
        return ""
    if not isinstance(texts, Mapping):
        return str(texts)
    for language in fallback_order(code):
        value = texts.get(language) or (texts.get("zh") if language == "zh-hans" else None)
        if value:
            return str(value)
    return str(next((v for v in texts.values() if v), ""))


_FULL_WIDTH = {"colon": "：", "lparen": "（", "rparen": "）", "comma": "，"}
_ASCII = {"colon": ": ", "lparen": " (", "rparen": ")", "comma": ", "}


def punctuation(mark: str) -> str:
    """A mark joining translated pieces (``colon``, ``lparen``, ``rparen``, ``comma``) in the
    active language's form: full-width in Chinese and Japanese, ASCII with its space otherwise,
    so an English page never reads "Status：done"."""
    full_width = interface_language() in ("zh-hans", "ja")
    return (_FULL_WIDTH if full_width else _ASCII)[mark]


# The default blind aliases a campaign gets (chat.services.campaigns.default_alias), in any of the
# interface languages: 模型 A, Model B, モデル AA.
_DEFAULT_ALIAS = re.compile(r"(?:模型|Model|モデル) ([A-Z]{1,3})")


def display_alias(alias: str) -> str:
    """A blind alias as the viewer reads it: a default alias ("模型 A", stored in the campaign's
    language when it was created) in the active language ("Model A", "モデル A"); an alias the
    researcher wrote is theirs and shown as it is. The stored alias never changes: exports, the
    API and reports keep it as their key."""
    match = _DEFAULT_ALIAS.fullmatch(alias.strip())
    if match is None:
        return alias
    return translation.pgettext("blind alias", "模型 %(letters)s") % {"letters": match.group(1)}
