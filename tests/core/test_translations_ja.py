"""The Japanese catalogue is complete, compiled and Japanese; each role's pages read in Japanese.

locale/ja/LC_MESSAGES/django.po must hold every message of the English catalogue (which a sibling
test keeps complete against the code), translated, not fuzzy, with the placeholders kept, and
compiled into django.mo. Japanese pages must show no Chinese and no English interface text.

Telling Chinese from Japanese: both use ideographs, so "contains CJK" cannot be the test. Simplified
Chinese writes most words with simplified characters (话, 评, 这, 对 …) that Japanese does not use
and that JIS X 0208 (the Shift_JIS repertoire) therefore lacks; a Chinese interface string almost
always has one. A Japanese text with such a character is, in practice, an untranslated string.
"""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import formats, timezone, translation

from annotation.models import Assignment
from chat.models import Campaign, Dialogue, Participant
from core.access import Role
from tests.annotation.factories import dialogue_with_turns, experts, single_rater_job
from tests.chat.campaigns.factories import study
from tests.chat.factories import BackendFactory, DatasetFactory
from tests.conftest import make_user
from tests.core.test_translations import (
    ENDONYM_OPTION,
    PLACEHOLDER,
    RESEARCHER_PAGES,
    Entry,
    msgfmt_check,
    parse_po,
    stale_entries,
)
from tests.downloads import streamed_bytes

REPO_ROOT = Path(__file__).resolve().parents[2]
JA_PO = REPO_ROOT / "locale" / "ja" / "LC_MESSAGES" / "django.po"
JA_MO = JA_PO.with_suffix(".mo")
EN_PO = REPO_ROOT / "locale" / "en" / "LC_MESSAGES" / "django.po"

IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
KANA = re.compile(r"[\u3040-\u30ff]")
CJK_RUN = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+"
)
# Chinese source strings that are also the right Japanese words.
SAME_IN_JAPANESE = {
    "保存",
    "期限",
    "外部 ID",
    "一致率",
    "平均偏差",
    "未使用",
    "「%(label)s」：%(error)s",
    "使用",
    "注意",
    "平均",
    "管理",
    "研究者",
    "温度",
    "完全一致",
}


def not_japanese(text: str) -> list[str]:
    """The ideographs of `text` that Japanese does not write (outside JIS X 0208)."""
    found = []
    for char in IDEOGRAPH.findall(text):
        try:
            char.encode("shift_jis")
        except UnicodeEncodeError:
            found.append(char)
    return found


def messages(path: Path = JA_PO) -> list[Entry]:
    return [e for e in parse_po(path) if e.msgid]


def key(entry: Entry) -> tuple[str | None, str]:
    return entry.msgctxt, entry.msgid


def describe(entry: Entry) -> str:
    return f"line {entry.line}: {entry.msgid!r}"


# --- The catalogue -------------------------------------------------------------------------------


def test_the_japanese_catalogue_declares_japanese_with_one_plural_form():
    header = parse_po(JA_PO)[0]
    assert header.msgid == ""
    assert "Language: ja\n" in header.msgstr[0]
    assert "charset=UTF-8" in header.msgstr[0]
    assert "nplurals=1; plural=0;" in header.msgstr[0]


def test_every_english_message_has_a_japanese_entry():
    english = {key(e) for e in messages(EN_PO)}
    japanese = {key(e) for e in messages()}
    missing = sorted(english - japanese, key=str)
    assert not missing, "messages without a Japanese entry:\n" + "\n".join(map(str, missing))


def test_every_japanese_message_is_translated_and_not_fuzzy():
    untranslated = [describe(e) for e in messages() if not all(e.msgstr.values())]
    fuzzy = [describe(e) for e in messages() if "fuzzy" in e.flags]
    assert not untranslated, "untranslated:\n" + "\n".join(untranslated)
    assert not fuzzy, "fuzzy:\n" + "\n".join(fuzzy)


