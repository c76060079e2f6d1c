"""Staff see every workspace here (the admin site is not scoped) and move objects between them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext as _

from core.models import AuditEvent, Membership, Workspace
from core.workspaces import move_to_workspace


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ("user",)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)
    inlines = (MembershipInline,)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("at", "workspace", "user", "action", "object_type", "object_repr")
    list_filter = ("workspace", "action")
    search_fields = ("object_repr", "user__username")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _mover(workspace: Workspace) -> Callable[[Any, HttpRequest, QuerySet[Any]], None]:
    def move(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = move_to_workspace(list(queryset), workspace, request.user)  # type: ignore[arg-type]  # the admin site signs staff in
        modeladmin.message_user(
            request,
            _("已将 %(count)d 个对象移到工作区「%(name)s」。")
            % {"count": count, "name": workspace.name},
            messages.SUCCESS,
        )

    return move


class WorkspaceOwnedAdmin(admin.ModelAdmin):
    """An owned model's admin: filter by workspace, and one "move to …" action per workspace
    (each move is an audit event in both workspaces)."""

    def get_list_filter(self, request: HttpRequest) -> Any:
        return ("workspace", *super().get_list_filter(request))

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        for workspace in Workspace.objects.order_by("pk"):
            name = f"move_to_workspace_{workspace.pk}"
            label = _("移到工作区「%(name)s」") % {"name": workspace.name}
            actions[name] = (cast(Any, _mover(workspace)), name, label)
        return actions
