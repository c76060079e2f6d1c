"""Pages of metric runs: list, create, detail with live progress, score browsing, downloads."""

from __future__ import annotations

import json
from typing import TypedDict

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat.models import Skill
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.http import csv_download, jsonl_download
from metrics.forms import MetricRunForm
from metrics.models import JobStatus, Level, MetricRun
from metrics.scorers.models import offline_models
from metrics.scorers.registry import METRICS, PRESETS
from metrics.selectors import metric_runs as selectors
from metrics.selectors.preflight import Preflight, local_models_dir, metric_run_preflight
from metrics.services import metric_runs as services

ACTIVE = (JobStatus.PENDING, JobStatus.RUNNING)
DOWNLOAD_FORMATS = ("csv", "jsonl")


@role_required(Role.RESEARCHER)
def run_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.metric_run_list(user=request.user), 25).get_page(
        request.GET.get("page")
    )
    return render(request, "metrics/run_list.html", {"page": page})


def _metric_groups(form: MetricRunForm) -> list[tuple[str, list[object]]]:
    """The metric checkboxes grouped by family (presets first)."""
    boxes = {box.data["value"]: box for box in form["metrics"]}
    groups: dict[str, list[object]] = {_("预设"): [boxes[k] for k in PRESETS]}
    for name, spec in METRICS.items():
        groups.setdefault(spec.family, []).append(boxes[name])
    return list(groups.items())


def _preflight(form: MetricRunForm) -> tuple[Preflight | None, str]:
    """The pre-flight of a bound form's metrics and settings, or why there is none yet."""
    if not form.is_bound:
        return None, ""
    form.is_valid()  # cleaned_data holds the fields that are valid even when others are not
    chosen = form.cleaned_data.get("metrics")
    if not chosen:
        return None, ""
    try:
        names = services.check_metric_names(chosen)
        settings = services.check_settings(form.settings())
    except services.MetricRunError as exc:
        return None, str(exc)
    return metric_run_preflight(metrics=names, settings=settings), ""


@role_required(Role.RESEARCHER)
@require_POST
def run_preflight(request: HttpRequest) -> HttpResponse:
    """htmx: the run form's pre-flight box, refreshed whenever a metric or setting changes."""
    preflight, error = _preflight(MetricRunForm(request.POST))
    return render(
        request,
        "metrics/partials/run_preflight.html",
        {"preflight": preflight, "preflight_error": error},
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def run_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    initial: dict[str, object] = {
        "campaign": request.GET.get("campaign"),
        "static_run": request.GET.get("static_run"),
    }
    if initial["static_run"]:  # "compute metrics" on a finished static run
        initial["target"] = MetricRun.Target.STATIC_RUN
    # A next step may preselect metrics or presets (`?metrics=msde16`); unknown names are dropped.
    known = {value for value, _label in MetricRunForm.base_fields["metrics"].choices}  # type: ignore[attr-defined]  # a MultipleChoiceField with a list
    chosen = [name for name in request.GET.getlist("metrics") if name in known]
    if chosen:
        initial["metrics"] = chosen
    form = MetricRunForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        target = data["target"]
        upload = None
        if target == MetricRun.Target.UPLOAD:
            upload = services.Upload(
                fileobj=data["file"],
                filename=data["file"].name,
                system=data["system"] or "uploaded",
                skill=data["skill"].key if data["skill"] else "chitchat",
            )
        try:
            run = services.metric_run_create(
                name=data["name"],
                metrics=data["metrics"],
                settings=form.settings(),
                campaign=data["campaign"] if target == MetricRun.Target.CAMPAIGN else None,
                static_run=data["static_run"] if target == MetricRun.Target.STATIC_RUN else None,
                upload=upload,
                include_submitted=data["include_submitted"],
                created_by=request.user,
            )
        except services.MetricRunError as exc:
            field = exc.field if exc.field in form.fields else None
            form.add_error(field, str(exc))
        else:
            messages.success(request, _("指标任务已提交。"))
            return redirect("metrics:metric-run-detail", pk=run.pk)
    status = 400 if request.method == "POST" else 200
    preflight, preflight_error = _preflight(form)
    return render(
        request,
        "metrics/run_form.html",
        {
            "form": form,
            "preflight": preflight,
            "preflight_error": preflight_error,
            "metric_groups": _metric_groups(form),
            "offline_models": offline_models(local_models_dir()),
            "presets": {k: list(v) for k, v in PRESETS.items()},
        },
        status=status,
    )


@role_required(Role.RESEARCHER)
def run_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        MetricRun.objects.select_related("campaign", "static_run", "created_by"), pk=pk
    )
    context = {
        "run": run,
        "active": run.status in ACTIVE,
        "percent": round(100 * run.progress_done / run.progress_total) if run.progress_total else 0,
        "metric_status": selectors.run_metric_status(run=run),
        "chunks": selectors.chunk_summary(run=run),
        "failed_chunks": selectors.failed_chunks(run=run),
        "tables": selectors.system_table(run=run),
        "levels": Level.choices,
        "formats": DOWNLOAD_FORMATS,
    }
    template = "metrics/run_detail.html#live" if request.htmx else "metrics/run_detail.html"
    return render(request, template, context)


