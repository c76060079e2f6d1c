"""REST API of metric runs (researchers): create, list, progress, cancel, resume, scores, files."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Backend, Campaign, StaticRun
from core.access import request_user
from core.api import BoundedJSONField, ServiceErrorOutput, refused
from core.errors import ServiceError
from metrics.models import Level, MetricRun, MetricScore
from metrics.selectors import metric_runs as selectors
from metrics.selectors.preflight import metric_run_preflight
from metrics.services import metric_runs as services
from metrics.views.metric_runs import DOWNLOAD_FORMATS, score_download


class MetricRunOutput(serializers.ModelSerializer):
    campaign: serializers.SlugRelatedField[Campaign] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    campaign_id = serializers.IntegerField(read_only=True, allow_null=True)
    metric_status = serializers.SerializerMethodField()

    class Meta:
        model = MetricRun
        fields = [
            "id",
            "name",
            "campaign",
            "campaign_id",
            "static_run",
            "target",
            "include_submitted",
            "source",
            "metrics",
            "metric_settings",
            "status",
            "progress_done",
            "progress_total",
            "signatures",
            "unavailable",
            "metric_status",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_metric_status(self, run: MetricRun) -> dict[str, str]:
        """Per metric: ``ok``, ``unavailable: <why>``, ``partly unavailable: …`` or ``pending``."""
        return {
            str(row["name"]): str(row["status"] or "pending")
            for row in selectors.run_metric_status(run=run)
        }


class MetricScoreOutput(serializers.ModelSerializer):
    backend: serializers.SlugRelatedField[Backend] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    skill = serializers.CharField(source="group")

    class Meta:
        model = MetricScore
        fields = ["id", "metric", "level", "turn", "dialogue", "backend", "skill", "value"]


class MetricRunListApi(generics.ListAPIView):
    """List runs (``?status=``); create one over a campaign, a static run or an uploaded answer
    file (multipart, the ``score_responses`` input format)."""

    serializer_class = MetricRunOutput
    filter_backends: list[type] = []

    class MetricRunInput(serializers.Serializer):
        name = serializers.CharField(max_length=160)
        metrics = serializers.ListField(
            child=serializers.CharField(max_length=80),
            max_length=200,
            help_text="metric or preset names (msde16, …)",
        )
        settings = BoundedJSONField(required=False, default=dict, max_items=1000)
        # By id, as every other endpoint takes its objects; `campaign_name` is the name lookup
        # kept for scripts that know a study by its (unique) name.
        campaign = serializers.PrimaryKeyRelatedField(
            queryset=Campaign.objects.all(),
            required=False,
            help_text="the campaign's id",
            error_messages={
                "incorrect_type": "expected the campaign's id (a number), got {data_type}; "
                "to give its name, use campaign_name"
            },
        )
        campaign_name = serializers.SlugRelatedField(
            slug_field="name",
            queryset=Campaign.objects.all(),
            required=False,
            help_text="the campaign's name, instead of its id",
        )
        static_run = serializers.PrimaryKeyRelatedField(
            queryset=StaticRun.objects.all(), required=False
        )
        include_submitted = serializers.BooleanField(required=False, default=False)
        file = serializers.FileField(required=False)
        system = serializers.CharField(max_length=120, required=False, default="uploaded")
        skill = serializers.CharField(max_length=40, required=False, default="chitchat")

        def validate_settings(self, value: object) -> dict:
            if not isinstance(value, dict):
                raise serializers.ValidationError("expected a JSON object")
            return value

        def validate(self, attrs: dict) -> dict:
            by_name = attrs.pop("campaign_name", None)
            if by_name is not None:
                if attrs.get("campaign") is not None and attrs["campaign"] != by_name:
                    raise serializers.ValidationError(
                        {"campaign_name": "give the campaign by id or by name, not both"}
                    )
                attrs["campaign"] = by_name
            return attrs

    def get_queryset(self):
        runs = selectors.metric_run_list(user=self.request.user)
        if self.request.query_params.get("status"):
            runs = runs.filter(status=self.request.query_params["status"])
        return runs

    @extend_schema(
        request=MetricRunInput,
        responses={201: MetricRunOutput, 400: refused()},
    )
    def post(self, request: Request) -> Response:
        serializer = self.MetricRunInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        upload = None
        if data.get("file") is not None:
            upload = services.Upload(
                fileobj=data["file"],
                filename=data["file"].name,
                system=data["system"],
                skill=data["skill"],
            )
        run = services.metric_run_create(
            name=data["name"],
            metrics=data["metrics"],
            settings=data["settings"],
            campaign=data.get("campaign"),
            static_run=data.get("static_run"),
            upload=upload,
            include_submitted=data["include_submitted"],
            created_by=request_user(request),
        )
        return Response(MetricRunOutput(run).data, status=status.HTTP_201_CREATED)


class MetricRunPreflightInput(serializers.Serializer):
    metrics = serializers.ListField(
        child=serializers.CharField(max_length=80),
        max_length=200,
        help_text="metric or preset names (msde16, …)",
    )
    settings = BoundedJSONField(required=False, default=dict, max_items=1000)


class MetricRunPreflightOutput(serializers.Serializer):
    metrics = serializers.ListField(child=serializers.CharField())
    available = serializers.ListField(child=serializers.CharField())
    unavailable = serializers.ListField(child=serializers.DictField())
    summary = serializers.CharField()


class MetricRunPreflightApi(APIView):
    """Before creating a run: which chosen metrics would be unavailable here, why, and how to
    make them available. Looks at settings and files only (no model is loaded)."""

    @extend_schema(
        request=MetricRunPreflightInput,
        responses={200: MetricRunPreflightOutput, 400: refused()},
    )
    def post(self, request: Request) -> Response:
        serializer = MetricRunPreflightInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if not isinstance(data["settings"], dict):
            raise services.MetricRunError("expected a JSON object", field="settings")
        names = services.check_metric_names(data["metrics"])
        settings = services.check_settings(data["settings"])
        return Response(metric_run_preflight(metrics=names, settings=settings).as_dict())


class MetricRunDetailApi(generics.RetrieveAPIView):
    serializer_class = MetricRunOutput
    queryset = MetricRun.objects.select_related("campaign")


class MetricRunCancelApi(APIView):
    @extend_schema(request=None, responses={200: MetricRunOutput, 409: ServiceErrorOutput})
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(MetricRun, pk=pk)
        if not services.metric_run_cancel(run=run):
            refusal = ServiceError(f"the run is already {run.status}", field="status")
            return Response(refusal.as_body(), status=status.HTTP_409_CONFLICT)
        return Response(MetricRunOutput(run).data)


class MetricRunResumeApi(APIView):
    @extend_schema(request=None, responses={200: MetricRunOutput, 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(MetricRun, pk=pk)
        services.metric_run_resume(run=run)
        run.refresh_from_db()
        return Response(MetricRunOutput(run).data)


class MetricScoreListApi(generics.ListAPIView):
    """A run's scores, filtered by ``level``, ``metric``, ``backend`` (name or id), ``skill``."""

    serializer_class = MetricScoreOutput
    filter_backends: list[type] = []

    @extend_schema(
        parameters=[
            OpenApiParameter("level", enum=Level.values),
            OpenApiParameter("metric", str),
            OpenApiParameter("backend", str),
            OpenApiParameter("skill", str, description='skill key; "" = all skills (system)'),
        ]
    )
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        run = get_object_or_404(MetricRun, pk=self.kwargs["pk"])
        params = self.request.query_params
        level = params.get("level") or None
        if level is not None and level not in Level.values:
            raise serializers.ValidationError({"level": f"expected one of {Level.values}"})
        return selectors.score_list(
            run=run,
            level=level,
            metric=params.get("metric") or None,
            backend=params.get("backend") or None,
            group=params.get("skill"),
        )


class MetricRunDownloadApi(APIView):
    @extend_schema(
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
        }
    )
    def get(self, request: Request, pk: int, level: str, fmt: str) -> StreamingHttpResponse:
        if level not in Level.values or fmt not in DOWNLOAD_FORMATS:
            raise serializers.ValidationError(
                {"detail": f"level in {Level.values}, format in {list(DOWNLOAD_FORMATS)}"}
            )
        return score_download(get_object_or_404(MetricRun, pk=pk), level, fmt)
