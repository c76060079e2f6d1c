"""Report figures on a machine without CJK fonts: the shipped subset draws Chinese and Japanese,
and with no CJK font at all a report still finishes with every download and a visible warning."""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse
from fontTools.ttLib import TTFont
from matplotlib import font_manager
from matplotlib.figure import Figure

from metrics.models import JobStatus
from metrics.reporting import fonts
from metrics.reporting.fonts import (
    DEGRADED_MESSAGE,
    SHIPPED_FAMILY,
    SHIPPED_FONT,
    figure_style,
    font_status,
)
from metrics.selectors.reports import report_figures, report_file
from metrics.services.reports import report_compute, report_create
from tests.metrics.reports.factories import QUALITY, dialogue_score, finished_run, msde_study

# Labels a Chinese or Japanese study puts in its figures: skills, rubric labels, system names,
# Jōyō kanji outside GB 2312 (働 込 畑), kana and full-width punctuation.
LABELS = "知识对话 · 信息量（丰富度）／ 小冰 — 日本語の評価：働き込み、畑、ひらがな・カタカナ「ρ」"


@pytest.fixture
def hidden_fonts(monkeypatch):
    """Matplotlib as on a fresh machine: only its own bundled fonts (DejaVu), no system font."""
    manager = font_manager.fontManager
    bundled = [f for f in manager.ttflist if "mpl-data" in f.fname]
    monkeypatch.setattr(manager, "ttflist", bundled)
    monkeypatch.setattr(fonts, "_SYSTEM_FILES", ())
    font_status.cache_clear()
    manager._findfont_cached.cache_clear()
    yield
    font_status.cache_clear()
    manager._findfont_cached.cache_clear()


@pytest.fixture
def no_cjk_font(hidden_fonts, monkeypatch, tmp_path):
    monkeypatch.setattr(fonts, "SHIPPED_FONT", tmp_path / "deleted.otf")
    font_status.cache_clear()


def _draw(text: str) -> list[str]:
    with figure_style() as notes:
        figure = Figure()
        figure.add_subplot().set_title(text)
        figure.savefig(io.BytesIO(), format="png")
    return notes.warnings()


def test_the_shipped_subset_draws_chinese_and_japanese_with_no_system_font(hidden_fonts) -> None:
    status = font_status()
    assert status.families == (SHIPPED_FAMILY,)
    assert not status.degraded
    assert _draw(LABELS) == []


def test_without_any_cjk_font_figures_still_render_and_say_they_are_degraded(no_cjk_font) -> None:
    status = font_status()
    assert status.degraded and status.detail == DEGRADED_MESSAGE
    assert _draw(LABELS) == [DEGRADED_MESSAGE]


def test_a_character_the_subset_lacks_is_named_in_a_warning(hidden_fonts) -> None:
    # 𪚥 (U+2A6A5) is in neither GB 2312 nor JIS X 0208.
    [warning] = _draw("信息量 𪚥")
    assert "𪚥" in warning and "1 character(s)" in warning


def test_the_subset_covers_gb2312_jis_x_0208_and_the_joyo_kanji_of_2010() -> None:
    cmap = TTFont(SHIPPED_FONT, fontNumber=0)["cmap"].getBestCmap()
    wanted: set[str] = set("𠮟塡剝頰")
    for codec, last_lead in (("gb2312", 0xF7), ("euc_jp", 0xF4)):
        for lead in range(0xB0, last_lead + 1):  # the ideograph rows of both standards
            for trail in range(0xA1, 0xFF):
                with contextlib.suppress(UnicodeDecodeError):
                    wanted.update(bytes([lead, trail]).decode(codec))
    wanted.update("あいうアイウー、。「」（）：")
    missing = sorted(c for c in wanted if ord(c) not in cmap)
    assert not missing, f"{len(missing)} characters missing, e.g. {''.join(missing[:20])}"
    assert (Path(SHIPPED_FONT).parent / "OFL.txt").read_text().count("SIL OPEN FONT LICENSE") == 1


@pytest.fixture
def scored():
    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, "静态", metrics=["f1"])
    for dialogue in study.answers:
        dialogue_score(run, dialogue, "f1", QUALITY[dialogue.backend.name] / 10)
    return study, run


@pytest.mark.django_db
def test_a_report_without_any_cjk_font_finishes_with_every_download_and_a_warning(
    scored, no_cjk_font, client, researcher
) -> None:
    study, run = scored
    report = report_create(
        name="无字体", config={"metric_runs": [run.pk], "rating_jobs": [study.job.pk]}
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()

    assert report.status == JobStatus.DONE, report.error
    assert DEGRADED_MESSAGE in report.results["warnings"]
    for fmt in ("json", "csv", "xlsx", "latex", "zip"):
        path = report_file(report, fmt)
        assert path is not None and path.stat().st_size > 0
    assert (
        json.loads(report_file(report, "json").read_text())["warnings"]
        == (report.results["warnings"])
    )
    with zipfile.ZipFile(report_file(report, "zip")) as archive:
        assert f"WARNING: {DEGRADED_MESSAGE}" in archive.read("README.txt").decode()
        assert any(n.startswith("figures/heatmap_") for n in archive.namelist())
    assert "heatmap_pearson.png" in report_figures(report)

    client.force_login(researcher)
    page = client.get(reverse("metrics:report-detail", args=[report.pk])).content.decode()
    # The stored warning is English; the (Chinese) page shows it in its language.
    assert "显示为空框" in page and 'id="report-warnings"' in page
    form = client.get(reverse("metrics:report-create")).content.decode()
    assert 'id="figures-degraded"' in form


@pytest.mark.django_db
def test_healthz_says_when_report_figures_will_be_degraded(no_cjk_font, client, settings) -> None:
    settings.HEALTH_WORKER_TIMEOUT = 0.1
    body = client.get(reverse("healthz")).json()
    assert body["features"]["report_figures"] == {
        "ok": False,
        "families": [],
        "detail": DEGRADED_MESSAGE,
    }


@pytest.mark.django_db
def test_healthz_names_the_figure_font_when_one_is_there(hidden_fonts, client, settings) -> None:
    settings.HEALTH_WORKER_TIMEOUT = 0.1
    figures = client.get(reverse("healthz")).json()["features"]["report_figures"]
    assert figures["ok"] is True and figures["families"] == [SHIPPED_FAMILY]


def test_report_figure_fonts_shipped_ignores_installed_cjk_fonts(monkeypatch) -> None:
    monkeypatch.setenv("REPORT_FIGURE_FONTS", "shipped")
    font_status.cache_clear()
    try:
        assert font_status().families == (SHIPPED_FAMILY,)
        assert _draw(LABELS) == []
    finally:
        font_status.cache_clear()


def test_a_warning_other_than_a_missing_glyph_ends_the_block_and_is_raised_once() -> None:
    # It used to be re-raised inside the recording block, recorded again, and the loop over
    # the recorded warnings never ended (a report without rating jobs hung on its figures).
    import warnings as warnings_module

    from metrics.reporting.fonts import figure_style

    with warnings_module.catch_warnings(record=True) as outside:
        warnings_module.simplefilter("always")
        with figure_style():
            warnings_module.warn("Mean of empty slice", RuntimeWarning, stacklevel=1)
    assert [str(w.message) for w in outside] == ["Mean of empty slice"]
