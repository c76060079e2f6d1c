"""Dataset import: every format on good input, every kind of bad input, round trip, streaming."""

from __future__ import annotations

import io
import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from chat.importers import DatasetImportError
from chat.models import Dataset, Sample
from chat.services import datasets as services
from tests.chat.dataset_samples import (
    CPC_LINES,
    DUCONV_LINES,
    DURECDIAL_LINES,
    GENERIC_LINES,
    KNOWLEDGE,
    LCCC_LINES,
    LIC2021_LINES,
    jsonl,
)

pytestmark = pytest.mark.django_db


def run_import(data: bytes, source_format: str, *, name: str = "测试集", **kwargs: Any) -> Dataset:
    return services.dataset_import(
        fileobj=io.BytesIO(data),
        name=name,
        source_format=source_format,
        language=kwargs.pop("language", "zh"),
        **kwargs,
    )


def stored() -> tuple[int, int]:
    return Dataset.objects.count(), Sample.objects.count()


def refuse(data: bytes, source_format: str, **kwargs: Any) -> DatasetImportError:
    """Import, expect a refusal, and check that nothing at all was stored."""
    before = stored()
    with pytest.raises(DatasetImportError) as caught:
        run_import(data, source_format, **kwargs)
    assert stored() == before
    return caught.value


def samples(dataset: Dataset) -> list[Sample]:
    return list(dataset.samples.select_related("skill").order_by("index"))


# --- Good input ---------------------------------------------------------------------------


def test_it_imports_generic_jsonl_with_per_line_skills():
    dataset = run_import(jsonl(*GENERIC_LINES), "jsonl", skill="chitchat", description="演示")

    assert (dataset.sample_count, dataset.skill, dataset.language) == (4, None, "zh")
    rows = samples(dataset)
    assert [(s.index, s.external_id, s.skill.key) for s in rows] == [
        (0, "k-001", "knowledge"),
        (1, "r-001", "recommendation"),
        (2, "p-001", "persona"),
        (3, "c-001", "chitchat"),
    ]
    assert rows[0].references == ["看过，郭帆导演的，吴京也演得很好。"]
    assert rows[0].grounding == {"knowledge": KNOWLEDGE, "goal": [["START", "流浪地球", "吴京"]]}
    assert rows[1].references == ["推荐你听周杰伦的《晴天》。", "可以试试《稻香》。"]
    assert rows[1].grounding["user_profile"] == {"姓名": "王小明", "喜欢的明星": ["周杰伦"]}
    assert rows[2].grounding == {
        "persona": {"bot": ["我在博物馆工作", "我喜欢读书"], "user": ["我是厨师"]}
    }
    assert rows[3].context == ["今天好热啊", "是啊，快四十度了"]
    assert rows[3].grounding == {}


def test_generic_jsonl_ids_default_to_the_line_and_integers_become_strings():
    data = jsonl(
        {"context": ["你好"], "response": "你好呀"}, {"id": 42, "context": [], "response": ""}
    )
    dataset = run_import(data, "jsonl", skill="chitchat")

    rows = samples(dataset)
    assert [s.external_id for s in rows] == ["1", "42"]
    assert rows[1].references == []
    assert dataset.skill.key == "chitchat"


def test_it_imports_the_lic2021_layout_taking_the_skill_from_subtrack():
    dataset = run_import(jsonl(*LIC2021_LINES), "lic2021")

    assert dataset.skill is None
    chitchat, knowledge, recommend, persona = samples(dataset)
    assert [s.skill.key for s in (chitchat, knowledge, recommend, persona)] == [
        "chitchat",
        "knowledge",
        "recommendation",
        "persona",
    ]
    assert [s.external_id for s in (chitchat, knowledge, recommend, persona)] == [
        "1",
        "2",
        "3",
        "4",
    ]
    assert chitchat.grounding == {}
    assert chitchat.references == ["挺 好 的 ， 刚 下班 。"]
    assert knowledge.grounding == {
        "knowledge": KNOWLEDGE,
        "goal": [["START", "流浪地球", "吴京"], ["流浪地球", "主演", "吴京"]],
    }
    assert recommend.context == ["晚上 好 啊 ， 小明 。", "晚上 好 ， 有点 无聊 。"]
    # The `[2]` goal marker of the response is stripped like the history's: metrics score
    # against the reference.
    assert recommend.references == ["那 听听 周杰伦 的 《 晴天 》 吧 ！"]
    assert recommend.grounding == {
        "knowledge": [["周杰伦", "代表作", "晴天"], ["晴天", "评论", "青春 的 回忆"]],
        "goal": [
            "寒暄 ( Bot 主动 ， 根据 给定 的 『 聊天 主题 』 寒暄 )",
            "音乐推荐 ( Bot 主动 推荐 『 晴天 』 )",
        ],
        "user_profile": {"姓名": "王小明", "性别": "男", "喜欢 的 明星": ["周杰伦", "林俊杰"]},
        "situation": "聊天 时间 : 晚上 20 : 00 ， 在 家里",
    }
    assert persona.grounding == {"persona": {"bot": ["我 在 博物馆 工作", "我 喜欢 读书"]}}


