"""REST API for learned discriminators (researchers): train, list, read results."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Dataset
from core.access import request_user
from metrics.models import TrainedDiscriminator
from metrics.scorers.discriminator import TABLE2_MODELS
from metrics.selectors import discriminators as selectors
from metrics.services import discriminators as services


class DiscriminatorOutput(serializers.ModelSerializer):
    dataset: serializers.SlugRelatedField[Dataset] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )

    class Meta:
        model = TrainedDiscriminator
        fields = [
            "id",
            "name",
            "dataset",
            "config",
            "status",
            "progress_done",
            "progress_total",
            "results",
            "path",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]


class DiscriminatorInput(serializers.Serializer):
    name = serializers.CharField(max_length=140)
    dataset = serializers.SlugRelatedField(slug_field="name", queryset=Dataset.objects.all())
    preset = serializers.ChoiceField(choices=list(TABLE2_MODELS), default="AB-LSTM-bi-MLP")
    config = serializers.DictField(required=False, default=dict)
    vectors = serializers.CharField(required=False, allow_blank=True, default="")
    seed = serializers.IntegerField(required=False, default=0)


class DiscriminatorListApi(APIView):
    @extend_schema(operation_id="discriminators_list", responses=DiscriminatorOutput(many=True))
    def get(self, request: Request) -> Response:
        return Response(DiscriminatorOutput(selectors.discriminator_list(), many=True).data)

    @extend_schema(request=DiscriminatorInput, responses={201: DiscriminatorOutput})
    def post(self, request: Request) -> Response:
        payload = DiscriminatorInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        version = services.discriminator_create(
            name=data["name"],
            dataset=data["dataset"],
            preset=data["preset"],
            overrides=data["config"],
            vectors=data["vectors"],
            seed=data["seed"],
            created_by=request_user(request),
        )
        return Response(DiscriminatorOutput(version).data, status=status.HTTP_201_CREATED)


class DiscriminatorDetailApi(APIView):
    @extend_schema(responses=DiscriminatorOutput)
    def get(self, request: Request, pk: int) -> Response:
        version = get_object_or_404(selectors.discriminator_list(), pk=pk)
        return Response(DiscriminatorOutput(version).data)
