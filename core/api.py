"""The API's side of :mod:`core.errors` (one exception handler and one error schema), the bounds of
API input, and the token login (throttled by django-axes like the login form, :mod:`core.security`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import ServiceError
from core.json import UnsafeJSON, check_json_value, loads_untrusted

# Bounds of free-text and structured API input, besides the 10 MB body cap: a 9 MB description
# or a million-item config parsed, stored and slowed every page that showed it.
TEXT_MAX_LENGTH = 20_000  # descriptions, comments, templates
JSON_MAX_ITEMS = 10_000  # values (scalars, lists, objects) inside one JSON field
JSON_MAX_CHARS = 100_000  # characters in any one string inside it


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


def json_size(value: Any) -> int:
    """How many values (scalars, lists and objects, keys not counted) ``value`` holds."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


class BoundedJSONField(serializers.JSONField):
    """DRF's JSONField with the API's bounds: at most ``max_items`` values, ``max_chars`` per
    string, the nesting limit of :mod:`core.json`, no NUL or lone surrogate. A form or multipart
    field's text is parsed by :func:`core.json.loads_untrusted` (DRF's ``json.loads`` raised
    RecursionError, a 500, on 3,000 nested lists). Each refusal is a 400 naming the field."""

    def __init__(
        self, *, max_items: int = JSON_MAX_ITEMS, max_chars: int = JSON_MAX_CHARS, **kwargs: Any
    ) -> None:
        self.max_items, self.max_chars = max_items, max_chars
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        text = getattr(data, "is_json_string", False) or self.binary
        if text:
            try:
                data = loads_untrusted(
                    data.decode() if isinstance(data, bytes) else str(data),
                    max_chars=self.max_chars,
                )
            except ValueError as exc:
                raise serializers.ValidationError(f"not valid JSON: {exc}") from None
        try:
            check_json_value(data, max_chars=self.max_chars)
        except UnsafeJSON as exc:
            raise serializers.ValidationError(str(exc)) from None
        if json_size(data) > self.max_items:
            raise serializers.ValidationError(f"more than {self.max_items} values")
        # Parsed from text it is JSON already; a parsed body's value DRF checks as it does.
        return data if text else super().to_internal_value(data)


class TokenInput(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)


class TokenOutput(serializers.Serializer):
    token = serializers.CharField()


class TokenLoginApi(APIView):
    """`POST /api/token/` with a username and password returns the user's API token.

    DRF's own view hands its wrapped request to `authenticate()`, so django-axes would mark the
    wrapper and its middleware, which sees the plain request, would never answer 429. Here
    authentication gets the plain request: failures count, and a locked-out client is refused.
    """

    authentication_classes: list[type] = []
    permission_classes: list[type] = []

    @extend_schema(
        request=TokenInput,
        responses={200: TokenOutput},
        operation_id="api_token_create",
        description=(
            "Exchange a username and password for the user's API token. Too many failed "
            "attempts lock the account or the client address for a while (429 with `detail`)."
        ),
        tags=["api"],
    )
    def post(self, request: Request) -> Response:
        serializer = AuthTokenSerializer(data=request.data, context={"request": request._request})
        serializer.is_valid(raise_exception=True)
        token, _created = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response(TokenOutput({"token": token.key}).data, status=status.HTTP_200_OK)
