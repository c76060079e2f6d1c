from collections.abc import Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, resolve_url
from django_htmx.http import HttpResponseClientRedirect


def jsonl_download(lines: Iterable[str], *, filename: str) -> StreamingHttpResponse:
    """Stream JSON lines as a file download without building the file in memory."""
    response = StreamingHttpResponse(
        (line + "\n" for line in lines), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def redirect_after_form(request: HttpRequest, to: str, *args: Any, **kwargs: Any) -> HttpResponse:
    """Where a form posted by htmx goes once it has succeeded: a client-side redirect (the
    browser loads the page, with its messages), else a plain redirect. An import form is posted
    by htmx so that a refused file leaves the form as it was, the chosen file included."""
    if getattr(request, "htmx", False):
        return HttpResponseClientRedirect(resolve_url(to, *args, **kwargs))
    return redirect(to, *args, **kwargs)


def wants_event_stream(request: HttpRequest) -> bool:
    """The request asks for server-sent events by name (the chat page's script does, for a send
    and a followed reply). Not `request.accepts()`: a browser's `*/*` would pass it, and a plain
    form post would get a stream back."""
    return "text/event-stream" in request.headers.get("Accept", "")
