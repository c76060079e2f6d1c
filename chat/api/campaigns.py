"""REST API for campaigns (researchers): list, create, retrieve, update, activate, close, progress.

Service validation errors come back as HTTP 400 with `{field: [messages]}`.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import (
    CAMPAIGN_LANGUAGE_CHOICES,
    Backend,
    Campaign,
    CampaignBackend,
    Dataset,
    Skill,
)
from chat.selectors import campaigns as selectors
from chat.services import campaigns as services
from chat.services.identity import MAX_IDENTITY_WORD_LENGTH, MAX_IDENTITY_WORDS
from chat.services.votes import campaign_set_identity_words
from core.access import request_user
from core.api import LIST_MAX_ITEMS, BoundedJSONField, model_bounds


class CampaignBackendOutput(serializers.Serializer):
    id = serializers.IntegerField(source="backend_id")
    name = serializers.CharField(source="backend.name")
    alias = serializers.CharField()


class OpeningOutput(serializers.Serializer):
    position = serializers.IntegerField(source="opening.position")
    sample_id = serializers.IntegerField(source="opening.sample_id")
    sample_external_id = serializers.CharField(source="opening.sample.external_id")
    topic = serializers.CharField(source="opening.topic")
    text = serializers.CharField(source="opening.text")
    used = serializers.IntegerField()


class CampaignOutput(serializers.ModelSerializer):
    skills: serializers.SlugRelatedField[Skill] = serializers.SlugRelatedField(
        slug_field="key", many=True, read_only=True
    )
    datasets: serializers.PrimaryKeyRelatedField[Dataset] = serializers.PrimaryKeyRelatedField(
        many=True, read_only=True
    )
    backends = CampaignBackendOutput(source="campaign_backends", many=True, read_only=True)
    invite_url = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = [
            "id",
            "name",
            "mode",
            "status",
            "skills",
            "backends",
            "datasets",
            "quota_per_cell",
            "max_turns",
            "min_turns",
            "instructions",
            "rate_while_chatting",
            "per_worker_cap",
            "reservation_timeout_minutes",
            "worker_session_hours",
            "completion_url",
            "completion_code",
            "invite_token",
            "invite_url",
            "acceptability",
            "identity_words",
            "interface_language",
            "opening_dataset",
            "opening_count",
            "opening_seed",
            "created_at",
        ]

    def get_invite_url(self, campaign: Campaign) -> str:
        path = reverse("chat:campaign-join", args=[campaign.invite_token])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class CampaignDetailOutput(CampaignOutput):
    """One campaign, with its drawn openings (not in the list: one more query per campaign)."""

    openings = serializers.SerializerMethodField()

    class Meta(CampaignOutput.Meta):
        fields = [*CampaignOutput.Meta.fields, "openings"]

    @extend_schema_field(OpeningOutput(many=True))
    def get_openings(self, campaign: Campaign) -> list[dict[str, Any]]:
        """The drawn openings (seed 001) with their topics and how many dialogues used each."""
        usage = selectors.opening_usage(campaign=campaign)
        return list(OpeningOutput(usage, many=True).data)


class BackendChoice(serializers.Serializer):
    id = serializers.PrimaryKeyRelatedField(queryset=Backend.objects.all())
    alias = serializers.CharField(
        required=False, allow_blank=True, **model_bounds(CampaignBackend, "alias")
    )


def _campaign_int(name: str) -> serializers.IntegerField:
    return serializers.IntegerField(required=False, **model_bounds(Campaign, name))


class CampaignInput(serializers.Serializer):
    """Shape only; the rules (skills of datasets, turn limits, aliases, …) are the service's."""

    name = serializers.CharField(**model_bounds(Campaign, "name"))
    mode = serializers.ChoiceField(choices=Campaign.Mode.choices)
    skills = serializers.ListField(
        child=serializers.CharField(**model_bounds(Skill, "key")),
        allow_empty=True,
        max_length=LIST_MAX_ITEMS,
    )
    backends = serializers.ListField(child=BackendChoice(), max_length=LIST_MAX_ITEMS)
    datasets = serializers.ListField(
        child=serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all()),
        max_length=LIST_MAX_ITEMS,
    )
    quota_per_cell = _campaign_int("quota_per_cell")
    max_turns = _campaign_int("max_turns")
    min_turns = _campaign_int("min_turns")
    instructions = BoundedJSONField(required=False)
    rate_while_chatting = serializers.BooleanField(required=False)
    per_worker_cap = _campaign_int("per_worker_cap")
    reservation_timeout_minutes = _campaign_int("reservation_timeout_minutes")
    worker_session_hours = _campaign_int("worker_session_hours")
    completion_url = serializers.CharField(
        required=False, allow_blank=True, **model_bounds(Campaign, "completion_url")
    )
    acceptability = BoundedJSONField(required=False)
    interface_language = serializers.ChoiceField(
        choices=CAMPAIGN_LANGUAGE_CHOICES, required=False, allow_blank=True
    )
    opening_dataset = serializers.PrimaryKeyRelatedField(
        queryset=Dataset.objects.all(), required=False, allow_null=True
    )
    opening_count = _campaign_int("opening_count")
    opening_seed = _campaign_int("opening_seed")
    status = serializers.ChoiceField(choices=Campaign.Status.choices, required=False)
    # Pairwise votes: the study's own identity words ([] = the default list; docs/votes.md).
    identity_words = serializers.ListField(
        child=serializers.CharField(max_length=MAX_IDENTITY_WORD_LENGTH),
        allow_empty=True,
        max_length=MAX_IDENTITY_WORDS,
        required=False,
    )


