"""Seed 001's fixed denominator: unanswered questions score 0 and stay in the full score.

Hand computations: a multi-turn rating has 8 yes/no indicators × 5 turns = 40 points (seed 001:
"20 × 2 × 4 × 5 × 5 = 4000" over 20 prompts and 5 testers); a single-turn rating has the 10
second-level questions (gates not counted).
"""

from __future__ import annotations

import pytest

from annotation.presets import preset_spec
from annotation.rubric_spec import AnswerError, validate_spec
from annotation.scoring import Answer, IncompleteAnswersError, normalised_score, score_unit

MULTI = validate_spec(preset_spec("yesno-multi-turn"))
SINGLE = validate_spec(preset_spec("yesno-single-turn"))
MULTI_KEYS = [q.key for q in MULTI.questions]
SECOND_LEVEL = [q.key for q in SINGLE.questions if not q.gate]


def turn_answers(unit, rater, turn: int, values: dict[str, int]) -> list[Answer]:
    return [Answer(unit, rater, key, value, turn) for key, value in values.items()]


def partly_rated_chat(unit="c1", rater="t1") -> list[Answer]:
    """Turn 0: all 8 yes. Turn 1: the 4 relevance indicators yes, the 4 divergence ones left
    unanswered. Turn 2 (the chat had 3 model replies): nothing answered."""
    full = turn_answers(unit, rater, 0, dict.fromkeys(MULTI_KEYS, 1))
    half = turn_answers(unit, rater, 1, dict.fromkeys(MULTI_KEYS[:4], 1))
    return full + half


def test_a_partly_rated_chat_is_refused_by_default():
    with pytest.raises(IncompleteAnswersError, match="turn 1"):
        score_unit(MULTI, partly_rated_chat())


def test_unanswered_indicators_score_zero_against_the_fixed_full_score():
    score = score_unit(MULTI, partly_rated_chat(), unanswered="zero", n_turns=3)
    # 8 + 4 yes out of 8 × 5 = 40 points → 30.0; unanswered: 4 on turn 1 and 8 on turn 2.
    assert (score.points, score.max_points) == (12.0, 40.0)
    assert score.overall == pytest.approx(30.0)
    assert score.n_unanswered == 12
    assert score.scores[("divergence_new", 1)] == 0.0
    assert score.scores[("relevance_topic", 2)] == 0.0


def test_a_partly_rated_tester_lowers_the_system_score_instead_of_vanishing():
    # Tester A rates two full turns (16 yes); tester B answers 5 of turn 0's 8 indicators yes
    # and leaves 3 unanswered. Fixed denominator: (16 + 5) / (2 testers × 40) = 26.25.
    # Dropping B (the old behaviour) would give 16 / 40 = 40.0.
    a = turn_answers("p1", "A", 0, dict.fromkeys(MULTI_KEYS, 1))
    a += turn_answers("p1", "A", 1, dict.fromkeys(MULTI_KEYS, 1))
    b = turn_answers("p1", "B", 0, dict.fromkeys(MULTI_KEYS[:5], 1))
    scores = [
        score_unit(MULTI, a, unanswered="zero", n_turns=2),
        score_unit(MULTI, b, unanswered="zero", n_turns=2),
    ]
    assert normalised_score(scores) == pytest.approx(26.25)
    assert [s.n_unanswered for s in scores] == [0, 3 + 8]


def test_a_rating_with_no_answers_at_all_scores_zero_out_of_the_full_score():
    score = score_unit(MULTI, [], unanswered="zero", n_turns=4, unit_rater=("c9", "t9"))
    assert (score.unit, score.rater, score.points, score.max_points) == ("c9", "t9", 0.0, 40.0)
    assert score.overall == 0.0 and score.n_unanswered == 4 * 8
    with pytest.raises(AnswerError, match="no answers"):
        score_unit(MULTI, [], n_turns=4, unit_rater=("c9", "t9"))


def test_turns_past_the_rubrics_limit_are_not_counted_as_unanswered():
    # 7 model replies, max_turns 5: only turns 0..4 are slots.
    score = score_unit(MULTI, [], unanswered="zero", n_turns=7, unit_rater=("c", "t"))
    assert score.n_unanswered == 5 * 8 and score.max_points == 40.0


def test_single_turn_unanswered_second_level_question_scores_zero():
    # Gates pass; 7 of the 10 second-level questions yes, 2 no, 1 unanswered → 7 / 10 = 70.0.
    values = {"grammatical": 1, "unacceptable": 0}
    values |= {key: int(i < 7) for i, key in enumerate(SECOND_LEVEL[:9])}
    score = score_unit(SINGLE, turn_answers("q", "r", None, values), unanswered="zero")
    assert (score.points, score.max_points, score.n_unanswered) == (7.0, 10.0, 1)
    assert score.overall == pytest.approx(70.0)


def test_an_unanswered_gate_fails_nothing_but_is_counted():
    values = {"unacceptable": 0} | dict.fromkeys(SECOND_LEVEL, 1)
    score = score_unit(SINGLE, turn_answers("q", "r", None, values), unanswered="zero")
    assert (score.points, score.n_unanswered, score.gate_passed) == (10.0, 1, True)
