"""HTML views of correlation reports and of the metric-score import (researchers only)."""

from __future__ import annotations

import mimetypes

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import patch_vary_headers
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh

from annotation.models import RatingJob
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.http import file_download, redirect_after_form
from metrics.analysis.scores import ScoreFileError
from metrics.analysis.tables import (
    coverage_table,
    group_average_table,
    metric_correlation_table,
    system_table,
)
from metrics.forms_reports import GROUPING_CHOICES, LEVEL_CHOICES, ReportForm, ScoreImportForm
from metrics.models import JobStatus, Report
from metrics.selectors import reports as selectors
from metrics.selectors.report_text import localized_table, report_text
from metrics.services import report_extensions
from metrics.services import reports as services
from metrics.services.score_import import metric_scores_import

DOWNLOADS = (
    ("csv", gettext_lazy("整洁 CSV")),
    ("xlsx", "XLSX"),
    ("json", "JSON"),
    ("latex", "LaTeX"),
    ("zip", gettext_lazy("全部（ZIP）")),
)


@role_required(Role.RESEARCHER)
def report_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.report_list(), 25).get_page(request.GET.get("page"))
    return render(request, "metrics/report_list.html", {"page": page})


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def report_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    # "Correlate with a rating job" on a finished metric run lands here with the run chosen.
    # The researcher home's "correlate" step also chooses the rating job.
    chosen = [v for v in request.GET.getlist("metric_runs") if v.isdigit()]
    jobs = [v for v in request.GET.getlist("rating_jobs") if v.isdigit()]
    initial: dict[str, object] = {"metric_runs": chosen, "rating_jobs": jobs}
    if request.GET.get("pairwise") == "1":  # "a report with the pairwise analysis" links here
        initial["pairwise"] = True
    form = ReportForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            report = services.report_create(
                name=form.cleaned_data["name"], config=form.config(), created_by=request.user
            )
        except services.ReportConfigError as exc:
            for field, message in exc.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            return redirect("metrics:report-detail", pk=report.pk)
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "figures_degraded": _figures_degraded()}
    return render(request, "metrics/report_form.html", context, status=status)


def _figures_degraded() -> bool:
    """Whether figures would be drawn without a CJK font (said before the report is created)."""
    from metrics.reporting.fonts import font_status  # matplotlib: imported when needed

    return font_status().degraded


def _figures(report: Report) -> dict[str, list[str]]:
    """PNG figure names by kind (heatmap, systems, metrics, distributions)."""
    kinds: dict[str, list[str]] = {"heatmap": [], "systems": [], "metrics": [], "distributions": []}
    for name in selectors.report_figures(report):
        if name.endswith(".png"):
            kinds.setdefault(name.split("_", 1)[0], []).append(name.removesuffix(".png"))
    return kinds


@role_required(Role.RESEARCHER)
def report_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    report = get_object_or_404(Report.objects.select_related("created_by"), pk=pk)
    busy = report.status in (JobStatus.PENDING, JobStatus.RUNNING)
    if request.htmx:
        if not busy:
            return HttpResponseClientRefresh()  # finished: load the whole page with its tables
        return render(
            request, "metrics/report_detail.html#progress", {"report": report, "oob": True}
        )
    context: dict[str, object] = {
        "report": report,
        "busy": busy,
        "downloads": DOWNLOADS,
        "level_label": dict(LEVEL_CHOICES).get(report.config.get("level"), ""),
        "grouping_label": dict(GROUPING_CHOICES).get(report.config.get("grouping"), ""),
    }
    study = selectors.report_study(report)
    if study is not None:
        jobs = RatingJob.objects.filter(pk__in=report.config.get("rating_jobs", []))
        labels = selectors.dimension_labels(
            jobs=jobs.select_related("rubric"), language=get_language() or "zh-hans"
        )
        context.update(
            study=study,
            dimension_labels=[labels.get(d, d) for d in report.config.get("dimensions", [])],
            correlations=selectors.correlation_page(study, labels=labels),
            averages=(
                localized_table(group_average_table(study), labels)
                if len(study.groups) > 1
                else None
            ),
            system_tables=[localized_table(system_table(s), labels) for s in study.systems],
            metric_tables=[
                localized_table(metric_correlation_table(m), labels)
                for m in study.metric_correlations
                if m.metrics
            ],
            coverage=localized_table(coverage_table(study), labels),
            warnings=[report_text(w) for w in study.warnings],
            notes=[report_text(n) for n in study.notes],
            one_sided=[c for c in study.coverage if c.metric_only or c.human_only],
            figures=_figures(report),
            extensions=report_extensions.page_sections(report.results),
        )
    return render(request, "metrics/report_detail.html", context)


