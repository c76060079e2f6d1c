"""XLSX workbook (openpyxl): a sheet per table, best values bold, plus the tidy data and notes.

Every cell goes through `core.cells.spreadsheet_cell`: openpyxl stores a string that starts with
``=`` as a formula, and system names, dimensions and notes come from imported files."""

from __future__ import annotations

import io
import re

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from core.cells import spreadsheet_cell
from metrics.analysis.results import CorrelationStudy
from metrics.analysis.tables import (
    Table,
    cluster_table,
    correlation_table,
    coverage_table,
    group_average_table,
    metric_correlation_table,
    system_table,
)
from metrics.analysis.tidy import tidy_tables

_BOLD = Font(bold=True)
_ITALIC = Font(italic=True)
_NUMBER = re.compile(r"-?\d+(?:\.(\d+))?")
_SHEET_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")


def workbook_tables(study: CorrelationStudy) -> list[Table]:
    tables = [correlation_table(study)]
    if study.config.bootstrap:
        tables.append(correlation_table(study, with_ci=True))
    if len(study.groups) > 1:
        tables.append(group_average_table(study))
    tables.append(cluster_table(study))
    tables += [system_table(scores) for scores in study.systems]
    tables.append(coverage_table(study))
    tables += [metric_correlation_table(m) for m in study.metric_correlations if m.metrics]
    return tables


def _sheet_title(key: str, taken: set[str]) -> str:
    """Excel sheet names: at most 31 characters, none of []:*?/\\, unique ignoring case."""
    base = _SHEET_FORBIDDEN.sub("_", key)[:31] or "sheet"
    title, counter = base, 1
    while title.lower() in taken:
        counter += 1
        suffix = f"~{counter}"
        title = base[: 31 - len(suffix)] + suffix
    taken.add(title.lower())
    return title


def _write_value(sheet: Worksheet, row: int, column: int, text: str, value: float | None) -> None:
    """Numbers stay numbers (with the displayed decimals); anything else is written as text."""
    match = _NUMBER.fullmatch(text)
    target = sheet.cell(row=row, column=column)
    if match and value is not None:
        target.value = value
        decimals = len(match.group(1) or "")
        target.number_format = "0." + "0" * decimals if decimals else "0"
    else:
        target.value = spreadsheet_cell(text)


def _write_table(sheet: Worksheet, table: Table) -> None:
    sheet.cell(row=1, column=1, value=spreadsheet_cell(table.title)).font = _BOLD
    offset = len(table.stub)
    row = 2
    for depth, spans in enumerate(table.header):
        column = offset + 1
        for label, span in spans:
            cell = sheet.cell(row=row, column=column, value=spreadsheet_cell(label))
            cell.font = _BOLD
            cell.alignment = Alignment(horizontal="center")
            if span > 1:
                sheet.merge_cells(
                    start_row=row, start_column=column, end_row=row, end_column=column + span - 1
                )
            column += span
        if depth == len(table.header) - 1:
            for k, label in enumerate(table.stub):
                sheet.cell(row=row, column=k + 1, value=spreadsheet_cell(label)).font = _BOLD
        row += 1
    for data_row in table.rows:
        for k, label in enumerate(data_row.labels):
            sheet.cell(row=row, column=k + 1, value=spreadsheet_cell(label))
        for k, cell in enumerate(data_row.cells):
            _write_value(sheet, row, offset + k + 1, cell.text, cell.value)
            if cell.bold:
                sheet.cell(row=row, column=offset + k + 1).font = _BOLD
        row += 1
    row += 1
    for note in table.notes:
        sheet.cell(row=row, column=1, value=spreadsheet_cell(note)).font = _ITALIC
        row += 1
    sheet.column_dimensions["A"].width = max(
        [12, *(len(r.labels[0]) + 2 for r in table.rows if r.labels)]
    )
    for k in range(offset + 1, offset + sum(span for _, span in table.header[-1]) + 1):
        sheet.column_dimensions[get_column_letter(k)].width = 11
    sheet.freeze_panes = sheet.cell(row=2 + len(table.header), column=offset + 1)


def _write_notes(sheet: Worksheet, study: CorrelationStudy) -> None:
    config = study.config
    lines = [
        ("Level", config.level),
        ("Methods", ", ".join(config.methods)),
        ("Bootstrap samples", str(config.bootstrap)),
        ("Seed", str(config.seed)),
        ("Confidence", str(config.confidence)),
        ("Alpha", str(config.alpha)),
        *(("Warning", w) for w in study.warnings),
        *(("Note", n) for n in study.notes),
    ]
    for row, (label, text) in enumerate(lines, start=1):
        sheet.cell(row=row, column=1, value=label).font = _BOLD
        sheet.cell(row=row, column=2, value=spreadsheet_cell(text))
    sheet.column_dimensions["A"].width = 18
    sheet.column_dimensions["B"].width = 120


def xlsx_bytes(study: CorrelationStudy) -> bytes:
    workbook = Workbook()
    workbook.remove(workbook.active)
    taken: set[str] = set()
    for table in workbook_tables(study):
        _write_table(workbook.create_sheet(_sheet_title(table.key, taken)), table)
    data = tidy_tables(study)[0]
    sheet = workbook.create_sheet(_sheet_title("data", taken))
    sheet.append(list(data.columns))
    for cell in sheet[1]:
        cell.font = _BOLD
    for record in data.records:
        sheet.append([spreadsheet_cell(record[column]) for column in data.columns])
    _write_notes(workbook.create_sheet(_sheet_title("notes", taken)), study)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()
