"""Login throttling glue (django-axes), the client IP behind proxies, and per-IP rate limits.

django-axes counts failed logins per account and per client IP (settings: `LOGIN_FAILURE_LIMIT`,
`LOGIN_LOCKOUT_MINUTES`). This module decides how a lockout reads — a page in the user's
language for the login form, JSON for the API — and where the client IP comes from.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import PASSWORD_MAX_LENGTH, model_bounds

LOCKED_STATUS = 429


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or with `TRUSTED_PROXY_COUNT` = N proxies in front,
    the address the outermost trusted proxy saw (N-th from the right of X-Forwarded-For). A
    client cannot forge it: entries it adds itself sit left of what the proxies append."""
    proxies = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0))
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies > 0 and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if len(hops) >= proxies:
            return hops[-proxies]
    return request.META.get("REMOTE_ADDR") or None  # None: no address (an internal request)


def _minutes() -> int:
    return max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60))


def lockout_message() -> str:
    return _(
        "登录失败次数过多，此账号或此网络地址已被暂时锁定。请在 %(minutes)d 分钟后再试，"
        "或联系管理员。"
    ) % {"minutes": _minutes()}


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """What a locked-out login gets (django-axes' AXES_LOCKOUT_CALLABLE): 429 with a JSON
    `detail` on the API, the lockout page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": lockout_message()}, status=LOCKED_STATUS)
    return render(
        request,
        "registration/locked_out.html",
        {"message": lockout_message(), "minutes": _minutes()},
        status=LOCKED_STATUS,
    )


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


def rate_limited(request: HttpRequest, *, scope: str, per_minute: int) -> bool:
    """Count one request of this client IP in `scope`; True once it went over `per_minute`
    within the current minute (a fixed window in the shared cache)."""
    if per_minute <= 0:
        return False
    key = f"rate:{scope}:{client_ip(request) or 'unknown'}"
    cache.add(key, 0, timeout=60)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=60)
        count = 1
    return count > per_minute
