"""The files of a report's "Pairwise" section: CSV tables, one XLSX workbook, a LaTeX table
set, the section as JSON, and two figures (the leaderboard's intervals as a forest plot, the
win-rate matrix as a heatmap) drawn with the report's CJK-capable font settings.

Section layout: :func:`metrics.services.pairwise.pairwise_report_section`.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.cells import spreadsheet_cell
from metrics.reporting.latex import escape

logger = logging.getLogger(__name__)

# The leaderboard's columns (rank_pairwise's CSV, the API's output=csv), best system first.
LEADERBOARD_COLUMNS = (
    "system",
    "rating",
    "lower",
    "upper",
    "rank",
    "rank_lower",
    "rank_upper",
    "votes",
    "se",
    "elo",
)
LEADERBOARD_FIELDS = ["question", *LEADERBOARD_COLUMNS]
WIN_RATE_FIELDS = ["question", "system", "opponent", "win_rate", "battles", "predicted"]
SEPARATION_FIELDS = ["question", "higher", "lower", "gap", "separated", "votes_needed"]
AGREEMENT_FIELDS = [
    "comparison",
    "judge",
    "question",
    "with_ties",
    "value",
    "low",
    "high",
    "matched",
    "total",
    "keys",
]
BIAS_FIELDS = [
    "voter",
    "kind",
    "votes",
    "a_wins",
    "b_wins",
    "ties",
    "both_bad",
    "a_share",
    "decisive_a_share",
    "low",
    "high",
    "p_value",
]
ACCURACY_FIELDS = [
    "predictor",
    "kind",
    "question",
    "votes",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "excluded",
    "acc23",
    "acc23_low",
    "acc23_high",
    "epsilon",
    "system_pairwise_accuracy",
    "system_pairs",
    "system_tau",
    "system_tau_low",
    "system_tau_high",
]
ABSOLUTE_FIELDS = ["question", "kind", "against", "systems", "tau", "tau_low", "tau_high"]

CSV_FILES = {
    "pairwise_leaderboard.csv": LEADERBOARD_FIELDS,
    "pairwise_win_rates.csv": WIN_RATE_FIELDS,
    "pairwise_separation.csv": SEPARATION_FIELDS,
    "pairwise_agreement.csv": AGREEMENT_FIELDS,
    "pairwise_position_bias.csv": BIAS_FIELDS,
    "pairwise_accuracy.csv": ACCURACY_FIELDS,
    "pairwise_vs_absolute.csv": ABSOLUTE_FIELDS,
}
FIGURES = ("pairwise_forest.png", "pairwise_win_rates.png")
FILES = (*CSV_FILES, "pairwise.xlsx", "pairwise.tex", "pairwise.json", *FIGURES)


def _question(value: str | None) -> str:
    return value or "overall"


def section_tables(section: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each CSV's rows, from the stored section."""
    boards = section.get("leaderboards", [])
    leaderboard = [
        {"question": _question(board["question"]), **row}
        for board in boards
        for row in board["systems"]
    ]
    win_rates = []
    for board in boards:
        names = board["matrix_systems"]
        for i, system in enumerate(names):
            for j, opponent in enumerate(names):
                if i != j and board["battles"][i][j]:
                    win_rates.append(
                        {
                            "question": _question(board["question"]),
                            "system": system,
                            "opponent": opponent,
                            "win_rate": board["win_rate"][i][j],
                            "battles": board["battles"][i][j],
                            "predicted": board["predicted"][i][j],
                        }
                    )
    separation = [
        {"question": _question(board["question"]), **row}
        for board in boards
        for row in board["separation"]
    ]
    agreement = section.get("agreement", {})
    agreements = [
        {"comparison": comparison, **row, "question": _question(row.get("question"))}
        for comparison in ("human_human", "judge_human", "self_consistency")
        for row in agreement.get(comparison, [])
    ]
    for row in agreements:
        if row["question"] == "overall" and row.get("question") is None:
            row["question"] = "all questions"
    return {
        "pairwise_leaderboard.csv": leaderboard,
        "pairwise_win_rates.csv": win_rates,
        "pairwise_separation.csv": separation,
        "pairwise_agreement.csv": agreements,
        "pairwise_position_bias.csv": list(section.get("position_bias", [])),
        "pairwise_accuracy.csv": [
            {**row, "question": _question(row["question"])} for row in section.get("accuracy", [])
        ],
        "pairwise_vs_absolute.csv": [
            {**row, "question": _question(row["question"])}
            for row in section.get("vs_absolute", [])
        ],
    }


