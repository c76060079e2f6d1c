"""The one error every importer raises, precise enough to point at the offending line and field."""

from __future__ import annotations

from core.errors import ServiceError


class DatasetImportError(ServiceError):
    """A dataset file (or an import argument) was refused.

    `line` is the 1-based line of the file, `field` the JSON field inside that line (with a
    `[i]` suffix for list items, e.g. `history[2]`), or the import argument (`name`, `skill`, …)
    when the problem is not in the file. `str(error)` reads like
    "line 17, field 'history': expected a list of strings, got int".
    """

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        super().__init__(message, line=line, field=field)
