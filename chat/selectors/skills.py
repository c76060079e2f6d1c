"""Skill names by key, for pages that hold only a skill's key (a table row of scores, a
progress cell): the name in the page's language instead of the raw key (`persona`)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from chat.models import Skill

# Skills are a handful of rows that change rarely; the table is read once per process and again
# after any change (the signals below). Pages pass names that are not skills too (a metric, a
# system): those must not read the table again.
_BY_KEY: dict[str, Skill] = {}
_LOADED: list[bool] = [False]


def skill_label(key: str | None) -> str:
    """The skill's name in the active language; the key itself when no skill has it, "" for
    none (a table row over all skills)."""
    if not key:
        return ""
    if not _LOADED[0]:
        _BY_KEY.clear()
        _BY_KEY.update({skill.key: skill for skill in Skill.objects.all()})
        _LOADED[0] = True
    skill = _BY_KEY.get(key)
    return skill.display_name if skill is not None else key


@receiver([post_save, post_delete], sender=Skill)
def _forget_skills(**_: Any) -> None:
    _BY_KEY.clear()
    _LOADED[0] = False
