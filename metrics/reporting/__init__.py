"""Report files of a correlation study (no Django imports): CSV, XLSX, JSON, LaTeX, figures, ZIP.

:func:`report_bytes` renders one download format, :func:`figure_files` the PNG/SVG figures,
:func:`write_report` writes a file whose format follows its extension.
"""

from typing import TYPE_CHECKING, Any

from metrics.reporting.bundle import REPORT_FORMATS, report_bytes, write_report, zip_bytes

if TYPE_CHECKING:
    from metrics.reporting.figures import (
        RenderedFigures,
        figure_files,
        render_figures,
        with_warnings,
    )

__all__ = [
    "REPORT_FORMATS",
    "RenderedFigures",
    "figure_files",
    "render_figures",
    "report_bytes",
    "with_warnings",
    "write_report",
    "zip_bytes",
]
_FIGURES = ("RenderedFigures", "figure_files", "render_figures", "with_warnings")


def __getattr__(name: str) -> Any:
    # matplotlib loads on first use (PEP 562), not when a web process imports the formats.
    if name in _FIGURES:
        from metrics.reporting import figures

        return getattr(figures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
