import shutil
import subprocess

import pytest
from django.test import override_settings
from django.utils import translation

from chat.models import Dialogue
from chat.services.acceptability import utterance_check, violation_record
from chat.services.collection import UtteranceRefused, worker_turn_post
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.factories import participant, study
from tests.chat.factories import TurnFactory

pytestmark = pytest.mark.django_db

GROUNDING = {
    "knowledge": [
        ["流浪地球", "导演", "郭帆"],
        ["流浪地球", "简介", "太阳即将毁灭，人类带着地球逃离太阳系寻找新家园"],
    ],
    "goal": ["寒暄", "提及电影流浪地球"],
}


def _dialogue(language: str = "zh", **rules) -> Dialogue:
    campaign = study(acceptability=rules)
    dialogue = scenario_assign_next(participant=participant(campaign))
    Dialogue.objects.filter(pk=dialogue.pk).update(language=language, grounding=GROUNDING)
    dialogue.refresh_from_db()
    return dialogue


def _check(dialogue: Dialogue, text: str):
    earlier = list(dialogue.turns.order_by("index").values_list("text", flat=True))
    return utterance_check(
        campaign=dialogue.campaign, dialogue=dialogue, text=text, earlier=earlier
    )


def _codes(dialogue: Dialogue, text: str) -> list[str]:
    return [v.code for v in _check(dialogue, text)]


def test_an_ordinary_utterance_passes():
    assert _codes(_dialogue(), "你好，最近有什么好看的电影吗？") == []
    assert _codes(_dialogue("en"), "Hi there, seen any good films lately?") == []


def test_empty_and_punctuation_only_text_is_refused():
    dialogue = _dialogue()
    assert _codes(dialogue, "   ") == ["empty"]
    assert _codes(dialogue, "？！。") == ["empty"]


def test_minimum_length_counts_characters_in_chinese_and_words_in_english():
    zh = _dialogue(min_chars=5)
    assert _codes(zh, "好的呀") == ["too_short"]
    assert _codes(zh, "好的，我知道了") == []
    en = _dialogue("en", min_words=3)
    assert _codes(en, "ok sure") == ["too_short"]
    assert _codes(en, "ok sure thing") == []


def test_capitals_only_latin_text_is_refused_but_short_acronyms_are_fine():
    dialogue = _dialogue("en")
    assert "all_caps" in _codes(dialogue, "WHAT ARE YOU DOING")
    assert _codes(dialogue, "I love the USA a lot") == []
    assert "all_caps" not in _codes(_dialogue(reject_all_caps=False), "WHAT ARE YOU DOING")


def test_a_copy_of_an_earlier_turn_is_refused_exact_or_nearly():
    dialogue = _dialogue()
    TurnFactory(dialogue=dialogue, index=0, text="我最近在看科幻电影，你喜欢吗？")
    TurnFactory(dialogue=dialogue, index=1, speaker="system", text="喜欢！我最爱流浪地球。")
    assert _codes(dialogue, "我最近在看科幻电影，你喜欢吗") == ["repeat"]  # punctuation aside
    assert _codes(dialogue, "喜欢！我最爱流浪地球啊。") == ["repeat"]  # a near copy of the model
    assert _codes(dialogue, "那你觉得刘慈欣的小说怎么样？") == []
    relaxed = _dialogue(reject_repeats=False)
    TurnFactory(dialogue=relaxed, index=0, text="我最近在看科幻电影，你喜欢吗？")
    assert _codes(relaxed, "我最近在看科幻电影，你喜欢吗？") == []


