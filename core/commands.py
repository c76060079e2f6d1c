"""Small helpers the management commands share (no app imports: `core` is the base)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper

from core.access import workspace_scope


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


class WorkspaceCommand(BaseCommand):
    """A command that works inside one workspace: ``--workspace NAME`` (the only one by
    default). Every lookup it makes by name or id sees that workspace alone, so another
    workspace's object is "not found"; what it creates is born there."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument(
            "--workspace",
            help="the workspace to work in, by name (default: the only one there is)",
        )
        return parser

    def execute(self, *args: Any, **options: Any) -> str | None:
        with workspace_scope(command_workspace(options.get("workspace"))):
            return super().execute(*args, **options)


def command_workspace(name: str | None) -> Any:
    """The workspace a command named, or the deployment's only one."""
    from core.models import Workspace

    if name:
        workspace = Workspace.objects.filter(name=name).first()
        if workspace is None:
            raise CommandError(f"no workspace named {name!r}")
        return workspace
    workspaces = list(Workspace.objects.order_by("pk")[:2])
    if len(workspaces) != 1:
        raise CommandError(
            "this deployment has several workspaces: name one with --workspace"
            if workspaces
            else "this deployment has no workspace"
        )
    return workspaces[0]
