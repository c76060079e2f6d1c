"""The workspace audit log: who created, changed, deleted, exported or moved what.

Saves and deletions of workspace-owned rows made by a signed-in researcher (inside a request's
scope) are recorded by the signal handlers below; a worker's progress writes are not (no user).
Exports are recorded by `core.middleware.WorkspaceMiddleware`, moves by the admin action.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import models

from core.access import current_scope
from core.models import AuditEvent, Workspace, WorkspaceOwned


def record(
    workspace: Workspace,
    user: User | None,
    action: str,
    obj: models.Model | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        workspace=workspace,
        user=user,
        action=action,
        object_type=obj._meta.label_lower if obj is not None else "",
        object_id=str(obj.pk) if obj is not None and obj.pk is not None else "",
        object_repr=str(obj)[:200] if obj is not None else "",
        detail=detail or {},
    )


def _scoped_user() -> User | None:
    scope = current_scope()
    return scope.user if scope is not None else None


def on_save(sender: type[models.Model], instance: Any, created: bool, **kwargs: Any) -> None:
    if not isinstance(instance, WorkspaceOwned) or kwargs.get("raw"):
        return
    user = _scoped_user()
    if user is None or instance.workspace_id is None:
        return
    record(instance.workspace, user, "create" if created else "change", instance)


def on_delete(sender: type[models.Model], instance: Any, **kwargs: Any) -> None:
    if not isinstance(instance, WorkspaceOwned):
        return
    user = _scoped_user()
    if user is None or instance.workspace_id is None:
        return
    record(instance.workspace, user, "delete", instance, {"id": instance.pk})


def join_the_only_workspace(
    sender: Any, instance: Any, action: str, reverse: bool, pk_set: set[int] | None, **kwargs: Any
) -> None:
    """A user given the researcher role on a deployment with one workspace joins it: a single
    group's deployment keeps working as before workspaces. With several, an owner adds them."""
    from django.contrib.auth.models import Group

    from core.models import Membership

    if action != "post_add" or not pk_set:
        return
    if reverse:  # group.user_set.add(user, ...)
        if instance.name != "researcher":
            return
        users = list(User.objects.filter(pk__in=pk_set))
    else:  # user.groups.add(group, ...)
        if not Group.objects.filter(pk__in=pk_set, name="researcher").exists():
            return
        users = [instance]
    only = list(Workspace.objects.all()[:2])
    if len(only) != 1:
        return
    for user in users:
        Membership.objects.get_or_create(workspace=only[0], user=user)
        user.__dict__.pop("_workspace_memberships", None)
