"""Small helpers the management commands share (no app imports: `core` is the base)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from django.core.management.base import CommandError, OutputWrapper


@contextmanager
def input_file(path: str) -> Iterator[BinaryIO]:
    """``path`` opened for binary reading, or standard input for ``-``; a file that cannot be
    opened is a :class:`CommandError` naming it. Closed on exit (standard input is left open)."""
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        fileobj = open(path, "rb")  # noqa: SIM115  # closed by the with block below
    except OSError as exc:
        raise CommandError(f"cannot open {path}: {exc.strerror}") from exc
    with fileobj:
        yield fileobj


def write_lines(lines: Iterable[str], path: str | None, stdout: OutputWrapper) -> int:
    """Write ``lines`` to ``path`` (UTF-8, ``\\n`` endings), or to the command's standard output
    when ``path`` is None; the number of lines written. A file that cannot be written is a
    :class:`CommandError` naming it."""
    count = 0
    if path is None:
        for line in lines:
            stdout.write(line)
            count += 1
        return count
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            for line in lines:
                out.write(line + "\n")
                count += 1
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror}") from exc
    return count
