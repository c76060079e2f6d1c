"""REST API for a rating job's results (researchers): human scores, agreement, exports, and
the import of existing ratings."""

from __future__ import annotations

from dataclasses import asdict

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import get_object_or_404
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.agreement import GATE_CONVENTIONS
from annotation.models import RatingImport, RatingJob
from annotation.selectors.agreement import job_agreement, job_pooled_kappas, job_rater_deviations
from annotation.selectors.exports import FORMATS, WHATS
from annotation.selectors.human_scores import (
    human_scores,
    job_scores,
    normalised_system_scores,
    rater_shortfalls,
    system_score_rows,
)
from annotation.services.rating_import_jobs import rating_import_cancel, rating_import_submit
from annotation.views.results import export_response
from chat.models import Campaign
from core.access import request_user
from core.api import KEY_MAX_LENGTH, model_bounds, refused
from core.errors import RequestParameterError


def _job(pk: int) -> RatingJob:
    return get_object_or_404(RatingJob.objects.select_related("campaign", "rubric"), pk=pk)


class JobAgreementOutput(serializers.Serializer):
    question = serializers.CharField()
    convention = serializers.ChoiceField(
        choices=GATE_CONVENTIONS,
        help_text="second-level answers skipped after a failed gate: missing (dropped) or "
        "zero (counted as the answer that scores 0)",
    )
    measurement = serializers.CharField()
    n_items = serializers.IntegerField()
    n_raters = serializers.IntegerField()
    raters_per_item = serializers.IntegerField(allow_null=True)
    n_items_complete = serializers.IntegerField()
    n_items_dropped = serializers.IntegerField()
    percent_agreement = serializers.FloatField(allow_null=True)
    randolph_kappa = serializers.FloatField(allow_null=True)
    fleiss_kappa = serializers.FloatField(allow_null=True)
    krippendorff_alpha = serializers.FloatField(allow_null=True)


class JobPooledKappaOutput(serializers.Serializer):
    convention = serializers.ChoiceField(choices=GATE_CONVENTIONS)
    n_items = serializers.IntegerField()
    n_raters = serializers.IntegerField()
    percent_agreement = serializers.FloatField(allow_null=True)
    randolph_kappa = serializers.FloatField(allow_null=True)


class JobRaterShortfallOutput(serializers.Serializer):
    backend = serializers.CharField()
    n_raters = serializers.IntegerField(
        help_text="per item: the fewest raters of an item; per system: distinct testers"
    )
    min_raters = serializers.IntegerField()
    per_item = serializers.BooleanField()
    items_short = serializers.IntegerField()
    items = serializers.IntegerField()


class JobRubricOutput(serializers.Serializer):
    key = serializers.CharField()
    version = serializers.IntegerField()
    min_raters = serializers.IntegerField()


class JobResultsOutput(serializers.Serializer):
    """The OpenAPI shape of the results; the response is built from the selectors' records."""

    job = serializers.CharField()
    rubric = JobRubricOutput()
    skipped = serializers.ListField(child=serializers.DictField())
    completeness = serializers.DictField()
    agreement = JobAgreementOutput(many=True)
    pooled_kappa = JobPooledKappaOutput(many=True)
    raters = serializers.ListField(child=serializers.DictField())
    rater_shortfalls = JobRaterShortfallOutput(many=True)
    systems = serializers.ListField(child=serializers.DictField())
    normalised = serializers.ListField(child=serializers.DictField())


class JobResultsApi(APIView):
    """Agreement per question (under both gate conventions for a gated rubric), seed 001's
    pooled yes/no kappa, rater deviations, the systems short of the rubric's raters, per-system
    scores (with CI and rank) and, for seed 001 rubrics, each system's 0–100 score: what the
    results page shows."""

    @extend_schema(responses={200: JobResultsOutput})
    def get(self, request: Request, pk: int) -> Response:
        job = _job(pk)
        scores = job_scores(job=job)
        return Response(
            {
                "job": job.name,
                "rubric": {
                    "key": job.rubric.key,
                    "version": job.rubric.version,
                    "min_raters": scores.data.spec.min_raters,
                },
                "skipped": [asdict(s) for s in scores.skipped],
                "completeness": scores.completeness(),
                "agreement": [asdict(a) for a in job_agreement(job=job, data=scores.data)],
                "pooled_kappa": [asdict(k) for k in job_pooled_kappas(job=job, data=scores.data)],
                "raters": [asdict(d) for d in job_rater_deviations(job=job, data=scores.data)],
                "rater_shortfalls": [asdict(s) for s in rater_shortfalls(job=job, scores=scores)],
                "systems": [asdict(r) for r in system_score_rows(job=job, scores=scores)],
                "normalised": [asdict(n) for n in normalised_system_scores(job=job, scores=scores)],
            }
        )


