"""Seed 001 agreement conventions: second-level answers skipped after a failed gate dropped or
counted as 0, and one free-marginal kappa pooled over all yes/no questions (by hand)."""

from __future__ import annotations

import pytest

from annotation.agreement import gate_skips_as_zero, pooled_yesno_kappa, question_agreement

SPEC = {
    "key": "gated",
    "version": 1,
    "title": {"en": "Gated"},
    "overall": "normalised_100",
    "questions": [
        {"key": "g", "type": "yesno", "level": "dialogue", "gate": True, "label": {"en": "G"}},
        {"key": "a", "type": "yesno", "level": "dialogue", "label": {"en": "A"}},
        {"key": "b", "type": "yesno", "level": "dialogue", "label": {"en": "B"}},
    ],
}
# unit 1: both pass the gate; unit 2: r1 fails it and skips a and b, r2 answers no, no
ANSWERS = [
    {"unit": unit, "rater": rater, "question": q, "value": v}
    for unit, rater, q, v in [
        (1, "r1", "g", 1), (1, "r1", "a", 1), (1, "r1", "b", 0),
        (1, "r2", "g", 1), (1, "r2", "a", 1), (1, "r2", "b", 1),
        (2, "r1", "g", 0),
        (2, "r2", "g", 1), (2, "r2", "a", 0), (2, "r2", "b", 0),
    ]
]  # fmt: skip


def test_skipped_second_level_answers_are_dropped_from_the_pooled_kappa_by_default():
    result = pooled_yesno_kappa(SPEC, ANSWERS)
    # complete items: g@1 agree, a@1 agree, b@1 disagree, g@2 disagree -> P = 1/2, kappa 0
    assert (result.convention, result.n_items, result.n_raters) == ("missing", 4, 2)
    assert result.percent_agreement == pytest.approx(0.5)
    assert result.randolph_kappa == pytest.approx(0.0)


def test_counted_as_zero_they_agree_with_the_other_raters_no():
    result = pooled_yesno_kappa(SPEC, ANSWERS, convention="zero")
    # r1 skipped a@2, b@2: now "no", two more agreeing items -> P = 4/6, kappa (2/3 - 1/2) / (1/2)
    assert result.n_items == 6
    assert result.percent_agreement == pytest.approx(4 / 6)
    assert result.randolph_kappa == pytest.approx(1 / 3)


def test_the_fill_is_the_answer_that_scores_zero_and_only_where_skipped():
    spec = {
        **SPEC,
        "questions": [*SPEC["questions"][:2], {**SPEC["questions"][2], "positive": "no"}],
    }
    filled = gate_skips_as_zero(spec, ANSWERS)
    added = {(a.unit, a.rater, a.question): a.value for a in filled[len(ANSWERS) :]}
    assert added == {(2, "r1", "a"): 0.0, (2, "r1", "b"): 1.0}  # b scores for "no": fill "yes"


def test_per_question_agreement_takes_the_same_convention():
    [g, a, b] = question_agreement(SPEC, ANSWERS, gate_convention="zero")
    assert a.n_items_complete == 2 and a.percent_agreement == pytest.approx(1.0)
    [_, a_missing, _] = question_agreement(SPEC, ANSWERS)
    assert a_missing.n_items_complete == 1


def test_an_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="convention must be one of"):
        pooled_yesno_kappa(SPEC, ANSWERS, convention="ignore")
