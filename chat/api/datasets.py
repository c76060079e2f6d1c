"""REST API of the chat app (researchers): datasets and their samples."""

from __future__ import annotations

import django_filters
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Dataset, Language, Sample, Skill
from chat.selectors import datasets as selectors
from chat.services import datasets as services
from core.access import request_user
from core.api import model_bounds, refused
from core.http import jsonl_download


class DatasetOutput(serializers.ModelSerializer):
    skill: serializers.SlugRelatedField[Skill] = serializers.SlugRelatedField(
        slug_field="key", read_only=True
    )

    class Meta:
        model = Dataset
        fields = [
            "id",
            "name",
            "skill",
            "language",
            "source_format",
            "description",
            "sample_count",
            "created_at",
        ]


class SampleOutput(serializers.ModelSerializer):
    skill: serializers.SlugRelatedField[Skill] = serializers.SlugRelatedField(
        slug_field="key", read_only=True
    )

    class Meta:
        model = Sample
        fields = ["id", "index", "external_id", "skill", "context", "references", "grounding"]


class DatasetFilter(django_filters.FilterSet):
    skill = django_filters.CharFilter(field_name="skill__key")
    language = django_filters.ChoiceFilter(choices=Language.choices)
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Dataset
        fields = ["skill", "language", "source_format", "name"]


class DatasetListApi(generics.ListAPIView):
    serializer_class = DatasetOutput
    filterset_class = DatasetFilter

    def get_queryset(self):
        return selectors.dataset_list(user=self.request.user)


class DatasetImportApi(APIView):
    """Upload a dataset file; all-or-nothing, errors name the line and field."""

    parser_classes = [MultiPartParser, FormParser]

    class Input(serializers.Serializer):
        file = serializers.FileField()
        source_format = serializers.ChoiceField(choices=Dataset.Format.choices)
        name = serializers.CharField(**model_bounds(Dataset, "name"))
        language = serializers.ChoiceField(choices=Language.choices)
        skill = serializers.CharField(
            required=False, allow_blank=True, **model_bounds(Skill, "key")
        )
        description = serializers.CharField(
            required=False, allow_blank=True, **model_bounds(Dataset, "description")
        )

    @extend_schema(
        request=Input,
        responses={
            201: DatasetOutput,
            400: refused("Import refused; nothing was saved"),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = self.Input(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        dataset = services.dataset_import(
            fileobj=data["file"],
            name=data["name"],
            source_format=data["source_format"],
            language=data["language"],
            skill=data.get("skill") or None,
            description=data.get("description", ""),
            created_by=request_user(request),
        )
        return Response(DatasetOutput(dataset).data, status=status.HTTP_201_CREATED)


class DatasetDetailApi(generics.RetrieveAPIView):
    serializer_class = DatasetOutput
    queryset = Dataset.objects.select_related("skill")


class SampleListApi(generics.ListAPIView):
    serializer_class = SampleOutput
    queryset = Sample.objects.none()  # the schema generator's model; requests use get_queryset

    def get_queryset(self):
        dataset = get_object_or_404(Dataset, pk=self.kwargs["pk"])
        return selectors.sample_list(dataset=dataset)


class DatasetExportApi(APIView):
    @extend_schema(
        responses={(200, "application/x-ndjson"): OpenApiResponse(description="Generic JSONL")}
    )
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        dataset = get_object_or_404(Dataset, pk=pk)
        lines = services.dataset_export_lines(dataset=dataset)
        return jsonl_download(lines, filename=f"dataset-{dataset.pk}.jsonl")
