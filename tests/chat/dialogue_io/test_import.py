"""Dialogue JSONL import: what it stores, and every kind of bad line named precisely."""

from __future__ import annotations

import io
import json

import pytest
from django.test import override_settings

from chat.models import Backend, Campaign, Dialogue, Turn
from chat.services.campaigns import campaign_create
from chat.services.dialogue_io import DialogueImportError, dialogues_import
from tests.chat.factories import BackendFactory

pytestmark = pytest.mark.django_db


def line(**fields) -> dict:
    base = {
        "id": "c1",
        "system": "外部模型",
        "skill": "chitchat",
        "language": "zh",
        "turns": [{"speaker": "user", "text": "你好"}, {"speaker": "system", "text": "你好呀"}],
    }
    base.update(fields)
    return base


def jsonl(*objects: dict | str) -> io.BytesIO:
    text = "\n".join(
        o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in objects
    )
    return io.BytesIO((text + "\n").encode("utf-8"))


def test_it_imports_dialogues_as_accepted_into_a_new_imported_campaign_with_new_systems(
    researcher,
):
    grounding = {"knowledge": [["流浪地球", "导演", "郭帆"]], "goal": ["寒暄", "电影"]}
    result = dialogues_import(
        fileobj=jsonl(
            line(id="c1", grounding=grounding),
            line(id=2, system="另一个模型", skill="knowledge", language="en"),
            line(id="c3"),
        ),
        campaign_name="竞赛日志",
        created_by=researcher,
    )
    assert (result.dialogues, result.turns) == (3, 6)
    assert result.systems_created == ["外部模型", "另一个模型"]
    campaign = Campaign.objects.get(name="竞赛日志")
    assert campaign.mode == Campaign.Mode.IMPORTED and result.campaign == campaign
    assert sorted(campaign.skills.values_list("key", flat=True)) == ["chitchat", "knowledge"]
    aliases = dict(campaign.campaign_backends.values_list("backend__name", "alias"))
    assert aliases == {"外部模型": "模型 A", "另一个模型": "模型 B"}
    backend = Backend.objects.get(name="外部模型")
    assert backend.adapter == Backend.Adapter.IMPORTED and not backend.active
    first = Dialogue.objects.get(external_id="c1")
    assert first.status == Dialogue.Status.ACCEPTED and first.submitted_at is not None
    assert first.grounding == grounding
    assert [(t.index, t.speaker, t.text) for t in first.turns.order_by("index")] == [
        (0, "user", "你好"),
        (1, "system", "你好呀"),
    ]
    assert Dialogue.objects.get(external_id="2").language == "en"


def test_an_existing_system_is_reused_and_a_second_file_adds_to_the_campaign():
    existing = BackendFactory(name="外部模型")
    dialogues_import(fileobj=jsonl(line(id="a")), campaign_name="日志")
    result = dialogues_import(
        fileobj=jsonl(line(id="b"), line(id="c", system="新模型")), campaign_name="日志"
    )
    assert result.systems_created == ["新模型"]
    assert Dialogue.objects.get(external_id="a").backend == existing
    campaign = Campaign.objects.get(name="日志")
    assert campaign.dialogues.count() == 3
    assert dict(campaign.campaign_backends.values_list("backend__name", "alias")) == {
        "外部模型": "模型 A",
        "新模型": "模型 B",
    }


def test_turn_references_prompt_and_latency_are_kept():
    turns = [
        {"speaker": "user", "text": "你好"},
        {
            "speaker": "system",
            "text": "你好呀",
            "references": ["你好！"],
            "prompt": "你是一个聊天机器人。",
            "latency_ms": 120,
            "created_at": "2026-01-01T00:00:00+00:00",
        },
    ]
    dialogues_import(fileobj=jsonl(line(turns=turns)), campaign_name="静态答案")
    answer = Turn.objects.get(speaker="system")
    assert (answer.references, answer.prompt, answer.latency_ms) == (
        ["你好！"],
        "你是一个聊天机器人。",
        120,
    )


