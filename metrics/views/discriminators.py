"""Pages for training learned discriminators (seed 003) and reading their Table 2 results."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from core.access import AuthenticatedHttpRequest, Role, role_required
from metrics.forms_discriminators import DiscriminatorForm
from metrics.models import JobStatus, TrainedDiscriminator
from metrics.scorers.discriminator import TABLE2_MODELS
from metrics.selectors import discriminators as selectors
from metrics.services import discriminators as services


@role_required(Role.RESEARCHER)
def discriminator_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "metrics/discriminator_list.html",
        {"versions": selectors.discriminator_list(), "table2": selectors.table2_rows()},
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def discriminator_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = DiscriminatorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        presets = list(TABLE2_MODELS) if data["all_presets"] else [data["preset"]]
        try:
            with transaction.atomic():
                created = [
                    services.discriminator_create(
                        name=f"{data['name']}-{preset}" if data["all_presets"] else data["name"],
                        dataset=data["dataset"],
                        preset=preset,
                        overrides=form.overrides(),
                        vectors=data["vectors"].strip(),
                        seed=data["seed"],
                        created_by=request.user,
                    )
                    for preset in presets
                ]
        except services.DiscriminatorError as exc:
            field = exc.field if exc.field in form.fields else None
            form.add_error(field, str(exc))
        else:
            messages.success(request, _("已提交 %(n)d 个训练任务。") % {"n": len(created)})
            if len(created) == 1:
                return redirect("metrics:discriminator-detail", pk=created[0].pk)
            return redirect("metrics:discriminator-list")
    status = 400 if request.method == "POST" else 200
    return render(request, "metrics/discriminator_form.html", {"form": form}, status=status)


@role_required(Role.RESEARCHER)
def discriminator_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(selectors.discriminator_list(), pk=pk)
    template = "metrics/discriminator_detail.html"
    if request.htmx:
        template += "#status"
    return render(
        request,
        template,
        {"version": version, "active": version.status in (JobStatus.PENDING, JobStatus.RUNNING)},
    )


@role_required(Role.RESEARCHER)
@require_POST
def discriminator_retry(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(TrainedDiscriminator, pk=pk)
    try:
        services.discriminator_retry(version)
    except services.DiscriminatorError as exc:
        messages.error(request, str(exc))
    return redirect("metrics:discriminator-detail", pk=pk)


@role_required(Role.RESEARCHER)
@require_POST
def discriminator_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(TrainedDiscriminator, pk=pk)
    if services.discriminator_cancel(version):
        messages.success(request, _("已取消训练（正在进行的一轮结束后停止）。"))
    return redirect("metrics:discriminator-detail", pk=pk)
