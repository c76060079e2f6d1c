"""The English catalogue is complete, compiled, and the English UI shows no untranslated Chinese.

The interface is written in Simplified Chinese; English comes from locale/en/LC_MESSAGES/django.po
and its compiled django.mo (both committed). These tests use only the standard library (polib is
not a project dependency): a small parser for the .po file and gettext.GNUTranslations for the .mo.
"""

from __future__ import annotations

import ast
import gettext
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from tests.chat.campaigns.factories import study
from tests.chat.factories import BackendFactory, DatasetFactory
from tests.downloads import streamed_bytes

REPO_ROOT = Path(__file__).resolve().parents[2]
PO_PATH = REPO_ROOT / "locale" / "en" / "LC_MESSAGES" / "django.po"
MO_PATH = PO_PATH.with_suffix(".mo")

# CJK ideographs, CJK punctuation (、。「」…) and full-width forms (（），：).
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+")
PLACEHOLDER = re.compile(r"%\(\w+\)[sdfr]|%[sd]|%%")
# Language names are conventionally shown in their own script (endonyms) in pickers.
ENDONYM_OPTION = re.compile(r"<option\b[^>]*>\s*(?:中文|简体中文|日本語)\s*</option>")


@dataclass
class Entry:
    msgctxt: str | None = None
    msgid: str = ""
    msgid_plural: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    line: int = 0


def parse_po(path: Path) -> list[Entry]:
    """The live entries of a .po file (obsolete `#~` entries are skipped), header included."""
    entries: list[Entry] = []
    current: Entry | None = None
    target: tuple[str, int | None] | None = None  # which field a continuation line extends

    def finish() -> None:
        nonlocal current
        if current is not None:
            entries.append(current)
        current = None

    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#~"):
            continue
        if line.startswith("#"):
            if current is not None and current.msgstr:
                finish()
            if current is None:
                current = Entry(line=number)
            if line.startswith("#,"):
                current.flags |= {f.strip() for f in line[2:].split(",") if f.strip()}
            continue
        keyword, _, rest = line.partition(" ")
        if line.startswith('"'):
            assert current is not None and target is not None, f"{path}:{number}: stray string"
            keyword, rest = "", line
        text = ast.literal_eval(rest) if rest else ""
        if keyword in ("msgctxt", "msgid") and current is not None and current.msgstr:
            finish()
        if current is None:
            current = Entry(line=number)
        if keyword == "msgctxt":
            current.msgctxt, target = text, ("msgctxt", None)
        elif keyword == "msgid":
            current.msgid, target = text, ("msgid", None)
        elif keyword == "msgid_plural":
            current.msgid_plural, target = text, ("msgid_plural", None)
        elif keyword.startswith("msgstr"):
            index = int(keyword[7:-1]) if keyword.startswith("msgstr[") else 0
            current.msgstr[index], target = text, ("msgstr", index)
        elif keyword == "":
            name, index = target
            if name == "msgstr":
                current.msgstr[index] += text
            else:
                setattr(current, name, (getattr(current, name) or "") + text)
        else:
            raise AssertionError(f"{path}:{number}: cannot parse {raw!r}")
    finish()
    return entries


def messages() -> list[Entry]:
    """The catalogue's messages, without the header entry (msgid "")."""
    return [e for e in parse_po(PO_PATH) if e.msgid]


def describe(entry: Entry) -> str:
    return f"line {entry.line}: {entry.msgid!r}"


def test_the_catalogue_parses_and_has_messages():
    entries = parse_po(PO_PATH)
    assert entries[0].msgid == "" and "charset=UTF-8" in entries[0].msgstr[0]
    assert len(entries) > 100


def test_every_english_message_is_translated_and_not_fuzzy():
    untranslated = [describe(e) for e in messages() if not all(e.msgstr.values())]
    fuzzy = [describe(e) for e in messages() if "fuzzy" in e.flags]
    assert not untranslated, "untranslated entries in django.po:\n" + "\n".join(untranslated)
    assert not fuzzy, "fuzzy entries in django.po:\n" + "\n".join(fuzzy)


def test_plural_entries_have_both_english_forms():
    incomplete = [
        describe(e) for e in messages() if e.msgid_plural is not None and sorted(e.msgstr) != [0, 1]
    ]
    assert not incomplete, "\n".join(incomplete)