BAD_LINES = [
    ('{"id": "x", ', "line 2: invalid JSON"),
    ("[1, 2]", "line 2: expected a JSON object, got list"),
    (
        line(id="x", turns=[{"speaker": "bot", "text": "hi"}]),
        'line 2, field \'turns[0].speaker\': expected "user" or "system", got "bot"',
    ),
    (line(id="x", turns=[{"speaker": "user"}]), "line 2, field 'turns[0].text': missing field"),
    (
        line(id="x", turns=[{"speaker": "user", "text": 3}]),
        "line 2, field 'turns[0].text': expected a string, got int",
    ),
    (
        line(id="x", turns=[{"speaker": "user", "text": "  "}]),
        "line 2, field 'turns[0].text': must not be empty",
    ),
    (
        line(id="x", turns=["你好"]),
        "line 2, field 'turns[0]': expected an object with speaker and text, got string",
    ),
    (line(id="x", turns=[]), "line 2, field 'turns': a dialogue needs at least one turn"),
    (line(id="x", turns="你好"), "line 2, field 'turns': expected a list of turns, got string"),
    (
        line(id="x", turns=[{"speaker": "user", "text": "a", "speeker": 1}]),
        "line 2, field 'turns[0].speeker': unknown field",
    ),
    (
        line(id="x", turns=[{"speaker": "system", "text": "a", "latency_ms": -1}]),
        "line 2, field 'turns[0].latency_ms': expected a non-negative integer or null, got -1",
    ),
    (line(id="x", skill="smalltalk"), "line 2, field 'skill': unknown skill 'smalltalk'"),
    (line(id="x", language="fr"), "line 2, field 'language': unknown language 'fr'"),
    (line(id="x", system=""), "line 2, field 'system': must not be empty"),
    (line(id="x", system=["a"]), "line 2, field 'system': expected a string, got list"),
    (line(id=True), "line 2, field 'id': expected a string or an integer, got bool"),
    (line(id=""), "line 2, field 'id': must not be empty"),
    (line(id="c1"), "line 2, field 'id': duplicate id 'c1' (first used on line 1)"),
    ({k: v for k, v in line(id="x").items() if k != "turns"}, "line 2, field 'turns': missing"),
    ({k: v for k, v in line(id="x").items() if k != "id"}, "line 2, field 'id': missing field"),
    (line(id="x", grounding={"knowlege": []}), "line 2, field 'grounding.knowlege': unknown field"),
    (
        line(id="x", grounding={"knowledge": [["a", "b"]]}),
        "line 2, field 'grounding.knowledge[0]': expected a [subject, predicate, object] triple",
    ),
    (line(id="x", turn=[]), "line 2, field 'turn': unknown field"),
    (
        line(id="x", turns=[{"speaker": "user", "text": "a\u0000b"}]),
        "line 2, field 'turns[0].text': contains a NUL character",
    ),
]


@pytest.mark.parametrize(("bad", "expected"), BAD_LINES)
def test_every_kind_of_bad_line_is_named_and_nothing_is_imported(bad, expected):
    before = (Campaign.objects.count(), Backend.objects.count(), Dialogue.objects.count())
    fileobj = jsonl(line(id="c1", system="第一个"), bad, line(id="c3", system="第三个"))
    with pytest.raises(DialogueImportError) as caught:
        dialogues_import(fileobj=fileobj, campaign_name="坏文件")
    assert str(caught.value).startswith(expected), str(caught.value)
    assert caught.value.line == 2
    after = (Campaign.objects.count(), Backend.objects.count(), Dialogue.objects.count())
    assert after == before


def test_bad_utf8_is_named_on_its_line():
    data = jsonl(line(id="a")).getvalue() + b'{"id": "\xff"}\n'
    with pytest.raises(DialogueImportError) as caught:
        dialogues_import(fileobj=io.BytesIO(data), campaign_name="编码")
    assert str(caught.value) == "line 2: not valid UTF-8 (byte 0xff at byte 9 of the line)"
    assert not Campaign.objects.filter(name="编码").exists()