def test_plural_entries_have_the_single_japanese_form():
    wrong = [
        describe(e) for e in messages() if e.msgid_plural is not None and list(e.msgstr) != [0]
    ]
    assert not wrong, "\n".join(wrong)


def test_japanese_translations_keep_the_placeholders():
    wrong = []
    for entry in messages():
        for text in entry.msgstr.values():
            if sorted(PLACEHOLDER.findall(text)) != sorted(PLACEHOLDER.findall(entry.msgid)):
                wrong.append(f"{describe(entry)} -> {text!r}")
    assert not wrong, "placeholders differ:\n" + "\n".join(wrong)


def test_japanese_translations_are_not_the_chinese_source():
    copied = [
        describe(e)
        for e in messages()
        if IDEOGRAPH.search(e.msgid) and e.msgstr[0] == e.msgid and e.msgid not in SAME_IN_JAPANESE
    ]
    chinese = [
        f"{describe(e)}: {not_japanese(e.msgstr[0])}"
        for e in messages()
        if not_japanese(e.msgstr[0])
    ]
    assert not copied, "Chinese copied as Japanese:\n" + "\n".join(copied)
    assert not chinese, "simplified Chinese characters in Japanese text:\n" + "\n".join(chinese)


def test_japanese_translations_are_not_english():
    """A translation of an English msgid (the few help texts written in English) or a copy of the
    English catalogue is not Japanese: every entry needs kana or ideographs, bar a few names."""
    english = {key(e): e.msgstr[0] for e in messages(EN_PO)}
    latin_only = [
        describe(e)
        for e in messages()
        if not CJK_RUN.search(e.msgstr[0]) and e.msgstr[0] not in ("Likert", "Dropout")
    ]
    copied = [
        describe(e)
        for e in messages()
        if e.msgstr[0] == english.get(key(e)) and len(e.msgstr[0].split()) > 1
    ]
    assert not latin_only, "\n".join(latin_only)
    assert not copied, "\n".join(copied)


def test_the_compiled_japanese_catalogue_matches_the_po_file():
    stale = stale_entries(messages(), JA_MO)
    assert not stale, "django.mo is out of date; run compilemessages -l ja:\n" + "\n".join(
        stale[:20]
    )


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="msgfmt (GNU gettext) is not installed")
def test_msgfmt_accepts_the_japanese_catalogue():
    result = msgfmt_check(JA_PO)
    assert result.returncode == 0, result.stderr
    assert "fuzzy" not in result.stderr and "untranslated" not in result.stderr, result.stderr


def test_the_detector_tells_chinese_from_japanese():
    assert not_japanese("评分任务") and not_japanese("这个对话已经提交过了。")
    assert not not_japanese("評定タスク") and not not_japanese("この対話はすでに提出されています。")


# --- Japanese pages ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _default_language_after_each_test():
    yield
    translation.activate(settings.LANGUAGE_CODE)


def english_interface_texts() -> set[str]:
    """English interface strings long enough not to be names (three words or more)."""
    japanese = {key(e): e.msgstr[0] for e in messages()}
    return {
        e.msgstr[0]
        for e in messages(EN_PO)
        if len(e.msgstr[0].split()) >= 3
        and "%" not in e.msgstr[0]
        and japanese.get(key(e)) != e.msgstr[0]
    }


ENGLISH = None
CHINESE_SOURCES = None


def chinese_sources() -> set[str]:
    """The catalogue's all-CJK Chinese msgids whose Japanese differs (研究者工作台 is written
    only with characters Japanese also has, so the character test alone would miss it)."""
    japanese_words = {run for e in messages() for run in CJK_RUN.findall(e.msgstr[0])}
    sources = {e.msgid for e in messages() if CJK_RUN.fullmatch(e.msgid) and e.msgstr[0] != e.msgid}
    return sources - japanese_words  # 回答 is Chinese for "responses", Japanese for "answers"


def visible_text(html: str) -> str:
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    # The language switch names each language in its own script.
    html = re.sub(r'<select id="lang-select".*?</select>', " ", html, flags=re.S)
    html = ENDONYM_OPTION.sub(" ", html)
    html = re.sub(r"<[^>]+>", " ", html)
    return unescape(html)


