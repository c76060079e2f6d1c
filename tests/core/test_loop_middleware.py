"""Django's middleware run on the event loop under ASGI (core/loop_middleware.py) keeps every
behaviour: a login saves its session, messages survive a redirect, the security headers are set."""

from __future__ import annotations

import asyncio

import pytest
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.test import AsyncClient
from django.urls import path

from core.access import Role
from tests.conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_a_login_under_asgi_saves_the_session_and_the_next_request_is_logged_in():
    make_user("loop-login", Role.RESEARCHER)

    async def flow():
        client = AsyncClient()
        login = await client.post(
            "/accounts/login/", {"username": "loop-login", "password": "pw-123456"}
        )
        home = await client.get("/")
        return login, home

    login, home = asyncio.run(flow())
    assert login.status_code == 302, login.content[:300]
    assert login.cookies["sessionid"].value  # saved (a query, sent to a thread)
    assert home.status_code == 200
    assert "loop-login" in home.content.decode()
    for header in ("X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy"):
        assert header in home.headers, header
    assert "Cookie" in home.headers["Vary"]


def _add_then_redirect(request: HttpRequest) -> HttpResponse:
    messages.success(request, "saved from a sync view")
    return redirect("/show/")


async def _add_then_redirect_async(request: HttpRequest) -> HttpResponse:
    messages.success(request, "saved from an async view")
    return redirect("/show/")


def _show(request: HttpRequest) -> HttpResponse:
    return HttpResponse(" | ".join(str(m) for m in messages.get_messages(request)))


urlpatterns = [
    path("add/", _add_then_redirect),
    path("add-async/", _add_then_redirect_async),
    path("show/", _show),
]


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("where", ["add/", "add-async/"])
def test_a_message_added_by_a_view_is_shown_once_after_the_redirect_under_asgi(where):
    async def flow():
        client = AsyncClient()
        first = await client.get("/" + where, follow=True)
        second = await client.get("/show/")
        return first, second

    first, second = asyncio.run(flow())
    assert first.content.decode().startswith("saved from a")
    assert second.content.decode() == ""  # shown once: the cookie was updated on the way out


def test_under_asgi_the_csrf_check_runs_on_the_loop_and_is_still_enforced(settings):
    from asgiref.sync import iscoroutinefunction
    from django.core.handlers.asgi import ASGIHandler

    settings.ROOT_URLCONF = "tests.core.csrf_urls"
    assert all(iscoroutinefunction(hook) for hook in ASGIHandler()._view_middleware)

    async def flow():
        client = AsyncClient(enforce_csrf_checks=True)
        refused = await client.post("/post/", {"x": "1"})
        token = (await client.get("/token/")).content.decode()
        accepted = await client.post("/post/", {"x": "1"}, headers={"X-CSRFToken": token})
        return refused, accepted

    refused, accepted = asyncio.run(flow())
    assert refused.status_code == 403
    assert accepted.status_code == 200 and accepted.content == b"accepted"


def _record_parses(monkeypatch) -> list[dict]:
    """Wrap Django's multipart parser: where each parse ran (a thread with a running event
    loop is the loop) and how much it parsed."""
    from django.http.multipartparser import MultiPartParser

    parses: list[dict] = []
    parse = MultiPartParser.parse

    def recording(self):
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        parses.append({"on_loop": on_loop, "bytes": self._content_length})
        return parse(self)

    monkeypatch.setattr(MultiPartParser, "parse", recording)
    return parses


def test_under_asgi_a_large_upload_is_parsed_off_the_loop_and_still_reaches_the_view(
    settings, monkeypatch
):
    import io

    settings.ROOT_URLCONF = "tests.core.csrf_urls"
    parses = _record_parses(monkeypatch)
    upload = io.BytesIO(b'{"context": ["hi"]}\n' * 20_000)  # 400 KB
    upload.name = "big.jsonl"

    async def flow():
        client = AsyncClient()
        large = await client.post("/files/", {"x": "1", "file": upload})
        small = await client.post("/files/", {"x": "2"})
        return large, small

    large, small = asyncio.run(flow())
    assert large.status_code == 200 and large.content == b"x=1 file=400000"
    assert small.status_code == 200 and small.content == b"x=2 file=0"
    assert [p["on_loop"] for p in parses] == [False, True]  # only the small form on the loop
    assert parses[0]["bytes"] > 400_000
