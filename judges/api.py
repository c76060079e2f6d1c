"""REST API of judges (researchers): create and version judges, preview prompts, estimate, run,
browse answers. A judge run is a metric run: its status, cancel, resume and scores are the
``/api/metric-runs/`` endpoints."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Rubric
from chat.models import Backend, Campaign, Dialogue, StaticRun
from core.access import request_user
from core.api import TEXT_MAX_LENGTH, BoundedJSONField, model_bounds, refused
from judges import selectors, services
from judges.models import Judge, JudgeAnswer, JudgeRun
from metrics.models import MetricRun


class JudgeOutput(serializers.ModelSerializer):
    backend: serializers.SlugRelatedField[Backend] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    rubric = serializers.SerializerMethodField()

    class Meta:
        model = Judge
        fields = [
            "id",
            "key",
            "version",
            "name",
            "backend",
            "rubric",
            "mode",
            "sampling",
            "structured",
            "max_attempts",
            "prompt_templates",
            "price_input",
            "price_output",
            "description",
            "metric_prefix",
            "created_at",
        ]

    def get_rubric(self, judge: Judge) -> str:
        return f"{judge.rubric.key}@v{judge.rubric.version}"


# A price per million tokens; the service refuses a negative one.
PRICE_MAX = 1_000_000.0


class JudgeInput(serializers.Serializer):
    name = serializers.CharField(**model_bounds(Judge, "name"))
    backend = serializers.SlugRelatedField(slug_field="name", queryset=Backend.objects.all())
    rubric = serializers.PrimaryKeyRelatedField(queryset=Rubric.objects.all())
    mode = serializers.ChoiceField(choices=Judge.Mode.choices, default=Judge.Mode.DIRECT)
    sampling = BoundedJSONField(required=False, default=dict, max_items=1000)
    structured = serializers.ChoiceField(
        choices=Judge.Structured.choices, default=Judge.Structured.AUTO
    )
    max_attempts = serializers.IntegerField(default=3, **model_bounds(Judge, "max_attempts"))
    prompt_templates = BoundedJSONField(
        required=False, default=dict, max_items=1000, max_chars=TEXT_MAX_LENGTH
    )
    price_input = serializers.FloatField(default=0.0, max_value=PRICE_MAX)
    price_output = serializers.FloatField(default=0.0, max_value=PRICE_MAX)
    description = serializers.CharField(
        required=False, default="", allow_blank=True, **model_bounds(Judge, "description")
    )


class JudgeListApi(generics.ListAPIView):
    """List judges (every version); create one (version 1 of a new key)."""

    serializer_class = JudgeOutput
    filter_backends: list[type] = []

    def get_queryset(self) -> QuerySet[Judge]:
        return selectors.judge_list()

    @extend_schema(request=JudgeInput, responses={201: JudgeOutput, 400: refused()})
    def post(self, request: Request) -> Response:
        serializer = JudgeInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        judge = services.judge_create(**serializer.validated_data, created_by=request_user(request))
        return Response(JudgeOutput(judge).data, status=status.HTTP_201_CREATED)


class JudgeDetailApi(generics.RetrieveAPIView):
    serializer_class = JudgeOutput
    queryset = Judge.objects.select_related("backend", "rubric")


class JudgeVersionApi(APIView):
    """A new version of the judge with the given fields changed."""

    class JudgeVersionInput(JudgeInput):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # DRF serializer init takes any arguments
            for field in self.fields.values():
                field.required = False
                field.default = serializers.empty

    @extend_schema(request=JudgeVersionInput, responses={201: JudgeOutput, 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        judge = get_object_or_404(Judge, pk=pk)
        serializer = self.JudgeVersionInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        new = services.judge_new_version(
            judge=judge, created_by=request_user(request), **serializer.validated_data
        )
        return Response(JudgeOutput(new).data, status=status.HTTP_201_CREATED)


class PreviewApi(APIView):
    """The prompts the judge would send for a dialogue (with an unsaved template override)."""

    class JudgePreviewInput(serializers.Serializer):
        dialogue = serializers.PrimaryKeyRelatedField(queryset=Dialogue.objects.all())
        other = serializers.PrimaryKeyRelatedField(
            queryset=Dialogue.objects.all(), required=False, allow_null=True
        )
        template = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False, max_length=TEXT_MAX_LENGTH
        )

    @extend_schema(request=JudgePreviewInput, responses={200: OpenApiResponse(), 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        judge = get_object_or_404(Judge.objects.select_related("backend", "rubric"), pk=pk)
        serializer = self.JudgePreviewInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        found = services.judge_preview(
            judge=judge,
            dialogue=data["dialogue"],
            other=data.get("other"),
            template=data.get("template") or None,
        )
        return Response(
            {
                "prompts": [
                    {
                        "system": p.system,
                        "user": p.user,
                        "questions": [q.key for q in p.questions],
                        "schema": p.schema,
                        "hash": p.digest,
                    }
                    for p in found
                ]
            }
        )


class JudgeTargetInput(serializers.Serializer):
    campaign = serializers.SlugRelatedField(
        slug_field="name", queryset=Campaign.objects.all(), required=False
    )
    static_run = serializers.PrimaryKeyRelatedField(
        queryset=StaticRun.objects.all(), required=False
    )
    include_submitted = serializers.BooleanField(required=False, default=False)
    name = serializers.CharField(required=False, default="", allow_blank=True, max_length=160)


class EstimateApi(APIView):
    """Requests, tokens and cost a run over the target would take (cached requests are free)."""

    @extend_schema(request=JudgeTargetInput, responses={200: OpenApiResponse(), 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        judge = get_object_or_404(Judge.objects.select_related("backend", "rubric"), pk=pk)
        serializer = JudgeTargetInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        estimate = services.judge_estimate(
            judge=judge,
            campaign=data.get("campaign"),
            static_run=data.get("static_run"),
            include_submitted=data["include_submitted"],
        )
        return Response(estimate)


class JudgeRunOutput(serializers.ModelSerializer):
    run = serializers.IntegerField(source="metric_run_id")
    status = serializers.CharField(source="metric_run.status")
    progress_done = serializers.IntegerField(source="metric_run.progress_done")
    progress_total = serializers.IntegerField(source="metric_run.progress_total")
    judge: serializers.StringRelatedField[Judge] = serializers.StringRelatedField()
    cost = serializers.FloatField()
    answers = serializers.SerializerMethodField()

    class Meta:
        model = JudgeRun
        fields = [
            "run",
            "judge",
            "status",
            "progress_done",
            "progress_total",
            "estimate",
            "requests_sent",
            "cache_hits",
            "prompt_tokens",
            "completion_tokens",
            "cost",
            "notes",
            "answers",
        ]

    def get_answers(self, judge_run: JudgeRun) -> dict[str, int]:
        return selectors.run_status_counts(run=judge_run.metric_run)


class JudgeRunApi(APIView):
    """Start a run of the judge (a metric run; follow it at /api/metric-runs/<run>/)."""

    @extend_schema(request=JudgeTargetInput, responses={201: JudgeRunOutput, 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        judge = get_object_or_404(Judge.objects.select_related("backend", "rubric"), pk=pk)
        serializer = JudgeTargetInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        run = services.judge_run_create(
            judge=judge,
            name=data["name"],
            campaign=data.get("campaign"),
            static_run=data.get("static_run"),
            include_submitted=data["include_submitted"],
            created_by=request_user(request),
        )
        return Response(
            JudgeRunOutput(JudgeRun.objects.get(pk=run.pk)).data, status=status.HTTP_201_CREATED
        )


class JudgeRunDetailApi(generics.RetrieveAPIView):
    serializer_class = JudgeRunOutput
    queryset = JudgeRun.objects.select_related("metric_run", "judge")


class JudgeAnswerOutput(serializers.ModelSerializer):
    class Meta:
        model = JudgeAnswer
        fields = [
            "id",
            "dialogue",
            "turn",
            "other_dialogue",
            "order",
            "sample",
            "status",
            "attempts",
            "values",
            "geval",
            "rationale",
            "raw",
            "problems",
            "finish_reason",
            "prompt_hash",
            "prompt_tokens",
            "completion_tokens",
            "cached",
        ]


class JudgeAnswerListApi(generics.ListAPIView):
    """A judge run's answers (``?status=unparseable``, ``?dialogue=<id>``), paginated."""

    serializer_class = JudgeAnswerOutput
    filter_backends: list[type] = []

    def get_queryset(self) -> QuerySet[JudgeAnswer]:
        run = get_object_or_404(MetricRun, pk=self.kwargs["pk"], judge_run__isnull=False)
        dialogue = self.request.query_params.get("dialogue")
        return selectors.run_answers(
            run=run,
            status=self.request.query_params.get("status") or None,
            dialogue_id=int(dialogue) if dialogue and dialogue.isdigit() else None,
        )
