"""Pages of judges: list, create, edit (a new version), preview, estimate, run, answers."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat.models import Campaign, Dialogue, StaticRun
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.http import file_download
from judges import report as judge_report
from judges import selectors, services
from judges.forms import JudgeForm, PreviewForm, RunForm
from judges.models import Judge, JudgeAnswer, JudgeRun
from metrics.models import JobStatus, Report


def _judge(pk: int) -> Judge:
    return get_object_or_404(Judge.objects.select_related("backend", "rubric"), pk=pk)


@role_required(Role.RESEARCHER)
def judge_list(request: HttpRequest) -> HttpResponse:
    context = {
        "judges": selectors.judge_list(),
        "runs": selectors.judge_runs()[:20],
    }
    return render(request, "judges/judge_list.html", context)


def _save_form(
    request: AuthenticatedHttpRequest, form: JudgeForm, judge: Judge | None
) -> Judge | None:
    try:
        if judge is None:
            return services.judge_create(**form.service_fields(), created_by=request.user)
        return services.judge_new_version(
            judge=judge, created_by=request.user, **form.service_fields()
        )
    except services.JudgeError as exc:
        field: str | None = (exc.field or "").split(".")[0]
        if field == "prompt_templates":
            language = (exc.field or "").rsplit(".", 1)[-1]
            field = f"template_{language}" if language in ("zh", "en", "ja") else None
        elif field == "sampling":
            field = None
        form.add_error(field if field in form.fields else None, exc.message)
        return None


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def judge_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = JudgeForm(request.POST or None, initial={"n": 1, "max_attempts": 3})
    if request.method == "POST" and form.is_valid():
        judge = _save_form(request, form, None)
        if judge is not None:
            messages.success(request, _("裁判已创建。"))
            return redirect("judges:judge-detail", pk=judge.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "judges/judge_form.html", {"form": form}, status=status)


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def judge_edit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    judge = _judge(pk)
    form = JudgeForm(request.POST or None, initial=JudgeForm.initial_for(judge))
    if request.method == "POST" and form.is_valid():
        new = _save_form(request, form, judge)
        if new is not None:
            messages.success(request, _("已保存为新版本 v%(v)s。") % {"v": new.version})
            return redirect("judges:judge-detail", pk=new.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "judges/judge_form.html", {"form": form, "judge": judge}, status=status)


@role_required(Role.RESEARCHER)
def judge_detail(request: HttpRequest, pk: int) -> HttpResponse:
    judge = _judge(pk)
    sample = (
        Dialogue.objects.filter(status=Dialogue.Status.ACCEPTED, turns__speaker="system")
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    )
    context = {
        "judge": judge,
        "versions": Judge.objects.filter(key=judge.key).order_by("-version"),
        "sampling": selectors.judge_sampling(judge),
        "runs": selectors.judge_runs(judge=judge)[:20],
        "preview_form": PreviewForm(initial={"dialogue": sample}),
        "run_form": RunForm(),
        "metric_names": services.metric_names(
            mode=judge.mode, spec=services.judge_config(judge).spec, prefix=judge.metric_prefix
        ),
    }
    return render(request, "judges/judge_detail.html", context)


@role_required(Role.RESEARCHER)
def judge_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """The prompts for a real dialogue (htmx partial); a POSTed ``template`` previews an edit."""
    judge = _judge(pk)
    form = PreviewForm(request.GET)
    context: dict[str, object] = {"judge": judge, "form": form}
    if form.is_valid():
        dialogue = Dialogue.objects.filter(pk=form.cleaned_data["dialogue"]).first()
        other_id = form.cleaned_data.get("other")
        other = Dialogue.objects.filter(pk=other_id).first() if other_id else None
        if dialogue is None:
            context["error"] = _("没有这个对话。")
        else:
            try:
                context["prompts"] = services.judge_preview(
                    judge=judge, dialogue=dialogue, other=other
                )
            except services.JudgeError as exc:
                context["error"] = str(exc)
    else:
        context["error"] = _("请输入一个对话编号。")
    return render(request, "judges/judge_detail.html#preview", context)


class _Target(TypedDict):
    campaign: Campaign | None
    static_run: StaticRun | None
    include_submitted: bool


def _target(form: RunForm) -> _Target:
    data = form.cleaned_data
    return {
        "campaign": data.get("campaign"),
        "static_run": data.get("static_run"),
        "include_submitted": data.get("include_submitted", False),
    }


@role_required(Role.RESEARCHER)
@require_POST
def judge_estimate(request: HttpRequest, pk: int) -> HttpResponse:
    judge = _judge(pk)
    form = RunForm(request.POST)
    context: dict[str, object] = {"judge": judge}
    if form.is_valid():
        try:
            context["estimate"] = services.judge_estimate(judge=judge, **_target(form))
        except services.JudgeError as exc:
            context["error"] = str(exc)
    else:
        context["error"] = _("请检查表单。")
    return render(request, "judges/judge_detail.html#estimate", context)


@role_required(Role.RESEARCHER)
@require_POST
def judge_run_start(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    judge = _judge(pk)
    form = RunForm(request.POST)
    if form.is_valid():
        try:
            run = services.judge_run_create(
                judge=judge,
                name=form.cleaned_data["name"],
                created_by=request.user,
                **_target(form),
            )
        except services.JudgeError as exc:
            messages.error(request, _("无法开始评判：%(error)s") % {"error": exc})
            return redirect("judges:judge-detail", pk=judge.pk)
        messages.success(request, _("评判已开始。"))
        return redirect("judges:judge-run-detail", pk=run.pk)
    messages.error(request, _("请检查表单。"))
    return redirect("judges:judge-detail", pk=judge.pk)


@role_required(Role.RESEARCHER)
def judge_run_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """A judge run: progress, estimate vs actual cost, and its answers next to the dialogue."""
    judge_run = get_object_or_404(
        JudgeRun.objects.select_related("metric_run__campaign", "judge__backend"), pk=pk
    )
    run = judge_run.metric_run
    busy = run.status in (JobStatus.PENDING, JobStatus.RUNNING)
    if request.htmx and request.GET.get("part") == "progress":
        return render(
            request,
            "judges/judge_run_detail.html#progress",
            {"judge_run": judge_run, "run": run, "busy": busy},
        )
    status_filter = request.GET.get("status") or None
    dialogue_id = request.GET.get("dialogue")
    dialogue_id_int = int(dialogue_id) if dialogue_id and dialogue_id.isdigit() else None
    answers = selectors.run_answers(run=run, status=status_filter, dialogue_id=dialogue_id_int)
    page = Paginator(answers, 25).get_page(request.GET.get("page"))
    # The answer list polls with the page's own filters while the run works (issue 22 item 15).
    answers_query = request.GET.copy()
    answers_query["part"] = "answers"
    answers_url = f"{request.path}?{answers_query.urlencode()}"
    if request.htmx and request.GET.get("part") == "answers":
        return render(
            request,
            "judges/judge_run_detail.html#answers",
            {"run": run, "busy": busy, "page": page, "answers_url": answers_url},
        )
    counts = selectors.run_status_counts(run=run)
    dialogue = None
    if dialogue_id_int:
        dialogue = (
            Dialogue.objects.filter(pk=dialogue_id_int).select_related("backend", "skill").first()
        )
    context = {
        "judge_run": judge_run,
        "run": run,
        "busy": busy,
        "page": page,
        "statuses": [
            (value, label, counts.get(value, 0)) for value, label in JudgeAnswer.Status.choices
        ],
        "status_filter": status_filter or "",
        "dialogue": dialogue,
        "turns": list(dialogue.turns.order_by("index")) if dialogue else [],
        "jobs": selectors.matching_jobs(run=run),
        "answers_url": answers_url,
    }
    return render(request, "judges/judge_run_detail.html", context)


@role_required(Role.RESEARCHER)
def report_file(request: HttpRequest, pk: int, name: str) -> FileResponse:
    """The judges' files of a correlation report (agreement, bias, win rates)."""
    report = get_object_or_404(Report, pk=pk)
    if name not in judge_report.FILES or not report.files_dir:
        raise Http404("No such file.")
    path = Path(report.files_dir) / name
    if not path.is_file():
        raise Http404("This report has no judges section.")
    return file_download(path, filename=f"report-{pk}-{name}")
