from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from asgiref.sync import sync_to_async
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, resolve_url
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from core.cells import csv_lines


class HtmxHttpRequest(HttpRequest):
    """A request as `django_htmx.middleware.HtmxMiddleware` (in `MIDDLEWARE`) leaves it, with
    `request.htmx`: the type django-htmx's documentation defines for annotating views."""

    htmx: HtmxDetails


# A batch read per trip to the database thread ends at this many lines or characters, whichever
# comes first: large enough that the hop costs nothing next to the rows, small enough that the
# process holds a batch, never the file. The first batch is cut at STREAM_FIRST_BATCH_CHARS so
# that the first bytes leave as soon as the first rows are read; the cap then doubles.
STREAM_BATCH_LINES = 500
STREAM_BATCH_CHARS = 256 * 1024
STREAM_FIRST_BATCH_CHARS = 8 * 1024


async def stream_lines(lines: Iterable[str]) -> AsyncIterator[str]:
    """Serve a synchronous iterator of text (rows read from the database) as an async stream.

    Under ASGI, Django consumes a synchronous iterator into a list before sending anything (the
    whole export in memory, the first byte after the last row). Here each batch of lines is
    read in the request's thread (`thread_sensitive`: the same database connection as the view,
    so a server-side cursor stays valid) and sent before the next is read. The iterator is
    closed in that thread too when the client leaves early.
    """
    iterator = iter(lines)
    cap = STREAM_FIRST_BATCH_CHARS

    def next_batch() -> str:
        nonlocal cap
        batch: list[str] = []
        size = 0
        for line in iterator:
            batch.append(line)
            size += len(line)
            if len(batch) >= STREAM_BATCH_LINES or size >= cap:
                break
        cap = min(2 * cap, STREAM_BATCH_CHARS)
        return "".join(batch)

    read = sync_to_async(next_batch, thread_sensitive=True)
    try:
        while chunk := await read():
            yield chunk
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=True)()


# Bytes read per trip to a thread when a file is streamed (a static file, a report).
FILE_BLOCK_BYTES = 256 * 1024


async def stream_file(filelike: IO[bytes]) -> AsyncIterator[bytes]:
    """A file's bytes as an async stream, read a block at a time on a worker thread (a file
    read touches no database connection, so any thread will do)."""
    read = sync_to_async(filelike.read, thread_sensitive=False)
    while block := await read(FILE_BLOCK_BYTES):
        yield block


def stream_file_response(response: FileResponse) -> FileResponse:
    """Make a `FileResponse` (its headers already set from the file) stream asynchronously:
    under ASGI Django would otherwise read the whole file into a list first. The file is still
    closed with the response (FileResponse registered its `close`)."""
    if response.file_to_stream is not None:
        response.streaming_content = stream_file(response.file_to_stream)
    return response


def file_download(
    path: Path,
    *,
    filename: str,
    as_attachment: bool = True,
    content_type: str | None = None,
) -> FileResponse:
    """A file on disk as a download that streams under ASGI (`stream_file_response`)."""
    response = FileResponse(
        path.open("rb"), as_attachment=as_attachment, filename=filename, content_type=content_type
    )
    return stream_file_response(response)


def download(lines: Iterable[str], *, filename: str, content_type: str) -> StreamingHttpResponse:
    """A streamed file download (see `stream_lines`)."""
    response = StreamingHttpResponse(stream_lines(lines), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def jsonl_download(lines: Iterable[str], *, filename: str) -> StreamingHttpResponse:
    """Stream JSON lines (given without their newline) as a file download."""
    return download(
        (line + "\n" for line in lines),
        filename=filename,
        content_type="application/x-ndjson; charset=utf-8",
    )


def csv_download(
    columns: Sequence[str], rows: Iterable[Mapping[str, Any]], *, filename: str
) -> StreamingHttpResponse:
    """Stream rows as a CSV file download (`core.cells.csv_lines`: header first, no formulas)."""
    return download(
        csv_lines(columns, rows), filename=filename, content_type="text/csv; charset=utf-8"
    )


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
