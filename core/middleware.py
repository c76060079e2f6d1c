"""Middleware of our own. Every one is async-capable (a test keeps it so): one sync-only
middleware would send every request, the async chat views included, through two thread hops."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import FileResponse, HttpRequest, HttpResponseBadRequest, QueryDict
from django.http.response import HttpResponseBase
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from whitenoise.middleware import WhiteNoiseMiddleware

from core.access import current_scope, request_scope
from core.http import stream_file_response


class RejectUnstorableInput:
    """A NUL character in a query parameter or form field (a chat message, a worker id) cannot
    be stored in PostgreSQL text and used to end as a 500; the path is checked too (`%00` in an
    invite token)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        refusal = _refusal(request)
        return refusal if refusal is not None else self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        # Under ASGI a large form was parsed on the request's thread by `ParseBodyOffTheLoop`
        # (before this); a small one is parsed here, on the loop, in well under a millisecond.
        refusal = _refusal(request)
        if refusal is not None:
            return refusal
        response: Awaitable[HttpResponseBase] = self.get_response(request)
        return await response


def _refusal(request: HttpRequest) -> HttpResponseBadRequest | None:
    if "\x00" in request.path:
        return HttpResponseBadRequest(
            _("网址中含有 NUL 字符（%00）。"), content_type="text/plain; charset=utf-8"
        )
    for data in (request.GET, _form_data(request)):
        for name, values in data.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                message = _("字段「%(field)s」含有 NUL 字符（\\u0000），无法保存。") % {
                    "field": name.replace("\x00", "\\u0000")[:80]
                }
                return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
    return None


def _form_data(request: HttpRequest) -> QueryDict:
    if request.method != "POST" or request.content_type not in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        return QueryDict()
    return request.POST


class AsyncWhiteNoiseMiddleware:
    """WhiteNoise's static files, without making every request leave the event loop.

    `WhiteNoiseMiddleware` is sync-only (whitenoise 6.x). Under ASGI one sync middleware makes
    Django run it on a thread (`sync_to_async`) and the rest of the chain, async views included,
    back through `async_to_sync`: two thread hops per request, the cost the chat's async views
    exist to avoid (measured with py-spy: ~10 % of a web process's CPU under
    `benchmarks/chat_load.py --scenario b`; docs/scaling.md). Here only a request for a static
    file leaves the loop; every other one goes straight on.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.whitenoise = WhiteNoiseMiddleware(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        return self.whitenoise(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        whitenoise = self.whitenoise
        if whitenoise.autorefresh:
            static_file = await sync_to_async(whitenoise.find_file)(request.path_info)
        else:
            static_file = whitenoise.files.get(request.path_info)
        if static_file is not None:
            served = await sync_to_async(whitenoise.serve)(static_file, request)
            if isinstance(served, FileResponse):
                # Its file as an async stream: Django would read a sync one whole first.
                stream_file_response(served)
            return served
        response: Awaitable[HttpResponseBase] = self.get_response(request)
        return await response


class WorkspaceMiddleware:
    """Puts every request inside its workspace scope (`core.access.request_scope`): while the
    view runs, a researcher's or an admin's queries see only the current workspace. The admin
    site is left unscoped (staff move objects between workspaces there). A download answered to
    a scoped request is an ``export`` event in the workspace's audit log."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        if _is_admin_site(request):
            return self.get_response(request)
        with request_scope(request):
            response = self.get_response(request)
            _audit_export(request, response)
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        if _is_admin_site(request):
            unscoped_response: Awaitable[HttpResponseBase] = self.get_response(request)
            return await unscoped_response
        with request_scope(request):
            pending: Awaitable[HttpResponseBase] = self.get_response(request)
            response = await pending
            if _is_download(response):
                await sync_to_async(_audit_export)(request, response)
        return response


def _is_admin_site(request: HttpRequest) -> bool:
    try:
        return request.path.startswith(reverse("admin:index"))
    except NoReverseMatch:  # a URLconf without the admin site
        return False


def _is_download(response: HttpResponseBase) -> bool:
    return response.status_code == 200 and "attachment" in response.get("Content-Disposition", "")


def _audit_export(request: HttpRequest, response: HttpResponseBase) -> None:
    if not _is_download(response):
        return
    scope = current_scope()
    if scope is None or scope.workspace is None:
        return
    from core.audit import record

    record(
        scope.workspace,
        scope.user,
        "export",
        detail={"path": request.get_full_path()[:500], "file": response["Content-Disposition"]},
    )
