"""Researcher pages for rating jobs: list, create, detail with progress, flags and blocking."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from annotation.forms import RatingJobForm
from annotation.models import RatingJob
from annotation.selectors import rating as selectors
from annotation.selectors.review import review_status_counts
from annotation.services import assignments as assignment_services
from annotation.services import quality
from annotation.services import rating_jobs as services
from annotation.services.quality import QualitySettingsError
from core.access import Role, role_required


@role_required(Role.RESEARCHER)
def job_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "annotation/job_list.html",
        {"jobs": selectors.job_list(), "review": review_status_counts()},
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def job_create(request: HttpRequest) -> HttpResponse:
    form = RatingJobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = services.job_create(
                name=data["name"],
                campaign=data["campaign"],
                rubric=data["rubric"],
                static_run=data["static_run"],
                raters_per_dialogue=data["raters_per_dialogue"],
                raters=list(data["raters"]) or None,
                quality_settings=form.quality_settings(),
                deadline_hours=data["deadline_hours"],
                seed=data["seed"],
                created_by=request.user,
                allow_below_minimum=data["allow_below_minimum"],
            )
        except (assignment_services.RatingJobError, QualitySettingsError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("已创建评分任务「%(name)s」。") % {"name": job.name})
            return redirect("annotation:job-detail", pk=job.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/job_form.html", {"form": form}, status=status)


def _detail_context(job: RatingJob) -> dict:
    flags = quality.flags_by_rater(quality.job_flags(job))
    progress = selectors.job_progress(job)
    rows = [(rater, flags.get(rater.rater_id, [])) for rater in progress["raters"]]
    return {"job": job, "progress": progress, "rows": rows, "review": review_status_counts()}


@role_required(Role.RESEARCHER)
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(RatingJob.objects.select_related("campaign", "rubric"), pk=pk)
    if job.status == RatingJob.Status.OPEN:
        assignment_services.job_refresh(job=job)
    template = (
        "annotation/job_detail.html#progress" if request.htmx else "annotation/job_detail.html"
    )
    return render(request, template, _detail_context(job))


@role_required(Role.RESEARCHER)
@require_POST
def job_status(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    job = get_object_or_404(RatingJob, pk=pk)
    try:
        if action == "open":
            services.job_open(job=job)
            messages.success(request, _("任务已开始，对话已分配给评分专家。"))
        else:
            services.job_close(job=job)
            messages.success(request, _("任务已结束。"))
    except assignment_services.RatingJobError as exc:
        messages.error(request, str(exc))
    return redirect("annotation:job-detail", pk=job.pk)


@role_required(Role.RESEARCHER)
@require_POST
def job_rater(request: HttpRequest, pk: int, rater_id: int, action: str) -> HttpResponse:
    job = get_object_or_404(RatingJob, pk=pk)
    rater = get_object_or_404(User, pk=rater_id)
    try:
        if action == "block":
            n = assignment_services.rater_block(
                job=job, rater=rater, reason=request.POST.get("reason", ""), by=request.user
            )
            messages.success(
                request,
                _("已屏蔽 %(name)s，%(n)d 条未完成的条目已重新分配。")
                % {"name": rater.get_username(), "n": n},
            )
        else:
            assignment_services.rater_unblock(job=job, rater=rater, by=request.user)
            messages.success(request, _("已恢复 %(name)s。") % {"name": rater.get_username()})
    except assignment_services.RatingJobError as exc:
        messages.error(request, str(exc))
    return redirect("annotation:job-detail", pk=job.pk)