def test_translations_keep_the_placeholders():
    wrong = []
    for entry in messages():
        expected = sorted(PLACEHOLDER.findall(entry.msgid))
        for form, text in entry.msgstr.items():
            source = entry.msgid if form == 0 or entry.msgid_plural is None else entry.msgid_plural
            if sorted(PLACEHOLDER.findall(text)) != sorted(PLACEHOLDER.findall(source)):
                wrong.append(f"{describe(entry)} -> {text!r} (expected {expected})")
    assert not wrong, "placeholders differ:\n" + "\n".join(wrong)


def test_translations_contain_no_chinese():
    leftover = [
        f"{describe(e)} -> {text!r}"
        for e in messages()
        for text in e.msgstr.values()
        if CJK.search(text)
    ]
    assert not leftover, "\n".join(leftover)


def stale_entries(entries: list[Entry], mo_path: Path) -> list[str]:
    """The .po entries the compiled .mo does not answer with the same text (a language with one
    plural form, Japanese, answers both counts with its only form)."""
    with mo_path.open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    stale = []
    for entry in entries:
        if entry.msgid_plural is not None:
            got = [compiled.ngettext(entry.msgid, entry.msgid_plural, n) for n in (1, 2)]
            want = [entry.msgstr[0], entry.msgstr.get(1, entry.msgstr[0])]
        elif entry.msgctxt is not None:
            got, want = compiled.pgettext(entry.msgctxt, entry.msgid), entry.msgstr[0]
        else:
            got, want = compiled.gettext(entry.msgid), entry.msgstr[0]
        if got != want:
            stale.append(describe(entry))
    return stale