def test_an_empty_file_and_an_oversized_file_are_refused():
    with pytest.raises(DialogueImportError, match="the file is empty"):
        dialogues_import(fileobj=io.BytesIO(b"\n\n"), campaign_name="空")
    with override_settings(DATASET_UPLOAD_MAX_BYTES=100):
        big = jsonl(*(line(id=str(i)) for i in range(5)))
        with pytest.raises(DialogueImportError, match="over the 100 bytes limit"):
            dialogues_import(fileobj=big, campaign_name="大")
    assert not Campaign.objects.exists()


def test_a_batch_boundary_does_not_hide_a_duplicate_or_leave_earlier_batches(monkeypatch):
    monkeypatch.setattr("chat.services.dialogue_io.IMPORT_BATCH_SIZE", 2)
    lines = [line(id=f"d{i}") for i in range(5)] + [line(id="d1")]
    with pytest.raises(DialogueImportError, match="line 6, field 'id': duplicate id 'd1'"):
        dialogues_import(fileobj=jsonl(*lines), campaign_name="分批")
    assert not Dialogue.objects.exists() and not Campaign.objects.exists()


def test_ids_already_in_the_campaign_are_refused():
    dialogues_import(fileobj=jsonl(line(id="a")), campaign_name="日志")
    with pytest.raises(DialogueImportError) as caught:
        dialogues_import(fileobj=jsonl(line(id="b"), line(id="a")), campaign_name="日志")
    assert str(caught.value) == (
        "line 2, field 'id': duplicate id 'a' (the campaign already has a dialogue with this id)"
    )
    assert Dialogue.objects.count() == 1


def test_a_campaign_of_another_mode_is_refused_and_a_name_is_required():
    campaign_create(
        name="交互活动",
        mode="interactive",
        skills=["chitchat"],
        backends=[],
        datasets=[],
        created_by=None,
    )
    with pytest.raises(DialogueImportError) as caught:
        dialogues_import(fileobj=jsonl(line()), campaign_name="交互活动")
    assert caught.value.field == "campaign" and "interactive" in str(caught.value)
    with pytest.raises(DialogueImportError, match="a campaign name is required"):
        dialogues_import(fileobj=jsonl(line()), campaign_name="  ")
    assert not Dialogue.objects.exists()


def test_static_answers_make_only_each_dialogues_last_turn_the_systems_response(researcher):
    """A static run made elsewhere: the context (user and system turns, from a dataset) then the
    system's one reply. Metric runs score only that reply; whole dialogues score every turn."""
    from metrics.models import MetricRun
    from metrics.selectors.metric_runs import response_units

    turns = [
        {"speaker": "user", "text": "你好"},
        {"speaker": "system", "text": "数据集里的上文"},
        {"speaker": "user", "text": "推荐一部电影"},
        {"speaker": "system", "text": "看《流浪地球》吧", "references": ["《流浪地球》不错"]},
    ]
    for name, static_answers, expected in [
        ("静态回答", True, ["看《流浪地球》吧"]),
        ("完整对话", False, ["数据集里的上文", "看《流浪地球》吧"]),
    ]:
        result = dialogues_import(
            fileobj=jsonl(line(id=name, turns=turns)),
            campaign_name=name,
            created_by=researcher,
            static_answers=static_answers,
        )
        campaign = Campaign.objects.get(name=name)
        assert campaign.static_answers is static_answers
        assert campaign.answers_are_last_turns is static_answers
        run = MetricRun.objects.create(name=name, campaign=campaign, metrics=["f1"])
        backend_id = result.campaign.campaign_backends.get().backend_id
        units = response_units(run=run, backend_id=backend_id, skill_id=None)
        assert [u.text for u in units] == expected
        assert units[-1].references == ["《流浪地球》不错"]
    # A campaign keeps its kind: whole dialogues are refused into one of static answers.
    with pytest.raises(DialogueImportError) as caught:
        dialogues_import(fileobj=jsonl(line(id="x")), campaign_name="静态回答")
    assert caught.value.field == "static_answers"
    assert Dialogue.objects.filter(campaign__name="静态回答").count() == 1
