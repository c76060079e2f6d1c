from types import SimpleNamespace

import pytest
from django.urls import reverse


@pytest.mark.integration
def test_healthz_is_ok_with_a_live_worker(client, celery_worker_process):
    response = client.get(reverse("healthz"))
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker", "worker"}
    assert all(check["ok"] for check in body["checks"].values())


@pytest.mark.django_db
def test_healthz_is_503_when_no_worker_answers(client, settings):
    settings.HEALTH_WORKER_TIMEOUT = 1.0  # no worker runs in this test
    response = client.get(reverse("healthz"))
    body = response.json()
    assert response.status_code == 503
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["worker"]["ok"] is False
    assert "no worker answered" in body["checks"]["worker"]["detail"]


@pytest.mark.django_db
def test_health_check_reports_a_down_broker_and_skips_the_worker():
    from core.health import health_check

    report = health_check(worker_timeout=1, broker_url="redis://127.0.0.1:1/0")  # nothing on port 1
    assert report["status"] == "error"
    assert report["checks"]["database"]["ok"] is True
    assert report["checks"]["broker"]["ok"] is False
    assert "redis" in report["checks"]["broker"]["detail"]
    assert report["checks"]["worker"] == {"ok": False, "detail": "not checked: the broker is down"}


def test_the_embedded_broker_gets_no_redis_only_options():
    """kombu's SQLAlchemy transport passes its options to create_engine(), which refuses unknown
    ones: the embedded default must start a worker (a real regression of the Redis settings)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_URL"))}
    env["CELERY_VISIBILITY_TIMEOUT"] = "100"
    code = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings');"
        "django.setup(); from django.conf import settings;"
        "print(settings.CELERY_BROKER_URL.split(':')[0], settings.CELERY_BROKER_TRANSPORT_OPTIONS)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["sqla+sqlite", "{}"]
    env["CELERY_BROKER_URL"] = "redis://127.0.0.1:6379/0"
    redis = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "'visibility_timeout': 100" in redis


@pytest.mark.django_db
def test_healthz_reuses_a_recent_worker_check_instead_of_pinging_on_every_call(
    client, settings, monkeypatch
):
    """A load balancer polls /healthz every few seconds: the ping round trip (seconds on a busy
    machine, the whole timeout with no worker) is made once per HEALTH_WORKER_CHECK_MAX_AGE, and
    the reused answer stays truthful: the failure is reported again, with its age."""
    from core.tasks import ping

    settings.HEALTH_WORKER_TIMEOUT = 0.2  # no worker runs in this test
    settings.HEALTH_WORKER_CHECK_MAX_AGE = 60
    pings = []
    real_apply_async = ping.apply_async
    monkeypatch.setattr(
        ping, "apply_async", lambda **kw: pings.append(kw) or real_apply_async(**kw)
    )
    first = client.get(reverse("healthz"))
    second = client.get(reverse("healthz"))
    assert len(pings) == 1
    assert first.status_code == second.status_code == 503
    worker = second.json()["checks"]["worker"]
    assert worker["ok"] is False and "no worker answered" in worker["detail"]
    assert worker["checked_seconds_ago"] >= 0
    assert first.json()["checks"]["worker"]["checked_seconds_ago"] == 0


@pytest.mark.django_db
def test_healthz_pings_again_once_the_last_check_is_too_old(client, settings, monkeypatch):
    from core import health

    settings.HEALTH_WORKER_TIMEOUT = 0.2
    settings.HEALTH_WORKER_CHECK_MAX_AGE = 60
    pings = []
    monkeypatch.setattr(
        health, "_check_worker", lambda timeout: pings.append(timeout) or {"ok": True, "detail": ""}
    )
    clock = [1000.0]
    monkeypatch.setattr(health, "time", SimpleNamespace(time=lambda: clock[0]))
    assert client.get(reverse("healthz")).status_code == 200
    clock[0] += 59
    client.get(reverse("healthz"))
    assert len(pings) == 1
    clock[0] += 2
    client.get(reverse("healthz"))
    assert len(pings) == 2
