"""Django's security checks, aware of `core.loop_middleware`.

Django finds its security, clickjacking, CSRF and session middleware by dotted path
(`"django.middleware.security.SecurityMiddleware" in settings.MIDDLEWARE`). `MIDDLEWARE` names
our subclasses instead (the same hooks, run on the event loop), so `check --deploy` would report
them missing (security.W001–W003, silenced in settings) and skip every check that depends on them
(HSTS, the HTTPS redirect, X-Frame-Options, Secure cookies…). This deploy check runs those checks
again as if `MIDDLEWARE` named Django's classes, and reports a missing middleware as core.W001–W003.

A second deploy check imports the views the URLconf loads lazily (`core.lazy_urls`): core.E001.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.checks.security import base, csrf, sessions

DJANGO_PATHS = {
    "core.loop_middleware.SecurityMiddleware": "django.middleware.security.SecurityMiddleware",
    "core.loop_middleware.XFrameOptionsMiddleware": (
        "django.middleware.clickjacking.XFrameOptionsMiddleware"
    ),
    "core.loop_middleware.CsrfViewMiddleware": "django.middleware.csrf.CsrfViewMiddleware",
    "core.loop_middleware.SessionMiddleware": (
        "django.contrib.sessions.middleware.SessionMiddleware"
    ),
}
# The checks that look for those paths.
MIDDLEWARE_CHECKS = (
    base.check_security_middleware,
    base.check_xframe_options_middleware,
    base.check_sts,
    base.check_sts_include_subdomains,
    base.check_sts_preload,
    base.check_content_type_nosniff,
    base.check_ssl_redirect,
    base.check_xframe_deny,
    base.check_referrer_policy,
    base.check_cross_origin_opener_policy,
    csrf.check_csrf_middleware,
    csrf.check_csrf_cookie_secure,
    sessions.check_session_cookie_secure,
    sessions.check_session_cookie_httponly,
)
# Silenced in settings (they test the path, not the class); reported again under our ids.
MISSING_MIDDLEWARE = {
    "security.W001": "core.W001",
    "security.W002": "core.W002",
    "security.W003": "core.W003",
}


@register(Tags.security, deploy=True)
def check_security_with_loop_middleware(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    from django.test.utils import override_settings  # (only for `check --deploy`: not at start-up)

    as_django = [DJANGO_PATHS.get(path, path) for path in settings.MIDDLEWARE]
    found: list[CheckMessage] = []
    with override_settings(MIDDLEWARE=as_django):
        for check in MIDDLEWARE_CHECKS:
            found.extend(check(app_configs))
    return [_renamed(message) for message in found]


def _renamed(message: CheckMessage) -> CheckMessage:
    if message.id not in MISSING_MIDDLEWARE:
        return message
    return Warning(message.msg, hint=message.hint, id=MISSING_MIDDLEWARE[message.id])


@register(Tags.urls, deploy=True)
def check_lazy_views(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Import every view the URLconf loads lazily (:mod:`core.lazy_urls`): a plain ``check``
    leaves them unimported, the deploy check must not let a broken one through."""
    from core.lazy_urls import lazy_views

    errors: list[CheckMessage] = []
    for view in lazy_views():
        try:
            view.load()
        except Exception as exc:  # noqa: BLE001  (any failure to import or build is the finding)
            errors.append(
                Error(
                    f"lazy view {view.target} cannot be loaded: {exc!r}",
                    hint="Fix the import or the dotted path given to core.lazy_urls.lazy_path.",
                    id="core.E001",
                )
            )
    return errors
