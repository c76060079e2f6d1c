"""Full-width punctuation (：（），) never sits outside a translation in a template: an English
page would read "Pre-flight：…" (issue 11, item 10). Between translated pieces the templates use
the punctuation builtins, which follow the interface language."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template import engines
from django.utils import translation

REPO_ROOT = Path(__file__).resolve().parents[2]
APP_TEMPLATE_DIRS = ("templates", "chat", "annotation", "metrics", "judges", "workspace", "core")

_TRANSLATED_BLOCK = re.compile(
    r"{%\s*blocktrans(?:late)?\b.*?{%\s*endblocktrans(?:late)?\s*%}", re.S
)
_COMMENT_BLOCK = re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S)
_TAG_OR_VARIABLE = re.compile(r"{%.*?%}|{#.*?#}|{{.*?}}", re.S)
FULL_WIDTH = re.compile(r"[：（），]")


def literal_text(template: str) -> str:
    """The template with translations, tags, variables and comments blanked (offsets kept)."""
    for pattern in (_COMMENT_BLOCK, _TRANSLATED_BLOCK, _TAG_OR_VARIABLE):
        template = pattern.sub(lambda m: " " * len(m.group()), template)
    return template


def template_files() -> list[Path]:
    return sorted(
        path
        for folder in APP_TEMPLATE_DIRS
        for path in (REPO_ROOT / folder).rglob("*.html")
        if "templates" in path.parts
    )


def test_the_scan_sees_the_templates_and_would_catch_a_bare_colon():
    assert len(template_files()) > 50
    assert FULL_WIDTH.search(literal_text('{% translate "状态" %}：{{ s }}'))
    assert not FULL_WIDTH.search(literal_text('{% translate "状态：" %}{% colon %}{{ s }}'))
    assert not FULL_WIDTH.search(
        literal_text("{% blocktranslate with n=n %}共 {{ n }} 个（含）{% endblocktranslate %}")
    )


def test_no_template_has_full_width_punctuation_outside_a_translation():
    found = []
    for path in template_files():
        text = path.read_text(encoding="utf-8")
        for match in FULL_WIDTH.finditer(literal_text(text)):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(REPO_ROOT)}:{line}: {match.group()}")
    assert not found, "use {% colon %} / {% lparen %} / {% rparen %} / {% comma %}:\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("en", "Status: done (3), 4"),
        ("zh-hans", "Status：done（3），4"),
        ("ja", "Status：done（3），4"),
    ],
)
def test_the_punctuation_follows_the_interface_language(language, expected):
    template = engines["django"].from_string(
        "Status{% colon %}done{% lparen %}3{% rparen %}{% comma %}4"
    )
    with translation.override(language):
        assert template.render({}) == expected
