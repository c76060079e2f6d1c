"""Punctuation between translated pieces of a template, in the interface language's own form.

A template that joins a translated label and a value (「状态：完成」) cannot keep the full-width
colon outside the translation: an English page would read "Status：done". These tags give the
full-width form in Chinese and Japanese and the ASCII one (with its space) otherwise
(:func:`core.i18n.punctuation`). They are template builtins
(``TEMPLATES[...]["OPTIONS"]["builtins"]``): no ``{% load %}`` needed.
"""

from __future__ import annotations

from django import template

from core.i18n import display_alias, punctuation

register = template.Library()


@register.simple_tag
def colon() -> str:
    """「：」 or ": "."""
    return punctuation("colon")


@register.simple_tag
def lparen() -> str:
    """「（」 or " (" (a space before an ASCII parenthesis, none before a full-width one)."""
    return punctuation("lparen")


@register.simple_tag
def rparen() -> str:
    """「）」 or ")"."""
    return punctuation("rparen")


@register.simple_tag
def comma() -> str:
    """「，」 or ", "."""
    return punctuation("comma")


@register.filter(name="alias")
def alias_filter(alias: str) -> str:
    """A blind alias in the page's language (:func:`core.i18n.display_alias`)."""
    return display_alias(str(alias or ""))
