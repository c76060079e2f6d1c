"""Who may see what: the one place that decides role access for views and the API.

Roles are Django groups created by a migration (`core/migrations/0001_roles.py`). Staff and
superusers are admins and pass every role check.
"""

from __future__ import annotations

from collections.abc import Callable
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
    *roles: Role,
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
            # has_role admits only a signed-in `User`; HtmxMiddleware has set `htmx`.
            return view(cast(AuthenticatedHttpRequest, request), *args, **kwargs)

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
        return bool(request.user and has_role(request.user, *self.roles))


def roles_permission(*roles: Role) -> type[BasePermission]:
    """A DRF permission class admitting the given roles (and admins)."""
    return type(f"Has{'Or'.join(r.title() for r in roles)}Role", (_HasRole,), {"roles": roles})


IsResearcher = roles_permission(Role.RESEARCHER)
IsExpert = roles_permission(Role.EXPERT)
IsCrowdworker = roles_permission(Role.CROWDWORKER)