def _csv(rows: Sequence[Mapping[str, Any]], fields: list[str]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    # System names and voters come from imported files: no live formulas.
    writer.writerows({key: spreadsheet_cell(row.get(key)) for key in fields} for row in rows)
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")


def _xlsx(tables: Mapping[str, list[dict[str, Any]]]) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    book = Workbook()
    book.remove(book.active)
    for name, rows in tables.items():
        fields = CSV_FILES[name]
        sheet = book.create_sheet(name.removeprefix("pairwise_").removesuffix(".csv")[:31])
        sheet.append(fields)
        for cell in sheet[1]:
            cell.font = Font(bold=True)
        for row in rows:
            sheet.append([spreadsheet_cell(row.get(key)) for key in fields])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _number(value: Any, digits: int = 1) -> str:
    return "--" if value is None else f"{value:.{digits}f}"


def _latex(section: Mapping[str, Any]) -> str:
    """A booktabs table per leaderboard (rating, interval, rank range, votes) and one of every
    predictor's pairwise accuracy; compiles with XeLaTeX (CJK names) like the report's .tex."""
    parts = [
        "% Pairwise section: Bradley-Terry leaderboards and pairwise accuracy.",
        "% Requires \\usepackage{booktabs}.",
    ]
    for board in section.get("leaderboards", []):
        lines = [
            r"\begin{table}[tbp]",
            r"\centering",
            r"\small",
            rf"\caption{{Bradley--Terry leaderboard ({escape(_question(board['question']))}, "
            rf"{board['votes']} votes, {int(board['confidence'] * 100)}\% intervals)}}",
            r"\begin{tabular}{lrrrr}",
            r"\toprule",
            r"System & Rating & Interval & Rank & Votes \\",
            r"\midrule",
        ]
        for row in board["systems"]:
            rank = (
                str(row["rank_lower"])
                if row["rank_lower"] == row["rank_upper"]
                else f"{row['rank_lower']}--{row['rank_upper']}"
            )
            lines.append(
                f"{escape(row['system'])} & {_number(row['rating'])} & "
                f"[{_number(row['lower'])}, {_number(row['upper'])}] & {rank} & "
                f"{row['votes']} \\\\"
            )
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        parts.append("\n".join(lines))
    accuracy = section.get("accuracy", [])
    if accuracy:
        lines = [
            r"\begin{table}[tbp]",
            r"\centering",
            r"\small",
            r"\caption{Pairwise accuracy against human votes (without ties; tie-calibrated "
            r"acc$_{23}$ with its $\varepsilon$)}",
            r"\begin{tabular}{llrrrr}",
            r"\toprule",
            r"Predictor & Question & Votes & Acc. (no ties) & acc$_{23}$ & $\varepsilon$ \\",
            r"\midrule",
        ]
        for row in accuracy:
            lines.append(
                f"{escape(row['predictor'])} & {escape(_question(row['question']))} & "
                f"{row['votes']} & {_number(row['accuracy'], 3)} & {_number(row['acc23'], 3)} & "
                f"{_number(row['epsilon'], 3)} \\\\"
            )
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _figures(section: Mapping[str, Any]) -> dict[str, bytes]:
    """The first leaderboard as a forest plot and its win-rate heatmap (PNG). Never fails the
    report: a drawing error leaves the figures out with a logged warning."""
    boards = section.get("leaderboards", [])
    if not boards:
        return {}
    board = boards[0]
    try:
        from matplotlib.figure import Figure

        from metrics.reporting.fonts import figure_style

        files: dict[str, bytes] = {}
        with figure_style():
            rows = board["systems"]
            names = [row["system"] for row in rows]
            y = np.arange(len(rows))[::-1]
            fig = Figure(figsize=(6.4, 1.2 + 0.32 * len(rows)))
            ax = fig.add_subplot()
            ratings = np.array([row["rating"] for row in rows])
            lower = ratings - np.array([row["lower"] for row in rows])
            upper = np.array([row["upper"] for row in rows]) - ratings
            ax.errorbar(ratings, y, xerr=[lower, upper], fmt="o", color="#1f4e79", capsize=3)
            ax.set_yticks(y, labels=names)
            ax.set_xlabel("Bradley–Terry rating (Elo scale)")
            ax.set_title(f"{_question(board['question'])} · {board['votes']} votes")
            ax.grid(axis="x", alpha=0.3)
            files["pairwise_forest.png"] = _png(fig)
            values = np.array(
                [[np.nan if v is None else v for v in row] for row in board["win_rate"]]
            )
            fig = Figure(figsize=(1.6 + 0.45 * len(names), 1.2 + 0.4 * len(names)))
            ax = fig.add_subplot()
            image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=0, vmax=1)
            ax.set_facecolor("#dddddd")
            ax.set_xticks(range(len(names)), labels=names, rotation=60, ha="right")
            ax.set_yticks(range(len(names)), labels=names)
            if values.size <= 400:
                for (i, j), value in np.ndenumerate(values):
                    if not np.isnan(value):
                        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7)
            ax.set_title("Win rate of row over column (ties half)")
            fig.colorbar(image, ax=ax, fraction=0.046, pad=0.02)
            files["pairwise_win_rates.png"] = _png(fig)
        return files
    except Exception:
        logger.exception("pairwise figures failed")
        return {}


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def pairwise_files(section: dict[str, Any]) -> dict[str, bytes]:
    """Every file of the section, by name (written beside the report's and into its ZIP). The
    names are recorded in ``section["files"]`` (stored with the results), so the page links only
    files that exist (the figures are left out when they cannot be drawn)."""
    tables = section_tables(section)
    files = {name: _csv(rows, CSV_FILES[name]) for name, rows in tables.items()}
    files["pairwise.xlsx"] = _xlsx(tables)
    files["pairwise.tex"] = _latex(section).encode()
    files["pairwise.json"] = json.dumps(section, ensure_ascii=False, indent=1).encode()
    files.update(_figures(section))
    section["files"] = sorted(files)
    return files
