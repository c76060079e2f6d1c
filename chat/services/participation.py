"""Crowdworkers joining campaigns through invite links."""

from __future__ import annotations

import hashlib
import re
import secrets

from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from chat.models import Campaign, Participant
from core.access import Role
from core.errors import ServiceError


class ParticipationError(ServiceError):
    """A worker cannot join a campaign (bad worker id, campaign not open)."""


class ResumeCodeRequired(ParticipationError):
    """The worker id joined already from another browser: its resume code proves it is them."""


_WORKER_ID_RE = re.compile(r"^[A-Za-z0-9_.@:\-]{1,120}$")


def participant_join(
    *,
    campaign: Campaign,
    external_id: str,
    source: str = "",
    bound_participant_id: int | None = None,
    resume_code: str = "",
) -> User:
    """The crowdworker account for a site's worker id in a campaign, created on first use.

    Workers from crowdsourcing sites never choose a password: the account has an unusable one.
    The browser that first joined is bound to it (the caller keeps `bound_participant_id` in a
    signed cookie) and comes back with the invite link and worker id alone, as Prolific/MTurk
    studies expect. Any other browser must also give the participant's resume code — otherwise
    anyone holding the invite link could become any worker by guessing their id.
    """
    external_id = external_id.strip()
    if not _WORKER_ID_RE.match(external_id):
        raise ParticipationError(_("工作者 ID 只能包含字母、数字和 _ . @ : -，长度 1–120。"))
    if campaign.status != Campaign.Status.ACTIVE:
        raise ParticipationError(_("该评测活动目前未开放。"))
    existing = (
        Participant.objects.select_related("user")
        .filter(campaign=campaign, external_id=external_id)
        .first()
    )
    if existing is not None:
        same_browser = bound_participant_id == existing.pk
        code = resume_code.strip().upper()
        if not same_browser and not (code and secrets.compare_digest(code, existing.resume_code)):
            raise ResumeCodeRequired(
                _("这个工作者 ID 已在另一个浏览器中加入。请输入加入时显示给您的恢复码。")
                if not code
                else _("恢复码不正确。")
            )
        return existing.user
    digest = hashlib.sha1(f"{campaign.pk}:{external_id}".encode()).hexdigest()[:8]
    username = f"w{campaign.pk}-{external_id[:100]}-{digest}"
    try:
        with transaction.atomic():
            user = User(username=username)
            user.set_unusable_password()
            user.save()
            user.groups.add(Group.objects.get(name=Role.CROWDWORKER.value))
            Participant.objects.create(
                campaign=campaign, user=user, external_id=external_id, source=source[:40]
            )
    except IntegrityError:
        # Another request joined with the same worker id first (a double click): use its account.
        return Participant.objects.get(campaign=campaign, external_id=external_id).user
    return user
