"""`{{ key|skill_label }}`: a skill key (or Skill) as its name in the page's language."""

from __future__ import annotations

from django import template

from chat.models import Skill
from chat.selectors.skills import skill_label as _skill_label

register = template.Library()


@register.filter
def skill_label(value: object) -> str:
    if isinstance(value, Skill):
        return value.display_name
    return _skill_label(str(value) if value else None)