@role_required(Role.RESEARCHER)
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(MetricRun, pk=pk)
    if services.metric_run_cancel(run=run):
        messages.success(request, _("已取消。"))
    else:
        messages.error(request, _("任务已结束，无法取消。"))
    return redirect("metrics:metric-run-detail", pk=run.pk)


@role_required(Role.RESEARCHER)
@require_POST
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(MetricRun, pk=pk)
    try:
        count = services.metric_run_resume(run=run)
    except services.MetricRunError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("已重新提交 %(n)d 个未完成的分块。") % {"n": count})
    return redirect("metrics:metric-run-detail", pk=run.pk)


class _Filters(TypedDict):
    backend_id: int | None
    group: str | None


def _filters(request: HttpRequest) -> _Filters:
    backend = request.GET.get("backend") or ""
    return {
        "backend_id": int(backend) if backend.isdigit() else None,
        "group": request.GET.get("skill") or None,
    }


def _browse_context(request: HttpRequest, run: MetricRun) -> dict[str, object]:
    return {
        "run": run,
        "backends": selectors.run_backends(run=run),
        "skills": Skill.objects.filter(key__in=run.scores.values("group")),
        "metrics": run.metrics,
    }


@role_required(Role.RESEARCHER)
def run_turns(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(MetricRun, pk=pk)
    page = Paginator(selectors.turn_rows(run=run, **_filters(request)), 20).get_page(
        request.GET.get("page")
    )
    values = selectors.turn_values(run=run, turns=list(page))
    rows = [(turn, [values.get(turn.pk, {}).get(m) for m in run.metrics]) for turn in page]
    context = {**_browse_context(request, run), "page": page, "rows": rows}
    return render(request, "metrics/run_turns.html", context)


@role_required(Role.RESEARCHER)
def run_dialogues(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(MetricRun, pk=pk)
    page = Paginator(selectors.dialogue_rows(run=run, **_filters(request)), 25).get_page(
        request.GET.get("page")
    )
    values = selectors.dialogue_values(run=run, dialogues=list(page))
    rows = [(d, [values.get(d.pk, {}).get(m) for m in run.metrics]) for d in page]
    context = {**_browse_context(request, run), "page": page, "rows": rows}
    return render(request, "metrics/run_dialogues.html", context)


def score_download(run: MetricRun, level: str, fmt: str) -> StreamingHttpResponse:
    """The run's scores of one level as a tidy CSV or JSONL file (shared with the API)."""
    if level not in Level.values or fmt not in DOWNLOAD_FORMATS:
        raise Http404("unknown level or format")
    rows = selectors.download_rows(run=run, level=level)
    filename = f"metric-run-{run.pk}-{level}.{fmt}"
    if fmt == "jsonl":
        return jsonl_download(
            (json.dumps(row, ensure_ascii=False) for row in rows), filename=filename
        )
    return csv_download(selectors.DOWNLOAD_COLUMNS, rows, filename=filename)


@role_required(Role.RESEARCHER)
def run_download(request: HttpRequest, pk: int, level: str, fmt: str) -> StreamingHttpResponse:
    return score_download(get_object_or_404(MetricRun, pk=pk), level, fmt)
