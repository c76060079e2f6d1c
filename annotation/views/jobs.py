"""Researcher pages for rating jobs: list, create, detail with progress, flags and blocking."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.forms import GoldItemForm, QualitySettingsForm, RatingJobForm
from annotation.job_panels import panels_for
from annotation.models import GoldItem, RatingJob
from annotation.selectors import rating as selectors
from annotation.selectors.pairwise import pairwise_overview
from annotation.selectors.review import review_status_counts
from annotation.services import pairwise, quality
from annotation.services import rating_assignments as assignment_services
from annotation.services import rating_jobs as services
from annotation.services.quality import QualitySettingsError
from chat.models import Dialogue
from core.access import AuthenticatedHttpRequest, Role, role_required


@role_required(Role.RESEARCHER)
def job_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "annotation/job_list.html",
        {"jobs": selectors.job_list(), "review": review_status_counts()},
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def job_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    # "Create a rating job from its accepted dialogues" on a campaign page lands here.
    form = RatingJobForm(request.POST or None, initial={"campaign": request.GET.get("campaign")})
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
                sample_size=data["sample_size"],
                sample_seed=data["sample_seed"] or 0,
                created_by=request.user,
                allow_below_minimum=data["allow_below_minimum"],
                mode=data["mode"] or RatingJob.Mode.ABSOLUTE,
                pair_sample_size=data["pair_sample_size"],
            )
        except assignment_services.RatingJobError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        except QualitySettingsError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("已创建评分任务「%(name)s」。") % {"name": job.name})
            return redirect("annotation:job-detail", pk=job.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/job_form.html", {"form": form}, status=status)


def _gold_form(job: RatingJob, data: Any = None, dialogue: str = "") -> GoldItemForm:
    """The add-a-gold-item form; its answer fields are labelled in the page's language."""
    language = get_language() or "zh-hans"

    def groups_for(target: Dialogue) -> list:
        return selectors.gold_groups(
            job=job, dialogue=target, language=language, yes=_("是"), no=_("否")
        )

    initial = {"dialogue": dialogue} if dialogue else None
    return GoldItemForm(data, job=job, groups_for=groups_for, initial=initial)


def _detail_context(
    job: RatingJob,
    *,
    gold_form: GoldItemForm | None = None,
    quality_form: QualitySettingsForm | None = None,
    notices: dict[str, dict[str, Any]] | None = None,
) -> dict:
    flags = quality.flags_by_rater(quality.job_flags(job))
    progress = selectors.job_progress(job)
    rows = [(rater, flags.get(rater.rater_id, [])) for rater in progress["raters"]]
    settings = quality.job_quality(job)
    return {
        "job": job,
        "progress": progress,
        "sample_pairing": selectors.sample_pairing(job),
        "rows": rows,
        "review": review_status_counts(
            campaign_id=job.campaign_id, static_run_id=job.static_run_id
        ),
        "quality": settings,
        "quality_form": quality_form or QualitySettingsForm.for_settings(settings),
        "gold_form": gold_form or _gold_form(job),
        "gold_items": selectors.gold_items(job).select_related("dialogue", "dialogue_b"),
        "notices": notices or {},
        "pairwise": pairwise_overview(job) if job.is_pairwise else None,
    }


def _job(pk: int) -> RatingJob:
    return get_object_or_404(RatingJob.objects.select_related("campaign", "rubric"), pk=pk)


@role_required(Role.RESEARCHER)
def job_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    job = _job(pk)
    if job.status == RatingJob.Status.OPEN:
        assignment_services.job_refresh(job=job)
    if request.htmx:
        return render(request, "annotation/job_detail.html#progress", _detail_context(job))
    # Without JavaScript, "load the questions" comes back here with ?dialogue=…
    gold_form = _gold_form(job, dialogue=request.GET.get("dialogue", ""))
    context = _detail_context(job, gold_form=gold_form)
    context["panels"] = panels_for(request, job)
    return render(request, "annotation/job_detail.html", context)


def _section(
    request: AuthenticatedHttpRequest,
    job: RatingJob,
    partial: str,
    *,
    notice: str = "",
    error: str = "",
    **forms: Any,
) -> HttpResponse:
    """A section after a POST. With htmx: the section alone, saying what happened. Without:
    a redirect to the page with the message, or the whole page with the form's errors."""
    status = 422 if error or any(f.errors for f in forms.values()) else 200
    if request.htmx:
        said = {"text": error or notice, "error": bool(error)}
        context = _detail_context(job, notices={partial: said}, **forms)
        return render(request, f"annotation/job_detail.html#{partial}", context, status=status)
    if status == 200 or not forms:
        if error:
            messages.error(request, error)
        elif notice:
            messages.success(request, notice)
        return redirect(reverse("annotation:job-detail", args=[job.pk]) + f"#{partial}")
    return render(
        request, "annotation/job_detail.html", _detail_context(job, **forms), status=status
    )


