from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from core.access import Role, primary_role, user_roles

ROLE_LABELS = {
    Role.CROWDWORKER: _("众包工作者"),
    Role.EXPERT: _("专家"),
    Role.RESEARCHER: _("研究者"),
    Role.ADMIN: _("管理员"),
}


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Role-aware navigation flags for the base layout."""
    roles = user_roles(request.user)
    is_admin = Role.ADMIN in roles
    role = primary_role(request.user)
    return {
        "role": role,
        "role_label": ROLE_LABELS.get(role, "") if role else "",
        "nav_researcher": is_admin or Role.RESEARCHER in roles,
        "nav_expert": is_admin or Role.EXPERT in roles,
        "nav_crowdworker": Role.CROWDWORKER in roles,
        "nav_admin": is_admin,
    }


def workspaces(request: HttpRequest) -> dict[str, Any]:
    """The header's workspace: the current one, and the others to switch to (none shown when
    there is only one)."""
    from core.access import Role, current_workspace, has_role, user_workspaces, workspace_role

    user = request.user
    if not has_role(user, Role.RESEARCHER):
        return {}
    current = current_workspace(request)
    choices = user_workspaces(user) if current is not None else []  # type: ignore[arg-type]  # a signed-in User
    return {
        "current_workspace": current,
        "workspace_choices": choices if len(choices) > 1 else [],
        "workspace_is_owner": workspace_role(user, current) == "owner",  # type: ignore[arg-type]  # a signed-in User
    }
