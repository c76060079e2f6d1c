"""REST API for static generation runs (researchers): create, list, retrieve, cancel, retry."""

from __future__ import annotations

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Backend, Campaign, Dataset, StaticRun
from chat.selectors import static_runs as selectors
from chat.services import static_runs as services
from core.access import request_user
from core.api import LIST_MAX_ITEMS, model_bounds


class StaticRunProgressOutput(serializers.Serializer):
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    pending = serializers.IntegerField()
    percent = serializers.IntegerField()


class StaticRunOutput(serializers.ModelSerializer):
    campaign: serializers.SlugRelatedField[Campaign] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    campaign_id = serializers.IntegerField(read_only=True)
    dataset: serializers.SlugRelatedField[Dataset] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    backends: serializers.SlugRelatedField[Backend] = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True
    )
    progress = serializers.SerializerMethodField()

    class Meta:
        model = StaticRun
        fields = [
            "id",
            "name",
            "campaign",
            "campaign_id",
            "dataset",
            "backends",
            "sample_size",
            "seed",
            "status",
            "cancel_requested",
            "progress_done",
            "progress_total",
            "progress",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]

    @extend_schema_field(StaticRunProgressOutput)
    def get_progress(self, run: StaticRun) -> dict[str, int]:
        counts = selectors.static_run_counts(run=run)
        return {
            "total": counts.total,
            "done": counts.done,
            "failed": counts.failed,
            "pending": counts.pending,
            "percent": counts.percent,
        }


class StaticRunListCreateApi(generics.ListAPIView):
    serializer_class = StaticRunOutput

    class StaticRunCreateInput(serializers.Serializer):
        name = serializers.CharField(**model_bounds(StaticRun, "name"))
        dataset = serializers.SlugRelatedField(slug_field="name", queryset=Dataset.objects.all())
        backends = serializers.ListField(
            child=serializers.SlugRelatedField(slug_field="name", queryset=Backend.objects.all()),
            max_length=LIST_MAX_ITEMS,
        )
        campaign = serializers.SlugRelatedField(
            slug_field="name", queryset=Campaign.objects.all(), required=False, allow_null=True
        )
        campaign_name = serializers.CharField(
            required=False, allow_blank=True, **model_bounds(Campaign, "name")
        )
        sample_size = serializers.IntegerField(
            required=False, allow_null=True, **model_bounds(StaticRun, "sample_size", min_value=1)
        )
        seed = serializers.IntegerField(
            required=False, default=0, **model_bounds(StaticRun, "seed")
        )

    def get_queryset(self):
        return selectors.static_run_list(user=self.request.user)

    @extend_schema(
        request=StaticRunCreateInput,
        responses={201: StaticRunOutput, 400: OpenApiResponse(description="Refused, by field")},
    )
    def post(self, request: Request) -> Response:
        serializer = self.StaticRunCreateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        with transaction.atomic():
            run = services.static_run_create(
                name=data["name"],
                dataset=data["dataset"],
                backends=data["backends"],
                campaign=data.get("campaign"),
                campaign_name=data.get("campaign_name", ""),
                sample_size=data.get("sample_size"),
                seed=data["seed"],
                created_by=request_user(request),
            )
            services.static_run_start(run=run)
        return Response(StaticRunOutput(run).data, status=status.HTTP_201_CREATED)


class StaticRunDetailApi(generics.RetrieveAPIView):
    serializer_class = StaticRunOutput

    def get_queryset(self):
        return selectors.static_run_list(user=self.request.user)


class StaticRunCancelApi(APIView):
    @extend_schema(request=None, responses=StaticRunOutput)
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(StaticRun, pk=pk)
        run = services.static_run_cancel(run=run)
        return Response(StaticRunOutput(run).data)


class StaticRunRetryApi(APIView):
    class StaticRunRetryOutput(serializers.Serializer):
        queued = serializers.IntegerField()
        run = StaticRunOutput()

    @extend_schema(
        request=None,
        responses={200: StaticRunRetryOutput, 400: OpenApiResponse(description="Busy")},
    )
    def post(self, request: Request, pk: int) -> Response:
        run = get_object_or_404(StaticRun, pk=pk)
        queued = services.static_run_retry_failed(run=run)
        run.refresh_from_db()
        return Response({"queued": queued, "run": StaticRunOutput(run).data})
