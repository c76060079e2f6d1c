"""Login throttling glue (django-axes), the client IP behind proxies, and per-IP rate limits.

django-axes counts failed logins per account and per client IP (settings: `LOGIN_FAILURE_LIMIT`,
`LOGIN_LOCKOUT_MINUTES`). This module decides how a lockout reads — a page in the user's
language for the login form, JSON for the API — and where the client IP comes from. The API's
token login, which django-axes counts too, is :class:`core.api.TokenLoginApi`.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

LOCKED_STATUS = 429


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or with `TRUSTED_PROXY_COUNT` = N proxies in front,
    the address the outermost trusted proxy saw (N-th from the right of X-Forwarded-For). A
    client cannot forge it: entries it adds itself sit left of what the proxies append."""
    proxies = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0))
    forwarded = request.headers.get("x-forwarded-for", "")
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
