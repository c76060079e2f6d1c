"""REST API for model backends (researchers): list, create, retrieve, update, deactivate, test.

The API key is never part of an answer: only `api_key_env` (a variable name) and whether that
variable is set on the server (`api_key_set`).
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Backend
from chat.selectors import backends as selectors
from chat.services import backends as services
from chat.services.generation import backend_connection_check
from core.access import request_user
from core.api import BoundedJSONField, model_bounds, refused


class BackendOutput(serializers.ModelSerializer):
    api_key_set = serializers.SerializerMethodField(
        help_text="Whether the variable named by api_key_env is set on the server (null: none)."
    )

    class Meta:
        model = Backend
        fields = [
            "id",
            "name",
            "adapter",
            "config",
            "api_key_env",
            "api_key_set",
            "concurrency_limit",
            "timeout_s",
            "active",
            "description",
            "created_at",
        ]

    def get_api_key_set(self, backend: Backend) -> bool | None:
        return selectors.api_key_is_set(backend)


class BackendFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = Backend
        fields = ["adapter", "active", "name"]


# The lower bounds (at least 1, more than 0) are the service's, with its messages.
_CONCURRENCY: dict[str, Any] = {"max_value": services.MAX_CONCURRENCY}
_TIMEOUT: dict[str, Any] = {"max_value": services.MAX_TIMEOUT_S}


class BackendCreateInput(serializers.Serializer):
    name = serializers.CharField(**model_bounds(Backend, "name"))
    adapter = serializers.ChoiceField(choices=Backend.Adapter.choices)
    config = BoundedJSONField(default=dict, max_items=1000)
    api_key_env = serializers.CharField(
        required=False, allow_blank=True, default="", **model_bounds(Backend, "api_key_env")
    )
    concurrency_limit = serializers.IntegerField(required=False, default=4, **_CONCURRENCY)
    timeout_s = serializers.FloatField(required=False, default=60.0, **_TIMEOUT)
    description = serializers.CharField(
        required=False, allow_blank=True, default="", **model_bounds(Backend, "description")
    )


class BackendUpdateInput(serializers.Serializer):
    name = serializers.CharField(**model_bounds(Backend, "name"))
    adapter = serializers.ChoiceField(choices=Backend.Adapter.choices)
    config = BoundedJSONField(max_items=1000)
    api_key_env = serializers.CharField(allow_blank=True, **model_bounds(Backend, "api_key_env"))
    concurrency_limit = serializers.IntegerField(**_CONCURRENCY)
    timeout_s = serializers.FloatField(**_TIMEOUT)
    description = serializers.CharField(allow_blank=True, **model_bounds(Backend, "description"))
    active = serializers.BooleanField()


class BackendTestInput(serializers.Serializer):
    message = serializers.CharField(required=False, default="你好", max_length=500)


class BackendTestOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    latency_ms = serializers.IntegerField()
    reply = serializers.CharField()
    error = serializers.CharField()
    error_kind = serializers.CharField(
        help_text="timeout | unavailable | rate_limited | bad_response | config, or empty"
    )
    notes = serializers.ListField(child=serializers.CharField())


class BackendListCreateApi(generics.ListAPIView):
    """List backends, or register one (config validated per adapter)."""

    serializer_class = BackendOutput
    filterset_class = BackendFilter

    def get_queryset(self):
        return selectors.backend_list(user=self.request.user)

    @extend_schema(
        request=BackendCreateInput,
        responses={
            201: BackendOutput,
            400: refused(),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = BackendCreateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        backend = services.backend_create(
            **serializer.validated_data, created_by=request_user(request)
        )
        return Response(BackendOutput(backend).data, status=status.HTTP_201_CREATED)


class BackendDetailApi(APIView):
    """Retrieve a backend, or change some of its fields (PATCH; PUT replaces them all)."""

    @extend_schema(responses={200: BackendOutput})
    def get(self, request: Request, pk: int) -> Response:
        return Response(BackendOutput(get_object_or_404(Backend, pk=pk)).data)

    def _update(self, request: Request, pk: int, *, partial: bool) -> Response:
        backend = get_object_or_404(Backend, pk=pk)
        serializer = BackendUpdateInput(data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        backend = services.backend_update(backend=backend, **serializer.validated_data)
        return Response(BackendOutput(backend).data)

    @extend_schema(
        request=BackendUpdateInput,
        responses={
            200: BackendOutput,
            400: refused(),
        },
    )
    def put(self, request: Request, pk: int) -> Response:
        return self._update(request, pk, partial=False)

    @extend_schema(
        request=BackendUpdateInput,
        responses={
            200: BackendOutput,
            400: refused(),
        },
    )
    def patch(self, request: Request, pk: int) -> Response:
        return self._update(request, pk, partial=True)


class BackendDeactivateApi(APIView):
    """Deactivate a backend (never deleted: its dialogues and scores stay)."""

    @extend_schema(request=None, responses={200: BackendOutput})
    def post(self, request: Request, pk: int) -> Response:
        backend = services.backend_deactivate(backend=get_object_or_404(Backend, pk=pk))
        return Response(BackendOutput(backend).data)


class BackendTestApi(APIView):
    """Send one message to the backend; the answer has the latency and the reply or the error."""

    @extend_schema(request=BackendTestInput, responses={200: BackendTestOutput})
    def post(self, request: Request, pk: int) -> Response:
        backend = get_object_or_404(Backend, pk=pk)
        serializer = BackendTestInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = backend_connection_check(
            backend=backend, message=serializer.validated_data["message"]
        )
        return Response(BackendTestOutput(result).data)
