from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from core.access import (
    AuthenticatedHttpRequest,
    Role,
    current_workspace,
    role_required,
    workspace_role,
)
from core.health import health_check
from core.models import Membership, Workspace
from core.workspaces import remove_member, set_member, switch_workspace


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report = health_check(
        worker_timeout=settings.HEALTH_WORKER_TIMEOUT,
        worker_max_age=settings.HEALTH_WORKER_CHECK_MAX_AGE,
    )
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)


@require_POST
@role_required(Role.RESEARCHER, viewers_may_post=True)
def workspace_switch(request: AuthenticatedHttpRequest) -> HttpResponseRedirect:
    """The header's switcher: the workspace the next pages show."""
    try:
        workspace_id = int(request.POST.get("workspace", ""))
    except ValueError:
        raise Http404 from None
    try:
        switch_workspace(request, request.user, workspace_id)
    except ValidationError:
        raise Http404 from None
    # Home, not back: the page the user was on may show an object of the previous workspace.
    return HttpResponseRedirect(reverse("home"))


def _owned_workspace(request: AuthenticatedHttpRequest) -> Workspace:
    workspace = current_workspace(request)
    if workspace is None or workspace_role(request.user, workspace) != "owner":
        raise PermissionDenied(gettext("只有工作区的所有者可以管理成员和查看审计日志。"))
    assert isinstance(workspace, Workspace)
    return workspace


@role_required(Role.RESEARCHER)
def workspace_members(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Owners add members by username, change their role, remove them."""
    workspace = _owned_workspace(request)
    error = ""
    if request.method == "POST":
        username = request.POST.get("username", "")
        try:
            if request.POST.get("action") == "remove":
                remove_member(workspace, request.user, username)
            else:
                set_member(workspace, request.user, username, request.POST.get("role", ""))
        except ValidationError as exc:
            error = " ".join(exc.messages)
        else:
            return HttpResponseRedirect(reverse("workspace-members"))
    members = workspace.memberships.select_related("user").order_by("user__username")
    return render(
        request,
        "core/workspace_members.html",
        {
            "workspace": workspace,
            "members": members,
            "roles": Membership.Role.choices,
            "error": error,
        },
        status=400 if error else 200,
    )


@role_required(Role.RESEARCHER)
def workspace_audit(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The workspace's audit log, newest first, for its owners."""
    workspace = _owned_workspace(request)
    events = workspace.audit_events.select_related("user")
    page = Paginator(events, 100).get_page(request.GET.get("page"))
    return render(request, "core/workspace_audit.html", {"workspace": workspace, "page": page})
