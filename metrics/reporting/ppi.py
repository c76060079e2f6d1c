"""The files of a report's "Human + judge" section: the per-system estimates and the projected
interval widths as CSV, one XLSX workbook, a LaTeX table, the section as JSON, and a figure of
interval width against the number of human ratings (human-only vs prediction-powered).

Section layout: :func:`metrics.services.ppi.ppi_estimates`.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from core.cells import spreadsheet_cell
from metrics.reporting.latex import escape

logger = logging.getLogger(__name__)

ESTIMATE_FIELDS = [
    "question",
    "predictor",
    "system",
    "n",
    "n_units",
    "human_estimate",
    "human_low",
    "human_high",
    "ppi_estimate",
    "ppi_low",
    "ppi_high",
    "ppi_bootstrap_low",
    "ppi_bootstrap_high",
    "predictor_only",
    "effective_n",
    "lam",
    "pearson",
    "weighted",
    "refused",
    "notes",
]
CURVE_FIELDS = ["system", "ratings", "width_human_only", "width_ppi"]
CSV_FILES = {"ppi_estimates.csv": ESTIMATE_FIELDS, "ppi_widths.csv": CURVE_FIELDS}


def section_tables(section: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each CSV's rows, from the stored section."""
    estimates = []
    curves = []
    for row in section.get("systems", []):
        human, ppi = row.get("human") or {}, row.get("ppi") or {}
        estimates.append(
            {
                "question": section["question"],
                "predictor": section["predictor"]["label"],
                "system": row["system"],
                "n": row["n"],
                "n_units": row["n_units"],
                "human_estimate": human.get("estimate"),
                "human_low": human.get("low"),
                "human_high": human.get("high"),
                "ppi_estimate": ppi.get("estimate"),
                "ppi_low": ppi.get("low"),
                "ppi_high": ppi.get("high"),
                "ppi_bootstrap_low": ppi.get("bootstrap_low"),
                "ppi_bootstrap_high": ppi.get("bootstrap_high"),
                "predictor_only": row.get("predictor_only"),
                "effective_n": row.get("effective_n"),
                "lam": row.get("lam"),
                "pearson": row.get("pearson"),
                "weighted": row.get("weighted"),
                "refused": row.get("refused") or "",
                "notes": "; ".join(row.get("notes") or []),
            }
        )
        curve = row.get("curve") or {}
        for m, h, p in zip(
            curve.get("m", []), curve.get("human_only", []), curve.get("ppi", []), strict=True
        ):
            curves.append(
                {"system": row["system"], "ratings": m, "width_human_only": h, "width_ppi": p}
            )
    return {"ppi_estimates.csv": estimates, "ppi_widths.csv": curves}


def _csv(rows: Sequence[Mapping[str, Any]], fields: list[str]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    # System and metric names come from user data: no live formulas.
    writer.writerows({key: spreadsheet_cell(row.get(key)) for key in fields} for row in rows)
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")


def _xlsx(section: Mapping[str, Any], tables: Mapping[str, list[dict[str, Any]]]) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    book = Workbook()
    book.remove(book.active)
    for name, rows in tables.items():
        fields = CSV_FILES[name]
        sheet = book.create_sheet(name.removesuffix(".csv")[:31])
        sheet.append(fields)
        for cell in sheet[1]:
            cell.font = Font(bold=True)
        for row in rows:
            sheet.append([spreadsheet_cell(row.get(key)) for key in fields])
    if section.get("refused"):
        sheet = book.create_sheet("refused")
        sheet.append([spreadsheet_cell(section["refused"])])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _number(value: Any, digits: int = 2) -> str:
    return "--" if value is None else f"{value:.{digits}f}"


def _latex(section: Mapping[str, Any]) -> str:
    """A booktabs table: per system the human-only and human + predictor estimates with their
    intervals, the effective sample size and the predictor's r; compiles with XeLaTeX."""
    confidence = int(round(section["confidence"] * 100))
    lines = [
        "% Human + judge section: prediction-powered (PPI++) estimates.",
        "% Requires \\usepackage{booktabs}.",
        r"\begin{table}[tbp]",
        r"\centering",
        r"\small",
        rf"\caption{{Human-only and human + predictor ({escape(section['predictor']['label'])}) "
        rf"estimates of {escape(section['question'])}, {confidence}\% intervals}}",
    ]
    if section.get("refused"):
        lines += [rf"\emph{{{escape(section['refused'])}}}", r"\end{table}"]
        return "\n".join(lines) + "\n"
    lines += [
        r"\begin{tabular}{lrrrrrr}",
        r"\toprule",
        r"System & $n$ & Human only & Human + predictor & $n_\mathrm{eff}$ & $\lambda$ & $r$ \\",
        r"\midrule",
    ]
    for row in section.get("systems", []):
        human, ppi = row.get("human"), row.get("ppi")
        human_text = (
            "--"
            if not human
            else f"{_number(human['estimate'])} [{_number(human['low'])}, {_number(human['high'])}]"
        )
        ppi_text = (
            "--"
            if not ppi
            else f"{_number(ppi['estimate'])} [{_number(ppi['low'])}, {_number(ppi['high'])}]"
        )
        lines.append(
            f"{escape(row['system'])} & {row['n']} & {human_text} & {ppi_text} & "
            f"{_number(row.get('effective_n'), 0)} & {_number(row.get('lam'))} & "
            f"{_number(row.get('pearson'))} \\\\"
        )
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _figure(section: Mapping[str, Any]) -> dict[str, bytes]:
    """Interval width against human ratings per system, human-only (dashed) and with the
    predictor (solid). Never fails the report: a drawing error leaves it out with a warning."""
    rows = [row for row in section.get("systems", []) if row.get("curve")]
    if not rows:
        return {}
    try:
        from matplotlib.figure import Figure

        from metrics.reporting.fonts import figure_style

        with figure_style():
            fig = Figure(figsize=(6.4, 4.2))
            ax = fig.add_subplot()
            for i, row in enumerate(rows):
                curve, color = row["curve"], f"C{i % 10}"
                human = [float("nan") if v is None else v for v in curve["human_only"]]
                both = [float("nan") if v is None else v for v in curve["ppi"]]
                ax.plot(curve["m"], human, "--", color=color)
                ax.plot(curve["m"], both, "-", color=color, label=row["system"])
                ax.plot([row["n"]], [row["ppi"]["high"] - row["ppi"]["low"]], "o", color=color)
            ax.set_xlabel("Human ratings")
            ax.set_ylabel(f"Interval width ({int(round(section['confidence'] * 100))}%)")
            ax.set_title(f"{section['question']} · {section['predictor']['label']}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, title="solid: human + predictor; dashed: human only")
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png")
        return {"ppi_widths.png": buffer.getvalue()}
    except Exception:
        logger.exception("ppi figure failed")
        return {}


def ppi_files(section: dict[str, Any]) -> dict[str, bytes]:
    """Every file of the section, by name; the names are recorded in ``section["files"]``."""
    tables = section_tables(section)
    files = {name: _csv(rows, CSV_FILES[name]) for name, rows in tables.items()}
    files["ppi.xlsx"] = _xlsx(section, tables)
    files["ppi.tex"] = _latex(section).encode()
    files["ppi.json"] = json.dumps(section, ensure_ascii=False, indent=1).encode()
    files.update(_figure(section))
    section["files"] = sorted(files)
    return files
