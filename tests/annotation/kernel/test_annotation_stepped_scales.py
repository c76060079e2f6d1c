"""Scale and Likert questions with a `step` (half points): spec, answers, page options, kappa."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from annotation.agreement import krippendorff_alpha, question_agreement
from annotation.rubric_spec import (
    AnswerError,
    RubricSpecError,
    validate_answer,
    validate_spec,
)
from annotation.selectors.rating import question_views


def _spec(**question: Any) -> dict[str, Any]:
    base = {"key": "q", "type": "likert", "points": 5, "level": "dialogue", "label": {"en": "Q"}}
    merged = {k: v for k, v in (base | question).items() if v is not None}
    return {"key": "half", "version": 1, "title": {"en": "Half"}, "questions": [merged]}


def test_a_likert_question_with_step_half_accepts_half_points_and_refuses_others() -> None:
    spec = validate_spec(_spec(step=0.5))
    question = spec.questions[0]
    assert question.values == (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)
    assert question.n_values == 9
    assert validate_answer(spec, "q", "3.5") == 3.5
    assert validate_answer(spec, "q", 4) == 4.0
    for bad in ("3.25", 0.5, 5.5, "x", True):
        with pytest.raises(AnswerError, match=r"q: expected a number from 1 to 5 in steps of 0.5"):
            validate_answer(spec, "q", bad)


def test_without_a_step_answers_stay_whole_numbers() -> None:
    spec = validate_spec(_spec())
    assert spec.questions[0].step == 1.0 and spec.questions[0].n_values == 5
    with pytest.raises(AnswerError, match="q: expected a whole number from 1 to 5, got 1.5"):
        validate_answer(spec, "q", 1.5)


def test_a_decimal_step_is_exact() -> None:
    spec = validate_spec(_spec(type="scale", points=None, min=0, max=1, step=0.1))
    question = spec.questions[0]
    assert len(question.values) == 11 and question.values[3] == 0.3
    assert validate_answer(spec, "q", "0.3") == 0.3


@pytest.mark.parametrize(
    ("question", "path", "message"),
    [
        ({"step": 0.75}, "questions[0].step", "must divide the range 1..5 into whole steps"),
        ({"step": 0}, "questions[0].step", "must be a positive number"),
        ({"step": "0.5"}, "questions[0].step", "must be a positive number"),
        ({"step": 0.5, "levels": {"1.25": {"en": "?"}}}, "questions[0].levels.1.25", "steps"),
        (
            {"type": "yesno", "points": None, "step": 0.5},
            "questions[0].step",
            "not used by yesno questions",
        ),
    ],
)
def test_a_bad_step_is_refused_with_its_path(question: dict, path: str, message: str) -> None:
    spec = _spec(**question)
    with pytest.raises(RubricSpecError) as caught:
        validate_spec(spec)
    assert any(p == path and message in m for p, m in caught.value.errors), caught.value.errors


def test_level_definitions_may_name_half_points() -> None:
    spec = validate_spec(_spec(step=0.5, levels={"1.5": {"en": "between poor and fair"}}))
    assert spec.questions[0].levels["1.5"] == {"en": "between poor and fair"}


def test_the_annotation_page_offers_every_step() -> None:
    spec = validate_spec(_spec(step=0.5, levels={"2.5": {"en": "so-so"}}))
    view = question_views(questions=spec.questions, language="en", answers={("q", None): "2.5"})
    options = view[0].options
    assert [o.value for o in options] == ["1", "1.5", "2", "2.5", "3", "3.5", "4", "4.5", "5"]
    assert [o.shortcut for o in options][:3] == ["1", "", "2"]
    assert options[3].definition == "so-so"


def test_agreement_counts_the_steps_as_categories_and_alpha_uses_the_half_point_values() -> None:
    spec = validate_spec(_spec(step=0.5))
    # two raters, three items: (1.5, 1.5), (3, 3.5), (5, 5)
    answers = [
        {"unit": item, "rater": rater, "question": "q", "value": value}
        for item, pair in enumerate([(1.5, 1.5), (3.0, 3.5), (5.0, 5.0)])
        for rater, value in zip(("a", "b"), pair, strict=True)
    ]
    [result] = question_agreement(spec, answers, measurement="interval")
    # P̄ = (1 + 0 + 1) / 3; free-marginal chance 1/9 over the 9 values
    assert result.randolph_kappa == pytest.approx((2 / 3 - 1 / 9) / (1 - 1 / 9))
    matrix = np.array([[1.5, 3.0, 5.0], [1.5, 3.5, 5.0]])
    assert result.krippendorff_alpha == pytest.approx(krippendorff_alpha(matrix, "interval"))
    # by hand (interval): D_o = 2 * 0.25 / 6 ... over 6 pairable values
    values = matrix.ravel()
    d_o = 2 * (0.5**2) / 6
    d_e = sum((x - y) ** 2 for x in values for y in values) / (6 * 5)
    assert result.krippendorff_alpha == pytest.approx(1 - d_o / d_e)
