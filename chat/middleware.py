"""A campaign's fixed interface language for its crowdworker pages.

`LocaleMiddleware` picks the language from the language cookie, else the browser's
`Accept-Language`. A campaign may fix the crowdworker language instead (a Japanese study shows
Japanese pages whatever the worker's browser says): on the campaign's join, chat and completion
pages this middleware activates that language, and it stores it in the language cookie so the
worker's other pages (their task list, the streamed reply's partials) follow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.urls import Resolver404, resolve
from django.utils import translation

from chat.selectors.campaigns import campaign_page_language
from chat.services.db_threads import in_db_thread
from core.http import wants_event_stream

# Only the crowdworker pages can belong to a campaign; other paths skip the lookup.
_CAMPAIGN_PATHS = ("/join/", "/work/", "/live/turn/")


def _may_belong_to_a_campaign(path: str) -> bool:
    return any(part in path for part in _CAMPAIGN_PATHS)


def _needs_lookup(request: HttpRequest) -> bool:
    """A page load of a campaign's crowdworker page. An htmx request (a ticked item, a submit)
    and the chat page's event-stream fetches (a sent message, a followed reply) come from a page
    that has already set the language cookie: no query on the hot path."""
    return (
        _may_belong_to_a_campaign(request.path_info)
        and not request.headers.get("HX-Request")
        and not wants_event_stream(request)
    )


def _fixed_language(request: HttpRequest) -> str:
    path = request.path_info
    if not _may_belong_to_a_campaign(path):
        return ""
    try:
        match = resolve(path)
    except Resolver404:
        return ""
    return campaign_page_language(url_name=match.view_name, kwargs=match.kwargs)


def _apply(request: HttpRequest, language: str) -> None:
    translation.activate(language)
    request.LANGUAGE_CODE = translation.get_language()
    request.campaign_language = language  # type: ignore[attr-defined]  # read by the chat views


def _remember(response: HttpResponseBase, request: HttpRequest, language: str) -> None:
    if request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME) != language:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            language,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            secure=settings.LANGUAGE_COOKIE_SECURE,
            httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )


class CampaignLanguageMiddleware:
    """Place after `LocaleMiddleware`. Works in both the sync (WSGI) and async (ASGI) stacks."""

    sync_capable = True
    async_capable = True

    def __init__(
        self,
        get_response: Callable[[HttpRequest], HttpResponseBase]
        | Callable[[HttpRequest], Awaitable[HttpResponseBase]],
    ) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if self.async_mode:
            return self.__acall__(request)
        language = _fixed_language(request) if _needs_lookup(request) else ""
        if language:
            _apply(request, language)
        response = self.get_response(request)
        if language:
            _remember(response, request, language)  # type: ignore[arg-type]  # sync mode: not awaitable
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        language = ""
        if _needs_lookup(request):
            # On the chat's database threads (kept-open connections), not a thread of its own per
            # request: under load that opened and closed a connection per chat request and ran
            # PostgreSQL out of connections (benchmarks/chat_load.py, 100 workers).
            language = await in_db_thread(_fixed_language, request)
        if language:
            _apply(request, language)
        response = await self.get_response(request)  # type: ignore[misc]  # async mode: awaitable
        if language:
            _remember(response, request, language)
        return response