def test_a_single_subtrack_lic2021_file_gives_a_single_skill_dataset():
    # Hidden-reference test sets have no response.
    without_response = {key: value for key, value in LIC2021_LINES[3].items() if key != "response"}
    lines = [without_response] * 3
    dataset = run_import(jsonl(*lines), "lic2021", skill="persona")

    assert dataset.skill.key == "persona"
    assert [s.references for s in samples(dataset)] == [[], [], []]


def test_it_imports_lccc_one_sample_per_utterance_after_the_first():
    dataset = run_import(jsonl(*LCCC_LINES), "lccc", skill="chitchat")

    assert [(s.external_id, s.context, s.references) for s in samples(dataset)] == [
        ("1-1", ["今天 天气 真 好"], ["是 啊 ， 适合 出去 玩"]),
        ("1-2", ["今天 天气 真 好", "是 啊 ， 适合 出去 玩"], ["那 我们 去 公园 吧"]),
        ("2", ["你 吃饭 了 吗"], ["刚 吃 完 ， 你 呢 ？"]),
    ]
    assert dataset.skill.key == "chitchat"


def test_it_imports_duconv_one_sample_per_bot_turn_the_bot_leading():
    dataset = run_import(jsonl(*DUCONV_LINES), "duconv", skill="knowledge")

    first, second, test_style = samples(dataset)
    assert (first.external_id, first.context) == ("1-0", [])
    assert first.references == ["你 喜欢 看 科幻 电影 吗 ？"]
    assert second.external_id == "1-2"
    assert second.context == ["你 喜欢 看 科幻 电影 吗 ？", "喜欢 啊 ， 特别 是 国产 的 。"]
    assert second.grounding == {
        "knowledge": KNOWLEDGE,
        "goal": [["START", "流浪地球", "吴京"], ["流浪地球", "主演", "吴京"]],
    }
    assert (test_style.external_id, test_style.context) == ("2", ["你好"])
    assert test_style.grounding["knowledge"] == [["战狼2", "主演", "吴京"]]


def test_it_imports_durecdial_bot_turns_by_who_takes_the_initiative():
    dataset = run_import(jsonl(*DURECDIAL_LINES), "durecdial", skill="recommendation")

    rows = samples(dataset)
    # Line 1 opens with a greeting by the bot (turns 0, 2, 4); line 2 with a user question (1, 3).
    assert [s.external_id for s in rows] == ["1-0", "1-2", "1-4", "2-1", "2-3"]
    assert rows[1].context == ["晚上 好 啊 ， 小明 。", "晚上 好 ， 有点 无聊 。"]
    assert rows[1].references == ["那 听听 周杰伦 的 《 晴天 》 吧 ！"]
    assert rows[0].grounding == {
        "knowledge": [["周杰伦", "代表作", "晴天"]],
        "goal": [
            "寒暄 ( Bot 主动 ， 根据 给定 的 『 聊天 主题 』 寒暄 )",
            "音乐推荐 ( Bot 主动 推荐 『 晴天 』 ， User 接受 )",
            "再见",
        ],
        "user_profile": {"姓名": "王小明", "喜欢 的 明星": ["周杰伦"], "年龄区间": "18-25"},
        "situation": "聊天 时间 : 晚上 20 : 00 ， 在 家里",
    }
    assert rows[3].context == ["今天 北京 天气 怎么样 ？"]
    assert rows[4].references == ["天气 好 ， 去 吃 火锅 吧 ！"]