def foreign_text(html: str) -> list[str]:
    """Chinese runs and English interface strings left on a page meant to be Japanese."""
    global ENGLISH, CHINESE_SOURCES
    if ENGLISH is None or CHINESE_SOURCES is None:
        ENGLISH, CHINESE_SOURCES = english_interface_texts(), chinese_sources()
    text = visible_text(html)
    found = [run for run in CJK_RUN.findall(text) if not_japanese(run) or run in CHINESE_SOURCES]
    flat = " ".join(text.split())
    found += [f"EN: {s}" for s in ENGLISH if s in flat]
    return found


def assert_japanese(response, url: str) -> str:
    assert response.status_code in (200, 409), (url, response.status_code)
    html = response.content.decode()
    assert '<html lang="ja">' in html, url
    leftover = foreign_text(html)
    assert not leftover, f"foreign text on {url}:\n" + "\n".join(leftover)
    return html


@pytest.fixture
def japanese_researcher(db, researcher_client):
    BackendFactory(name="demo-backend")
    DatasetFactory(name="demo-dataset")
    study(backends=1, scenarios={"knowledge": 1})
    response = researcher_client.post(reverse("set_language"), {"language": "ja", "next": "/"})
    assert response.status_code == 302
    return researcher_client


@pytest.mark.parametrize("name", RESEARCHER_PAGES)
def test_researcher_pages_in_japanese_show_no_chinese_or_english(japanese_researcher, name):
    assert_japanese(japanese_researcher.get(reverse(name)), reverse(name))


def test_the_japanese_researcher_home_uses_research_terms(japanese_researcher):
    html = japanese_researcher.get(reverse("home")).content.decode()
    assert "研究者ワークスペース" in html and "評定タスク" in html and "相関レポート" in html


JAPANESE_TURNS = (
    ("user", "こんにちは。最近、何か面白い映画を見ましたか？"),
    ("system", "『千と千尋の神隠し』をもう一度見ました。宮崎駿監督の作品です。"),
    ("user", "いいですね。何回見ても新しい発見がありますよね。"),
    ("system", "そうですね。ベルリン国際映画祭で金熊賞も取っています。"),
)


def _japanese_client(user) -> Client:
    client = Client(headers={"accept-language": "ja"})
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_expert_pages_in_japanese_with_the_seed_004_rubric():
    campaign = study(backends=1, scenarios={"chitchat": 1}, interface_language="ja")
    (rater,) = experts(1, prefix="ja-ex")
    dialogue_with_turns(
        campaign=campaign, skill_key="chitchat", texts=JAPANESE_TURNS, alias="システム A"
    )
    dialogue_with_turns(
        campaign=campaign,
        skill_key="chitchat",
        texts=JAPANESE_TURNS,
        alias="システム B",
        status=Dialogue.Status.SUBMITTED,
    )
    Dialogue.objects.filter(campaign=campaign).update(grounding={})
    job = single_rater_job(
        name="dslc3-open-job", campaign=campaign, rubric_key="dslc3-open", rater=rater
    )
    assignment = Assignment.objects.get(job=job)
    client = _japanese_client(rater)

    home = assert_japanese(client.get(reverse("home")), "home")
    assert "専門家ワークスペース" in home

    url = reverse("annotation:annotate-item", args=[assignment.pk])
    item = assert_japanese(client.get(url), url)
    assert "自然性：対話が自然かどうか" in item
    assert "話題追従：システムはユーザが選択した話題に関して適切に応答できたかどうか" in item
    assert "話題提供：システムはユーザが選択した話題に関して新たな情報を提供できたかどうか" in item
    assert "雑談" in item  # the skill's Japanese name

    queue = reverse("annotation:review-queue")
    assert_japanese(client.get(queue), queue)
    review = client.get(reverse("annotation:review-next"), follow=True)
    html = assert_japanese(review, "review-next")
    assert "流暢でない" in html  # the MSDE rejection reasons in Japanese


