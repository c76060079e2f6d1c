"""The API's side of :mod:`core.errors`: one exception handler and one error schema."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import ServiceError


class ServiceErrorOutput(serializers.Serializer[Any]):
    """The body of every 400 a service refuses (:meth:`core.errors.ServiceError.as_body`)."""

    detail = serializers.CharField(help_text="What is wrong, with where it is")
    field = serializers.CharField(allow_null=True, help_text="Field at fault, e.g. history[2]")
    line = serializers.IntegerField(allow_null=True, help_text="Line of an uploaded JSONL file")
    row = serializers.IntegerField(allow_null=True, help_text="Row of an uploaded CSV (header: 1)")
    column = serializers.CharField(allow_null=True, help_text="Column of an uploaded CSV")
    # DRF's metaclass moves declared fields off the class, so `.errors` stays Serializer's.
    errors = serializers.DictField(  # type: ignore[assignment]  # a field, see above
        child=serializers.CharField(), help_text="Each field at fault → its message (may be empty)"
    )


def refused(description: str = "Refused; nothing was saved") -> OpenApiResponse:
    """The schema of a view's 400 answer, for ``extend_schema(responses={400: refused()})``."""
    return OpenApiResponse(ServiceErrorOutput, description=description)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus: a :class:`ServiceError` from a service is a 400 with its body."""
    if isinstance(exc, ServiceError):
        return Response(exc.as_body(), status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
