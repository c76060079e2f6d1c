"""Who may see what: the one place that decides role access for views and the API.

Roles are Django groups created by a migration (`core/migrations/0001_roles.py`). Staff and
superusers are admins and pass every role check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from functools import wraps
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase, HttpResponseRedirect
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from core.http import HtmxHttpRequest


class Role(StrEnum):
    CROWDWORKER = "crowdworker"
    EXPERT = "expert"
    RESEARCHER = "researcher"
    ADMIN = "admin"


ROLE_GROUPS: tuple[Role, ...] = (Role.CROWDWORKER, Role.EXPERT, Role.RESEARCHER)
_ROLE_VALUES = frozenset(role.value for role in Role)


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """What a view behind `role_required` receives: the role check has turned away anonymous
    users, so `user` is a signed-in `User`."""

    user: User


_P = ParamSpec("_P")
_R = TypeVar("_R", bound=HttpResponseBase)


def user_roles(user: AbstractBaseUser | AnonymousUser) -> set[Role]:
    if not isinstance(user, User) or not user.is_authenticated:
        return set()
    cached: set[Role] | None = getattr(user, "_platform_roles", None)
    if cached is not None:
        return cached
    roles = {
        Role(name) for name in user.groups.values_list("name", flat=True) if name in _ROLE_VALUES
    }
    if user.is_staff or user.is_superuser:
        roles.add(Role.ADMIN)
    user._platform_roles = roles  # type: ignore[attr-defined]  # a cache for this request's user
    return roles


def has_role(user: AbstractBaseUser | AnonymousUser, *roles: Role) -> bool:
    held = user_roles(user)
    return Role.ADMIN in held or bool(held.intersection(roles))


def primary_role(user: AbstractBaseUser | AnonymousUser) -> Role | None:
    """The role whose home page a user lands on (the most privileged one they hold)."""
    held = user_roles(user)
    for role in (Role.ADMIN, Role.RESEARCHER, Role.EXPERT, Role.CROWDWORKER):
        if role in held:
            return role
    return None


def role_required(
    *roles: Role, viewers_may_post: bool = False
) -> Callable[
    [Callable[Concatenate[AuthenticatedHttpRequest, _P], _R]],
    Callable[Concatenate[HttpRequest, _P], _R | HttpResponseRedirect],
]:
    """View decorator: anonymous users go to the login page, wrong roles get 403."""

    def decorator(
        view: Callable[Concatenate[AuthenticatedHttpRequest, _P], _R],
    ) -> Callable[Concatenate[HttpRequest, _P], _R | HttpResponseRedirect]:
        @wraps(view)
        def wrapped(
            request: HttpRequest, *args: _P.args, **kwargs: _P.kwargs
        ) -> _R | HttpResponseRedirect:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, *roles):
                raise PermissionDenied("This page is not available to your role.")
            if not viewers_may_post and only_views_here(request, roles):
                raise PermissionDenied("A viewer of this workspace cannot change it.")
            # has_role admits only a signed-in `User`; HtmxMiddleware has set `htmx`.
            return view(cast(AuthenticatedHttpRequest, request), *args, **kwargs)

        wrapped.view_roles = roles  # type: ignore[attr-defined]  # read by `current_scope`
        return wrapped

    return decorator


def request_user(request: Request) -> User:
    """The signed-in user of an API request that a role permission has let through."""
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise PermissionDenied("This endpoint needs a signed-in user.")
    return user


class _HasRole(BasePermission):
    roles: tuple[Role, ...] = ()
    message = "Your role does not allow this."

    def has_permission(self, request: Any, view: Any) -> bool:
        if not (request.user and has_role(request.user, *self.roles)):
            return False
        return not only_views_here(request._request, self.roles)


def roles_permission(*roles: Role) -> type[BasePermission]:
    """A DRF permission class admitting the given roles (and admins)."""
    return type(f"Has{'Or'.join(r.title() for r in roles)}Role", (_HasRole,), {"roles": roles})


IsResearcher = roles_permission(Role.RESEARCHER)
IsExpert = roles_permission(Role.EXPERT)
IsCrowdworker = roles_permission(Role.CROWDWORKER)


# --- Workspaces --------------------------------------------------------------------------------
#
# Deny by default, in one place: every queryset of a workspace-owned model (core.models
# .WorkspaceScoped) is narrowed by `workspace_objects` whenever a scope is active — a request by
# a researcher or an admin (set up by `WorkspaceMiddleware`), or a command's `--workspace`.
# Experts and crowdworkers have no scope: their pages filter by what they are assigned or
# invited to, in any workspace.

SESSION_WORKSPACE_KEY = "workspace_id"

_scope: ContextVar[Any] = ContextVar("workspace_scope", default=None)


@dataclass(frozen=True)
class WorkspaceScope:
    user: User | None  # None: a command, which acts as the deployment's operator
    workspace: Any  # core.models.Workspace | None (no workspace: nothing is visible)


def workspace_objects(model_or_queryset: Any, user: User | None, workspace: Any) -> Any:
    """The rows of ``model_or_queryset`` that ``user`` may see in ``workspace``: those of the
    workspace (and the global ones, such as preset rubrics), nothing when the user is not a
    member. ``user`` None is a command run by the operator (``--workspace``)."""
    from django.db.models import Model, Q, QuerySet

    if isinstance(model_or_queryset, QuerySet):
        queryset = model_or_queryset
    elif isinstance(model_or_queryset, type) and issubclass(model_or_queryset, Model):
        queryset = model_or_queryset._base_manager.all()
    else:
        raise TypeError(f"not a model or a queryset: {model_or_queryset!r}")
    from core.models import WorkspaceQuerySet

    if isinstance(queryset, WorkspaceQuerySet):
        # The filter below must not scope it again (by the current scope); the caller's
        # queryset stays as it was.
        queryset = queryset.marked_scoped()
    model = queryset.model
    lookup = getattr(model, "workspace_lookup", None)
    if lookup is None:
        raise TypeError(f"{model._meta.label} does not belong to a workspace")
    global_rows = Q(**{f"{lookup}__isnull": True}) if model.workspace_null_is_global else Q()
    if workspace is None or (user is not None and not may_enter(user, workspace)):
        return queryset.filter(global_rows) if global_rows else queryset.none()
    return queryset.filter(Q(**{lookup: workspace}) | global_rows)


def may_enter(user: User, workspace: Any) -> bool:
    """Members and admins may work in a workspace."""
    if user.is_staff or user.is_superuser:
        return True
    return workspace.pk in member_roles(user)


def member_roles(user: User) -> dict[int, str]:
    """Workspace pk → the user's role in it (cached on the user for the request)."""
    return {pk: role for pk, (role, _workspace) in _memberships(user).items()}