class HumanScoresApi(APIView):
    """The mean over raters per dialogue (or model turn) and dimension."""

    @extend_schema(
        parameters=[OpenApiParameter("level", enum=["dialogue", "turn"], default="dialogue")],
        responses={200: OpenApiResponse(description="list of human scores")},
    )
    def get(self, request: Request, pk: int) -> Response:
        level = request.query_params.get("level", "dialogue")
        if level not in ("dialogue", "turn"):
            raise RequestParameterError("must be dialogue or turn", field="level")
        return Response([asdict(s) for s in human_scores(job=_job(pk), level=level)])  # type: ignore[arg-type]  # checked above


class JobExportApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("what", enum=list(WHATS), default="raw"),
            # Not `format`: DRF reads that query parameter to pick a renderer.
            OpenApiParameter("fmt", enum=list(FORMATS), default="csv"),
        ],
        responses={(200, "text/csv"): OpenApiResponse(description="CSV or JSON Lines file")},
    )
    def get(self, request: Request, pk: int) -> StreamingHttpResponse | Response:
        what = request.query_params.get("what", "raw")
        fmt = request.query_params.get("fmt", "csv")
        if what not in WHATS:
            raise RequestParameterError(f"must be one of {', '.join(WHATS)}", field="what")
        if fmt not in FORMATS:
            raise RequestParameterError(f"must be one of {', '.join(FORMATS)}", field="fmt")
        return export_response(job=_job(pk), what=what, fmt=fmt)


class RatingImportApi(APIView):
    """Upload a ratings CSV (all-or-nothing; errors name the row and column). A file of up to
    `INLINE_MAX_ROWS` rows is imported at once (201); a larger one is stored and imported by a
    worker (202 with the import's URL, which reports its progress and result)."""

    parser_classes = [MultiPartParser, FormParser]

    class RatingImportInput(serializers.Serializer):
        file = serializers.FileField()
        campaign = serializers.CharField(
            help_text="campaign name", **model_bounds(Campaign, "name")
        )
        # A rubric key (60 characters at most), a colon and a version number.
        rubric = serializers.CharField(
            help_text="KEY (latest version) or KEY:VERSION", max_length=KEY_MAX_LENGTH
        )

    @extend_schema(
        request=RatingImportInput,
        responses={
            201: OpenApiResponse(description="job id and counts"),
            202: OpenApiResponse(description="a large file: the import's id, status and URL"),
            400: refused("Import refused; nothing was saved"),
        },
    )
    def post(self, request: Request) -> Response:
        data = self.RatingImportInput(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        outcome = rating_import_submit(
            fileobj=upload,
            campaign_name=data.validated_data["campaign"],
            rubric_ref=data.validated_data["rubric"],
            created_by=request_user(request),
            filename=upload.name or "",
        )
        if isinstance(outcome, RatingImport):
            body = _import_body(outcome, request)
            return Response(
                body, status=status.HTTP_202_ACCEPTED, headers={"Location": str(body["url"])}
            )
        return Response(
            {
                "job": outcome.job.pk,
                "job_name": outcome.job.name,
                "ratings": outcome.ratings,
                "dialogues": outcome.dialogues,
                "raters": outcome.raters,
                "new_raters": outcome.new_raters,
                "incomplete": outcome.incomplete,
            },
            status=status.HTTP_201_CREATED,
        )


def _import_body(job: RatingImport, request: Request) -> dict[str, object]:
    return {
        "id": job.pk,
        "url": request.build_absolute_uri(reverse("api-rating-import", args=[job.pk])),
        "status": job.status,
        "rows": job.rows,
        "progress_done": job.progress_done,
        "progress_total": job.progress_total,
        "error": job.error,
        "job": job.rating_job_id,
        "result": job.result,
    }


class RatingImportDetailApi(APIView):
    """A background import: status, progress, the refusal (row and column named) or the
    counts once done (``job`` is then the rating job imported into)."""

    @extend_schema(responses={200: OpenApiResponse(description="status, progress and result")})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_import_body(get_object_or_404(RatingImport, pk=pk), request))


class RatingImportCancelApi(APIView):
    """Cancel a background import; nothing of it is saved."""

    @extend_schema(
        request=None,
        responses={200: OpenApiResponse(description="the import, cancelled (or already ended)")},
    )
    def post(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingImport, pk=pk)
        rating_import_cancel(job=job)
        job.refresh_from_db()
        return Response(_import_body(job, request))
