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
