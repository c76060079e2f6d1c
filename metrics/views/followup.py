"""Pages for FED-Selected / FED-Cond-Selected item selection against human ratings (seed 004)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from core.access import AuthenticatedHttpRequest, Role, role_required
from metrics.forms_followup import FollowupSelectionForm
from metrics.models import FollowupSelection, JobStatus
from metrics.services import followup_selection as services


@role_required(Role.RESEARCHER)
def selection_list(request: HttpRequest) -> HttpResponse:
    selections = FollowupSelection.objects.select_related("job")
    return render(request, "metrics/followup_list.html", {"selections": selections})


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def selection_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = FollowupSelectionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            selection = services.selection_create(
                name=data["name"],
                job=data["job"],
                dimension=data["dimension"].strip(),
                model_path=data["model_path"].strip(),
                language=data["language"],
                conditional=data["variant"] == "cond",
                criterion=data["criterion"],
                max_items=data["max_items"],
                seed=data["seed"],
                layout=data["layout"],
                normalisation=data["normalisation"],
                max_length=data["max_length"],
                created_by=request.user,
            )
        except services.SelectionError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        else:
            messages.success(request, _("已提交随访项选择任务。"))
            return redirect("metrics:followup-detail", pk=selection.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "metrics/followup_form.html", {"form": form}, status=status)


@role_required(Role.RESEARCHER)
def selection_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    selection = get_object_or_404(FollowupSelection.objects.select_related("job"), pk=pk)
    template = "metrics/followup_detail.html" + ("#status" if request.htmx else "")
    active = selection.status in (JobStatus.PENDING, JobStatus.RUNNING)
    return render(request, template, {"selection": selection, "active": active})


@role_required(Role.RESEARCHER)
@require_POST
def selection_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    selection = get_object_or_404(FollowupSelection, pk=pk)
    if services.selection_cancel(selection):
        messages.success(request, _("已取消选择（当前一批对话打分结束后停止）。"))
    return redirect("metrics:followup-detail", pk=pk)


@role_required(Role.RESEARCHER)
@require_POST
def selection_retry(request: HttpRequest, pk: int) -> HttpResponse:
    selection = get_object_or_404(FollowupSelection, pk=pk)
    try:
        services.selection_retry(selection)
    except services.SelectionError as exc:
        messages.error(request, str(exc))
    return redirect("metrics:followup-detail", pk=pk)