def test_a_durecdial_test_line_has_the_goal_marker_stripped_from_its_reference_too():
    line = {
        "goal": "[1] 寒暄 ( Bot 主动 寒暄 ) --> [2] 音乐推荐 ( Bot 主动 推荐 『 晴天 』 )",
        "history": ["[1] 晚上 好 啊 。", "晚上 好 。"],
        "response": "[2] 听听 《 晴天 》 吧 ！",
    }
    [sample] = samples(run_import(jsonl(line), "durecdial", skill="recommendation"))
    assert sample.context == ["晚上 好 啊 。", "晚上 好 。"]
    assert sample.references == ["听听 《 晴天 》 吧 ！"]


def test_it_imports_cpc_dulemon_and_the_test_layout_of_persona_chat():
    dataset = run_import(jsonl(*CPC_LINES), "cpc", skill="persona")

    rows = samples(dataset)
    assert [s.external_id for s in rows] == ["1-1", "1-2", "2-1", "2-3", "3"]
    chef, museum = ["我 是 一名 厨师", "我 喜欢 做 川菜"], ["我 在 博物馆 工作", "我 喜欢 读书"]
    # CPC: the bot speaks with the persona of whoever says the reference.
    assert rows[0].references == ["可以 呀 ， 我 在 博物馆 工作 。"]
    assert rows[0].grounding == {"persona": {"bot": museum, "user": chef}}
    assert rows[1].context == ["你好 ， 可以 认识 一下 吗 ？", "可以 呀 ， 我 在 博物馆 工作 。"]
    assert rows[1].grounding == {"persona": {"bot": chef, "user": museum}}
    # DuLeMon: only Bot turns, prefixes stripped, the unsaid user persona kept apart.
    assert rows[3].context == [
        "你好 呀",
        "你好 ， 我 刚 在 杭州 西湖 散步 回来 。",
        "真 羡慕 ， 我 还 在 上课 。",
    ]
    assert rows[3].references == ["学生 辛苦 啦 ！"]
    assert rows[3].grounding == {
        "persona": {
            "bot": ["我 喜欢 猫", "我 住 在 杭州"],
            "user": ["我 是 学生"],
            "user_unsaid": ["我 喜欢 打 篮球"],
        }
    }
    assert rows[4].grounding == {"persona": {"bot": ["我 喜欢 狗", "我 是 职业 玩家"]}}


def test_a_byte_order_mark_crlf_line_ends_and_blank_lines_are_accepted():
    data = (
        b"\xef\xbb\xbf"
        + jsonl(LCCC_LINES[1]).replace(b"\n", b"\r\n")
        + b"\n  \n"
        + jsonl(LCCC_LINES[1])
    )
    dataset = run_import(data, "lccc", skill="chitchat")

    # Line numbers count blank lines, so ids still point at the file's lines.
    assert [s.external_id for s in samples(dataset)] == ["1", "4"]


def test_an_uploaded_file_object_is_read_like_a_file():
    upload = SimpleUploadedFile("lccc.jsonl", jsonl(*LCCC_LINES), content_type="application/jsonl")
    dataset = services.dataset_import(
        fileobj=upload, name="上传", source_format="lccc", language="zh", skill="chitchat"
    )
    assert dataset.sample_count == 3


# --- Bad input: nothing is stored ---------------------------------------------------------


def _filler(count: int) -> list[dict[str, Any]]:
    return [dict(LIC2021_LINES[0]) for _ in range(count)]


def test_a_wrong_type_is_reported_with_line_and_field():
    lines = [*_filler(16), dict(LIC2021_LINES[1], history=5)]
    error = refuse(jsonl(*lines), "lic2021")

    assert str(error) == "line 17, field 'history': expected a list of strings, got int"
    assert (error.line, error.field) == (17, "history")


