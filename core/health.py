"""Health of the database, the broker and the workers, for `GET /healthz`.

Besides the checks that decide the status, apps register *feature* checks: things that work
degraded rather than down (report figures without a CJK font). They are reported under
``features`` with ``ok: false`` and a reason, and never turn the status to an error. ``core``
imports no app, so the apps register them (``metrics`` in its ``AppConfig.ready``).

Celery and kombu are imported by the checks that use them, not by this module: the apps import it
at start-up to register, and `manage.py check` or a web process should not load them for that.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db import connection

FeatureCheck = Callable[[], dict[str, Any]]
_FEATURES: dict[str, FeatureCheck] = {}


def register_feature_check(name: str, check: FeatureCheck) -> None:
    """Report ``check()`` (a dict with at least ``ok`` and ``detail``) under ``features.<name>``."""
    _FEATURES[name] = check


def _features() -> dict[str, dict[str, Any]]:
    features = {}
    for name, check in sorted(_FEATURES.items()):
        try:
            features[name] = check()
        except Exception as exc:  # noqa: BLE001 - a broken feature check reports, never 500s
            features[name] = {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}
    return features


def _check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True, "detail": connection.vendor}
    except Exception as exc:  # noqa: BLE001  # any driver error means "down"; the message says which
        return {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}


def _check_broker(url: str) -> dict[str, Any]:
    from kombu.connection import Connection

    transport = url.split(":", 1)[0]
    try:
        # A fresh connection, not the app's pool: a pooled one may hide a broker that just died.
        with Connection(url, connect_timeout=3) as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
            conn.default_channel.close()  # opening a channel proves the transport works
        return {"ok": True, "detail": transport}
    except Exception as exc:  # noqa: BLE001  # any transport error means "down"
        return {"ok": False, "detail": f"{transport}: {type(exc).__name__}: {exc}"}


def _check_worker(timeout: float) -> dict[str, Any]:
    # A real round trip (broker → worker → result backend). Broadcast pings are not supported by
    # every transport (the embedded SQLAlchemy one has no fanout), a task is.
    from celery.exceptions import TimeoutError as CeleryTimeout

    from core.tasks import ping

    try:
        result = ping.apply_async(queue="default", expires=timeout)
        answer = result.get(timeout=timeout)
        result.forget()
        return {"ok": answer == "pong", "detail": "a worker answered the ping task"}
    except CeleryTimeout:
        return {"ok": False, "detail": f"no worker answered within {timeout:g} s"}
    except Exception as exc:  # noqa: BLE001  # a broken result backend is "down" too
        return {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}


WORKER_CHECK_CACHE_KEY = "health:worker-check"


def _recent_worker_check(timeout: float, max_age: float) -> dict[str, Any]:
    """The worker check, reused for `max_age` seconds (0: run it every time).

    The ping is a round trip through the broker and a worker: a second or more on a busy
    machine, up to `timeout` with no worker, which a load balancer polling every few seconds
    would pay on every poll (and could pile up). Its result, good or bad, is kept in the cache
    (shared by the web processes when the cache is Redis) and reported with its age, so a
    worker that dies shows as down at most `max_age` seconds later, and one that comes back as
    up at most as late."""
    if max_age <= 0:
        return _check_worker(timeout)
    now = time.time()
    cached = cache.get(WORKER_CHECK_CACHE_KEY)
    if cached is not None and now - cached["at"] < max_age:
        return {**cached["result"], "checked_seconds_ago": round(now - cached["at"], 1)}
    result = _check_worker(timeout)
    cache.set(WORKER_CHECK_CACHE_KEY, {"result": result, "at": time.time()}, timeout=max_age)
    return {**result, "checked_seconds_ago": 0.0}


def health_check(
    *, worker_timeout: float = 5.0, broker_url: str | None = None, worker_max_age: float = 0.0
) -> dict[str, Any]:
    """Check each dependency; `broker_url` defaults to the configured broker; the worker check
    is reused for `worker_max_age` seconds (see :func:`_recent_worker_check`)."""
    from config.celery import app as celery_app

    checks = {
        "database": _check_database(),
        "broker": _check_broker(broker_url or celery_app.conf.broker_url),
    }
    if checks["broker"]["ok"]:
        checks["worker"] = _recent_worker_check(worker_timeout, worker_max_age)
    else:
        checks["worker"] = {"ok": False, "detail": "not checked: the broker is down"}
    ok = all(check["ok"] for check in checks.values())
    return {"status": "ok" if ok else "error", "checks": checks, "features": _features()}
