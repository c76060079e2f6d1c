"""One shape for refused input: :class:`ServiceError`.

A service that refuses what it was given raises a subclass of :class:`ServiceError` (one per area:
``DatasetImportError``, ``RatingJobError``, ``MetricRunError`` …) with a message for the person
and where the problem is: ``field`` (a form or JSON field, ``history[2]``, ``config.base_url``),
``line`` (a JSON Lines file), ``row`` and ``column`` (a CSV file; the header is row 1). Nothing
is saved when one is raised. Callers never build their own error bodies:

* the API's exception handler (:func:`core.api.exception_handler`) answers 400 with
  :meth:`ServiceError.as_body` — ``{"detail", "field", "line", "row", "column", "errors"}``, the
  location keys null where they do not apply, ``errors`` (field → message) where several fields
  are refused at once;
* pages show ``str(error)`` in the ``partials/import_error.html`` box (or next to the field);
* commands re-raise it as ``CommandError(f"{path}: {error}")``.

``str(error)`` reads "line 17, field 'history': expected a list of strings" — the location first,
then the message — so it can be shown as it is. ``location_style`` says how an area writes the
field: ``"quoted"`` as above, ``"prefix"`` for form and API fields ("settings: unknown setting
x"), ``"in_message"`` where the (translated) message already starts with it ("name：…"). An area
with a location of its own (an uploaded file's name, a command option) overrides :meth:`where`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Self


class ServiceError(ValueError):
    """Input a service refused; ``field``/``line``/``row``/``column`` say where (see module)."""

    location_style: ClassVar[Literal["quoted", "prefix", "in_message"]] = "quoted"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        row: int | None = None,
        column: str | None = None,
        errors: Mapping[str, str] | None = None,
    ) -> None:
        self.message = message
        self.field = field
        self.line = line
        self.row = row
        self.column = column
        self.errors = dict(errors or {})
        super().__init__(message)

    @classmethod
    def for_fields(cls, problems: Mapping[str, str | Sequence[str]]) -> Self:
        """One error for several refused fields at once (a form's or an API body's fields):
        ``errors`` maps each field to its message(s) joined; ``field`` is set when there is one."""
        errors = {
            name: text if isinstance(text, str) else " ".join(text)
            for name, text in problems.items()
        }
        if len(errors) == 1:
            ((name, text),) = errors.items()
            return cls(text, field=name, errors=errors)
        return cls("; ".join(f"{name}: {text}" for name, text in errors.items()), errors=errors)

    def where(self) -> str:
        """Where the problem is, for people: "line 3, field 'x'", "row 2, column 'value'"."""
        if self.location_style == "in_message":
            return ""
        if self.location_style == "prefix":
            return self.field or ""
        parts = []
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.column is not None:
            parts.append(f"column '{self.column}'")
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        return f"{where}: {self.message}" if where else self.message

    def as_body(self) -> dict[str, Any]:
        """The API's error body: the whole text, each location key (null where unknown) and,
        when several fields are at fault at once, ``errors`` mapping each to its message."""
        return {
            "detail": str(self),
            "field": self.field,
            "line": self.line,
            "row": self.row,
            "column": self.column,
            "errors": self.errors,
        }


class RequestParameterError(ServiceError):
    """A request parameter an API view refuses before any service sees it (an unknown choice, a
    user who does not exist), in the one error shape: "raters: unknown users x"."""

    location_style = "prefix"


def form_add_service_errors(form: Any, error: ServiceError) -> None:
    """Show a :class:`ServiceError` on a Django form: each refused field's message next to that
    field, a field the form does not have (or no field) at the top of the form."""
    problems = error.errors or {error.field or "": error.message}
    for name, message in problems.items():
        if name in form.fields:
            form.add_error(name, message)
        else:
            form.add_error(None, f"{name}: {message}" if name else str(error))
