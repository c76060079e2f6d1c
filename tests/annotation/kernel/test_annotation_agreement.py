"""Agreement values against the `krippendorff` package, statsmodels and hand computations."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from annotation.agreement import (
    Measurement,
    UnequalRatersError,
    complete_items,
    fleiss_kappa,
    krippendorff_alpha,
    percent_agreement,
    question_agreement,
    randolph_kappa,
    rater_deviations,
    rating_matrix,
)
from annotation.presets import preset_spec
from annotation.rubric_spec import AnswerError
from annotation.scoring import Answer

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the example with missing data:
# 4 observers × 12 units; alpha = 0.743 (nominal), 0.815 (ordinal), 0.849 (interval).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
# 3 raters × 4 yes/no items: yyy, yyn, nnn, nnn (raters × items, 1 = yes).
YESNO = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=float)


def test_free_marginal_kappa_by_hand() -> None:
    # P_i = (Σ n_ik² − n) / (n(n − 1)): 1, 1/3, 1, 1 → P̄o = 5/6; Randolph: (5/6 − 1/2) / (1/2).
    assert percent_agreement(YESNO) == pytest.approx(5 / 6)
    assert randolph_kappa(YESNO, 2) == pytest.approx(2 / 3)
    # Fleiss: p_yes = 5/12, p_no = 7/12, P̄e = 74/144 → (5/6 − 37/72) / (1 − 37/72) = 23/35.
    assert fleiss_kappa(YESNO) == pytest.approx(23 / 35)
    # On a 0–2 scale a third category could have been chosen: P̄e = 1/3.
    assert randolph_kappa(YESNO, 3) == pytest.approx((5 / 6 - 1 / 3) / (2 / 3))


def test_alpha_matches_krippendorffs_worked_example() -> None:
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "interval") == pytest.approx(0.849, abs=5e-4)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_the_krippendorff_package_on_the_worked_example(level: Measurement) -> None:
    expected = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement=level)
    assert krippendorff_alpha(KRIPPENDORFF_2011, level) == pytest.approx(expected, abs=1e-12)


@st.composite
def reliability_data(draw: st.DrawFn) -> np.ndarray:
    raters = draw(st.integers(2, 6))
    items = draw(st.integers(2, 25))
    categories = draw(st.integers(2, 5))
    values = draw(st.lists(st.integers(0, categories - 1), min_size=raters * items,
                           max_size=raters * items))  # fmt: skip
    missing = draw(st.lists(st.booleans(), min_size=raters * items, max_size=raters * items))
    data = np.array(values, dtype=float)
    data[np.array(missing)] = np.nan
    return data.reshape(raters, items)


@settings(max_examples=60, deadline=None, database=None)
@given(reliability_data(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_matches_the_krippendorff_package_with_missing_ratings(
    data: np.ndarray, level: Measurement
) -> None:
    try:
        with np.errstate(invalid="ignore", divide="ignore"):  # the package's 0/0 gives NaN
            expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    except ValueError:  # the package refuses data with fewer than two values
        expected = None
    ours = krippendorff_alpha(data, level)
    if expected is None or not np.isfinite(expected):
        assert ours is None
    else:
        assert ours == pytest.approx(expected, abs=1e-9)


@st.composite
def complete_data(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    raters, items, categories = (
        draw(st.integers(2, 7)),
        draw(st.integers(1, 30)),
        draw(st.integers(2, 5)),
    )
    values = draw(st.lists(st.integers(0, categories - 1), min_size=raters * items,
                           max_size=raters * items))  # fmt: skip
    return np.array(values, dtype=float).reshape(raters, items), categories


@settings(max_examples=60, deadline=None, database=None)
@given(complete_data())
def test_fleiss_and_randolph_match_statsmodels(case: tuple[np.ndarray, int]) -> None:
    data, categories = case
    table, _ = aggregate_raters(data.T.astype(int), n_cat=categories)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected_fleiss = sm_fleiss_kappa(table, method="fleiss")
    ours = fleiss_kappa(data)
    if np.isfinite(expected_fleiss):
        assert ours == pytest.approx(expected_fleiss, abs=1e-9)
    else:
        assert ours is None  # every rating in one category: chance agreement is 1
    assert randolph_kappa(data, categories) == pytest.approx(
        sm_fleiss_kappa(table, method="randolph"), abs=1e-9
    )


def test_kappas_refuse_unequal_raters_and_complete_items_drops_them() -> None:
    ragged = YESNO.copy()
    ragged[2, 1] = NAN
    with pytest.raises(UnequalRatersError, match="Fleiss' kappa needs the same number of raters"):
        fleiss_kappa(ragged)
    with pytest.raises(UnequalRatersError, match="items have 2 to 3 ratings"):
        randolph_kappa(ragged, 2)
    kept, dropped = complete_items(ragged)
    assert (kept.shape, dropped) == ((3, 3), 1)
    assert randolph_kappa(kept, 2) == pytest.approx(1.0)
    assert percent_agreement(ragged) == pytest.approx(1.0)  # pairwise: unequal n is fine


def test_undefined_values_are_none() -> None:
    assert krippendorff_alpha(np.ones((3, 4))) is None  # no variation at all
    assert fleiss_kappa(np.ones((3, 4))) is None
    assert randolph_kappa(np.ones((3, 4)), 2) == pytest.approx(1.0)
    single = np.array([[1.0, 0.0], [NAN, NAN]])
    assert percent_agreement(single) is None and krippendorff_alpha(single) is None
    with pytest.raises(ValueError, match="3 distinct values observed but n_categories is 2"):
        randolph_kappa(np.array([[0, 1, 2], [0, 1, 2]]), 2)
    with pytest.raises(ValueError, match="2-D raters × items"):
        fleiss_kappa([1, 2, 3])


def yesno_answers(matrix: np.ndarray, question: str) -> list[Answer]:
    return [
        Answer(f"u{item}", f"r{rater}", question, int(matrix[rater, item]))
        for rater in range(matrix.shape[0])
        for item in range(matrix.shape[1])
        if not np.isnan(matrix[rater, item])
    ]


def test_question_agreement_on_the_single_turn_rubric() -> None:
    spec = preset_spec("yesno-single-turn")
    ragged = YESNO.copy()
    ragged[2, 1] = NAN  # a rater skipped this question on item u1 (its gate failed)
    records = yesno_answers(YESNO, "grammatical") + yesno_answers(ragged, "relevance_content")
    results = {r.question: r for r in question_agreement(spec, records)}
    assert len(results) == 12
    grammatical = results["grammatical"]
    assert (grammatical.measurement, grammatical.n_items, grammatical.n_raters) == ("nominal", 4, 3)
    assert (
        grammatical.raters_per_item,
        grammatical.n_items_complete,
        grammatical.n_items_dropped,
    ) == (3, 4, 0)
    assert grammatical.randolph_kappa == pytest.approx(2 / 3)
    assert grammatical.fleiss_kappa == pytest.approx(23 / 35)
    assert grammatical.percent_agreement == pytest.approx(5 / 6)
    assert grammatical.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=YESNO, level_of_measurement="nominal")
    )
    relevance = results["relevance_content"]
    assert (relevance.n_items_complete, relevance.n_items_dropped) == (3, 1)
    assert relevance.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=ragged, level_of_measurement="nominal")
    )
    unanswered = results["emotion_tone"]
    assert (unanswered.n_items, unanswered.randolph_kappa, unanswered.krippendorff_alpha) == (
        0,
        None,
        None,
    )


def test_question_agreement_uses_ordinal_alpha_for_scales_unless_told_interval() -> None:
    spec = preset_spec("msde")
    records = [
        Answer(f"u{item}", f"r{rater}", "coh", int(KRIPPENDORFF_2011[rater, item]) % 3)
        for rater in range(4)
        for item in range(12)
        if not np.isnan(KRIPPENDORFF_2011[rater, item])
    ]
    matrix = rating_matrix(spec, records, "coh").values
    ordinal = {r.question: r for r in question_agreement(spec, records)}["coh"]
    interval = {r.question: r for r in question_agreement(spec, records, measurement="interval")}[
        "coh"
    ]
    assert ordinal.measurement == "ordinal" and interval.measurement == "interval"
    assert ordinal.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    )
    assert interval.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    )


def test_turn_level_items_are_unit_and_turn() -> None:
    spec = preset_spec("yesno-multi-turn")
    records = [Answer("c1", rater, "relevance_topic", 1, turn) for rater in "ab" for turn in (0, 1)]
    matrix = rating_matrix(spec, records, "relevance_topic")
    assert matrix.items == [("c1", 0), ("c1", 1)] and matrix.raters == ["a", "b"]
    with pytest.raises(AnswerError, match="rater 'a' answered unit 'c1' turn 0 twice"):
        rating_matrix(spec, records + records[:1], "relevance_topic")
    with pytest.raises(AnswerError, match="unknown question 'fluency'"):
        question_agreement(spec, [Answer("c1", "a", "fluency", 1, 0)])


def test_rater_deviation_from_the_others_by_hand() -> None:
    spec = preset_spec("msde")
    records = [
        Answer(unit, rater, "info", value)
        for unit in ("d1", "d2")
        for rater, value in (("r1", 2), ("r2", 2), ("r3", 0))
    ]
    result = {d.rater: d for d in rater_deviations(spec, records)}
    # r3: 0 − mean(2, 2) = −2 on a 0..2 range → −1; r1: 2 − mean(2, 0) = 1 → 0.5.
    assert (result["r3"].mean_deviation, result["r3"].mean_abs_deviation) == (-1.0, 1.0)
    assert (result["r1"].mean_deviation, result["r1"].n) == (0.5, 2)
    assert result["r3"].z == pytest.approx(2 / np.sqrt(3))  # the most 3 raters allow
    assert not result["r3"].flagged


def test_rater_deviation_flags_an_outlier_among_many_raters() -> None:
    spec = preset_spec("likert")
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, size=20)
    records = [
        Answer(
            item,
            f"r{rater}",
            "naturalness",
            int(truth[item]) if rater < 7 else int(6 - truth[item]),
        )
        for rater in range(8)
        for item in range(20)
    ]
    result = {d.rater: d for d in rater_deviations(spec, records, question="naturalness")}
    assert [r for r, d in result.items() if d.flagged] == ["r7"]
