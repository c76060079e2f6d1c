"""Spreadsheet cells safe to open: every CSV and XLSX writer passes its cells through here.

Exports carry text that other people wrote (experts' free-text answers, imported system names
and dialogue ids). A spreadsheet program runs a cell that begins with ``=``, ``+``, ``-`` or
``@`` as a formula (``=HYPERLINK(...)`` becomes a live link that can leak data), and a leading
tab or carriage return hides such a formula from a quick look. OWASP's rule for CSV injection
(https://owasp.org/www-community/attacks/CSV_Injection) is to prefix such a cell with a single
quote, which the program shows as text. Pure Python (no Django): the report writers in
``metrics.reporting`` run in programs without Django.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A plain decimal number (a negative score written as text, "-0.25", "-1e-3") is a number to a
# spreadsheet, not a formula: it keeps its sign and stays a number when opened.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")

T = TypeVar("T")


def spreadsheet_cell(value: T) -> T | str:
    """The value as a spreadsheet must receive it: text that would start a formula gets a
    leading ``'``; numbers, numeric text and everything else are returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        if _NUMBER.fullmatch(value):
            return value
        return "'" + value
    return value


def csv_lines(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """CSV text a line at a time, header first, for streaming downloads: None becomes an empty
    cell and every cell passes through `spreadsheet_cell`. Keys outside `columns` are ignored."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    yield _drain(buffer)
    for row in rows:
        writer.writerow(
            ["" if row.get(key) is None else spreadsheet_cell(row[key]) for key in columns]
        )
        yield _drain(buffer)


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text
