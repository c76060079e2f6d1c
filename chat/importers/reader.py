"""Bytes to JSON objects, one line at a time, so a file of any length imports in bounded memory."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from core.json import UnsafeJSON, loads_untrusted

from .errors import DatasetImportError
from .fields import type_name


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _oversized(size: int | None, max_bytes: int) -> DatasetImportError:
    """`size` is None for a stream of unknown length that has just run past the limit."""
    what = "the file is larger than" if size is None else f"the file is {_human_size(size)}, over"
    return DatasetImportError(
        f"{what} the {_human_size(max_bytes)} limit for dataset uploads (DATASET_UPLOAD_MAX_BYTES)"
    )


def declared_size(fileobj: IO[bytes]) -> int | None:
    """The bytes left to read, when known without reading: an upload's size or a seekable file."""
    size = getattr(fileobj, "size", None)  # Django's UploadedFile
    if isinstance(size, int):
        return size
    try:
        if not fileobj.seekable():
            return None
        position = fileobj.tell()
        end = fileobj.seek(0, 2)
        fileobj.seek(position)
    except (AttributeError, OSError, ValueError):
        return None
    return end - position


def check_size(fileobj: IO[bytes], *, max_bytes: int) -> None:
    """Refuse a file whose size is known to exceed the limit, before a byte of it is parsed."""
    size = declared_size(fileobj)
    if size is not None and size > max_bytes:
        raise _oversized(size, max_bytes)


def iter_json_lines(fileobj: IO[bytes], *, max_bytes: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield `(line number, object)` for every non-blank line of a JSON Lines file.

    Each line is decoded as strict UTF-8 on its own (a leading byte-order mark is allowed), so a
    bad byte is reported on its line; a line longer than `IMPORT_MAX_LINE_BYTES`, a text longer
    than `IMPORT_MAX_TEXT_CHARS`, a NUL character, an unpaired surrogate escape or too deep a
    nesting is reported with its line and field. Streams of unknown size (pipes, generators) are
    held to `max_bytes` while they are read.
    """
    from django.conf import settings  # read at call time: limits are configuration

    read = 0
    saw_content = False
    for line_no, raw in enumerate(fileobj, start=1):
        if isinstance(raw, str):
            raise TypeError("dataset files must be opened in binary mode")
        read += len(raw)
        if read > max_bytes:
            raise _oversized(None, max_bytes)
        if line_no == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad_byte = raw[exc.start]
            raise DatasetImportError(
                f"not valid UTF-8 (byte 0x{bad_byte:02x} at byte {exc.start + 1} of the line)",
                line=line_no,
            ) from None
        if not text.strip():
            continue
        saw_content = True
        if len(raw) > settings.IMPORT_MAX_LINE_BYTES:
            raise DatasetImportError(
                f"the line is {len(raw)} bytes, longer than IMPORT_MAX_LINE_BYTES "
                f"({settings.IMPORT_MAX_LINE_BYTES})",
                line=line_no,
            )
        # Without its line break: an error at the end of the line (a missing "}") is then
        # reported at the line's last column, not at column 1 of a "line 2" that is not there.
        text = text.rstrip("\r\n")
        try:
            obj = loads_untrusted(text, max_chars=settings.IMPORT_MAX_TEXT_CHARS)
        except json.JSONDecodeError as exc:
            raise DatasetImportError(
                f"invalid JSON: {exc.msg} (column {exc.colno})", line=line_no
            ) from None
        except UnsafeJSON as exc:
            raise DatasetImportError(exc.problem, line=line_no, field=exc.path or None) from None
        if not isinstance(obj, dict):
            raise DatasetImportError(f"expected a JSON object, got {type_name(obj)}", line=line_no)
        yield line_no, obj
    if not saw_content:
        raise DatasetImportError("the file is empty")
