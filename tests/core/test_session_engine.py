"""Sessions are read through the cache when it is shared (Redis), from the database otherwise
(config/settings.py): a Redis GET instead of a query on every request of the chat."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.core.cache import caches
from django.test import Client

from core.access import Role
from tests.conftest import make_user


def _engine(cache_url: str | None) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("CACHE_URL", None)
    if cache_url:
        env["CACHE_URL"] = cache_url
    code = "from django.conf import settings; print(settings.SESSION_ENGINE)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_session_engine_follows_the_cache() -> None:
    assert _engine(None) == "django.contrib.sessions.backends.db"
    assert _engine("locmemcache://") == "django.contrib.sessions.backends.db"
    assert _engine("redis://127.0.0.1:6379/14") == "django.contrib.sessions.backends.cached_db"


@pytest.mark.django_db
def test_a_session_read_through_redis_ends_everywhere_at_logout(settings) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:6379/14",
            "KEY_PREFIX": "session-test",
        }
    }
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    caches["default"].clear()
    user = make_user("cached-session", Role.RESEARCHER)
    client = Client()
    client.force_login(user)
    key = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    cache_key = f"django.contrib.sessions.cached_db{key}"
    assert caches["default"].get(cache_key) is not None  # read through Redis from now on
    assert "cached-session" in client.get("/").content.decode()

    stolen = Client()
    stolen.cookies[django_settings.SESSION_COOKIE_NAME] = key
    client.logout()
    assert caches["default"].get(cache_key) is None
    assert stolen.get("/").status_code == 302  # the ended session is gone from both
