"""Workspace operations: switching, members, moving objects (the views and admin call these)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from django.utils.translation import gettext as _

from core.access import SESSION_WORKSPACE_KEY, unscoped, user_workspaces
from core.audit import record
from core.models import Membership, Workspace, WorkspaceOwned


def switch_workspace(request: HttpRequest, user: User, workspace_id: int) -> Workspace:
    """Make ``workspace_id`` the request's session workspace; one the user may not enter is
    refused like a missing one."""
    workspace = next((w for w in user_workspaces(user) if w.pk == workspace_id), None)
    if workspace is None:
        raise ValidationError(_("没有这个工作区。"))
    request.session[SESSION_WORKSPACE_KEY] = workspace.pk
    return workspace


@transaction.atomic
def set_member(workspace: Workspace, actor: User, username: str, role: str) -> Membership:
    """Add a user by username (or change their role)."""
    if role not in Membership.Role.values:
        raise ValidationError(_("未知的角色：%(role)s") % {"role": role})
    user = User.objects.filter(username=username.strip()).first()
    if user is None:
        raise ValidationError(_("没有用户名为「%(name)s」的用户。") % {"name": username})
    membership, created = Membership.objects.update_or_create(
        workspace=workspace, user=user, defaults={"role": role}
    )
    if not created:
        _keep_an_owner(workspace)
    record(workspace, actor, "members", detail={"user": user.username, "role": role})
    return membership


@transaction.atomic
def remove_member(workspace: Workspace, actor: User, username: str) -> None:
    deleted, _count = Membership.objects.filter(
        workspace=workspace, user__username=username
    ).delete()
    if not deleted:
        raise ValidationError(_("「%(name)s」不是这个工作区的成员。") % {"name": username})
    _keep_an_owner(workspace)
    record(workspace, actor, "members", detail={"user": username, "role": None})


def _keep_an_owner(workspace: Workspace) -> None:
    if not workspace.memberships.filter(role=Membership.Role.OWNER).exists():
        raise ValidationError(_("工作区至少要有一位所有者。"))


@transaction.atomic
def move_to_workspace(rows: list[WorkspaceOwned], target: Workspace, actor: User) -> int:
    """Staff move top-level objects to another workspace; each move is audited in both."""
    with unscoped():
        for row in rows:
            source = row.workspace
            if source.pk == target.pk:
                continue
            type(row)._base_manager.filter(pk=row.pk).update(workspace=target)
            detail = {"from": source.name, "to": target.name}
            record(source, actor, "move", row, detail)
            record(target, actor, "move", row, detail)
    return len(rows)