@pytest.mark.parametrize(
    ("source_format", "skill", "lines", "line", "field", "message"),
    [
        # missing fields
        ("jsonl", "chitchat", [{"id": "a", "response": "好"}], 1, "context", "missing field"),
        ("lic2021", None, [{"history": ["你好"]}], 1, "subtrack", "missing field"),
        (
            "lic2021",
            None,
            [LIC2021_LINES[0], {"subtrack": "chitchat"}],
            2,
            "history",
            "missing field",
        ),
        ("lccc", "chitchat", [{"utterances": ["a", "b"]}], 1, "conversation", "missing field"),
        (
            "duconv",
            "knowledge",
            [{"goal": [], "conversation": ["你好"]}],
            1,
            "knowledge",
            "missing field",
        ),
        ("durecdial", "recommendation", [{"conversation": ["你好"]}], 1, "goal", "missing field"),
        (
            "cpc",
            "persona",
            [{"p1_persona": [], "conversation": ["p1 : 你好"]}],
            1,
            "p2_persona",
            "missing field",
        ),
        ("cpc", "persona", [{"persona": ["我 喜欢 猫"]}], 1, "conversation", "missing field"),
        # wrong types, down to list items and nested objects
        (
            "lic2021",
            None,
            [dict(LIC2021_LINES[0], history=["你好", 3])],
            1,
            "history[1]",
            "expected a string, got int",
        ),
        (
            "lic2021",
            None,
            [dict(LIC2021_LINES[1], knowledge=[["流浪地球", "导演"]])],
            1,
            "knowledge[0]",
            "expected a [subject, predicate, object] triple, got 2 items",
        ),
        (
            "lic2021",
            None,
            [dict(LIC2021_LINES[2], user_profile={"姓名": 3})],
            1,
            "user_profile.姓名",
            "expected a string, got int",
        ),
        (
            "lic2021",
            None,
            [dict(LIC2021_LINES[0], response=["好"])],
            1,
            "response",
            "expected a string, got list",
        ),
        (
            "jsonl",
            "chitchat",
            [{"context": "你好"}],
            1,
            "context",
            "expected a list of strings, got string",
        ),
        (
            "jsonl",
            "chitchat",
            [{"context": [], "grounding": {"persona": {"bot": "我 喜欢 猫"}}}],
            1,
            "grounding.persona.bot",
            "expected a list of strings, got string",
        ),
        (
            "jsonl",
            "chitchat",
            [{"id": True, "context": []}],
            1,
            "id",
            "expected a string or an integer, got bool",
        ),
        (
            "duconv",
            "knowledge",
            [dict(DUCONV_LINES[0], goal=[["START", 1]])],
            1,
            "goal[0][1]",
            "got int",
        ),
        (
            "durecdial",
            "recommendation",
            [dict(DURECDIAL_LINES[0], goal="寒暄 --> 推荐")],
            1,
            "goal",
            "no goal steps",
        ),
        (
            "durecdial",
            "recommendation",
            [dict(DURECDIAL_LINES[1], conversation=["在 吗"])],
            1,
            "conversation",
            "has no bot turn",
        ),
        (
            "lccc",
            "chitchat",
            [{"conversation": ["只有 一句"]}],
            1,
            "conversation",
            "at least 2 utterances",
        ),
        (
            "cpc",
            "persona",
            [dict(CPC_LINES[0], conversation=["p1 : 你好", "你好 呀"])],
            1,
            "conversation[1]",
            "start with 'p1 : ' or 'p2 : '",
        ),
        (
            "cpc",
            "persona",
            [dict(CPC_LINES[1], conversation=["Usr: 你好"])],
            1,
            "conversation",
            "no 'Bot: '",
        ),
        # unknown names
        (
            "lic2021",
            None,
            [LIC2021_LINES[0], dict(LIC2021_LINES[0], subtrack="emotion")],
            2,
            "subtrack",
            "unknown subtrack 'emotion'",
        ),
        (
            "jsonl",
            None,
            [{"skill": "chitchat", "context": []}, {"skill": "debate", "context": []}],
            2,
            "skill",
            "unknown skill 'debate'",
        ),
        (
            "jsonl",
            None,
            [{"skill": "chitchat", "context": []}, {"context": []}],
            2,
            "skill",
            "missing",
        ),
        (
            "jsonl",
            "chitchat",
            [{"context": [], "refrences": ["好"]}],
            1,
            "refrences",
            "unknown field",
        ),
        (
            "jsonl",
            "chitchat",
            [{"context": [], "grounding": {"knowlege": []}}],
            1,
            "grounding.knowlege",
            "unknown field",
        ),
        (
            "jsonl",
            "chitchat",
            [{"context": [], "response": "a", "references": ["b"]}],
            1,
            "references",
            "not both",
        ),
        (
            "lic2021",
            "knowledge",
            [LIC2021_LINES[1], LIC2021_LINES[3]],
            2,
            "subtrack",
            "skill 'persona' differs from the dataset's skill 'knowledge'",
        ),
        # duplicate ids and PostgreSQL-hostile text
        (
            "jsonl",
            "chitchat",
            [{"id": "x", "context": []}, {"id": "x", "context": []}],
            2,
            "id",
            "duplicate id 'x' (first used on line 1)",
        ),
        ("jsonl", "chitchat", [{"context": ["a\u0000b"]}], 1, "context[0]", "NUL character"),
    ],
)
def test_bad_lines_are_refused_with_line_and_field(
    source_format, skill, lines, line, field, message
):
    error = refuse(jsonl(*lines), source_format, skill=skill)

    assert (error.line, error.field) == (line, field)
    assert message in str(error)
    assert str(error).startswith(f"line {line}, field '{field}': ")


