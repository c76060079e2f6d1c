"""A rating job's results for researchers (they name the real systems): agreement, rater
deviations, per-system scores with a small bar chart per dimension, downloads, and the upload
of existing ratings."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import cast

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.models import RatingImport, RatingJob
from annotation.rubric_spec import RubricSpec
from annotation.scoring import OVERALL, ScoreRow
from annotation.selectors import human_scores as human_scores_selectors
from annotation.selectors import rating as rating_selectors
from annotation.selectors.agreement import (
    agreement_conventions,
    job_agreement,
    job_pooled_kappas,
    job_rater_deviations,
)
from annotation.selectors.exports import FORMATS, WHATS, export_filename, export_lines
from annotation.selectors.human_scores import (
    job_scores,
    normalised_system_scores,
    rater_shortfalls,
    system_score_rows,
)
from annotation.selectors.rating import localized
from annotation.services.rating_import import RatingImportError
from annotation.services.rating_import_jobs import rating_import_cancel, rating_import_submit
from chat.models import Campaign
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.http import download, redirect_after_form
from core.jobs import JobStatus

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}
# Bar chart geometry (SVG user units); the chart scales to its box.
CHART_WIDTH, BAR_HEIGHT, BAR_GAP, LABEL_WIDTH, TOP = 320, 18, 8, 96, 6


@dataclass(frozen=True)
class Bar:
    label: str
    y: float
    width: float
    value: float
    ci_x1: float | None
    ci_x2: float | None
    text_x: float


@dataclass(frozen=True)
class Chart:
    skill: str | None
    dimension: str
    bars: list[Bar]
    height: float
    low: float
    high: float
    label_width: int = LABEL_WIDTH
    width: int = CHART_WIDTH


@role_required(Role.RESEARCHER)
@require_GET
def job_results(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The results partial the job page loads with htmx; opened directly, a page of its own."""
    job = get_object_or_404(RatingJob.objects.select_related("campaign", "rubric"), pk=pk)
    scores = job_scores(job=job)
    systems = system_score_rows(job=job, scores=scores)
    normalised = normalised_system_scores(job=job, scores=scores)
    context = {
        "job": job,
        "n_ratings": len(scores.data.answers),
        "n_units": len(scores.unit_scores),
        "skipped": scores.skipped,
        "completeness": scores.completeness(),
        "agreement": job_agreement(job=job, data=scores.data),
        "agreement_conventions": agreement_conventions(scores.data),
        "pooled_kappas": job_pooled_kappas(job=job, data=scores.data),
        "deviations": job_rater_deviations(job=job, data=scores.data),
        "systems": systems,
        "normalised": normalised,
        "shortfalls": rater_shortfalls(job=job, scores=scores),
        "min_raters": scores.data.spec.min_raters,
        # Per-skill 0–100 rows repeat the pooled ones when the job has a single skill.
        "normalised_by_skill": len({s.skill for s in normalised if s.skill}) > 1,
        "charts": _charts(scores.data.spec, systems),
        # Labels on the page, keys only in the downloads.
        "labels": _labels(scores.data.spec),
        "downloads": [(what, fmt) for what in WHATS for fmt in FORMATS],
    }
    template = "annotation/results_partial.html" if request.htmx else "annotation/results_page.html"
    return render(request, template, context)


