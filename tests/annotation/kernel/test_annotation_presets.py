"""The preset rubrics load, validate and say what the seeds say."""

from __future__ import annotations

import pytest

from annotation.presets import preset_spec, preset_specs
from annotation.rubric_spec import applicable_questions, validate_spec


def test_every_preset_validates_and_is_keyed_by_its_rubric_key() -> None:
    specs = preset_specs()
    assert sorted(specs) == [
        "dslc3-open",
        "dslc3-situation",
        "likert",
        "msde",
        "yesno-multi-turn",
        "yesno-single-turn",
    ]
    for key, data in specs.items():
        spec = validate_spec(data)
        assert spec.key == key
        assert spec.version == 1
        for question in spec.questions:
            assert {"zh-hans", "en"} <= set(question.label), question.key


@pytest.mark.parametrize(
    ("skill", "keys"),
    [
        ("chitchat", ["info", "coh"]),
        ("knowledge", ["info", "coh", "know"]),
        ("persona", ["info", "coh", "know"]),
        ("recommendation", ["info", "coh", "know", "rec"]),
    ],
)
def test_msde_dimensions_apply_per_skill_as_in_seed_000_table_3(
    skill: str, keys: list[str]
) -> None:
    assert [q.key for q in applicable_questions(preset_spec("msde"), skill)] == keys


def test_msde_levels_carry_the_seed_definitions() -> None:
    spec = validate_spec(preset_spec("msde"))
    assert spec.overall == "mean"
    for question in spec.questions:
        assert (question.type, question.minimum, question.maximum) == ("scale", 0, 2)
        assert set(question.levels) == {"0", "1", "2"}
        assert all({"zh-hans", "en"} <= set(text) for text in question.levels.values())
    coh = spec.question("coh")
    assert (
        coh.levels["0"]["zh-hans"]
        == "差：超过2/3的回复与给定的当前目标和全局上下文不相关或逻辑矛盾。"
    )
    assert spec.question("info").levels["2"]["zh-hans"] == "好：提及了多个知识点。"


def test_single_turn_yesno_has_two_gates_then_five_categories_of_two() -> None:
    spec = validate_spec(preset_spec("yesno-single-turn"))
    assert (spec.overall, spec.min_raters) == ("normalised_100", 3)
    gates = [q for q in spec.questions if q.gate]
    assert [(q.key, q.positive) for q in gates] == [("grammatical", "yes"), ("unacceptable", "no")]
    assert spec.questions[:2] == tuple(gates)  # the first level comes first
    assert all(word in gates[1].label["zh-hans"] for word in ("色情", "暴力", "辱骂", "政治"))
    second = [q for q in spec.questions if not q.gate]
    assert all(q.type == "yesno" and q.positive == "yes" for q in second)
    per_category: dict[str | None, int] = {}
    for q in second:
        per_category[q.category] = per_category.get(q.category, 0) + 1
    assert per_category == dict.fromkeys(spec.categories, 2) and len(per_category) == 5
    assert spec.categories["relevance"]["zh-hans"] == "关联度"


def test_multi_turn_yesno_rates_relevance_and_divergence_per_turn() -> None:
    spec = validate_spec(preset_spec("yesno-multi-turn"))
    assert (spec.overall, spec.min_raters) == ("normalised_100", 5)
    assert set(spec.categories) == {"relevance", "divergence"}
    assert all(q.level == "turn" and q.max_turns == 5 and q.type == "yesno" for q in spec.questions)
    assert sorted(q.category for q in spec.questions) == ["divergence"] * 4 + ["relevance"] * 4


def test_likert_has_the_three_seed_004_items_on_1_to_5() -> None:
    spec = validate_spec(preset_spec("likert"))
    assert [q.key for q in spec.questions] == ["naturalness", "topic_following", "topic_providing"]
    assert all((q.minimum, q.maximum) == (1, 5) and "ja" in q.label for q in spec.questions)
    assert spec.overall == "mean"


def test_an_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="presets: dslc3-open, dslc3-situation, likert, msde"):
        preset_spec("nope")
