"""Static generation run pages: list, create, progress (htmx polling), cancel, retry, answers."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat.forms_static import StaticRunForm
from chat.models import StaticRun
from chat.selectors import static_runs as selectors
from chat.services import dialogue_io
from chat.services import static_runs as services
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.errors import ServiceError, form_add_service_errors
from core.http import jsonl_download
from core.models import JobStatus

ANSWERS_PER_PAGE = 10


@role_required(Role.RESEARCHER)
def static_run_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.static_run_list(user=request.user), 25).get_page(
        request.GET.get("page")
    )
    return render(request, "chat/static_run_list.html", {"page": page})


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def static_run_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = StaticRunForm(request.POST or None, initial={"seed": 0})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():
                run = services.static_run_create(
                    name=data["name"],
                    dataset=data["dataset"],
                    backends=list(data["backends"]),
                    campaign=data["campaign"],
                    campaign_name=data["campaign_name"],
                    sample_size=data["sample_size"],
                    seed=data["seed"],
                    created_by=request.user,
                )
                services.static_run_start(run=run)
        except ServiceError as exc:
            form_add_service_errors(form, exc)
        else:
            messages.success(request, _("静态生成已开始。"))
            return redirect("chat:static-run-detail", pk=run.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "chat/static_run_form.html", {"form": form}, status=status)


def _progress_context(run: StaticRun) -> dict[str, object]:
    return {"run": run, "counts": selectors.static_run_counts(run=run)}


@role_required(Role.RESEARCHER)
def static_run_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        StaticRun.objects.select_related("campaign", "dataset", "created_by"), pk=pk
    )
    if request.htmx and request.GET.get("part") == "progress":
        response = render(request, "chat/static_run_detail.html#progress", _progress_context(run))
        if run.status not in (JobStatus.PENDING, JobStatus.RUNNING):
            # Finished: reload once so the answers and failures tables show the outcome.
            response["HX-Refresh"] = "true"
        return response
    backends = list(run.backends.order_by("name"))
    page = Paginator(selectors.static_run_samples(run=run), ANSWERS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        **_progress_context(run),
        "backends": backends,
        "page": page,
        "rows": selectors.static_run_answer_rows(
            run=run, samples=list(page.object_list), backends=backends
        ),
        "failures": selectors.static_run_failures(run=run)[:200],
    }
    template = (
        "chat/static_run_detail.html#answers"
        if request.htmx and request.GET.get("part") == "answers"
        else "chat/static_run_detail.html"
    )
    return render(request, template, context)


@role_required(Role.RESEARCHER)
@require_POST
def static_run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(StaticRun, pk=pk)
    services.static_run_cancel(run=run)
    messages.info(request, _("已请求取消；正在生成的样本完成后停止。"))
    return redirect("chat:static-run-detail", pk=run.pk)


@role_required(Role.RESEARCHER)
@require_POST
def static_run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(StaticRun, pk=pk)
    try:
        count = services.static_run_retry_failed(run=run)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("已重新排队 %(count)d 个待生成的样本。") % {"count": count})
    return redirect("chat:static-run-detail", pk=run.pk)


@role_required(Role.RESEARCHER)
def static_run_export(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    run = get_object_or_404(StaticRun.objects.select_related("campaign"), pk=pk)
    lines = dialogue_io.dialogue_export_lines(campaign=run.campaign, static_run=run)
    return jsonl_download(lines, filename=f"static-run-{run.pk}-dialogues.jsonl")
