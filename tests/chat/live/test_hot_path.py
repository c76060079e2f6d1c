"""The chat's requests stay on the event loop from the first middleware to the view."""

from __future__ import annotations

import asyncio

import pytest
from django.conf import settings
from django.test import AsyncClient
from django.utils.module_loading import import_string


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
        return await client.get("/static/js/chat.js"), await client.get("/static/nope.js")

    found, missing = asyncio.run(flow())
    assert found.status_code == 200
    body = b"".join(found.streaming_content) if found.streaming else found.content
    assert b"reset" in body  # the chat page's stream reader
    assert missing.status_code == 404
