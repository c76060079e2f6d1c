"""Django's middleware, run on the event loop instead of a thread per hook.

Under ASGI, `MiddlewareMixin.__acall__` runs each `process_request` and `process_response` with
`sync_to_async(thread_sensitive=True)`, and Django's handler the CSRF check (`process_view`) too:
with the nine built-in middlewares in `MIDDLEWARE` that is 18 thread hand-offs per request, on a
thread created for the request. Profiled under
`benchmarks/chat_load.py` (docs/scaling.md) it was a quarter of a web process's CPU and a wait
behind the GIL at every hop. These hooks only read headers and cookies and set headers: they
can run on the loop. The two that can reach the database are sent to a thread only when they
will: `SessionMiddleware` when the session must be saved, `MessageMiddleware` when messages
were added or shown (storing them may load the session). Under WSGI (the tests' client,
`manage.py runserver`) they behave exactly as Django's.

A request's form body is the exception: the first hook that reads `request.POST` parses it
where it runs, and a dataset upload (up to 200 MB) parsed on the loop stalled every stream of
the process for as long as the parse took (about 1 s for 190 MB; issue 23 item 3).
`ParseBodyOffTheLoop`, placed before any middleware that reads the form, parses a body larger
than `LOOP_BODY_MAX_BYTES` on the request's thread first; small forms (a chat message, a login)
stay on the loop. `tests/core/test_loop_middleware_tripwire.py` keeps a hash of every Django
hook these classes replace, per Django version: an upgrade that changes one fails it until the
override here is checked against the new code.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from csp.middleware import CSPMiddleware as CSPMiddlewareBase
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as AuthenticationBase
from django.contrib.messages.middleware import MessageMiddleware as MessageBase
from django.contrib.sessions.middleware import SessionMiddleware as SessionBase
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware as XFrameOptionsBase
from django.middleware.common import CommonMiddleware as CommonBase
from django.middleware.csrf import CsrfViewMiddleware as CsrfViewBase
from django.middleware.locale import LocaleMiddleware as LocaleBase
from django.middleware.security import SecurityMiddleware as SecurityBase

# A form body up to this size is parsed on the loop (well under a millisecond); a larger one,
# or one of unknown length, on the request's thread.
LOOP_BODY_MAX_BYTES = 64 * 1024
_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


def body_parse_needs_thread(request: HttpRequest) -> bool:
    """Whether reading `request.POST` would parse a large form body now."""
    if request.method != "POST" or request.content_type not in _FORM_TYPES:
        return False
    if hasattr(request, "_post"):
        return False  # already parsed
    try:
        length = int(request.headers.get("content-length") or "")
    except ValueError:
        return True
    return length > LOOP_BODY_MAX_BYTES


class ParseBodyOffTheLoop:
    """Parse a large form body on the request's thread before the hooks that read it on the
    loop (`RejectUnstorableInput`, the CSRF check). Parse errors are raised where Django raises
    them, from the first read of `request.POST` (here), and answered as Django answers them."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        return self.get_response(request)  # under WSGI the request has a thread of its own

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        if body_parse_needs_thread(request):
            await sync_to_async(_parse_form, thread_sensitive=True)(request)
        response: HttpResponseBase = await self.get_response(request)
        return response


def _parse_form(request: HttpRequest) -> None:
    request.POST  # noqa: B018  # parses the body (and FILES) once; later reads get the result


class OnTheLoop:
    """Mixin for a `MiddlewareMixin` subclass whose hooks do no I/O (see the module docstring).

    `response_needs_thread` names the responses whose `process_response` may block.
    """

    get_response: Any

    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        return False

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = None
        process_request = getattr(self, "process_request", None)
        if process_request is not None:
            response = process_request(request)
        response = response or await self.get_response(request)
        process_response = getattr(self, "process_response", None)
        if process_response is not None:
            if self.response_needs_thread(request, response):
                response = await sync_to_async(process_response, thread_sensitive=True)(
                    request, response
                )
            else:
                response = process_response(request, response)
        return response


class SecurityMiddleware(OnTheLoop, SecurityBase):
    pass


class CSPMiddleware(OnTheLoop, CSPMiddlewareBase):
    pass


class SessionMiddleware(OnTheLoop, SessionBase):
    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        # `process_response` saves the session (a query) only then; otherwise it sets headers.
        return request.session.modified or settings.SESSION_SAVE_EVERY_REQUEST


class LocaleMiddleware(OnTheLoop, LocaleBase):
    pass


class CommonMiddleware(OnTheLoop, CommonBase):
    pass


class CsrfViewMiddleware(OnTheLoop, CsrfViewBase):
    """`process_view` too runs on the loop under ASGI: Django's handler calls a synchronous one
    through a thread (it only compares the token of the cookie with the form's or header's)."""

    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)
        if iscoroutinefunction(get_response):
            # Django's handler adapts the bound method it finds: an async one runs on the loop.
            self.process_view = self._process_view_on_the_loop  # type: ignore[method-assign,assignment]  # chosen per mode, as Django reads it per instance

    async def _process_view_on_the_loop(
        self, request: HttpRequest, callback: Any, callback_args: Any, callback_kwargs: Any
    ) -> HttpResponseBase | None:
        return CsrfViewBase.process_view(self, request, callback, callback_args, callback_kwargs)


class AuthenticationMiddleware(OnTheLoop, AuthenticationBase):
    # `request.user` is lazy: the query runs where the view first reads it.
    pass


class MessageMiddleware(OnTheLoop, MessageBase):
    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        # Storing messages may read or write the session (the fallback storage).
        storage = getattr(request, "_messages", None)
        return storage is not None and bool(storage.used or storage.added_new)


class XFrameOptionsMiddleware(OnTheLoop, XFrameOptionsBase):
    pass