@pytest.mark.django_db
def test_crowdworker_pages_of_a_japanese_campaign_are_japanese_whatever_the_browser_says():
    campaign = study(backends=1, scenarios={"chitchat": 1}, interface_language="ja", max_turns=2)
    client = Client(headers={"accept-language": "en-US,en;q=0.9"})
    join_url = reverse("chat:campaign-join", args=[campaign.invite_token])
    join = assert_japanese(client.get(join_url), join_url)
    assert "ワーカー ID" in join
    assert 'id="lang-select"' not in join  # the campaign fixes the language: no switch

    # The page stores the campaign's language, so the worker's other pages follow it.
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ja"
    joined = client.post(join_url, {"worker_id": "ja-worker-1"})
    assert joined.status_code == 302
    home = assert_japanese(client.get(reverse("home")), "home")
    assert "わたしの対話タスク" in home and "クラウドワーカー" in home  # the role badge too

    started = client.post(reverse("chat:live-next", args=[campaign.pk]))
    assert started.status_code == 302
    dialogue = Dialogue.objects.get(campaign=campaign)
    page = assert_japanese(client.get(started["Location"]), started["Location"])
    assert "メッセージを入力してください" in page
    assert "モデル A" in page  # the default blind alias in the campaign's language

    participant = Participant.objects.get(campaign=campaign)
    completion = reverse("chat:live-completion", args=[campaign.pk])
    unfinished = assert_japanese(client.get(completion), completion)
    assert "まだ完了コードはありません" in unfinished
    Dialogue.objects.filter(pk=dialogue.pk).update(
        status=Dialogue.Status.SUBMITTED, submitted_at=dialogue.created_at
    )
    participant.refresh_from_db()
    done = assert_japanese(client.get(completion), completion)
    assert "ご参加ありがとうございました" in done and campaign.completion_code in done


@pytest.mark.django_db
def test_a_campaign_without_a_fixed_language_follows_the_browser():
    campaign = study(backends=1, scenarios={"chitchat": 1})
    url = reverse("chat:campaign-join", args=[campaign.invite_token])
    english = Client(headers={"accept-language": "en"}).get(url).content.decode()
    japanese = Client(headers={"accept-language": "ja-JP,ja;q=0.9"}).get(url).content.decode()
    chinese = Client(headers={"accept-language": "zh-CN,zh;q=0.9"}).get(url).content.decode()
    assert '<html lang="en">' in english and 'id="lang-select"' in english
    assert '<html lang="ja">' in japanese and "ワーカー ID" in japanese
    assert '<html lang="zh-hans">' in chinese


@pytest.mark.django_db
def test_the_language_chosen_in_the_switch_outlasts_the_browser_language(client):
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = "en"
    assert '<html lang="en">' in client.get(reverse("login")).content.decode()
    client.post(reverse("set_language"), {"language": "ja", "next": "/"})
    assert '<html lang="ja">' in client.get(reverse("login")).content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["zh-hans", "en", "ja"])
def test_the_switch_offers_each_language_in_its_own_script(client, language):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    html = client.get(reverse("login")).content.decode()
    switch = re.search(r'<select id="lang-select".*?</select>', html, flags=re.S).group(0)
    options = re.findall(
        r'<option value="([^"]+)" lang="[^"]+"[^>]*>\s*([^<]+?)\s*</option>', switch
    )
    assert options == [("zh-hans", "简体中文"), ("en", "English"), ("ja", "日本語")]


