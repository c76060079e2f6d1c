"""Settings that do not parse stop start-up and name their variable (issue 23, item 5).

Each case imports the settings in a fresh interpreter with one bad variable, as a process
starting under it would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import check_url

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

READ = (
    "import json; from config import settings as s; "
    "print(json.dumps([s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.JOB_MAX_ATTEMPTS]))"
)


def _import_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "SESSION_"))}
    base.update(SECRET_KEY="x" * 50, DEBUG="false", PLATFORM_VAR_DIR=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-c", READ],
        cwd=REPO_ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SITE_HTTPS", "ture"),  # read as false before: transport security silently off
        ("DEBUG", "yes please"),
        ("SECURE_SSL_REDIRECT", ""),
        ("JOB_MAX_ATTEMPTS", "five"),
        ("JOB_LEASE_SECONDS", "1m"),
        ("DATABASE_URL", "postgres//platform@db/platform"),
        ("DATABASE_URL", "postgres://platform@db:port/platform"),
        ("CELERY_BROKER_URL", "redis//127.0.0.1:6379/0"),
        ("CELERY_RESULT_BACKEND", "redis:127.0.0.1"),
        ("CHAT_REPLY_STREAMS_URL", "http://127.0.0.1:6379/2"),
        ("CACHE_URL", "redis://127.0.0.1:sixty/3"),
    ],
)
def test_a_value_that_does_not_parse_stops_start_up_naming_its_variable(
    tmp_path: Path, variable: str, value: str
) -> None:
    result = _import_settings(tmp_path, **{variable: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert f"{variable}={value!r}" in result.stderr


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("ON", True), ("1", True), ("yes", True), ("false", False), ("off", False)],
)
def test_the_usual_spellings_of_a_boolean_are_read(
    tmp_path: Path, value: str, expected: bool
) -> None:
    result = _import_settings(tmp_path, SITE_HTTPS=value, JOB_MAX_ATTEMPTS="7")
    assert result.returncode == 0, result.stderr
    redirect, secure_cookie, attempts = json.loads(result.stdout.strip().splitlines()[-1])
    assert (redirect, secure_cookie, attempts) == (expected, expected, 7)


def test_a_url_keeps_its_value_when_it_parses() -> None:
    url = "redis://:secret@redis.internal:6380/2"
    assert check_url("CHAT_REPLY_STREAMS_URL", url, ["redis", "memory"]) == url
    with pytest.raises(ImproperlyConfigured, match="must start with one of memory://, redis://"):
        check_url("CHAT_REPLY_STREAMS_URL", "amqp://broker", ["redis", "memory"])
