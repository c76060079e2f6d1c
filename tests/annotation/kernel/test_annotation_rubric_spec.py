"""Rubric spec validation: good specs parse; broken ones are refused with the path and reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from annotation.rubric_spec import (
    AnswerError,
    RubricSpecError,
    applicable_questions,
    validate_answer,
    validate_spec,
)


def good_spec() -> dict[str, Any]:
    return {
        "key": "demo",
        "version": 2,
        "title": {"zh-hans": "示例", "en": "Demo"},
        "overall": "mean",
        "categories": {"quality": {"en": "Quality"}},
        "questions": [
            {
                "key": "info",
                "type": "scale",
                "min": 0,
                "max": 2,
                "level": "dialogue",
                "skills": ["knowledge", "chitchat"],
                "category": "quality",
                "label": {"zh-hans": "丰富度", "en": "Information richness"},
                "help": {"en": "How much knowledge"},
                "levels": {"0": {"en": "none"}, "1": {"en": "one"}, "2": {"en": "several"}},
            },
            {"key": "natural", "type": "likert", "points": 5, "level": "dialogue",
             "label": {"ja": "自然さ"}},
            {"key": "safe", "type": "yesno", "positive": "no", "gate": True, "level": "turn",
             "max_turns": 5, "label": {"en": "Unacceptable?"}},
            {"key": "style", "type": "choice", "level": "turn", "measurement": "ordinal",
             "options": [{"label": {"en": "bad"}, "score": 0}, {"label": {"en": "ok"}, "score": 1},
                         {"label": {"en": "good"}, "score": 2}],
             "label": {"en": "Style"}},
            {"key": "comment", "type": "text", "level": "dialogue", "label": {"en": "Comment"}},
        ],
    }  # fmt: skip


def errors_of(spec: Any) -> list[str]:
    with pytest.raises(RubricSpecError) as caught:
        validate_spec(spec)
    return [f"{path}: {message}" for path, message in caught.value.errors]


def broken(path: list[Any], value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    """good_spec() with the field at `path` set to `value` (or deleted)."""
    spec = good_spec()
    target: Any = spec
    for step in path[:-1]:
        target = target[step]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return spec


def test_it_parses_a_good_spec_with_every_question_type() -> None:
    spec = validate_spec(good_spec())
    assert [q.key for q in spec.questions] == ["info", "natural", "safe", "style", "comment"]
    info, natural, safe, style, comment = spec.questions
    assert (info.minimum, info.maximum, info.measurement) == (0, 2, "ordinal")
    assert (natural.minimum, natural.maximum, natural.skills) == (1, 5, None)
    assert (safe.gate, safe.positive, safe.max_turns, safe.measurement) == (
        True,
        "no",
        5,
        "nominal",
    )
    assert (style.minimum, style.maximum, style.scored, style.max_score) == (0, 2, True, 2.0)
    assert (comment.scored, comment.measurement) == (False, None)
    assert spec.categories == {"quality": {"en": "Quality"}}
    assert spec.min_raters == 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([1, 2], "spec: must be a JSON object"),
        (broken(["key"], "Demo Rubric"),
         "key: must be a slug (lowercase letters, digits, - and _; at most 60 characters)"),
        (broken(["key"], delete=True), "key: is required"),
        (broken(["version"], 0), "version: must be an integer from 1 to 1000000"),
        (broken(["version"], delete=True), "version: is required"),
        (broken(["title"], "Demo"),
         "title: must be an object mapping a language (zh-hans, en, ja) to text"),
        (broken(["title", "fr"], "Démo"), "title.fr: unknown language; use zh-hans, en, ja"),
        (broken(["title", "en"], "  "), "title.en: must be non-empty text"),
        (broken(["overall"], "median"), "overall: must be one of mean, sum, normalised_100, none"),
        (broken(["min_raters"], 0), "min_raters: must be an integer ≥ 1"),
        (broken(["colour"], "red"), "colour: unknown field"),
        (broken(["questions"], []), "questions: must be a non-empty list"),
        (broken(["questions", 1], "natural"), "questions[1]: must be an object"),
        (broken(["questions", 0, "max"], 0), "questions[0].max: must be greater than min"),
        (broken(["questions", 0, "min"], 0.5), "questions[0].min: must be an integer"),
        (broken(["questions", 0, "max"], delete=True), "questions[0].max: is required"),
        (broken(["questions", 0, "key"], "info rich"),
         "questions[0].key: must be a slug (lowercase letters, digits, - and _; at most 60 "
         "characters)"),
        (broken(["questions", 1, "key"], "info"),
         'questions[1].key: duplicate of questions[0].key ("info")'),
        (broken(["questions", 0, "type"], "stars"),
         "questions[0].type: must be one of scale, likert, yesno, choice, text"),
        (broken(["questions", 0, "level"], "utterance"),
         "questions[0].level: must be one of dialogue, turn"),
        (broken(["questions", 0, "level"], delete=True), "questions[0].level: is required"),
        (broken(["questions", 0, "label"], delete=True), "questions[0].label: is required"),
        (broken(["questions", 0, "lable"], {"en": "x"}), "questions[0].lable: unknown field"),
        (broken(["questions", 0, "points"], 5), "questions[0].points: not used by scale questions"),
        (broken(["questions", 0, "levels", "3"], {"en": "too many"}),
         "questions[0].levels.3: not a value of the scale (0..2)"),
        (broken(["questions", 0, "levels", "1"], {"en": ""}),
         "questions[0].levels.1.en: must be non-empty text"),
        (broken(["questions", 0, "skills"], []),
         "questions[0].skills: must be a non-empty list of skill keys (leave it out for every "
         "skill)"),
        (broken(["questions", 0, "skills", 1], "knowledge"),
         'questions[0].skills[1]: duplicate skill "knowledge"'),
        (broken(["questions", 0, "category"], "style"),
         "questions[0].category: not defined in categories"),
        (broken(["questions", 0, "gate"], True),
         "questions[0].gate: only yesno questions can be gates"),
        (broken(["questions", 2, "gate"], "yes"), "questions[2].gate: must be true or false"),
        (broken(["questions", 0, "max_turns"], 3),
         "questions[0].max_turns: only turn-level questions have max_turns"),
        (broken(["questions", 2, "max_turns"], 0),
         "questions[2].max_turns: must be an integer ≥ 1"),
        (broken(["questions", 1, "points"], 11),
         "questions[1].points: must be an integer from 2 to 10"),
        (broken(["questions", 2, "positive"], "maybe"),
         'questions[2].positive: must be "yes" or "no"'),
        (broken(["questions", 3, "options"], [{"label": {"en": "only"}}]),
         "questions[3].options: must be a list of at least 2 options"),
        (broken(["questions", 3, "options", 1, "score"], None),
         "questions[3].options: give a score to every option or to none"),
        (broken(["questions", 3, "options", 1, "score"], "high"),
         "questions[3].options[1].score: must be a number"),
        (broken(["questions", 3, "measurement"], "ratio"),
         "questions[3].measurement: must be one of nominal, ordinal, interval"),
        (broken(["questions", 4, "measurement"], "nominal"),
         "questions[4].measurement: not used by text questions"),
    ],
)  # fmt: skip
def test_it_refuses_a_broken_spec_naming_the_path(spec: Any, message: str) -> None:
    assert errors_of(spec) == [message]


def test_it_reports_every_problem_at_once() -> None:
    spec = good_spec()
    spec["version"] = "1"
    spec["questions"][0]["max"] = -1
    spec["questions"][3]["type"] = "multiple"
    assert errors_of(spec) == [
        "version: must be an integer from 1 to 1000000",
        "questions[0].max: must be greater than min",
        "questions[3].type: must be one of scale, likert, yesno, choice, text",
    ]
    assert str(RubricSpecError([("a", "b"), ("c", "d")])) == "a: b; c: d"


def test_normalised_rubrics_need_max_turns_on_turn_level_questions() -> None:
    spec = broken(["overall"], "normalised_100")
    spec["questions"][3].pop("max_turns", None)
    assert errors_of(spec) == [
        "questions[3].max_turns: required for turn-level questions when overall is normalised_100"
    ]


def test_an_overall_score_needs_a_scored_question_that_is_not_a_gate() -> None:
    spec = good_spec()
    spec["questions"] = [spec["questions"][2], spec["questions"][4]]
    assert errors_of(spec) == [
        'questions: overall "mean" needs a scored question that is not a gate (text is not '
        "scored; a choice needs option scores)"
    ]
    spec["overall"] = "none"
    assert validate_spec(spec).overall == "none"


def test_applicable_questions_follow_skill_and_level() -> None:
    spec = good_spec()
    assert [q.key for q in applicable_questions(spec, "persona")] == [
        "natural", "safe", "style", "comment",
    ]  # fmt: skip
    assert [q.key for q in applicable_questions(spec, "knowledge", "dialogue")] == [
        "info", "natural", "comment",
    ]  # fmt: skip
    assert len(applicable_questions(spec, None)) == 5


@pytest.mark.parametrize(
    ("question", "value", "turn", "expected"),
    [
        ("info", 2, None, 2.0),
        ("info", "1", None, 1.0),
        ("info", 0.0, None, 0.0),
        ("natural", 5, None, 5.0),
        ("safe", True, 0, 1.0),
        ("safe", "no", 4, 0.0),
        ("safe", "是", 1, 1.0),
        ("style", 2, 3, 2.0),
        ("comment", "很好", None, "很好"),
    ],
)
def test_it_accepts_and_normalises_valid_answers(
    question: str, value: Any, turn: int | None, expected: Any
) -> None:
    assert validate_answer(good_spec(), question, value, turn=turn) == expected


@pytest.mark.parametrize(
    ("question", "value", "turn", "skill", "message"),
    [
        ("info", 3, None, None, "info: expected a whole number from 0 to 2, got 3"),
        ("info", 1.5, None, None, "info: expected a whole number from 0 to 2, got 1.5"),
        ("info", True, None, None, "info: expected a whole number from 0 to 2, got True"),
        ("info", "high", None, None, "info: expected a whole number from 0 to 2, got 'high'"),
        ("info", float("nan"), None, None, "info: expected a whole number from 0 to 2, got nan"),
        ("natural", 0, None, None, "natural: expected a whole number from 1 to 5, got 0"),
        ("safe", 2, 0, None, "safe: expected yes or no (1 or 0), got 2"),
        ("style", 3, 0, None, "style: expected an option index from 0 to 2, got 3"),
        ("comment", "   ", None, None, "comment: expected non-empty text"),
        ("comment", "x" * 5001, None, None, "comment: text longer than 5000 characters"),
        ("info", 1, 0, None, "info: a dialogue-level question takes no turn"),
        ("safe", 1, None, None,
         "safe: a turn-level question needs the index of the model turn (0 = first)"),
        ("safe", 1, 5, None, "safe: turn 5 is beyond max_turns 5 (turns count from 0)"),
        ("safe", 1, -1, None, "safe: turn must be a whole number ≥ 0, got -1"),
        ("info", 1, None, "persona", "info: does not apply to skill 'persona'"),
        ("fluency", 1, None, None, "unknown question 'fluency' (rubric demo v2)"),
    ],
)  # fmt: skip
def test_it_refuses_invalid_answers_with_a_clear_message(
    question: str, value: Any, turn: int | None, skill: str | None, message: str
) -> None:
    with pytest.raises(AnswerError) as caught:
        validate_answer(good_spec(), question, value, turn=turn, skill=skill)
    assert str(caught.value) == message


def test_validation_does_not_mutate_the_spec() -> None:
    spec = good_spec()
    before = copy.deepcopy(spec)
    validate_spec(spec)
    assert spec == before