def test_the_send_refuses_a_copy_of_an_earlier_turn_of_its_dialogue():
    dialogue = _dialogue()
    TurnFactory(dialogue=dialogue, index=0, text="我最近在看科幻电影，你喜欢吗？")
    TurnFactory(dialogue=dialogue, index=1, speaker="system", text="喜欢！我最爱流浪地球。")
    with pytest.raises(UtteranceRefused) as refused:
        worker_turn_post(
            worker=dialogue.worker, dialogue_id=dialogue.pk, text="喜欢！我最爱流浪地球啊"
        )
    assert "相同" in str(refused.value)
    assert dialogue.turns.count() == 2
    posted = worker_turn_post(
        worker=dialogue.worker, dialogue_id=dialogue.pk, text="那你觉得刘慈欣的小说怎么样？"
    )
    assert posted.turn.index == 2


def test_copying_twenty_consecutive_characters_of_the_grounding_is_refused():
    dialogue = _dialogue()
    assert _codes(dialogue, "你知道吗，太阳即将毁灭，人类带着地球逃离太阳系寻找新家园") == [
        "grounding_copy"
    ]
    # Saying the same facts in one's own words is the point of the task.
    assert _codes(dialogue, "流浪地球是郭帆拍的，讲人类带着地球去流浪") == []
    assert (
        _codes(
            _dialogue(reject_grounding_copy=False), "太阳即将毁灭，人类带着地球逃离太阳系寻找新家园"
        )
        == []
    )


def test_the_copy_threshold_is_the_one_the_form_shows():
    # 19 consecutive characters of the description pass under the default 20, 20 do not; a
    # stricter campaign's threshold counts the same way.
    dialogue = _dialogue()
    description = "太阳即将毁灭人类带着地球逃离太阳系寻找新家园"
    assert _codes(dialogue, "听说" + description[:19]) == []
    assert _codes(dialogue, "听说" + description[:20]) == ["grounding_copy"]
    stricter = _dialogue(grounding_copy_chars=8)
    assert _codes(stricter, "听说" + description[:7]) == []
    assert _codes(stricter, "听说" + description[:8]) == ["grounding_copy"]


def test_naming_a_book_or_a_place_from_the_knowledge_is_not_copying():
    # Items of 6 or more characters said verbatim used to be refused (a 422 on the send):
    # a book's title, a place, a short fact stated with the knowledge's words.
    dialogue = _dialogue()
    Dialogue.objects.filter(pk=dialogue.pk).update(
        grounding={
            "knowledge": [
                ["刘慈欣", "代表作", "三体：地球往事三部曲"],
                ["刘慈欣", "出生地", "北京市海淀区中关村街道"],
                ["三体：地球往事三部曲", "获奖", "第七十三届世界科幻大会雨果奖最佳长篇小说奖"],
                [
                    "刘慈欣",
                    "评论",
                    "他的作品把宏大的宇宙尺度和细腻的人性刻画结合在一起，令人震撼。",
                ],
            ],
            "goal": ["寒暄", "刘慈欣"],
        }
    )
    dialogue.refresh_from_db()
    assert _codes(dialogue, "你读过三体：地球往事三部曲吗？") == []
    assert _codes(dialogue, "他出生在北京市海淀区中关村街道呢") == []
    assert _codes(dialogue, "这本书拿了第七十三届世界科幻大会雨果奖最佳长篇小说奖") == []
    assert _codes(dialogue, "刘慈欣 代表作 三体：地球往事三部曲") == []
    # A sentence of the knowledge is still not to be pasted.
    assert _codes(dialogue, "他的作品把宏大的宇宙尺度和细腻的人性刻画结合在一起") == [
        "grounding_copy"
    ]