def msgfmt_check(po_path: Path) -> subprocess.CompletedProcess[str]:
    """GNU msgfmt's format check and statistics of a catalogue (stderr holds the counts)."""
    return subprocess.run(
        ["msgfmt", "--check-format", "--statistics", "-o", "/dev/null", str(po_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
    )


def test_the_compiled_catalogue_matches_the_po_file():
    """django.mo must be recompiled after every change to django.po (compilemessages)."""
    stale = stale_entries(messages(), MO_PATH)
    assert not stale, "django.mo is out of date; run compilemessages:\n" + "\n".join(stale[:20])


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="msgfmt (GNU gettext) is not installed")
def test_msgfmt_accepts_the_catalogue():
    result = msgfmt_check(PO_PATH)
    assert result.returncode == 0, result.stderr
    assert "fuzzy" not in result.stderr and "untranslated" not in result.stderr, result.stderr


# --- The English UI ------------------------------------------------------------------------------

RESEARCHER_PAGES = [
    "home",
    "chat:dataset-list",
    "chat:dataset-upload",
    "chat:backend-list",
    "chat:campaign-list",
    "chat:campaign-create",
    "chat:static-run-list",
    "chat:static-run-create",
    "chat:dialogue-import",
    "annotation:rubric-list",
    "annotation:rubric-create",
    "annotation:job-list",
    "annotation:ratings-import",
    "metrics:metric-run-list",
    "metrics:report-list",
    "metrics:report-create",
    "metrics:score-import",
    "metrics:discriminator-list",
    "metrics:discriminator-create",
    "metrics:followup-list",
    "judges:judge-list",
    "judges:judge-create",
]


def untranslated_text(html: str) -> list[str]:
    """CJK runs left in a page, with some context, outside the language switch and endonyms."""
    html = re.sub(r'<select id="lang-select".*?</select>', "", html, flags=re.S)
    html = ENDONYM_OPTION.sub("", html)
    return [html[max(0, m.start() - 40) : m.end() + 10] for m in CJK.finditer(html)]


@pytest.fixture
def english_researcher(db, researcher_client):
    # Some rows, named in ASCII, so the tables render their English column labels and statuses.
    BackendFactory(name="demo-backend")
    DatasetFactory(name="demo-dataset")
    study(backends=1, scenarios={"knowledge": 1})
    response = researcher_client.post(reverse("set_language"), {"language": "en", "next": "/"})
    assert response.status_code == 302
    return researcher_client


@pytest.mark.parametrize("name", RESEARCHER_PAGES)
def test_researcher_pages_in_english_show_no_chinese(english_researcher, name):
    response = english_researcher.get(reverse(name))
    assert response.status_code == 200
    html = response.content.decode()
    assert '<html lang="en">' in html
    leftover = untranslated_text(html)
    assert not leftover, f"untranslated text on {reverse(name)}:\n" + "\n".join(leftover)


def test_the_backend_form_and_the_msde_rubric_page_read_in_english(english_researcher):
    """Skill labels come from `Skill.name_en`, rubric texts from the preset's `en` entries."""
    from annotation.models import Rubric

    msde = Rubric.objects.filter(key="msde").order_by("-version").first()
    for url in (
        reverse("chat:backend-create"),
        reverse("annotation:rubric-detail", args=[msde.pk]),
    ):
        response = english_researcher.get(url)
        assert response.status_code == 200
        # The rubric's JSON source (all languages) is data, shown as it is stored.
        html = re.sub(r"<pre>.*?</pre>", "", response.content.decode(), flags=re.S)
        leftover = untranslated_text(html)
        assert not leftover, f"untranslated text on {url}:\n" + "\n".join(leftover)


def test_chinese_pages_name_roles_and_rater_flags_in_words(researcher_client, researcher):
    from annotation.templatetags.annotation_tags import flag_label

    html = researcher_client.get(reverse("home")).content.decode()
    assert '<span class="role role-researcher">研究者</span>' in html
    assert flag_label("time_outlier_job") == "用时异常（相对本任务）"
    template = (REPO_ROOT / "annotation/templates/annotation/job_detail.html").read_text()
    assert "<code>{{ f.kind }}</code>" not in template and "f.kind|flag_label" in template


def test_the_english_home_reads_in_english(english_researcher):
    html = english_researcher.get(reverse("home")).content.decode()
    assert "Researcher workspace" in html
    assert "Campaigns" in html


def test_switching_back_to_chinese_restores_the_source_strings(english_researcher):
    english_researcher.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    assert "研究者工作台" in english_researcher.get(reverse("home")).content.decode()


# --- Reports and API errors ---------------------------------------------------------------------

REPORT_SENTENCES = {
    "zh-hans": (
        "分数（名次）；系统按第一个人工维度排序。",
        "Pearson r、Spearman ρ 与 Kendall τ-b",
        "只在一侧出现的单元不参与相关计算。",
        "系统级对齐的单元",
    ),
    "en": (
        "Score (position); systems ordered by the first human dimension.",
        "Pearson&#x27;s r, Spearman&#x27;s rho and Kendall&#x27;s tau-b",
        "Units on one side only are not correlated.",
        "Units joined at the system level",
    ),
}
FIGURE_TITLES = {
    "zh-hans": "Pearson 与人工评分的相关性（系统级）",
    "en": "Pearson correlation with human scores (system level)",
    "ja": "Pearson：人手評価との相関（システムレベル）",
}


@pytest.fixture
def done_report(db):
    from metrics.services.reports import report_compute, report_create
    from tests.metrics.reports.factories import QUALITY, dialogue_score, finished_run, msde_study

    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, "static-f1", metrics=["f1"])
    for dialogue in study.answers:
        dialogue_score(run, dialogue, "f1", QUALITY[dialogue.backend.name] / 10)
    report = report_create(
        name="msde-system",
        config={"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "bootstrap": 50},
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    return report


def report_texts(html: str) -> str:
    """The analysis's words on a report page: table captions, table notes, the notes and the
    warnings (names of systems, campaigns and metrics are data, shown as they are)."""
    parts = re.findall(r"<caption>(.*?)</caption>", html, flags=re.S)
    parts += re.findall(r'<ul class="table-notes">(.*?)</ul>', html, flags=re.S)
    parts += re.findall(
        r'<section class="card[^"]*" id="(?:notes|report-warnings)".*?</section>', html, flags=re.S
    )
    return "\n".join(parts)


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_report_page_and_its_figures_read_in_the_readers_language(
    done_report, researcher_client, language
):
    other = "en" if language == "zh-hans" else "zh-hans"
    researcher_client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    response = researcher_client.get(reverse("metrics:report-detail", args=[done_report.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    texts = report_texts(html)
    assert all(sentence in texts for sentence in REPORT_SENTENCES[language]), texts
    assert not any(sentence in html for sentence in REPORT_SENTENCES[other])
    if language == "en":
        assert not CJK.search(texts), texts

    svg = researcher_client.get(
        reverse("metrics:report-figure", args=[done_report.pk, "heatmap_pearson.svg"])
    )
    assert svg.status_code == 200 and svg["Content-Language"] == language
    drawn = streamed_bytes(svg).decode()
    assert FIGURE_TITLES[language] in drawn  # matplotlib notes each drawn text in the SVG
    assert FIGURE_TITLES[other] not in drawn


CELL_WARNINGS = {
    "zh-hans": (
        "只有 4 个系统：p 不可能低于 0.0833（精确），因此不可能低于 0.05",
        "只有 4 个系统：Pearson 的 p 依赖分数服从正态分布",
    ),
    "en": (
        "only 4 systems: p cannot go below 0.0833 (exact), so not below 0.05",
        "only 4 systems: Pearson&#x27;s p rests on normally distributed scores",
    ),
    "ja": (
        "システムが 4 個だけ：p は 0.0833（正確）より小さくなれず、0.05 を下回りません",
        "システムが 4 個だけ：Pearson の p はスコアが正規分布に従うことを前提とします",
    ),
}


@pytest.mark.parametrize("language", ["zh-hans", "en", "ja"])
def test_a_correlation_cells_few_systems_warning_reads_in_the_readers_language(
    db, researcher_client, language
):
    """The analysis writes each cell's warning in English (metrics/analysis/study.py); the report
    page shows it, in the cell's title, through the report catalogue."""
    from metrics.services.reports import report_compute, report_create
    from tests.metrics.reports.factories import QUALITY, dialogue_score, finished_run, msde_study

    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, "four-systems", metrics=["f1"])
    four = [d for d in study.answers if QUALITY[d.backend.name] <= 4]
    for dialogue in four:
        dialogue_score(run, dialogue, "f1", QUALITY[dialogue.backend.name] / 10)
    report = report_create(
        name="four",
        config={"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "bootstrap": 0},
    )
    report_compute(report_id=report.pk)
    researcher_client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    html = researcher_client.get(
        reverse("metrics:report-detail", args=[report.pk])
    ).content.decode()
    titles = "\n".join(re.findall(r'<td class="num[^"]*" title="([^"]*)"', html))
    for sentence in CELL_WARNINGS[language]:
        assert sentence in titles, titles
    if language != "en":
        assert "only 4 systems" not in titles, titles


def test_the_api_answers_an_english_client_in_english(researcher):
    """A token client has no language cookie: its Accept-Language decides the errors' language."""
    from rest_framework.test import APIClient

    from chat.models import Backend

    client = APIClient(HTTP_ACCEPT_LANGUAGE="en")
    client.force_authenticate(researcher)
    imported = BackendFactory(adapter=Backend.Adapter.IMPORTED, name="old-logs")
    response = client.post(
        reverse("api-campaign-list"),
        {
            "name": "api-campaign",
            "mode": "interactive",
            "skills": ["knowledge", "weather"],
            "backends": [{"id": imported.pk}],
            "datasets": [],
            "min_turns": 9,
            "max_turns": 8,
        },
        format="json",
    )
    body = response.json()
    assert response.status_code == 400, body
    assert "Unknown skill “weather”" in body["errors"]["skills"]
    assert "cannot exceed the maximum" in body["errors"]["min_turns"]
    assert not CJK.search(json.dumps(body, ensure_ascii=False)), body
    from chat.models import Campaign

    assert not Campaign.objects.filter(name="api-campaign").exists()


def test_blind_aliases_follow_the_viewers_language_and_stay_stored_as_they_are():
    from chat.services.campaigns import default_alias
    from core.i18n import display_alias

    stored = default_alias(0)  # a campaign without a fixed language: "模型 A"
    assert stored == "模型 A"
    with translation.override("en"):
        assert display_alias(stored) == "Model A"
        assert display_alias("モデル AB") == "Model AB"
        assert display_alias("系统甲") == "系统甲"  # a researcher's own alias is theirs
    with translation.override("ja"):
        assert display_alias(stored) == "モデル A"
    with translation.override("zh-hans"):
        assert display_alias("Model C") == "模型 C"


def test_rubric_choices_show_their_title_in_the_page_language(english_researcher):
    from annotation.models import Rubric

    msde = Rubric.objects.filter(key="msde").order_by("-version").first()
    for url in (reverse("annotation:job-create"), reverse("judges:judge-create")):
        response = english_researcher.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        option = re.search(rf'<option value="{msde.pk}"[^>]*>([^<]*)</option>', html).group(1)
        assert option == f"msde v{msde.version} — {msde.title['en']}", url


def test_tables_name_skills_not_their_keys(english_researcher):
    from chat.models import Campaign

    campaign = Campaign.objects.get()  # the fixture's study, one knowledge scenario
    response = english_researcher.get(reverse("chat:campaign-detail", args=[campaign.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<td>Knowledge-grounded dialogue</td>" in html
    assert "<td>knowledge</td>" not in html