def test_bad_json_is_refused_naming_the_line():
    data = jsonl(LCCC_LINES[0]) + b'{"conversation": ["a", "b"],}\n'
    error = refuse(data, "lccc", skill="chitchat")

    assert (error.line, error.field) == (2, None)
    assert str(error).startswith("line 2: invalid JSON: ")


def test_a_json_error_at_the_end_of_a_line_names_its_last_column():
    line = b'{"conversation": ["a", "b"]'  # the closing brace is missing
    error = refuse(line + b"\n", "lccc", skill="chitchat")
    assert str(error).endswith(f"(column {len(line) + 1})")


def test_a_line_that_is_not_an_object_is_refused():
    error = refuse(b'["a", "b"]\n', "lccc", skill="chitchat")
    assert str(error) == "line 1: expected a JSON object, got list"


def test_a_file_that_is_not_utf8_is_refused_naming_the_line():
    data = (
        jsonl(LCCC_LINES[0]) + json.dumps(LCCC_LINES[1], ensure_ascii=False).encode("gbk") + b"\n"
    )
    error = refuse(data, "lccc", skill="chitchat")

    assert error.line == 2
    assert "not valid UTF-8" in str(error)


@pytest.mark.parametrize("data", [b"", b"\n \n\t\n"])
def test_an_empty_file_is_refused(data):
    error = refuse(data, "jsonl", skill="chitchat")
    assert str(error) == "the file is empty"


def test_an_oversized_file_is_refused_before_parsing(settings):
    data = b"this is not JSON at all\n" * 10
    settings.DATASET_UPLOAD_MAX_BYTES = 100
    error = refuse(data, "jsonl", skill="chitchat")

    assert (error.line, error.field) == (None, None)
    assert "the file is 240 bytes, over the 100 bytes limit" in str(error)


def test_an_oversized_stream_of_unknown_length_is_refused_while_reading(settings):
    settings.DATASET_UPLOAD_MAX_BYTES = 1000
    stream = GeneratedFile(jsonl({"context": ["你好"], "response": "你好"}) for _ in range(100))
    before = stored()
    with pytest.raises(DatasetImportError, match="larger than the 1000 bytes limit"):
        services.dataset_import(
            fileobj=stream, name="流", source_format="jsonl", language="zh", skill="chitchat"
        )
    assert stored() == before


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"source_format": "lccc", "skill": "debate"}, "skill", "unknown skill 'debate'"),
        ({"source_format": "lccc"}, "skill", "the 'lccc' format needs a skill"),
        ({"source_format": "csv", "skill": "chitchat"}, "source_format", "unknown format 'csv'"),
        (
            {"source_format": "lccc", "skill": "chitchat", "language": "fr"},
            "language",
            "unknown language",
        ),
        ({"source_format": "lccc", "skill": "chitchat", "name": "  "}, "name", "name is required"),
    ],
)
def test_bad_arguments_are_refused(kwargs, field, message):
    error = refuse(jsonl(*LCCC_LINES), **kwargs)
    assert (error.line, error.field) == (None, field)
    assert message in str(error)


def test_a_name_already_used_is_refused():
    run_import(jsonl(*LCCC_LINES), "lccc", skill="chitchat", name="闲聊")
    error = refuse(jsonl(*LCCC_LINES), "lccc", skill="chitchat", name="闲聊")
    assert str(error) == "field 'name': a dataset named '闲聊' already exists"