def test_a_japanese_worker_may_name_a_long_topic_but_not_paste_its_facts():
    dialogue = _dialogue("ja")
    Dialogue.objects.filter(pk=dialogue.pk).update(
        grounding={
            "knowledge": [
                ["千と千尋の神隠し", "監督", "宮崎駿"],
                ["千と千尋の神隠し", "受賞", "第52回ベルリン国際映画祭 金熊賞"],
                [
                    "千と千尋の神隠し",
                    "あらすじ",
                    "10歳の少女千尋が、不思議な町で両親を助けるために働く物語。",
                ],
            ],
            "goal": ["START", "千と千尋の神隠し", "宮崎駿"],
        }
    )
    dialogue.refresh_from_db()
    assert _codes(dialogue, "『千と千尋の神隠し』を見たことはありますか？") == []
    assert _codes(dialogue, "千と千尋の神隠し 監督 宮崎駿") == []
    assert _codes(dialogue, "実は第52回ベルリン国際映画祭 金熊賞を取ったんです") == []
    assert _codes(dialogue, "10歳の少女千尋が、不思議な町で両親を助けるために働くんです") == [
        "grounding_copy"
    ]


def test_the_send_saves_an_utterance_that_names_a_book_from_the_knowledge():
    dialogue = _dialogue()
    Dialogue.objects.filter(pk=dialogue.pk).update(
        grounding={"knowledge": [["刘慈欣", "代表作", "三体：地球往事三部曲"]]}
    )
    text = "我最近在读三体：地球往事三部曲，你读过吗？"
    posted = worker_turn_post(worker=dialogue.worker, dialogue_id=dialogue.pk, text=text)
    assert posted.turn.index == 0
    assert list(dialogue.turns.values_list("text", flat=True)) == [text]


def test_safety_words_match_case_insensitively_after_nfkc_and_latin_ones_as_whole_words():
    dialogue = _dialogue("en", safety_words=["idiot", "傻瓜"])
    assert "unsafe" in _codes(dialogue, "You are an IDIOT, really")
    assert "unsafe" in _codes(dialogue, "You are an ＩＤＩＯＴ, really")  # full-width letters
    assert "unsafe" in _codes(dialogue, "what a 傻瓜 thing to say")
    assert _codes(dialogue, "the idiotic plot was fun anyway") == []


def test_messages_are_in_the_workers_language_and_name_the_problem():
    dialogue = _dialogue(min_chars=5, safety_words=["笨蛋"])
    with translation.override("zh-hans"):
        messages = [v.message for v in _check(dialogue, "笨蛋")]
    assert messages == ["这句话太短了：请至少写 5 个字。", "内容包含不允许使用的词语「笨蛋」。"]


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="msgfmt (gettext) is not installed")
def test_messages_are_translated_through_the_catalogue(tmp_path, settings):
    """Every message goes through gettext and is formatted after translation.

    The English wording itself is the lead's .po file; this catalogue is the test's own.
    """
    po = tmp_path / "en" / "LC_MESSAGES" / "django.po"
    po.parent.mkdir(parents=True)
    po.write_text(
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "这句话太短了：请至少写 %(n)d 个词。"\n'
        'msgstr "Too short: write at least %(n)d words."\n\n'
        'msgid "请不要全部使用大写字母。"\nmsgstr "Please do not write in capitals only."\n',
        encoding="utf-8",
    )
    subprocess.run(["msgfmt", "-o", str(po.with_suffix(".mo")), str(po)], check=True)
    dialogue = _dialogue("en", min_words=4)
    with override_settings(LOCALE_PATHS=[str(tmp_path)]), translation.override("en"):
        messages = [v.message for v in _check(dialogue, "NO WAY MATE")]
    assert messages == [
        "Too short: write at least 4 words.",
        "Please do not write in capitals only.",
    ]


def test_repeated_violations_flag_the_worker_at_the_threshold():
    campaign = study(acceptability={"flag_threshold": 3})
    worker = participant(campaign)
    assert [violation_record(participant=worker) for _ in range(4)] == [False, False, True, True]
    worker.refresh_from_db()
    assert worker.flagged and worker.violations == 4
    assert scenario_assign_next(participant=worker) is None


def test_a_threshold_of_zero_never_flags():
    campaign = study(acceptability={"flag_threshold": 0})
    worker = participant(campaign)
    assert not any(violation_record(participant=worker) for _ in range(10))
