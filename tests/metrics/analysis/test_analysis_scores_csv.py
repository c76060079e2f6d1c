"""Loading score CSVs: valid files load, malformed ones name the row and column."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from metrics.analysis.scores import (
    ScoreFileError,
    ScoreKind,
    ScoreRow,
    load_score_csv,
    score_csv_text,
)


def _load(text: str, kind: ScoreKind = "metric") -> list[ScoreRow]:
    return load_score_csv(io.StringIO(text), kind=kind, name="M.csv")


def test_it_loads_rows_with_optional_item_and_ignores_extra_columns() -> None:
    rows = _load(
        "Group,unit,metric,value,rater,item\n闲聊,d1,BLEU-1, 0.5 ,r1,x\nk,d2,F1,-1e-3,r2,\n"
    )
    assert rows == [
        ScoreRow("闲聊", "d1", "BLEU-1", 0.5, "x"),
        ScoreRow("k", "d2", "F1", -0.001, ""),
    ]


def test_it_reads_a_utf8_file_with_bom_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "H.csv"
    path.write_bytes("\ufeffgroup,unit,dimension,value\r\n知识,d1,信息量,2\r\n\r\n".encode())
    assert load_score_csv(path, kind="human") == [ScoreRow("知识", "d1", "信息量", 2.0)]


def test_it_round_trips_its_own_csv() -> None:
    rows = [ScoreRow("g", "u1", "info", 1.0, "i1"), ScoreRow("g", "u2", "info", 0.25, "i2")]
    assert _load(score_csv_text(rows, kind="human"), kind="human") == rows


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("group,unit,value\ng,u,1\n", "M.csv, row 1, column 'metric': missing column"),
        ("group,unit,metric,value\ng,u,bleu,abc\n", "M.csv, row 2, column 'value': 'abc' is"),
        ("group,unit,metric,value\ng,u,bleu,1\ng,u,bleu,nan\n", "row 3, column 'value'"),
        ("group,unit,metric,value\ng,u,bleu,1_000\n", "row 2, column 'value'"),
        ("group,unit,metric,value\ng,u,bleu,\n", "row 2, column 'value'"),
        ("group,unit,metric,value\ng,,bleu,1\n", "M.csv, row 2, column 'unit': empty value"),
        ("group,unit,metric,value\ng,u,bleu,1,extra\n", "row 2: expected 4 fields"),
        ("group,unit,metric,value,value\n", "row 1: duplicated column 'value'"),
        ("", "M.csv: the file is empty"),
        ("group,unit,metric,value\n", "M.csv: no score rows"),
        ('group,unit,metric,value\ng,"u,bleu,1\n', "M.csv, row 2: malformed CSV"),
    ],
)
def test_it_names_the_row_and_column_of_bad_input(text: str, message: str) -> None:
    with pytest.raises(ScoreFileError) as error:
        _load(text)
    assert message in str(error.value)


def test_it_rejects_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "M.csv"
    path.write_bytes("group,unit,metric,value\n闲聊,u,bleu,1\n".encode("gb18030"))
    with pytest.raises(ScoreFileError, match="M.csv: not valid UTF-8"):
        load_score_csv(path, kind="metric")


def test_it_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScoreFileError, match="nothing.csv: cannot be read"):
        load_score_csv(tmp_path / "nothing.csv", kind="metric")
