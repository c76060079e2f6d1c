"""A CJK font for report figures: group, system and metric names are often Chinese or Japanese.

Matplotlib's default DejaVu Sans has no CJK glyphs (it warns and draws boxes), and a fresh laptop,
macOS or a slim container has no Noto Sans CJK. So the project ships its own font: a subset of
Noto Sans CJK SC (``fontdata/NotoSansCJKsc-Subset.otf``, SIL Open Font License 1.1, licence in
``fontdata/OFL.txt``, rebuilt by ``bin/subset-cjk-font``) covering GB 2312, JIS X 0208 and the
Jōyō kanji, kana, Latin, Greek and the common symbols. It is registered with matplotlib's font
manager at first use. A full system Noto Sans CJK (Debian ``fonts-noto-cjk``), when installed,
comes first in the family list and the subset second, so matplotlib's per-glyph fallback draws a
rare character from whichever has it; DejaVu Sans stays last for the glyphs neither has.

Should no CJK font be usable at all (the shipped file deleted or unreadable), figures are still
drawn, with DejaVu Sans, and :func:`font_status` says they are degraded: the report records a
visible warning and ``/healthz`` reports it. A missing font never fails a report.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import matplotlib as mpl
from matplotlib import font_manager

logger = logging.getLogger(__name__)

SHIPPED_FONT = Path(__file__).resolve().parent / "fontdata" / "NotoSansCJKsc-Subset.otf"
SHIPPED_FAMILY = "Noto Sans CJK SC Subset"
# Any of these faces covers all three scripts; SC gives Simplified-Chinese glyph shapes.
_SYSTEM_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK TC", "Noto Sans CJK KR")
_SYSTEM_FILES = (
    Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),
    Path("/usr/share/fonts/opentype/noto-cjk/NotoSansCJK-Regular.ttc"),
    Path("/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc"),
)
_FALLBACK = "DejaVu Sans"
# "shipped": draw figures with the project's own font only, ignoring any installed CJK font, so
# figures look the same on every machine (and a test can run as on a machine without fonts).
FONTS_ENV = "REPORT_FIGURE_FONTS"
_MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from font")

DEGRADED_MESSAGE = (
    "No CJK font is available to matplotlib (the font shipped in metrics/reporting/fontdata/ "
    "is missing or unreadable): figures are drawn with DejaVu Sans and Chinese or Japanese "
    "labels in them show as empty boxes. Tables and downloads are complete. Reinstall the "
    "project or install the fonts-noto-cjk package, then re-run the report."
)


@dataclass(frozen=True)
class FontStatus:
    """Which CJK families figures use, best first; ``degraded`` when there is none."""

    families: tuple[str, ...]
    detail: str
    files: tuple[str, ...] = field(default=())

    @property
    def degraded(self) -> bool:
        return not self.families

    def as_dict(self) -> dict[str, object]:
        return {"ok": not self.degraded, "families": list(self.families), "detail": self.detail}


def _known() -> set[str]:
    return {font.name for font in font_manager.fontManager.ttflist}


def _register(path: Path) -> bool:
    try:
        font_manager.fontManager.addfont(str(path))
    except Exception as exc:  # noqa: BLE001 - a corrupt or unreadable file: degrade, never fail
        logger.warning("cannot load font %s: %s", path, exc)
        return False
    return True


@cache
def font_status() -> FontStatus:
    """Register the CJK fonts with matplotlib once per process and say which are usable."""
    families: list[str] = []
    files: list[str] = []
    known = _known()
    shipped_only = os.environ.get(FONTS_ENV, "").strip().lower() == "shipped"
    system = None if shipped_only else next((f for f in _SYSTEM_FAMILIES if f in known), None)
    if system is None and not shipped_only:
        for path in _SYSTEM_FILES:
            if path.exists() and _register(path):
                known = _known()
                system = next((f for f in _SYSTEM_FAMILIES if f in known), None)
                if system:
                    files.append(str(path))
                    break
    if system:
        families.append(system)
    if SHIPPED_FAMILY not in known and SHIPPED_FONT.exists() and _register(SHIPPED_FONT):
        known = _known()
    if SHIPPED_FAMILY in known:
        families.append(SHIPPED_FAMILY)
        files.append(str(SHIPPED_FONT))
    if not families:
        logger.warning(DEGRADED_MESSAGE)
        return FontStatus(families=(), detail=DEGRADED_MESSAGE)
    detail = f"report figures use {' + '.join(families)}"
    return FontStatus(families=tuple(families), detail=detail, files=tuple(files))


def cjk_family() -> str:
    """The best CJK family for figures; DejaVu Sans (boxes for CJK) when figures are degraded."""
    status = font_status()
    return status.families[0] if status.families else _FALLBACK


@dataclass
class FigureNotes:
    """What went wrong with fonts while drawing, for the report's warnings."""

    degraded: bool = False
    missing: set[str] = field(default_factory=set)

    def warnings(self) -> list[str]:
        notes = [DEGRADED_MESSAGE] if self.degraded else []
        if self.missing and not self.degraded:
            chars = " ".join(sorted(self.missing)[:20])
            notes.append(
                f"{len(self.missing)} character(s) are not in the figure font and show as "
                f"empty boxes in the figures: {chars}. Install fonts-noto-cjk for full coverage."
            )
        return notes


@contextmanager
def figure_style() -> Iterator[FigureNotes]:
    """Matplotlib settings for report figures, scoped to the block (no global state).

    Yields the notes the block's drawing produced: glyph-missing warnings are collected there
    (and not re-raised) so a figure with an uncovered character still renders.
    """
    status = font_status()
    notes = FigureNotes(degraded=status.degraded)
    others: list[warnings.WarningMessage] = []
    with (
        mpl.rc_context(
            {
                "font.family": "sans-serif",
                "font.sans-serif": [*status.families, _FALLBACK],
                "axes.unicode_minus": False,
                "svg.fonttype": "path",
                "figure.dpi": 100,
                "savefig.dpi": 150,
                "savefig.bbox": "tight",
            }
        ),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        try:
            yield notes
        finally:
            for warning in caught:
                match = _MISSING_GLYPH.search(str(warning.message))
                if match:
                    notes.missing.add(chr(int(match.group(1))))
                else:
                    others.append(warning)
    # Re-raised once the recording has ended: inside it, each would be recorded again, and the
    # loop above would never reach the end of the list it was appending to.
    for warning in others:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
