"""Queries about model backends."""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from chat.backends.prompts import default_template
from chat.models import Backend, Campaign, ReplyFailure, Skill
from core.access import Role, has_role


def backend_list(
    *,
    user: AbstractBaseUser | AnonymousUser,
    active: bool | None = None,
    adapter: str | None = None,
) -> QuerySet[Backend]:
    """Backends a user may manage: researchers (and admins) see all, others none."""
    if not has_role(user, Role.RESEARCHER):
        return Backend.objects.none()
    backends = Backend.objects.select_related("created_by")
    if active is not None:
        backends = backends.filter(active=active)
    if adapter is not None:
        backends = backends.filter(adapter=adapter)
    return backends


def api_key_is_set(backend: Backend) -> bool | None:
    """Whether the named variable is set in this server's environment; None when none is named.

    Only a yes/no leaves this function: the value itself is never read into a page or answer.
    """
    if not backend.api_key_env:
        return None
    return bool(os.environ.get(backend.api_key_env))


def backend_prompt_templates(*, backend: Backend, language: str = "zh") -> list[dict]:
    """Per skill: the template in use, and whether it is the backend's own or the default."""
    overrides = (backend.config or {}).get("prompt_templates") or {}
    rows = []
    for skill in Skill.objects.all():
        own = overrides.get(skill.key)
        rows.append(
            {
                "skill": skill,
                "template": own or default_template(skill.key, language),
                "overridden": bool(own),
            }
        )
    return rows


@dataclass(frozen=True)
class ReplyFailureSummary:
    """How many live-chat replies failed, and the latest few (newest first)."""

    count: int
    latest: list[ReplyFailure]


def reply_failure_summary(
    *, backend: Backend | None = None, campaign: Campaign | None = None, limit: int = 10
) -> ReplyFailureSummary:
    """The live-chat reply failures of one backend or one campaign, for researchers."""
    if (backend is None) == (campaign is None):
        raise ValueError("give exactly one of backend or campaign")
    failures = ReplyFailure.objects.all()
    if backend is not None:
        failures = failures.filter(backend=backend)
    else:
        failures = failures.filter(dialogue__campaign=campaign)
    latest = list(failures.select_related("backend", "dialogue__campaign")[:limit])
    return ReplyFailureSummary(count=failures.count(), latest=latest)