def _memberships(user: User) -> dict[int, tuple[str, Any]]:
    cached: dict[int, tuple[str, Any]] | None = getattr(user, "_workspace_memberships", None)
    if cached is None:
        from core.models import Membership

        cached = {
            m.workspace_id: (m.role, m.workspace)
            for m in Membership.objects.filter(user=user).select_related("workspace")
        }
        user._workspace_memberships = cached  # type: ignore[attr-defined]  # a per-request cache
    return cached


def user_workspaces(user: User) -> list[Any]:
    """The workspaces a user may switch to, oldest first: admins all, others their own."""
    from core.models import Workspace

    if user.is_staff or user.is_superuser:
        cached: list[Any] | None = getattr(user, "_workspace_list", None)
        if cached is None:
            cached = list(Workspace.objects.order_by("pk"))
            user._workspace_list = cached  # type: ignore[attr-defined]  # a per-request cache
        return cached
    return sorted((w for _role, w in _memberships(user).values()), key=lambda w: w.pk)


def current_workspace(request: HttpRequest) -> Any:
    """The workspace a researcher works in: the one an API client names in an ``X-Workspace``
    header (a workspace id), else the one chosen in the session, else their first one."""
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        return None
    choices = user_workspaces(user)
    named = request.headers.get("X-Workspace")
    if named is not None:  # an API client's explicit choice: one it may not enter shows nothing
        return next((w for w in choices if str(w.pk) == named.strip()), None)
    wanted = request.session.get(SESSION_WORKSPACE_KEY) if hasattr(request, "session") else None
    chosen = [w for w in choices if w.pk == wanted]
    return chosen[0] if chosen else (choices[0] if choices else None)


