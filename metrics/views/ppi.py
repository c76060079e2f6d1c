"""A rating job's "human + judge" page: prediction-powered estimates, planning, and the rounds
of a job under a stopping rule (issue 28). The services do the work (metrics.services.ppi,
metrics.services.ppi_rounds)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotation.models import RatingJob
from annotation.selectors.sampling import job_design
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.errors import ServiceError
from metrics.forms_ppi import PredictorForm, StoppingRuleForm
from metrics.services import ppi, ppi_rounds


def _job(pk: int) -> RatingJob:
    return get_object_or_404(RatingJob.objects.select_related("rubric", "campaign"), pk=pk)


def _context(job: RatingJob, **extra: Any) -> dict[str, Any]:
    rounds = None
    if job.stopping_rule:
        try:
            rounds = ppi_rounds.public_status(ppi_rounds.rounds_status(job=job))
        except ServiceError as exc:
            rounds = {"error": str(exc)}
    return {"job": job, "design": job_design(job), "rounds": rounds, **extra}


@role_required(Role.RESEARCHER)
def job_ppi(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    job = _job(pk)
    form = PredictorForm(request.GET or None, job=job)
    estimates = plan = None
    error = ""
    if request.GET and form.is_valid():
        data = form.cleaned_data
        try:
            predictor = ppi.predictor_check(
                run_ids=[run.pk for run in data["runs"]], metrics=data["predictor"]
            )
            estimates = ppi.ppi_estimates(
                job=job,
                question=data["question"],
                predictor=predictor,
                alpha=data["alpha"],
                bootstrap=1000,
            )
            if data.get("target_width"):
                plan = ppi.ratings_plan(
                    job=job,
                    question=data["question"],
                    predictor=predictor,
                    target_width=data["target_width"],
                    alpha=data["alpha"],
                )
        except ServiceError as exc:
            error = str(exc)
    rule_form = None if job.stopping_rule or job.is_live else StoppingRuleForm(job=job)
    context = _context(
        job, form=form, estimates=estimates, plan=plan, error=error, rule_form=rule_form
    )
    return render(request, "metrics/job_ppi.html", context, status=422 if error else 200)


@role_required(Role.RESEARCHER)
@require_POST
def job_stopping_rule(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    job = _job(pk)
    rule_form = StoppingRuleForm(request.POST, job=job)
    if rule_form.is_valid():
        data = rule_form.cleaned_data
        try:
            ppi_rounds.stopping_rule_set(
                job=job,
                kind=data["kind"],
                round_size=data["round_size"],
                first_round=data["first_round"],
                target_width=data["target_width"],
                budget=data["budget"],
                question=data["question"],
                run_ids=[run.pk for run in data["runs"]],
                predictor=data["predictor"],
            )
        except ServiceError as exc:
            rule_form.add_error(exc.field if exc.field in rule_form.fields else None, exc.message)
        else:
            if job.status == RatingJob.Status.DRAFT:
                messages.success(request, _("停止规则已保存：任务开放时抽取第一轮。"))
            else:
                messages.success(request, _("停止规则已保存：已抽取的样本即第一轮。"))
            return redirect(reverse("metrics:job-ppi", args=[job.pk]) + "#rounds")
    context = _context(job, form=PredictorForm(job=job), rule_form=rule_form, error="")
    return render(request, "metrics/job_ppi.html", context, status=422)


@role_required(Role.RESEARCHER)
@require_POST
def job_round_draw(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    job = _job(pk)
    try:
        drawn = ppi_rounds.round_draw(job=job, created_by=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            _("第 %(number)d 轮已抽取并分配：%(count)d 个对话。")
            % {"number": drawn.number, "count": len(drawn.dialogues)},
        )
    return redirect(reverse("metrics:job-ppi", args=[job.pk]) + "#rounds")