def test_a_failure_after_several_batches_leaves_nothing(monkeypatch):
    monkeypatch.setattr(services, "IMPORT_BATCH_SIZE", 2)
    lines = [{"context": ["你好"], "response": f"回复 {i}"} for i in range(7)] + [{"context": 1}]
    error = refuse(jsonl(*lines), "jsonl", skill="chitchat")
    assert error.line == 8


def test_a_duplicate_id_in_an_earlier_batch_is_found(monkeypatch):
    monkeypatch.setattr(services, "IMPORT_BATCH_SIZE", 2)
    lines = [{"id": f"s{i}", "context": []} for i in range(5)] + [{"id": "s1", "context": []}]
    error = refuse(jsonl(*lines), "jsonl", skill="chitchat")

    assert (error.line, error.field) == (6, "id")
    assert "duplicate id 's1' (already used on an earlier line)" in str(error)


# --- Round trip ---------------------------------------------------------------------------


def _content(dataset: Dataset) -> list[tuple[Any, ...]]:
    return [
        (s.index, s.external_id, s.skill.key, s.context, s.references, s.grounding)
        for s in samples(dataset)
    ]


@pytest.mark.parametrize(
    ("source_format", "skill", "lines"),
    [
        ("jsonl", "chitchat", GENERIC_LINES),
        ("lic2021", None, LIC2021_LINES),
        ("durecdial", "recommendation", DURECDIAL_LINES),
        ("cpc", "persona", CPC_LINES),
    ],
)
def test_an_export_reimports_to_the_same_samples(source_format, skill, lines):
    original = run_import(jsonl(*lines), source_format, skill=skill, name="原始")

    exported = "".join(line + "\n" for line in services.dataset_export_lines(dataset=original))
    copy = run_import(exported.encode("utf-8"), "jsonl", name="副本")

    assert _content(copy) == _content(original)
    assert copy.skill_id == original.skill_id
    assert "\\u" not in exported  # Chinese stays readable in the export


def test_generic_metadata_such_as_a_topic_imports_and_exports():
    lines = [
        {"id": "q1", "context": ["去哪里旅游好？"], "metadata": {"topic": "旅游", "level": 2}},
        {"id": "q2", "context": ["推荐一部电影"]},
    ]
    original = run_import(jsonl(*lines), "jsonl", skill="chitchat", name="带话题")
    assert [s.metadata for s in samples(original)] == [{"topic": "旅游", "level": 2}, {}]

    exported = [json.loads(line) for line in services.dataset_export_lines(dataset=original)]
    assert exported[0]["metadata"] == {"topic": "旅游", "level": 2}
    assert "metadata" not in exported[1]


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ("旅游", "metadata"),
        ({"topic": ["旅游"]}, "metadata.topic"),
        ({"topic": None}, "metadata.topic"),
    ],
)
def test_metadata_must_be_an_object_of_plain_values(metadata, field):
    error = refuse(
        jsonl({"id": "q1", "context": ["你好"], "metadata": metadata}), "jsonl", skill="chitchat"
    )
    assert (error.line, error.field) == (1, field)


# --- Streaming ----------------------------------------------------------------------------


class GeneratedFile(io.RawIOBase):
    """A read-only, non-seekable binary stream fed by a generator of byte chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def test_a_large_file_streams_in_bounded_memory(monkeypatch):
    # tracemalloc slows every allocation several-fold, so the file has few, long lines and the
    # batches are small: what is shown is that memory follows the batch, not the file.
    monkeypatch.setattr(services, "IMPORT_BATCH_SIZE", 100)
    lines = 5_000
    utterance = "你看过《流浪地球》吗？特效真的很震撼，故事也很感人。" * 12

    def generate() -> Iterator[bytes]:
        for i in range(lines):
            line = {"id": f"s{i}", "context": [utterance] * 4, "response": utterance}
            yield (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")

    file_size = lines * len(next(generate()))
    tracemalloc.start()
    try:
        dataset = services.dataset_import(
            fileobj=io.BufferedReader(GeneratedFile(generate())),
            name="大数据集",
            source_format="jsonl",
            language="zh",
            skill="chitchat",
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert dataset.sample_count == lines
    assert Sample.objects.filter(dataset=dataset).count() == lines
    assert peak < file_size / 5, (peak, file_size)
