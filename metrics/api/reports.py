"""REST API of correlation reports (researchers): create, list, status and results, downloads,
re-run; and the import of external metric scores as a metric run."""

from __future__ import annotations

import mimetypes

from django.contrib.auth.models import User
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from chat.models import Campaign
from core.access import request_user
from core.api import BoundedJSONField, refused
from core.errors import ServiceError
from core.http import file_download
from metrics.analysis.join import LEVELS
from metrics.analysis.scores import ScoreFileError
from metrics.models import JobStatus, MetricRun, Report
from metrics.selectors import reports as selectors
from metrics.services import reports as services
from metrics.services.score_import import metric_scores_import


class ScoreFileRefused(ServiceError):
    """A score file the statistics kernel refused; its message already says where."""

    location_style = "in_message"


class ReportOutput(serializers.ModelSerializer):
    created_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    downloads = serializers.SerializerMethodField()
    figures = serializers.SerializerMethodField()
    pairwise_files = serializers.SerializerMethodField()

    class Meta:
        model = Report
        fields = [
            "id",
            "name",
            "config",
            "status",
            "progress_done",
            "progress_total",
            "error",
            "provenance",
            "downloads",
            "figures",
            "pairwise_files",
            "created_by",
            "created_at",
            "finished_at",
        ]

    def _url(self, name: str, report: Report, *args: str) -> str:
        request = self.context.get("request")
        return reverse(name, args=[report.pk, *args], request=request)

    def get_downloads(self, report: Report) -> dict[str, str]:
        """Download URL per format (json, csv, xlsx, latex, zip) once the report is done."""
        return {
            fmt: self._url("api-report-download", report, fmt)
            for fmt in selectors.FORMAT_FILES
            if selectors.report_file(report, fmt) is not None
        }

    def get_pairwise_files(self, report: Report) -> dict[str, str]:
        """The pairwise section's files (leaderboard, agreement, accuracy CSVs, XLSX, LaTeX,
        JSON, figures) → URL; empty without a pairwise section."""
        return {
            name: self._url("api-report-pairwise-file", report, name)
            for name in selectors.report_pairwise_files(report)
        }

    def get_figures(self, report: Report) -> dict[str, str]:
        """Figure file name (PNG and SVG) → URL."""
        return {
            name: self._url("api-report-figure", report, name)
            for name in selectors.report_figures(report)
        }


class ReportDetailOutput(ReportOutput):
    results = serializers.SerializerMethodField()

    class Meta(ReportOutput.Meta):
        fields = [*ReportOutput.Meta.fields, "results"]

    def get_results(self, report: Report) -> dict | None:
        """The whole study (docs/correlation.md) when done; null before."""
        return report.results if report.status == JobStatus.DONE else None


class ReportListCreateApi(generics.ListAPIView):
    serializer_class = ReportOutput

    class ReportInput(serializers.Serializer):
        name = serializers.CharField(max_length=services.NAME_MAX_LENGTH)
        config = BoundedJSONField(
            max_items=1000,
            help_text="metric_runs (ids), rating_jobs (ids; optional with pairwise), and "
            "optionally metrics, dimensions, level (turn|dialogue|system), grouping "
            "(skill|dataset|none), system_scores (mean|corpus), methods, bootstrap, seed, "
            "pairwise ({voters, judge_rule, include_identity_leaks, include_excluded, interval, "
            "anchor} or {} for the defaults: the studies' vote rankings, agreement and each "
            "metric's pairwise accuracy)",
        )

        def validate_config(self, value: object) -> dict:
            if not isinstance(value, dict):
                raise serializers.ValidationError("expected a JSON object")
            return value

    def get_queryset(self):
        return selectors.report_list()

    @extend_schema(
        request=ReportInput,
        responses={201: ReportOutput, 400: refused("Bad configuration")},
    )
    def post(self, request: Request) -> Response:
        serializer = self.ReportInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        report = services.report_create(
            name=serializer.validated_data["name"],
            config=serializer.validated_data["config"],
            created_by=request_user(request),
        )
        body = ReportOutput(report, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ReportDetailApi(generics.RetrieveAPIView):
    serializer_class = ReportDetailOutput
    queryset = Report.objects.select_related("created_by")


class ReportRerunApi(APIView):
    @extend_schema(
        request=None,
        responses={201: ReportOutput, 400: refused("Cannot be re-run")},
    )
    def post(self, request: Request, pk: int) -> Response:
        report = get_object_or_404(Report, pk=pk)
        again = services.report_rerun(report=report, created_by=request_user(request))
        body = ReportOutput(again, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ReportCancelApi(APIView):
    @extend_schema(request=None, responses={200: ReportOutput})
    def post(self, request: Request, pk: int) -> Response:
        """Cancel a pending or running report (a report already ended is returned as it is)."""
        report = get_object_or_404(Report, pk=pk)
        services.report_cancel(report=report)
        return Response(ReportOutput(report, context={"request": request}).data)


class ReportDownloadApi(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiResponse(description="")})
    def get(self, request: Request, pk: int, fmt: str) -> FileResponse:
        report = get_object_or_404(Report, pk=pk)
        path = selectors.report_file(report, fmt)
        if path is None:
            raise Http404(f"no {fmt!r} file for this report (formats: json, csv, xlsx, latex, zip)")
        return file_download(path, filename=f"report-{report.pk}-{path.name}")


class ReportFigureApi(APIView):
    @extend_schema(responses={(200, "image/png"): OpenApiResponse(description="PNG or SVG")})
    def get(self, request: Request, pk: int, name: str) -> FileResponse:
        report = get_object_or_404(Report, pk=pk)
        path = selectors.report_figure(report, name)
        if path is None:
            raise Http404("no such figure")
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return file_download(
            path, content_type=content_type, filename=f"report-{report.pk}-{path.name}"
        )


class ReportPairwiseFileApi(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiResponse(description="")})
    def get(self, request: Request, pk: int, name: str) -> FileResponse:
        report = get_object_or_404(Report, pk=pk)
        path = selectors.report_pairwise_file(report, name)
        if path is None:
            raise Http404("no such pairwise file")
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return file_download(
            path, content_type=content_type, filename=f"report-{report.pk}-{path.name}"
        )


class ImportedRunOutput(serializers.ModelSerializer):
    campaign: serializers.SlugRelatedField[Campaign] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    scores = serializers.IntegerField(source="progress_total")

    class Meta:
        model = MetricRun
        fields = ["id", "name", "campaign", "source", "metrics", "metric_settings", "scores"]


class MetricScoreImportApi(APIView):
    """Upload external metric scores (CSV group,unit,metric,value); all or nothing."""

    parser_classes = [MultiPartParser, FormParser]

    class ScoreImportInput(serializers.Serializer):
        file = serializers.FileField()
        name = serializers.CharField(max_length=160)
        campaign = serializers.PrimaryKeyRelatedField(queryset=Campaign.objects.all())
        level = serializers.ChoiceField(choices=LEVELS)

    @extend_schema(
        request=ScoreImportInput,
        responses={
            201: ImportedRunOutput,
            400: refused("Import refused; nothing was saved"),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = self.ScoreImportInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            run = metric_scores_import(
                fileobj=data["file"],
                filename=data["file"].name,
                name=data["name"],
                campaign=data["campaign"],
                level=data["level"],
                created_by=request_user(request),
            )
        except ScoreFileError as exc:  # the statistics kernel's error: same shape as a service's
            raise ScoreFileRefused(str(exc), row=exc.row, column=exc.column or None) from exc
        return Response(ImportedRunOutput(run).data, status=status.HTTP_201_CREATED)