@role_required(Role.RESEARCHER)
@require_POST
def job_quality(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Save a draft job's quality settings (validated by `QualitySettings.parse`)."""
    job = _job(pk)
    form = QualitySettingsForm(request.POST)
    if form.is_valid():
        try:
            job = services.job_quality_update(job=job, quality_settings=form.settings.as_dict())
        except assignment_services.RatingJobError as exc:
            form.add_error(None, str(exc))
        else:
            return _section(request, job, "quality", notice=_("质量设置已保存。"))
    return _section(request, job, "quality", quality_form=form)


def _attach_gold_error(
    form: GoldItemForm, exc: assignment_services.RatingJobError, names: list[str]
) -> None:
    """Put the service's error on the form field it names: `answers[i]` is the i-th given
    answer, whose field is `names[i]`."""
    field = exc.field or ""
    if field.startswith("answers[") and field.endswith("]"):
        index = int(field[len("answers[") : -1])
        if 0 <= index < len(names):
            label = form.fields[names[index]].label
            form.add_error(names[index], str(exc))
            form.add_error(None, _("「%(label)s」：%(error)s") % {"label": label, "error": exc})
            return
    form.add_error(field if field in ("dialogue", "purpose") else None, str(exc))


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def job_gold(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The job's gold and onboarding items (GET: the section) and adding one (POST)."""
    job = _job(pk)
    if request.method == "GET":
        return render(request, "annotation/job_detail.html#gold", _detail_context(job))
    form = _gold_form(job, request.POST)
    if not form.is_valid():
        return _section(request, job, "gold", gold_form=form)
    answers, names = form.answers()
    assert form.target is not None  # clean() refuses a form without a dialogue
    try:
        item = services.gold_item_set(
            job=job, dialogue=form.target, purpose=form.cleaned_data["purpose"], answers=answers
        )
    except assignment_services.RatingJobError as exc:
        _attach_gold_error(form, exc, names)
        return _section(request, job, "gold", gold_form=form)
    notice = _("已保存对话 %(id)s 的 %(n)d 个已知答案（%(purpose)s）。") % {
        "id": item.dialogue_id,
        "n": len(item.answers),
        "purpose": item.get_purpose_display(),
    }
    return _section(request, job, "gold", notice=notice)


@role_required(Role.RESEARCHER)
@require_GET
def job_gold_answers(request: HttpRequest, pk: int) -> HttpResponse:
    """The known-answer fields of the dialogue named by ?dialogue= (id or external id)."""
    job = _job(pk)
    form = _gold_form(job, dialogue=request.GET.get("dialogue", ""))
    return render(
        request, "annotation/job_detail.html#gold-answers", {"job": job, "gold_form": form}
    )


@role_required(Role.RESEARCHER)
@require_POST
def job_gold_delete(request: AuthenticatedHttpRequest, pk: int, item_id: int) -> HttpResponse:
    job = _job(pk)
    item = get_object_or_404(GoldItem, pk=item_id, job=job)
    dialogue_id = item.dialogue_id
    try:
        services.gold_item_delete(job=job, item=item)
    except assignment_services.RatingJobError as exc:
        return _section(request, job, "gold", error=str(exc))
    notice = _("已删除对话 %(id)s 的已知答案。") % {"id": dialogue_id}
    return _section(request, job, "gold", notice=notice)


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
def job_rater(
    request: AuthenticatedHttpRequest, pk: int, rater_id: int, action: str
) -> HttpResponse:
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


@role_required(Role.RESEARCHER)
@require_POST
def job_gold_pair(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Add a pairwise job's onboarding or gold pair: the better dialogue and the other one
    (each by id or external id)."""
    job = _job(pk)
    refs = {f: request.POST.get(f, "").strip() for f in ("better", "worse")}
    found = {f: selectors.gold_dialogue(job, ref) if ref else None for f, ref in refs.items()}
    for field, dialogue in found.items():
        if dialogue is None:
            error = _("%(field)s：本任务的评测活动中没有 ID 或外部 ID 为「%(ref)s」的对话") % {
                "field": field,
                "ref": refs[field],
            }
            return _section(request, job, "gold", error=error)
    better, worse = found["better"], found["worse"]
    assert better is not None and worse is not None
    try:
        item = services.gold_pair_set(
            job=job, better=better, worse=worse, purpose=request.POST.get("purpose", "")
        )
    except assignment_services.RatingJobError as exc:
        return _section(request, job, "gold", error=str(exc))
    notice = _("已保存金标对：对话 %(better)s 优于对话 %(worse)s（%(purpose)s）。") % {
        "better": item.dialogue_id,
        "worse": item.dialogue_b_id,
        "purpose": item.get_purpose_display(),
    }
    return _section(request, job, "gold", notice=notice)


@role_required(Role.RESEARCHER)
@require_POST
def job_rater_votes(
    request: AuthenticatedHttpRequest, pk: int, rater_id: int, action: str
) -> HttpResponse:
    """The switch on a pairwise job's page: count an excluded rater's votes again, or keep
    them out of the analyses."""
    job = _job(pk)
    rater = get_object_or_404(User, pk=rater_id, rating_job_memberships__job=job)
    if action == "include":
        n = pairwise.pairwise_votes_include(job=job, rater=rater)
        notice = _("%(name)s 的 %(n)d 票已计入分析。") % {"name": rater.get_username(), "n": n}
    else:
        reason = _("研究者排除")
        n = pairwise.pairwise_votes_exclude(job=job, rater=rater, reason=reason)
        notice = _("%(name)s 的 %(n)d 票已排除在分析之外。") % {
            "name": rater.get_username(),
            "n": n,
        }
    return _section(request, job, "pairwise", notice=notice)
