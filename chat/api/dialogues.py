"""REST API for dialogue JSONL: a campaign's export (streamed) and the import (all-or-nothing)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Campaign, Dialogue
from chat.services import dialogue_io
from chat.views.dialogues import export_filters
from core.access import request_user
from core.api import model_bounds, refused
from core.http import jsonl_download


class CampaignDialoguesExportApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("static_run", int, description="only the answers of this static run"),
            OpenApiParameter(
                "status", str, many=True, enum=Dialogue.Status.values, description="repeatable"
            ),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                description="One dialogue per line (docs/dialogues.md)"
            )
        },
    )
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        campaign = get_object_or_404(Campaign, pk=pk)
        static_run, statuses = export_filters(campaign, dict(request.query_params.lists()))
        lines = dialogue_io.dialogue_export_lines(
            campaign=campaign, static_run=static_run, statuses=statuses
        )
        return jsonl_download(lines, filename=f"campaign-{campaign.pk}-dialogues.jsonl")


class DialogueImportApi(APIView):
    """Upload a dialogue JSONL file; all-or-nothing, errors name the line and field."""

    parser_classes = [MultiPartParser, FormParser]

    class DialogueImportInput(serializers.Serializer):
        file = serializers.FileField()
        campaign = serializers.CharField(**model_bounds(Campaign, "name"))

    class DialogueImportOutput(serializers.Serializer):
        campaign = serializers.CharField(source="campaign.name")
        campaign_id = serializers.IntegerField(source="campaign.pk")
        dialogues = serializers.IntegerField()
        turns = serializers.IntegerField()
        systems_created = serializers.ListField(child=serializers.CharField())

    @extend_schema(
        request=DialogueImportInput,
        responses={
            201: DialogueImportOutput,
            400: refused("Import refused; nothing was saved"),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = self.DialogueImportInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = dialogue_io.dialogues_import(
            fileobj=serializer.validated_data["file"],
            campaign_name=serializer.validated_data["campaign"],
            created_by=request_user(request),
        )
        return Response(self.DialogueImportOutput(result).data, status=status.HTTP_201_CREATED)