def _service_arguments(data: dict[str, Any]) -> dict[str, Any]:
    arguments = dict(data)
    if "backends" in arguments:
        choices = arguments.pop("backends")
        arguments["backends"] = [choice["id"] for choice in choices]
        arguments["aliases"] = [choice.get("alias", "") for choice in choices]
    return arguments


class CampaignPagination(PageNumberPagination):
    page_size = 50


class CampaignListApi(APIView):
    @extend_schema(responses=CampaignOutput(many=True))
    def get(self, request: Request) -> Response:
        campaigns = selectors.campaign_list(
            user=request.user,
            status=request.query_params.get("status") or None,
            mode=request.query_params.get("mode") or None,
        ).prefetch_related("datasets", "campaign_backends__backend")
        paginator = CampaignPagination()
        page = paginator.paginate_queryset(campaigns, request, view=self)
        data = CampaignOutput(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)

    @extend_schema(request=CampaignInput, responses={201: CampaignDetailOutput})
    def post(self, request: Request) -> Response:
        serializer = CampaignInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        arguments = _service_arguments(serializer.validated_data)
        words = arguments.pop("identity_words", None)
        with transaction.atomic():
            campaign = services.campaign_create(created_by=request_user(request), **arguments)
            if words is not None:
                campaign_set_identity_words(campaign=campaign, words=words)
        campaign = selectors.campaign_get(pk=campaign.pk)
        body = CampaignDetailOutput(campaign, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    @extend_schema(responses=CampaignDetailOutput)
    def get(self, request: Request, pk: int) -> Response:
        campaign = get_object_or_404(Campaign, pk=pk)
        campaign = selectors.campaign_get(pk=campaign.pk)
        return Response(CampaignDetailOutput(campaign, context={"request": request}).data)

    @extend_schema(request=CampaignInput(partial=True), responses=CampaignDetailOutput)
    def patch(self, request: Request, pk: int) -> Response:
        campaign = get_object_or_404(Campaign, pk=pk)
        serializer = CampaignInput(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        arguments = _service_arguments(serializer.validated_data)
        if "status" in arguments:
            raise ApiValidationError(
                {"status": ["use POST …/activate/ or …/close/ to change the status"]}
            )
        words = arguments.pop("identity_words", None)
        with transaction.atomic():
            services.campaign_update(campaign=campaign, **arguments)
            if words is not None:
                campaign_set_identity_words(campaign=campaign, words=words)
        campaign = selectors.campaign_get(pk=campaign.pk)
        return Response(CampaignDetailOutput(campaign, context={"request": request}).data)


class CampaignActivateApi(APIView):
    @extend_schema(request=None, responses=CampaignDetailOutput)
    def post(self, request: Request, pk: int) -> Response:
        campaign = get_object_or_404(Campaign, pk=pk)
        services.campaign_activate(campaign=campaign)
        campaign = selectors.campaign_get(pk=campaign.pk)
        return Response(CampaignDetailOutput(campaign, context={"request": request}).data)


class CampaignCloseApi(APIView):
    @extend_schema(request=None, responses=CampaignDetailOutput)
    def post(self, request: Request, pk: int) -> Response:
        campaign = get_object_or_404(Campaign, pk=pk)
        services.campaign_close(campaign=campaign)
        campaign = selectors.campaign_get(pk=campaign.pk)
        return Response(CampaignDetailOutput(campaign, context={"request": request}).data)


class ProgressCellOutput(serializers.Serializer):
    backend_id = serializers.IntegerField()
    alias = serializers.CharField()
    backend_name = serializers.CharField()
    skill = serializers.CharField()
    quota = serializers.IntegerField()
    collected = serializers.IntegerField()
    accepted = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    rejected = serializers.IntegerField()


class ProgressOutput(serializers.Serializer):
    collected = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    rejected = serializers.IntegerField()
    quota = serializers.IntegerField()
    percent = serializers.IntegerField()
    cells = ProgressCellOutput(many=True)


class CampaignProgressApi(APIView):
    @extend_schema(responses=ProgressOutput)
    def get(self, request: Request, pk: int) -> Response:
        campaign = get_object_or_404(Campaign, pk=pk)
        return Response(ProgressOutput(selectors.campaign_progress(campaign=campaign)).data)