def workspace_role(user: User, workspace: Any) -> str | None:
    """``owner``, ``researcher`` or ``viewer``; admins count as owners everywhere."""
    if workspace is None:
        return None
    if user.is_staff or user.is_superuser:
        return "owner"
    return member_roles(user).get(workspace.pk)


def current_scope() -> WorkspaceScope | None:
    """The scope the ORM filters by now, or None (no filtering)."""
    holder = _scope.get()
    if holder is None or isinstance(holder, WorkspaceScope):
        return holder
    user = holder.user  # a request: scoped once a researcher or an admin is signed in
    if not isinstance(user, User) or not user.is_authenticated:
        return None
    if not has_role(user, Role.RESEARCHER) or not _researchers_page(holder):
        return None
    return WorkspaceScope(user=user, workspace=current_workspace(holder))


def _researchers_page(request: HttpRequest) -> bool:
    """Whether the request's view is one a researcher may use. An expert's or a crowdworker's
    page (its roles exclude researchers) keeps its own rules, what the person is assigned or
    invited to in any workspace, even when the person is a researcher too; before the URL is
    resolved, and for a view that names no roles, the researcher's scope holds."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return True
    func = match.func
    roles: tuple[Role, ...] | None = getattr(func, "view_roles", None)
    if roles is None:
        view_class = getattr(func, "cls", None)  # a DRF view: its role permissions
        permissions = getattr(view_class, "permission_classes", None) or ()
        named = [p.roles for p in permissions if isinstance(p, type) and issubclass(p, _HasRole)]
        roles = tuple(role for group in named for role in group) if named else None
    return roles is None or Role.RESEARCHER in roles


@contextmanager
def request_scope(request: HttpRequest) -> Iterator[None]:
    token = _scope.set(request)
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def workspace_scope(workspace: Any, user: User | None = None) -> Iterator[None]:
    """Run code (a command, a test) inside ``workspace``: lookups by name or id see only it."""
    token = _scope.set(WorkspaceScope(user=user, workspace=workspace))
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def unscoped() -> Iterator[None]:
    """Run code without workspace filtering (the admin site, which staff use across workspaces)."""
    token = _scope.set(None)
    try:
        yield
    finally:
        _scope.reset(token)


def require_same_workspace(*rows: Any) -> None:
    """Refuse to combine objects of two workspaces (a judge's backend and rubric, a run's
    campaign): global rows (preset rubrics) combine with any."""
    from django.core.exceptions import ValidationError
    from django.utils.translation import gettext as _

    owned = [(row, _workspace_id_of(row)) for row in rows]
    owned = [(row, ws) for row, ws in owned if ws is not None]
    if len({ws for _row, ws in owned}) > 1:
        first = owned[0][0]
        other = next(row for row, ws in owned if ws != owned[0][1])
        raise ValidationError(
            _("「%(other)s」属于另一个工作区，不能与「%(first)s」一起使用。")
            % {"other": other, "first": first}
        )


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def only_views_here(request: HttpRequest, roles: tuple[Role, ...]) -> bool:
    """True when a write reaches a researcher route through a workspace where the user is a
    viewer (who reads and downloads, and changes nothing)."""
    if request.method in _SAFE_METHODS or Role.RESEARCHER not in roles:
        return False
    user = request.user
    if not isinstance(user, User) or user.is_staff or user.is_superuser:
        return False
    if user_roles(user).intersection(set(roles) - {Role.RESEARCHER}):
        return False  # admitted by another role (an expert rating on a shared route)
    return workspace_role(user, current_workspace(request)) == "viewer"


def _workspace_id_of(row: Any) -> int | None:
    """A row's workspace: its own column, or its parent's (a static run's campaign's)."""
    if hasattr(row, "workspace_id"):
        return row.workspace_id
    path = getattr(row, "workspace_lookup", None)
    if path is None:
        return None
    *parents, _last = path.split("__")
    for name in parents:
        row = getattr(row, name, None)
        if row is None:
            return None
    return row.workspace_id