@role_required(Role.RESEARCHER)
@require_GET
def campaign_rater_shortfalls(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The campaign page's warning (loaded with htmx, so `chat` imports nothing from here):
    each rating job's systems rated by fewer raters than its rubric's ``min_raters``."""
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    jobs = human_scores_selectors.campaign_rater_shortfalls(campaign_id=campaign.pk)
    return render(request, "annotation/campaign_shortfalls.html", {"jobs": jobs})


@role_required(Role.RESEARCHER)
@require_GET
def job_export(request: HttpRequest, pk: int, what: str, fmt: str) -> StreamingHttpResponse:
    job = get_object_or_404(RatingJob.objects.select_related("campaign", "rubric"), pk=pk)
    if what not in WHATS or fmt not in FORMATS:
        raise Http404("unknown export")
    return export_response(job=job, what=what, fmt=fmt)


def export_response(*, job: RatingJob, what: str, fmt: str) -> StreamingHttpResponse:
    """Stream an export as a file download (shared by the page and the API)."""
    return download(
        export_lines(job=job, what=what, fmt=fmt),  # type: ignore[arg-type]  # checked against WHATS/FORMATS
        filename=export_filename(job=job, what=what, fmt=fmt),  # type: ignore[arg-type]  # checked against WHATS/FORMATS
        content_type=CONTENT_TYPES[fmt],
    )


class RatingImportForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("评分文件（CSV，UTF-8）"))
    campaign = forms.ModelChoiceField(
        queryset=Campaign.objects.order_by("name"),
        to_field_name="name",
        label=gettext_lazy("评测活动"),
    )
    rubric = forms.ChoiceField(label=gettext_lazy("评分表"))

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # Form's own signature
        cast(forms.ChoiceField, self.fields["rubric"]).choices = [
            (f"{r.key}:{r.version}", str(r)) for r in rating_selectors.rubric_choices()
        ]


def _imported_message(*, ratings: int, dialogues: int, raters: int, job: RatingJob) -> str:
    return _(
        "已导入 %(ratings)d 条评分（%(dialogues)d 段对话，%(raters)d 位评分人）到「%(job)s」。"
    ) % {"ratings": ratings, "dialogues": dialogues, "raters": raters, "job": job.name}


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def ratings_import_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A file of up to `INLINE_MAX_ROWS` rows is imported while the request waits; a larger
    one becomes a job whose page shows its progress."""
    form = RatingImportForm(request.POST or None, request.FILES or None)
    import_error: RatingImportError | None = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = rating_import_submit(
                fileobj=data["file"],
                campaign_name=data["campaign"].name,
                rubric_ref=data["rubric"],
                created_by=request.user,
                filename=data["file"].name or "",
            )
        except RatingImportError as exc:
            import_error = exc
        else:
            if isinstance(outcome, RatingImport):
                messages.info(
                    request,
                    _("文件有 %(rows)d 行，正在后台导入；完成前不会保存任何数据。")
                    % {"rows": outcome.rows},
                )
                return redirect_after_form(request, "annotation:rating-import", pk=outcome.pk)
            messages.success(
                request,
                _imported_message(
                    ratings=outcome.ratings,
                    dialogues=outcome.dialogues,
                    raters=outcome.raters,
                    job=outcome.job,
                ),
            )
            return redirect_after_form(request, "annotation:job-results", pk=outcome.job.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "annotation/results_import.html",
        {"form": form, "import_error": import_error},
        status=status,
    )


@role_required(Role.RESEARCHER)
@require_GET
def rating_import_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """A background import's page; while it runs, htmx polls its status card every second."""
    job = get_object_or_404(
        RatingImport.objects.select_related("campaign", "rubric", "rating_job"), pk=pk
    )
    template = "annotation/rating_import_detail.html"
    if request.htmx:
        template += "#status"
    summary = ""
    if job.status == JobStatus.DONE and job.rating_job is not None:
        summary = _imported_message(
            ratings=job.result["ratings"],
            dialogues=job.result["dialogues"],
            raters=job.result["raters"],
            job=job.rating_job,
        )
    return render(
        request,
        template,
        {
            "job": job,
            "active": job.status in (JobStatus.PENDING, JobStatus.RUNNING),
            "summary": summary,
        },
    )


@role_required(Role.RESEARCHER)
@require_POST
def rating_import_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(RatingImport, pk=pk)
    if rating_import_cancel(job=job):
        messages.success(request, _("已取消导入，没有保存任何数据。"))
    return redirect("annotation:rating-import", pk=pk)


def _labels(spec: RubricSpec) -> dict[str, str]:
    language = get_language() or "zh-hans"
    labels = {q.key: localized(q.label, language) or q.key for q in spec.questions}
    for q in spec.questions:
        if q.type == "yesno" and q.positive == "no":
            # A reversed question scores the "no" answers: 0.917 is the share of acceptable
            # replies, not of unacceptable ones.
            labels[q.key] = _("%(label)s（得分 = 回答“否”的比例）") % {"label": labels[q.key]}
    labels[OVERALL] = _("总体")
    return labels


def _charts(spec: RubricSpec, rows: list[ScoreRow]) -> list[Chart]:
    """One horizontal bar chart per (skill, dimension): each system's mean with its 95% CI."""
    groups: dict[tuple[str | None, str], list[ScoreRow]] = defaultdict(list)
    for row in rows:
        groups[(row.skill, row.dimension)].append(row)
    charts = []
    for (skill, dimension), group in groups.items():
        low, high = _domain(spec, dimension, group)
        span = (high - low) or 1.0
        plot = CHART_WIDTH - LABEL_WIDTH - 40

        def x(value: float, low: float = low, span: float = span, plot: int = plot) -> float:
            return round(LABEL_WIDTH + plot * (min(max(value, low), low + span) - low) / span, 1)

        bars = []
        for i, row in enumerate(sorted(group, key=lambda r: (r.rank or 0, str(r.unit)))):
            y = TOP + i * (BAR_HEIGHT + BAR_GAP)
            ci = (
                (row.ci_low, row.ci_high)
                if row.ci_low is not None and row.ci_high is not None
                else None
            )
            bars.append(
                Bar(
                    label=str(row.unit),
                    y=y,
                    width=round(x(row.mean) - LABEL_WIDTH, 1),
                    value=row.mean,
                    ci_x1=x(ci[0]) if ci else None,
                    ci_x2=x(ci[1]) if ci else None,
                    text_x=max(x(row.mean), x(ci[1]) if ci else 0) + 4,
                )
            )
        height = TOP * 2 + len(bars) * (BAR_HEIGHT + BAR_GAP)
        charts.append(Chart(skill, dimension, bars, height, low, high))
    return charts


def _domain(spec: RubricSpec, dimension: str, rows: list[ScoreRow]) -> tuple[float, float]:
    """The axis: the dimension's possible range where the rubric defines it, else the data's."""
    seen = [v for r in rows for v in (r.mean, r.ci_low, r.ci_high) if v is not None]
    if dimension == OVERALL and spec.overall != "none":
        if spec.overall == "normalised_100":
            return 0.0, 100.0
        scored = [q for q in spec.questions if q.scored and not q.gate]
        if spec.overall == "mean" and scored:
            return min(q.min_score for q in scored), max(q.max_score for q in scored)
        return min(0.0, *seen), max(seen)
    question = next(q for q in spec.questions if q.key == dimension)
    return question.min_score, question.max_score