@pytest.mark.django_db
def test_dates_follow_the_page_language(researcher):
    campaign = study(backends=1, scenarios={"knowledge": 1})
    Participant.objects.create(campaign=campaign, user=make_user("w-date", Role.CROWDWORKER))
    joined = Participant.objects.get(campaign=campaign).joined_at
    url = reverse("chat:campaign-detail", args=[campaign.pk])
    pages = {}
    for language in ("ja", "en"):
        client = Client()
        client.force_login(researcher)
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
        pages[language] = client.get(url).content.decode()
    dates = {}
    for language in ("ja", "en"):
        with translation.override(language):
            dates[language] = formats.date_format(
                timezone.localtime(joined), "SHORT_DATETIME_FORMAT"
            )
    ja_date, en_date = dates["ja"], dates["en"]
    assert ja_date != en_date
    assert ja_date in pages["ja"] and en_date in pages["en"]
    assert Campaign.objects.get(pk=campaign.pk).interface_language == ""


@pytest.mark.django_db
def test_a_studys_researcher_pages_campaign_job_results_run_and_report_are_japanese(
    researcher,
):
    from metrics.models import JobStatus
    from metrics.services.reports import report_compute, report_create
    from tests.metrics.reports.factories import QUALITY, dialogue_score, finished_run, msde_study

    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, "static-f1", metrics=["f1"])
    for dialogue in study.answers:
        dialogue_score(run, dialogue, "f1", QUALITY[dialogue.backend.name] / 10)
    # The data are named in ASCII so that only the interface can show Chinese.
    for number, backend in enumerate(study.backends.values()):
        backend.name = f"system-{number}"
        backend.save(update_fields=["name"])
    Campaign.objects.filter(pk=study.interactive.pk).update(name="interactive")
    Campaign.objects.filter(pk=study.static.pk).update(name="static")
    study.job.name = "likert-job"
    study.job.save(update_fields=["name"])
    Dialogue.objects.update(grounding={})
    report = report_create(
        name="system-level",
        config={"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "bootstrap": 20},
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE, report.error

    client = _japanese_client(researcher)
    for url in (
        reverse("chat:campaign-detail", args=[study.interactive.pk]),
        reverse("annotation:job-detail", args=[study.job.pk]),
        reverse("annotation:job-results", args=[study.job.pk]),
        reverse("metrics:metric-run-detail", args=[run.pk]),
        reverse("metrics:report-detail", args=[report.pk]),
    ):
        assert_japanese(client.get(url), url)

    # The analysis's own words (notes, table titles) and the figures' titles are Japanese too.
    html = client.get(reverse("metrics:report-detail", args=[report.pk])).content.decode()
    assert (
        "片側にしかない単位は相関に含めません。" in html
        and "システムレベルで突き合わせた単位" in html
    )
    assert "Units joined" not in html and "Correlation with human scores" not in html
    svg = client.get(reverse("metrics:report-figure", args=[report.pk, "heatmap_pearson.svg"]))
    drawn = streamed_bytes(svg).decode()
    assert "Pearson：人手評価との相関（システムレベル）" in drawn
    assert "correlation with human scores" not in drawn


def test_the_page_check_finds_chinese_and_english_interface_text(japanese_researcher):
    japanese_researcher.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    chinese = foreign_text(japanese_researcher.get(reverse("home")).content.decode())
    japanese_researcher.post(reverse("set_language"), {"language": "en", "next": "/"})
    english = foreign_text(japanese_researcher.get(reverse("home")).content.decode())
    assert "研究者工作台" in chinese
    assert any(found.startswith("EN: ") for found in english)


@pytest.mark.django_db
def test_rating_while_chatting_in_a_japanese_campaign_is_japanese_even_for_an_english_browser():
    from annotation.selectors.rating import model_turns
    from tests.annotation.factories import CampaignFactory

    worker = make_user("w-live-ja", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True, interface_language="ja")
    dialogue = dialogue_with_turns(
        campaign=campaign,
        worker=worker,
        status=Dialogue.Status.IN_PROGRESS,
        texts=JAPANESE_TURNS,
        alias="システム A",
    )
    client = Client(headers={"accept-language": "en"})
    client.force_login(worker)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    url = reverse("annotation:live-turn-rating", args=[model_turns(dialogue)[0].pk])
    html = client.get(url).content.decode()
    assert "このターンの応答は、引き続きこの会話の話題に沿っていますか？" in html
    assert not foreign_text(html), foreign_text(html)
