"""REST API for a study's pairwise votes: import (all-or-nothing), list, export (streamed).

A study's identity words are changed through the campaign API (``PATCH /api/campaigns/{id}/``).
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Campaign, Language, Skill, Vote
from chat.selectors import votes as selectors
from chat.services import votes as services
from chat.views.votes import vote_download
from core.access import request_user
from core.api import model_bounds, refused


class VoteOutput(serializers.ModelSerializer):
    study = serializers.IntegerField(source="campaign_id")
    system_a = serializers.CharField(source="system_a.name")
    system_b = serializers.CharField(source="system_b.name")
    source_kind = serializers.CharField(source="source.kind")

    class Meta:
        model = Vote
        fields = [
            "id",
            "study",
            "item",
            "system_a",
            "system_b",
            "outcome",
            "voter_kind",
            "voter",
            "question",
            "turn",
            "reason",
            "identity_leak",
            "excluded_reason",
            "voted_at",
            "dialogue_a",
            "dialogue_b",
            "source",
            "source_kind",
        ]


class VoteFilter(django_filters.FilterSet):
    study = django_filters.NumberFilter(field_name="campaign_id", required=True)
    voter_kind = django_filters.ChoiceFilter(choices=Vote.VoterKind.choices)
    identity_leak = django_filters.BooleanFilter(
        method="filter_identity_leak", label="flagged as an identity leak (true) or not (false)"
    )
    voter = django_filters.CharFilter(max_length=200)
    question = django_filters.CharFilter(max_length=60)

    class Meta:
        model = Vote
        fields = ["study", "voter_kind", "identity_leak", "voter", "question"]

    def filter_identity_leak(self, queryset: QuerySet[Vote], name: str, value: bool) -> QuerySet:
        return queryset.exclude(identity_leak="") if value else queryset.filter(identity_leak="")


class VoteListApi(generics.ListAPIView):
    """A study's votes (``study`` is required), oldest first, 50 a page."""

    serializer_class = VoteOutput
    filterset_class = VoteFilter

    def get_queryset(self) -> QuerySet[Vote]:
        return selectors.vote_list()


class VoteImportApi(APIView):
    """Upload a vote file (CSV or JSON Lines, FastChat or plain layout; docs/votes.md) into a
    study, created as an imported one when new; all-or-nothing, errors name the line and field."""

    parser_classes = [MultiPartParser, FormParser]

    class VoteImportInput(serializers.Serializer):
        file = serializers.FileField()
        study = serializers.CharField(**model_bounds(Campaign, "name"))
        voter_kind = serializers.ChoiceField(
            choices=Vote.VoterKind.choices, default=Vote.VoterKind.HUMAN
        )
        language = serializers.ChoiceField(
            choices=Language.choices, required=False, allow_blank=True, default=""
        )
        skill = serializers.CharField(**model_bounds(Skill, "key"), default="chitchat")

    class VoteImportOutput(serializers.Serializer):
        study = serializers.CharField(source="campaign.name")
        study_id = serializers.IntegerField(source="campaign.pk")
        source_id = serializers.IntegerField(source="source.pk")
        votes = serializers.IntegerField()
        dialogues = serializers.IntegerField()
        identity_leaks = serializers.IntegerField()
        systems_created = serializers.ListField(child=serializers.CharField())
        ignored_fields = serializers.ListField(child=serializers.CharField())

    @extend_schema(
        request=VoteImportInput,
        responses={201: VoteImportOutput, 400: refused("Import refused; nothing was saved")},
    )
    def post(self, request: Request) -> Response:
        serializer = self.VoteImportInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = services.votes_import(
            fileobj=data["file"],
            campaign_name=data["study"],
            label=data["file"].name or "",
            created_by=request_user(request),
            voter_kind=data["voter_kind"],
            language=data["language"],
            skill=data["skill"],
        )
        return Response(self.VoteImportOutput(result).data, status=status.HTTP_201_CREATED)


class VoteExportApi(APIView):
    """A study's votes as a file, streamed. ``format`` names the vote layout here, not DRF's
    response format (its URL override), so the response is never negotiated away."""

    class VoteExportQuery(serializers.Serializer):
        study = serializers.IntegerField(min_value=1)
        format = serializers.ChoiceField(choices=services.FORMATS, default="fastchat")
        file = serializers.ChoiceField(choices=["jsonl", "csv"], default="jsonl")

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        parameters=[VoteExportQuery],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                response=OpenApiTypes.BINARY, description="One vote per line (docs/votes.md)"
            ),
            (200, "text/csv"): OpenApiResponse(
                response=OpenApiTypes.BINARY, description="One vote per row (docs/votes.md)"
            ),
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        query = self.VoteExportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        campaign = get_object_or_404(Campaign, pk=query.validated_data["study"])
        return vote_download(
            campaign, fmt=query.validated_data["format"], file=query.validated_data["file"]
        )
