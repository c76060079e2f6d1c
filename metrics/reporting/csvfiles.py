"""Tidy CSV: one observation per row, UTF-8, empty field for an undefined value, text that a
spreadsheet would run as a formula neutralised (`core.cells`)."""

from __future__ import annotations

import csv
import io

from core.cells import spreadsheet_cell
from metrics.analysis.results import CorrelationStudy
from metrics.analysis.tidy import TidyTable, tidy_tables


def tidy_csv(table: TidyTable) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=table.columns, lineterminator="\n")
    writer.writeheader()
    for record in table.records:
        writer.writerow(
            {key: "" if value is None else spreadsheet_cell(value) for key, value in record.items()}
        )
    return out.getvalue()


def csv_files(study: CorrelationStudy) -> dict[str, str]:
    """{"correlations.csv": text, "systems.csv": text, …} for every tidy table of the study."""
    return {f"{table.name}.csv": tidy_csv(table) for table in tidy_tables(study)}
