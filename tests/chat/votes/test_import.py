"""Vote import (chat.services.votes): both layouts, CSV and JSON Lines, line- and field-precise
errors with nothing stored, conversations stored once, identity-leak flags, export round trip."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from chat.models import Backend, Campaign, Dialogue, Turn, Vote, VoteSource
from chat.services.votes import VoteImportError, votes_export_lines, votes_import
from tests.chat.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def conv(question: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def jsonl(*records: dict[str, Any]) -> bytes:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()


def run(data: bytes, study: str = "偏好", **kwargs: Any):
    return votes_import(fileobj=io.BytesIO(data), campaign_name=study, **kwargs)


# MT-Bench human judgments (lmsys/mt_bench_human_judgments): judge, question_id, turn,
# conversations; Chatbot Arena (lmsys/chatbot_arena_conversations): tstamp, language, metadata.
MT_BENCH = [
    {
        "question_id": 81,
        "model_a": "alpaca-13b",
        "model_b": "gpt-3.5-turbo",
        "winner": "model_b",
        "judge": "author_2",
        "turn": 1,
        "conversation_a": conv("Write a travel blog post.", "Hawaii is nice."),
        "conversation_b": conv("Write a travel blog post.", "Aloha! Hawaii …"),
    },
    {
        "question_id": 81,
        "model_a": "alpaca-13b",
        "model_b": "gpt-3.5-turbo",
        "winner": "tie",
        "judge": "author_3",
        "turn": 1,
        "conversation_a": conv("Write a travel blog post.", "Hawaii is nice."),
        "conversation_b": conv("Write a travel blog post.", "Aloha! Hawaii …"),
    },
]
ARENA = [
    {
        "question_id": "58210e39b3fd4441a2bd4a518bb44c2d",
        "model_a": "chatglm-6b",
        "model_b": "koala-13b",
        "winner": "tie (bothbad)",
        "judge": "arena_user_973",
        "conversation_a": conv("What is the difference?", "A and B differ."),
        "conversation_b": conv("What is the difference?", "They are the same."),
        "turn": 1,
        "anony": True,
        "language": "English",
        "tstamp": 1682351591.1322,
        "openai_moderation": {"flagged": False},
        "toxic_chat_tag": {},
    },
    {
        "question_id": "2564acd09e3942fd97657d05282d4389",
        "model_a": "oasst-pythia-12b",
        "model_b": "alpaca-13b",
        "winner": "model_a",
        "judge": "arena_user_973",
        "conversation_a": conv("你好", "你好！我能帮你什么？"),
        "conversation_b": conv("你好", "你好。"),
        "turn": 1,
        "anony": True,
        "language": "Chinese",
        "tstamp": 1682351654.6747,
    },
]


def counts() -> tuple[int, int, int, int, int, int]:
    return (
        Campaign.objects.count(),
        Backend.objects.count(),
        Dialogue.objects.count(),
        Turn.objects.count(),
        VoteSource.objects.count(),
        Vote.objects.count(),
    )


# --- the layouts --------------------------------------------------------------------------------


def test_mt_bench_human_judgments_import_with_their_conversations():
    result = run(jsonl(*MT_BENCH), language="en")
    assert (result.votes, result.dialogues) == (2, 2)
    assert result.campaign.mode == Campaign.Mode.IMPORTED
    assert sorted(result.systems_created) == ["alpaca-13b", "gpt-3.5-turbo"]
    first, second = Vote.objects.order_by("pk")
    assert (first.item, first.system_a.name, first.system_b.name) == (
        "81",
        "alpaca-13b",
        "gpt-3.5-turbo",
    )
    assert (first.outcome, second.outcome) == (Vote.Outcome.B, Vote.Outcome.TIE)
    assert (first.voter, first.voter_kind, first.turn) == ("author_2", "human", 1)
    # The same conversations on the same item: stored once and shared by both votes.
    assert (first.dialogue_a_id, first.dialogue_b_id) == (
        second.dialogue_a_id,
        second.dialogue_b_id,
    )
    dialogue = first.dialogue_b
    assert dialogue.backend.name == "gpt-3.5-turbo"
    assert dialogue.language == "en"
    assert dialogue.status == Dialogue.Status.ACCEPTED
    assert [(t.speaker, t.text) for t in dialogue.turns.order_by("index")] == [
        ("user", "Write a travel blog post."),
        ("system", "Aloha! Hawaii …"),
    ]
    assert set(result.campaign.campaign_backends.values_list("backend__name", flat=True)) == {
        "alpaca-13b",
        "gpt-3.5-turbo",
    }
    assert result.campaign.skills.filter(key="chitchat").exists()


def test_chatbot_arena_battles_with_ties_timestamps_languages_and_metadata():
    result = run(jsonl(*ARENA))
    assert result.votes == 2
    assert result.ignored_fields == ["anony", "openai_moderation", "toxic_chat_tag"]
    both_bad, a_wins = Vote.objects.order_by("pk")
    assert both_bad.outcome == Vote.Outcome.BOTH_BAD
    assert a_wins.outcome == Vote.Outcome.A
    assert both_bad.voted_at is not None
    assert abs(both_bad.voted_at.timestamp() - 1682351591.1322) < 1e-3
    assert both_bad.dialogue_a.language == "en"
    assert a_wins.dialogue_a.language == "zh"


def test_fastchat_csv_without_conversations():
    data = (
        "question_id,model_a,model_b,winner,judge,turn\n"
        "q1,甲,乙,model_a,r1,1\n"
        "q1,甲,乙,tie (bothbad),r2,2\n"
    ).encode()
    result = run(data, voter_kind="judge")
    assert (result.votes, result.dialogues) == (2, 0)
    votes = list(Vote.objects.order_by("pk").values_list("outcome", "turn", "voter_kind"))
    assert votes == [("a", 1, "judge"), ("both_bad", 2, "judge")]
    assert Dialogue.objects.count() == 0


def test_plain_csv_left_right_winner():
    data = "left,right,winner\n甲,乙,left\n乙,丙,right\n甲,丙,tie\n丙,甲,both_bad\n".encode()
    result = run(data)
    assert result.votes == 4
    rows = list(
        Vote.objects.order_by("pk").values_list("system_a__name", "system_b__name", "outcome")
    )
    assert rows == [
        ("甲", "乙", "a"),
        ("乙", "丙", "b"),
        ("甲", "丙", "tie"),
        ("丙", "甲", "both_bad"),
    ]
    # Items default to the line, voters to "anonymous".
    assert list(Vote.objects.order_by("pk").values_list("item", flat=True))[:2] == [
        "line-2",
        "line-3",
    ]
    assert set(Vote.objects.values_list("voter", flat=True)) == {"anonymous"}


def test_a_utf8_bom_csv_imports():
    run("\ufeffleft,right,winner\n甲,乙,left\n".encode())
    assert Vote.objects.count() == 1


def test_later_imports_reuse_the_stored_conversations():
    run(jsonl(MT_BENCH[0]), language="en")
    before = Dialogue.objects.count()
    result = run(jsonl(MT_BENCH[1]), language="en")
    assert result.dialogues == 0
    assert Dialogue.objects.count() == before
    first, second = Vote.objects.order_by("pk")
    assert first.dialogue_a_id == second.dialogue_a_id
    assert VoteSource.objects.count() == 2


def test_a_different_conversation_of_the_same_system_and_item_is_its_own_dialogue():
    other = dict(MT_BENCH[1], conversation_a=conv("Write a travel blog post.", "Other text."))
    result = run(jsonl(MT_BENCH[0], other), language="en")
    assert result.dialogues == 3


# --- errors: line- and field-precise, nothing stored -------------------------------------------

GOOD_PLAIN = "left,right,winner\n甲,乙,left\n"
GOOD_ARENA = json.dumps(ARENA[1], ensure_ascii=False) + "\n"


def without_language(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != "language"}


ERRORS: list[tuple[str, bytes, dict[str, Any], int | None, str | None, str]] = [
    ("itself", (GOOD_PLAIN + "甲,甲,right\n").encode(), {}, 3, "right", "compared with itself"),
    (
        "unknown winner",
        (GOOD_PLAIN + "甲,乙,model_a\n").encode(),
        {},
        3,
        "winner",
        "unknown winner",
    ),
    ("empty system", (GOOD_PLAIN + ",乙,left\n").encode(), {}, 3, "left", "missing or empty"),
    ("blank system", (GOOD_PLAIN + "  ,乙,left\n").encode(), {}, 3, "left", "missing or empty"),
    (
        "turn zero",
        "left,right,winner,turn\n甲,乙,left,1\n甲,乙,left,0\n".encode(),
        {},
        3,
        "turn",
        "whole number",
    ),
    (
        "turn not a number",
        "left,right,winner,turn\n甲,乙,left,2.5\n".encode(),
        {},
        2,
        "turn",
        "whole number",
    ),
    (
        "bad json",
        (GOOD_ARENA + '{"model_a": "x", \n').encode(),
        {},
        2,
        None,
        "",
    ),
    (
        "conversation not a list",
        jsonl(ARENA[1], dict(ARENA[1], conversation_b={"role": "user", "content": "x"})),
        {},
        2,
        "conversation_b",
        "list of {role, content}",
    ),
    (
        "message without a role",
        jsonl(ARENA[1], dict(ARENA[1], conversation_a=[{"content": "x"}])),
        {},
        2,
        "conversation_a[0].role",
        "role",
    ),
    (
        "message content not a string",
        jsonl(dict(ARENA[1], conversation_a=[{"role": "assistant", "content": 3}])),
        {},
        1,
        "conversation_a[0].content",
        "expected a string",
    ),
    (
        "message not an object",
        jsonl(dict(ARENA[1], conversation_b=["hello"])),
        {},
        1,
        "conversation_b[0]",
        "expected an object",
    ),
    (
        "one conversation without the other",
        jsonl(ARENA[1], {k: v for k, v in ARENA[1].items() if k != "conversation_b"}),
        {},
        2,
        "conversation_b",
        "one conversation without the other",
    ),
    (
        "missing language with conversations",
        jsonl(ARENA[1], without_language(ARENA[0])),
        {},
        2,
        "language",
        "no known language",
    ),
    (
        "unknown language name with conversations",
        jsonl(dict(ARENA[1], language="Klingon")),
        {},
        1,
        "language",
        "no known language",
    ),
    (
        "mixed layouts",
        jsonl(ARENA[1], {"left": "甲", "right": "乙", "winner": "left"}),
        {},
        2,
        None,
        "one layout per file",
    ),
    ("empty file", b"", {}, None, None, "empty"),
    ("blank file", b"\n  \n", {}, None, None, "empty"),
    ("header only", b"left,right,winner\n", {}, None, None, "no votes"),
    ("not utf-8", "left,right,winner\n甲,乙,left\n".encode("gb18030"), {}, 2, None, "UTF-8"),
    (
        "short row",
        (GOOD_PLAIN + "甲,乙\n").encode(),
        {},
        3,
        None,
        "2 cells, but the header has 3 columns",
    ),
    ("not a vote file", b"a,b,c\n1,2,3\n", {}, 2, None, "not a vote file"),
    (
        "csv conversation not json",
        'model_a,model_b,winner,conversation_a,conversation_b\n甲,乙,model_a,"[{",[]\n'.encode(),
        {},
        2,
        "conversation_a",
        "not a JSON list",
    ),
    (
        "unknown voter kind in file",
        b"left,right,winner,voter_kind\nx,y,left,robot\n",
        {},
        2,
        "voter_kind",
        "unknown voter kind",
    ),
    ("bad tstamp", jsonl(dict(ARENA[1], tstamp="yesterday")), {}, 1, "tstamp", "Unix seconds"),
    (
        "unknown voter kind argument",
        GOOD_PLAIN.encode(),
        {"voter_kind": "robot"},
        None,
        "voter_kind",
        "unknown voter kind",
    ),
    (
        "unknown language argument",
        GOOD_PLAIN.encode(),
        {"language": "fr"},
        None,
        "language",
        "unknown language",
    ),
    (
        "unknown skill argument",
        GOOD_PLAIN.encode(),
        {"skill": "nope"},
        None,
        "skill",
        "unknown skill",
    ),
]


@pytest.mark.parametrize(
    ("data", "kwargs", "line", "field", "message"),
    [case[1:] for case in ERRORS],
    ids=[case[0] for case in ERRORS],
)
def test_a_bad_file_names_line_and_field_and_stores_nothing(data, kwargs, line, field, message):
    before = counts()
    with pytest.raises(VoteImportError) as caught:
        run(data, study="新研究", **kwargs)
    error = caught.value
    assert (error.line, error.field) == (line, field), str(error)
    assert message in error.message
    assert counts() == before
    assert not Campaign.objects.filter(name="新研究").exists()


def test_an_error_after_conversations_were_stored_rolls_everything_back():
    data = jsonl(*MT_BENCH, dict(MT_BENCH[0], winner="model_c"))
    before = counts()
    with pytest.raises(VoteImportError) as caught:
        run(data, language="en")
    assert (caught.value.line, caught.value.field) == (3, "winner")
    assert counts() == before


def test_importing_into_a_campaign_that_is_not_an_imported_one_is_refused():
    CampaignFactory(name="采集", mode=Campaign.Mode.INTERACTIVE)
    before = counts()
    with pytest.raises(VoteImportError) as caught:
        run(GOOD_PLAIN.encode(), study="采集")
    assert caught.value.field == "campaign"
    assert counts() == before


def test_an_error_reads_with_its_location():
    with pytest.raises(VoteImportError) as caught:
        run((GOOD_PLAIN + "甲,乙,model_a\n").encode())
    assert str(caught.value).startswith("line 3, field 'winner': unknown winner 'model_a'")


# --- identity leaks -------------------------------------------------------------------------------


def battle(answer_a: str, answer_b: str = "好的。", **extra: Any) -> dict[str, Any]:
    return {
        "question_id": extra.pop("question_id", "q"),
        "model_a": extra.pop("model_a", "sys-one"),
        "model_b": extra.pop("model_b", "sys-two"),
        "winner": "model_a",
        "language": "Chinese",
        "conversation_a": conv("你是谁？", answer_a),
        "conversation_b": conv("你是谁？", answer_b),
        **extra,
    }


def leaks(*records: dict[str, Any], study: str = "偏好") -> list[str]:
    run(jsonl(*records), study=study)
    return list(
        Vote.objects.filter(campaign__name=study)
        .order_by("pk")
        .values_list("identity_leak", flat=True)
    )


def test_default_identity_words_in_english_chinese_and_japanese():
    found = leaks(
        battle("I am ChatGPT, made by OpenAI.", question_id="1"),
        battle("我是通义千问，由阿里云开发。", question_id="2"),
        battle("こんにちは", "私はグーグルが作ったモデルです。", question_id="3"),
        battle("你好，我是一个助手。", question_id="4"),
    )
    assert found[0] == "chatgpt"
    assert found[1] in {"通义千问", "阿里云"}
    assert found[2] == "グーグル"
    assert found[3] == ""


def test_ascii_words_match_at_word_boundaries_only():
    found = leaks(
        battle("I sat under a palmtree.", question_id="1"),
        battle("Trained by Google's PaLM team.", question_id="2"),
        battle("My name is kai23.", question_id="3"),
    )
    assert found == ["", "google", ""]


def test_the_user_turns_do_not_count():
    record = battle("你好。")
    record["conversation_a"][0]["content"] = "Are you ChatGPT?"
    record["conversation_b"][0]["content"] = "Are you ChatGPT?"
    assert leaks(record) == [""]


def test_a_studys_own_list_replaces_the_default():
    CampaignFactory(name="自定义", mode=Campaign.Mode.IMPORTED, identity_words=["小助手"])
    found = leaks(
        battle("我是 ChatGPT。", question_id="1"),
        battle("我是小助手。", question_id="2"),
        study="自定义",
    )
    assert found == ["", "小助手"]


def test_the_compared_systems_names_count_when_at_least_four_characters():
    found = leaks(
        battle("I am Sparrow, nice to meet you.", model_a="sparrow", question_id="1"),
        battle("Ask me, I am bot number one.", model_a="bot", model_b="other", question_id="2"),
    )
    assert found == ["sparrow", ""]


def test_identity_leaks_are_counted_in_the_result():
    result = run(jsonl(battle("I am Claude.", question_id="1"), battle("好", question_id="2")))
    assert result.identity_leaks == 1


# --- export → import round trip -------------------------------------------------------------------


def vote_tuples(study: str) -> list[tuple[Any, ...]]:
    return list(
        Vote.objects.filter(campaign__name=study)
        .order_by("pk")
        .values_list(
            "item",
            "system_a__name",
            "system_b__name",
            "outcome",
            "voter",
            "voter_kind",
            "question",
            "turn",
            "reason",
            "identity_leak",
        )
    )


def exported(study: str, fmt: str, as_csv: bool) -> bytes:
    campaign = Campaign.objects.get(name=study)
    return "".join(votes_export_lines(campaign=campaign, fmt=fmt, as_csv=as_csv)).encode()


ROUND_TRIP_SOURCE = [
    dict(MT_BENCH[0], reason="更详细", question="helpfulness"),
    dict(MT_BENCH[1], voter_kind="judge", turn=2),
    dict(ARENA[0], language="English"),
    battle("I am ChatGPT.", question_id="leak"),
]


@pytest.mark.parametrize("fmt", ["fastchat", "plain"])
@pytest.mark.parametrize("as_csv", [False, True], ids=["jsonl", "csv"])
def test_export_then_import_gives_the_same_votes(fmt: str, as_csv: bool):
    run(jsonl(*ROUND_TRIP_SOURCE), study="原始", language="en")
    original = vote_tuples("原始")
    assert any(row[-1] for row in original)
    data = exported("原始", fmt, as_csv)
    run(data, study="副本", language="en")
    copy = vote_tuples("副本")
    if as_csv or fmt == "plain":
        # Without conversations there is nothing to find an identity word in.
        original = [row[:-1] + ("",) for row in original]
    assert copy == original
    if fmt == "fastchat" and not as_csv:
        source = Vote.objects.filter(campaign__name="原始").order_by("pk")
        again = Vote.objects.filter(campaign__name="副本").order_by("pk")
        for left, right in zip(source, again, strict=True):
            assert (
                left.voted_at == right.voted_at
                or abs(left.voted_at.timestamp() - right.voted_at.timestamp()) < 1e-3
            )
            texts = [
                [t.text for t in d.turns.order_by("index")]
                for d in (left.dialogue_a, right.dialogue_a)
            ]
            assert texts[0] == texts[1]


def test_the_export_is_the_same_after_a_round_trip():
    run(jsonl(*ROUND_TRIP_SOURCE), study="原始", language="en")
    first = exported("原始", "fastchat", False)
    run(first, study="副本")
    assert exported("副本", "fastchat", False) == first
