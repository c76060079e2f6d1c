"""The chat's requests stay on the event loop from the first middleware to the view."""

from __future__ import annotations

import asyncio

import pytest
from django.conf import settings
from django.test import AsyncClient, Client
from django.urls import reverse
from django.utils.module_loading import import_string

import chat.middleware
from chat.selectors.campaigns import campaign_page_language


def test_every_middleware_is_async_capable_so_no_request_bounces_through_threads():
    # One sync-only middleware makes Django run it on a thread and the rest of the chain, the
    # async chat views included, through async_to_sync: two thread hops on every request.
    sync_only = [path for path in settings.MIDDLEWARE if not import_string(path).async_capable]
    assert sync_only == []


def test_no_middleware_hops_to_a_thread_per_hook_under_asgi():
    # Django's MiddlewareMixin runs each hook with sync_to_async (core/loop_middleware.py).
    from django.utils.deprecation import MiddlewareMixin

    hopping = [
        path
        for path in settings.MIDDLEWARE
        if getattr(import_string(path), "__acall__", None) is MiddlewareMixin.__acall__
    ]
    assert hopping == []


@pytest.mark.django_db
def test_static_files_are_still_served_under_asgi_and_other_paths_pass_through():
    async def flow():
        client = AsyncClient()
        found = await client.get("/static/js/chat.js")
        # Static files stream as async iterators under ASGI (core.http.stream_file_response).
        body = b"".join([part async for part in found.streaming_content])
        return found, body, await client.get("/static/nope.js")

    found, body, missing = asyncio.run(flow())
    assert found.status_code == 200
    assert b"reset" in body  # the chat page's stream reader
    assert missing.status_code == 404


@pytest.mark.django_db
def test_the_chat_pages_fetches_make_no_campaign_language_lookup(make_chat, monkeypatch):
    # The page load looks the campaign's language up and stores it in a cookie; the send and
    # the followed reply, which the page's script fetches as event streams, follow the cookie.
    lookups: list[str] = []

    def counted(*, url_name: str, kwargs: dict) -> str:
        lookups.append(url_name)
        return campaign_page_language(url_name=url_name, kwargs=kwargs)

    monkeypatch.setattr(chat.middleware, "campaign_page_language", counted)
    setup = make_chat(interface_language="ja")
    client = Client()
    client.force_login(setup.worker)
    page = client.get(reverse("chat:live-dialogue", args=[setup.dialogue.pk]))
    assert page.status_code == 200 and lookups == ["chat:live-dialogue"]
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ja"

    sent = client.post(
        reverse("chat:live-send", args=[setup.dialogue.pk]),
        {"text": "陈凯歌导演的霸王别姬是哪一年上映的？"},
        HTTP_ACCEPT="text/event-stream",
    )
    assert sent.status_code == 200 and sent["Content-Type"].startswith("text/event-stream")
    assert lookups == ["chat:live-dialogue"]
