"""REST API for FED item selections (researchers): start one, list them, read the chosen items."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import RatingJob
from chat.models import Language
from core.access import request_user
from metrics.models import FollowupSelection
from metrics.scorers import followup
from metrics.services import followup_selection as services


class FollowupSelectionOutput(serializers.ModelSerializer):
    class Meta:
        model = FollowupSelection
        fields = [
            "id",
            "name",
            "job",
            "dimension",
            "model_path",
            "language",
            "conditional",
            "criterion",
            "max_items",
            "seed",
            "layout",
            "normalisation",
            "max_length",
            "status",
            "progress_done",
            "progress_total",
            "results",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]


class FollowupSelectionInput(serializers.Serializer):
    name = serializers.CharField(max_length=160)
    job = serializers.PrimaryKeyRelatedField(queryset=RatingJob.objects.all())
    dimension = serializers.CharField(max_length=60, default="overall")
    model_path = serializers.CharField(max_length=300)
    # the interface languages, which the follow-up sets cover (the service checks it)
    language = serializers.ChoiceField(choices=Language.choices)
    conditional = serializers.BooleanField(default=True)
    criterion = serializers.ChoiceField(choices=["spearman", "pearson"], default="spearman")
    max_items = serializers.IntegerField(
        min_value=1, max_value=32767, required=False, allow_null=True, default=None
    )
    seed = serializers.IntegerField(min_value=-(2**31), max_value=2**31 - 1, default=0)
    # The scorer's inputs, a metric run's defaults: a run naming the selection takes them.
    layout = serializers.ChoiceField(choices=list(followup.LAYOUTS), default="fed")
    normalisation = serializers.ChoiceField(choices=list(followup.NORMALISATIONS), default="mean")
    max_length = serializers.IntegerField(
        min_value=services.MIN_MAX_LENGTH,
        max_value=2**31 - 1,
        required=False,
        allow_null=True,
        default=None,
    )


class FollowupSelectionListApi(APIView):
    @extend_schema(
        operation_id="followup_selections_list", responses=FollowupSelectionOutput(many=True)
    )
    def get(self, request: Request) -> Response:
        selections = FollowupSelection.objects.order_by("-pk")
        return Response(FollowupSelectionOutput(selections, many=True).data)

    @extend_schema(request=FollowupSelectionInput, responses={201: FollowupSelectionOutput})
    def post(self, request: Request) -> Response:
        payload = FollowupSelectionInput(data=request.data)
        payload.is_valid(raise_exception=True)
        selection = services.selection_create(
            **payload.validated_data, created_by=request_user(request)
        )
        return Response(FollowupSelectionOutput(selection).data, status=status.HTTP_201_CREATED)


class FollowupSelectionDetailApi(APIView):
    @extend_schema(responses=FollowupSelectionOutput)
    def get(self, request: Request, pk: int) -> Response:
        selection = get_object_or_404(FollowupSelection, pk=pk)
        return Response(FollowupSelectionOutput(selection).data)
