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
from core.api import BoundedJSONObjectField, model_bounds
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
    name = serializers.CharField(**model_bounds(TrainedDiscriminator, "name"))
    dataset = serializers.SlugRelatedField(slug_field="name", queryset=Dataset.objects.all())
    preset = serializers.ChoiceField(choices=list(TABLE2_MODELS), default="AB-LSTM-bi-MLP")
    config = BoundedJSONObjectField(required=False, default=dict, max_items=1000)
    vectors = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="path of a word-vector file on the server",
        **model_bounds(TrainedDiscriminator, "path"),
    )
    # NumPy's generator takes no negative seed; the top is an integer column's, as other seeds.
    seed = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**31 - 1)


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
