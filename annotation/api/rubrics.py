"""REST API for rubrics (researchers): list, retrieve, create, and new versions."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Rubric
from annotation.rubric_spec import RubricSpecError
from annotation.selectors import rubrics as selectors
from annotation.services import rubrics as services
from core.access import request_user
from core.api import BoundedJSONField


class RubricOutput(serializers.ModelSerializer):
    in_use = serializers.SerializerMethodField()

    class Meta:
        model = Rubric
        fields = ["id", "key", "version", "title", "is_preset", "in_use", "spec", "created_at"]

    def get_in_use(self, rubric: Rubric) -> bool:
        annotated = getattr(rubric, "in_use", None)
        if annotated is not None:
            return bool(annotated)
        return selectors.rubric_in_use(rubric=rubric)


class RubricSpecInput(serializers.Serializer):
    spec = BoundedJSONField(help_text="The rubric spec (docs/rubrics.md); version is set.")


class RubricSpecErrorOutput(serializers.Serializer):
    detail = serializers.CharField()
    errors = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))  # type: ignore[assignment]  # documents the 400 body's "errors" key (schema only, never bound to data)


def _refused(exc: RubricSpecError) -> Response:
    errors = [{"path": path, "message": message} for path, message in exc.errors]
    return Response({"detail": str(exc), "errors": errors}, status=status.HTTP_400_BAD_REQUEST)


class RubricListCreateApi(APIView):
    @extend_schema(responses={200: RubricOutput(many=True)})
    def get(self, request: Request) -> Response:
        return Response(RubricOutput(selectors.rubric_list(), many=True).data)

    @extend_schema(
        request=RubricSpecInput,
        responses={201: RubricOutput, 400: OpenApiResponse(RubricSpecErrorOutput, "Spec refused")},
    )
    def post(self, request: Request) -> Response:
        data = RubricSpecInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            rubric = services.rubric_create(
                spec=data.validated_data["spec"], created_by=request_user(request)
            )
        except RubricSpecError as exc:
            return _refused(exc)
        return Response(RubricOutput(rubric).data, status=status.HTTP_201_CREATED)


class RubricDetailApi(generics.RetrieveAPIView):
    serializer_class = RubricOutput

    def get_queryset(self):
        return selectors.rubric_list()


class RubricNewVersionApi(APIView):
    """Always a new version (after the latest of the key), whether or not this one is in use."""

    @extend_schema(
        request=RubricSpecInput,
        responses={201: RubricOutput, 400: OpenApiResponse(RubricSpecErrorOutput, "Spec refused")},
    )
    def post(self, request: Request, pk: int) -> Response:
        rubric = generics.get_object_or_404(Rubric, pk=pk)
        data = RubricSpecInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            new = services.rubric_new_version(
                rubric=rubric, spec=data.validated_data["spec"], created_by=request_user(request)
            )
        except RubricSpecError as exc:
            return _refused(exc)
        return Response(RubricOutput(new).data, status=status.HTTP_201_CREATED)
