"""One entry point for every download format, and the ZIP of everything.

matplotlib (figures) and openpyxl (XLSX) are imported where a file is rendered: web processes
import this module for the list of formats and must not pay for them at start-up.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from metrics.analysis.results import CorrelationStudy
from metrics.analysis.tidy import tidy_tables
from metrics.reporting.csvfiles import csv_files, tidy_csv
from metrics.reporting.jsonfile import study_json
from metrics.reporting.latex import latex_document

ReportFormat = Literal["json", "csv", "xlsx", "latex", "zip"]
REPORT_FORMATS: tuple[ReportFormat, ...] = ("json", "csv", "xlsx", "latex", "zip")
EXTENSIONS: dict[ReportFormat, str] = {
    "json": ".json",
    "csv": ".csv",
    "xlsx": ".xlsx",
    "latex": ".tex",
    "zip": ".zip",
}


def format_for_path(path: str | Path) -> ReportFormat:
    """The format a file name asks for by its extension (JSON when it names none)."""
    suffix = Path(path).suffix.lower()
    for fmt, extension in EXTENSIONS.items():
        if suffix == extension:
            return fmt
    return "json"


def _readme(study: CorrelationStudy, names: list[str]) -> str:
    config = study.config
    lines = [
        "Correlation study",
        f"level: {config.level}; methods: {', '.join(config.methods)}; "
        f"bootstrap samples: {config.bootstrap}; seed: {config.seed}",
        "",
        *(f"WARNING: {w}" for w in study.warnings),
        *study.notes,
        "",
        "Files:",
        *(f"  {name}" for name in names),
        "",
    ]
    return "\n".join(lines)


def zip_bytes(
    study: CorrelationStudy,
    *,
    figures: bool | Mapping[str, bytes] = True,
    extensions: Mapping[str, Any] | None = None,
    extra_files: Mapping[str, bytes] | None = None,
) -> bytes:
    """results.json, tables.xlsx, tables.tex, csv/*.csv, figures/*.png|svg and a README.

    ``figures``: True renders them, False leaves them out, and a mapping (what
    :func:`figure_files` returned) is used as it is, so a caller that has already rendered the
    figures (the report task writes them to disk too) does not pay for them twice.
    ``extensions`` and ``extra_files``: the report extensions' sections (in results.json) and
    files (e.g. the LLM judges' tables), added as they are.
    """
    from metrics.reporting.xlsx import xlsx_bytes

    if figures is True:
        from metrics.reporting.figures import render_figures, with_warnings

        rendered = render_figures(study)
        study = with_warnings(study, rendered.warnings)
        figures = rendered.files
    files: dict[str, bytes] = {
        "results.json": study_json(study, extensions).encode(),
        "tables.xlsx": xlsx_bytes(study),
        "tables.tex": latex_document(study).encode(),
    }
    files.update({f"csv/{name}": text.encode() for name, text in csv_files(study).items()})
    files.update({f"figures/{name}": data for name, data in (figures or {}).items()})
    files.update(extra_files or {})
    files["README.txt"] = _readme(study, sorted(files)).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def report_bytes(
    study: CorrelationStudy, fmt: ReportFormat, *, extensions: Mapping[str, Any] | None = None
) -> bytes:
    """The study in one download format; "csv" is the tidy correlation table. ``extensions``
    (report sections added by other apps) go into the JSON."""
    if fmt == "json":
        return study_json(study, extensions).encode()
    if fmt == "csv":
        return tidy_csv(tidy_tables(study)[0]).encode()
    if fmt == "xlsx":
        from metrics.reporting.xlsx import xlsx_bytes

        return xlsx_bytes(study)
    if fmt == "latex":
        return latex_document(study).encode()
    if fmt == "zip":
        return zip_bytes(study)
    raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(REPORT_FORMATS)}")


def write_report(
    study: CorrelationStudy, path: str | Path, fmt: ReportFormat | None = None
) -> Path:
    """Write the study to ``path`` (format from the extension unless given); return the path."""
    target = Path(path)
    data = report_bytes(study, fmt or format_for_path(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target
