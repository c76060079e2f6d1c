"""The API's side of :mod:`core.errors` (one exception handler and one error schema), the bounds of
API input, and the token login (throttled by django-axes like the login form, :mod:`core.security`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import ServiceError
from core.json import MAX_JSON_DEPTH, UnsafeJSON, check_json_value, loads_untrusted

# Bounds of free-text and structured API input, besides the 10 MB body cap: a 9 MB description
# or a million-item config parsed, stored and slowed every page that showed it. Every input
# field of every API serializer has one (tests/core/test_api_input_bounds.py reads the schema):
# a model field's own (`model_bounds`), else one of these.
TEXT_MAX_LENGTH = 20_000  # descriptions, comments, templates (TextField: the database has none)
KEY_MAX_LENGTH = 80  # a key the service looks up and no model column bounds (a review reason)
PASSWORD_MAX_LENGTH = 4096  # hashing a longer one is work an anonymous caller should not buy
LIST_MAX_ITEMS = 1000  # ids, names or answers in one list field
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


def model_bounds(model: type[models.Model], name: str, **overrides: Any) -> dict[str, Any]:
    """The bounds a ModelSerializer gives the input of model field ``name``, as keyword
    arguments of a serializer field: ``max_length`` of a CharField (:data:`TEXT_MAX_LENGTH` for a
    TextField, which the database does not bound), ``min_value`` and ``max_value`` of a number
    (at least its column's range: 10**30 as a seed was a database error, a 500). ``overrides``
    replace them (e.g. ``min_value=1``)."""
    field = model._meta.get_field(name)
    bounds: dict[str, Any] = {}
    max_length = getattr(field, "max_length", None)  # a relation has none
    if isinstance(field, models.TextField):
        bounds["max_length"] = TEXT_MAX_LENGTH
    elif max_length is not None:
        bounds["max_length"] = max_length
    for validator in getattr(field, "validators", []):
        if isinstance(validator, MaxValueValidator):
            limit = validator.limit_value
            bounds["max_value"] = min(limit, bounds.get("max_value", limit))
        elif isinstance(validator, MinValueValidator):
            limit = validator.limit_value
            bounds["min_value"] = max(limit, bounds.get("min_value", limit))
    return {**bounds, **overrides}


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


class BoundedJSONObjectField(BoundedJSONField):
    """A :class:`BoundedJSONField` whose value must be a JSON object (settings, a config)."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("expected a JSON object")
        return value


# --- How the bounds read in the OpenAPI schema ---------------------------------------------
# drf-spectacular documents a serializer field's own max_length / max_value / ListField
# max_length; these extensions document the rest (they register on import, and every API
# module imports this one).


class BoundedJSONFieldSchema(OpenApiSerializerFieldExtension):
    """A bounded JSON value: ``x-max-values``, ``x-max-string-length`` and ``x-max-depth``
    (OpenAPI has no keyword for the size of a free-form value)."""

    target_class = BoundedJSONField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        field = self.target
        schema: dict[str, Any] = (
            {"type": "object", "additionalProperties": {}}
            if isinstance(field, BoundedJSONObjectField)
            else {}
        )
        schema.update(
            {
                "x-max-values": field.max_items,
                "x-max-string-length": field.max_chars,
                "x-max-depth": MAX_JSON_DEPTH,
            }
        )
        return schema


class RelatedFieldSchema(OpenApiSerializerFieldExtension):
    """An input naming an object: a primary key up to its column's maximum (a larger one is
    "does not exist", a 400), a slug up to its column's ``max_length``."""

    target_class = serializers.RelatedField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        field = self.target
        schema = auto_schema._map_serializer_field(field, direction, bypass_extensions=True)
        queryset = getattr(field, "queryset", None)
        if queryset is None or field.read_only:
            return schema
        model = queryset.model
        if isinstance(field, serializers.SlugRelatedField):
            max_length = model_bounds(model, field.slug_field).get("max_length")
            if max_length is not None and schema.get("type") == "string":
                schema.setdefault("maxLength", max_length)
        elif isinstance(field, serializers.PrimaryKeyRelatedField):
            maximum = model_bounds(model, model._meta.pk.name).get("max_value")
            if maximum is not None and schema.get("type") == "integer":
                schema.setdefault("maximum", maximum)
        return schema


class UploadSchema(OpenApiSerializerFieldExtension):
    """An uploaded file is the request's binary part (bounded by the upload size limits), not
    the URI drf-spectacular writes when request and response share one component."""

    target_class = serializers.FileField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["format"] = "binary"
        return schema


class TokenInput(AuthTokenSerializer):
    """DRF's token login (its ``validate`` authenticates), with bounded inputs."""

    username = serializers.CharField(**model_bounds(get_user_model(), "username"))
    password = serializers.CharField(
        style={"input_type": "password"}, trim_whitespace=False, max_length=PASSWORD_MAX_LENGTH
    )
    # DRF drops an inherited field set to None: the answer is TokenOutput.
    token = None  # type: ignore[assignment]  # removes the base class's field


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
        serializer = TokenInput(data=request.data, context={"request": request._request})
        serializer.is_valid(raise_exception=True)
        token, _created = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response(TokenOutput({"token": token.key}).data, status=status.HTTP_200_OK)