@role_required(Role.RESEARCHER)
@require_POST
def report_rerun(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    report = get_object_or_404(Report, pk=pk)
    try:
        again = services.report_rerun(report=report, created_by=request.user)
    except services.ReportConfigError as exc:
        messages.error(request, _("无法重新运行：%(error)s") % {"error": exc})
        return redirect("metrics:report-detail", pk=report.pk)
    messages.success(request, _("已用相同配置重新运行报告。"))
    return redirect("metrics:report-detail", pk=again.pk)


@role_required(Role.RESEARCHER)
@require_POST
def report_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    report = get_object_or_404(Report, pk=pk)
    if services.report_cancel(report=report):
        messages.success(request, _("已取消报告计算。"))
    return redirect("metrics:report-detail", pk=report.pk)


@role_required(Role.RESEARCHER)
def report_download(request: HttpRequest, pk: int, fmt: str) -> FileResponse:
    report = get_object_or_404(Report, pk=pk)
    path = selectors.report_file(report, fmt)
    if path is None:
        raise Http404("This report has no file in that format (yet).")
    filename = f"report-{report.pk}-{path.name}"
    return file_download(path, filename=filename)


@role_required(Role.RESEARCHER)
def report_figure(request: HttpRequest, pk: int, name: str) -> FileResponse:
    report = get_object_or_404(Report, pk=pk)
    language = get_language()
    path = selectors.report_figure(report, name, language)
    if path is None:
        raise Http404("No such figure.")
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    response = file_download(
        path,
        content_type=content_type,
        as_attachment=request.GET.get("download") == "1",
        filename=f"report-{report.pk}-{path.name}",
    )
    # Names in the figures come from user data; an SVG opened on its own must not run scripts.
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    # The figure's words are in the reader's language: a cache must not hand it to another.
    response["Content-Language"] = language or ""
    patch_vary_headers(response, ("Accept-Language", "Cookie"))
    return response


@role_required(Role.RESEARCHER)
def report_pairwise_file(request: HttpRequest, pk: int, name: str) -> FileResponse:
    """A file of the report's pairwise section (leaderboard, agreement, accuracy, figures)."""
    report = get_object_or_404(Report, pk=pk)
    path = selectors.report_pairwise_file(report, name)
    if path is None:
        raise Http404("This report has no such pairwise file.")
    inline = name.endswith(".png") and request.GET.get("download") != "1"
    return file_download(
        path,
        content_type=mimetypes.guess_type(name)[0] or "application/octet-stream",
        as_attachment=not inline,
        filename=f"report-{report.pk}-{name}",
    )


@role_required(Role.RESEARCHER)
def report_ppi_file(request: HttpRequest, pk: int, name: str) -> FileResponse:
    """A file of the report's "Human + judge" section (estimates, widths, the width figure)."""
    report = get_object_or_404(Report, pk=pk)
    path = selectors.report_section_file(report, "ppi", name)
    if path is None:
        raise Http404("This report has no such human + judge file.")
    inline = name.endswith(".png") and request.GET.get("download") != "1"
    return file_download(
        path,
        content_type=mimetypes.guess_type(name)[0] or "application/octet-stream",
        as_attachment=not inline,
        filename=f"report-{report.pk}-{name}",
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def score_import(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = ScoreImportForm(request.POST or None, request.FILES or None)
    import_error: ScoreFileError | None = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = metric_scores_import(
                fileobj=data["file"],
                filename=data["file"].name,
                name=data["name"],
                campaign=data["campaign"],
                level=data["level"],
                created_by=request.user,
            )
        except ScoreFileError as exc:
            import_error = exc
        else:
            messages.success(
                request,
                _("已导入指标运行「%(name)s」：%(count)d 个分数。")
                % {"name": run.name, "count": run.progress_total},
            )
            return redirect_after_form(request, "metrics:report-create")
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "metrics/report_import.html",
        {"form": form, "import_error": import_error},
        status=status,
    )
