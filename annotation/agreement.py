"""Inter-rater agreement per question, and each rater's deviation from the others.

Seed 001 checks its yes/no questions with Randolph's free-marginal multirater kappa ("Free
Marginal Kappa (Randolph, J. J. 2005)"); the job page also reports Fleiss' kappa (Fleiss 1971),
Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability") and the
percent agreement they all start from.

Data layout: a raters × items array, NaN where a rater did not rate an item (the layout of
Krippendorff's reliability data); an item is a unit, or a (unit, model turn) for turn-level
questions. Krippendorff's alpha uses every item with at least two ratings, so unequal numbers of
raters are fine. Fleiss' and Randolph's kappas are defined for a fixed number of raters per item:
they raise UnequalRatersError on ragged data; `complete_items` keeps the items rated by the usual
number of raters, and `question_agreement` reports how many it dropped.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike

from annotation.rubric_spec import AnswerError, Question, RubricSpec, as_spec, validate_answer
from annotation.scoring import Answer, as_answers

Measurement = Literal["nominal", "ordinal", "interval"]


class UnequalRatersError(ValueError):
    """Fleiss' or Randolph's kappa asked of items rated by different numbers of raters."""


@dataclass(frozen=True)
class RatingMatrix:
    """One question's answers as raters × items (NaN: not rated), with the row/column labels."""

    question: str
    values: np.ndarray
    items: list[tuple[Hashable, int | None]]  # (unit, turn)
    raters: list[Hashable]


@dataclass(frozen=True)
class QuestionAgreement:
    """Agreement on one question. Kappas and percent agreement use the `n_items_complete`
    items rated by `raters_per_item` raters; alpha uses all items with ≥ 2 ratings.
    A value is None where it is undefined (too few ratings, or no variation at all)."""

    question: str
    measurement: str
    n_items: int
    n_raters: int
    raters_per_item: int | None
    n_items_complete: int
    n_items_dropped: int
    percent_agreement: float | None
    randolph_kappa: float | None
    fleiss_kappa: float | None
    krippendorff_alpha: float | None
    # How second-level answers skipped after a failed gate were counted (``GATE_CONVENTIONS``).
    convention: str = "missing"


@dataclass(frozen=True)
class RaterDeviation:
    """A rater's answers minus the mean of the other raters on the same items, on a 0..1 scale
    (each question's range mapped to 0..1). `z` places `mean_abs_deviation` among all raters;
    `flagged` when z exceeds the threshold. With n raters no z can exceed (n − 1)/√n, so a
    2-SD flag needs at least 6 raters. `n` counts the answers compared (items another rater
    also answered); `n_answers` all the rater's numeric answers, compared or not."""

    rater: Hashable
    n: int
    mean_deviation: float | None
    mean_abs_deviation: float | None
    z: float | None
    flagged: bool
    n_answers: int = 0


def percent_agreement(data: ArrayLike) -> float | None:
    """Mean over items (≥ 2 ratings) of the share of agreeing rater pairs (Fleiss' P̄), 0..1."""
    counts = _category_counts(_matrix(data))[1]
    n = counts.sum(axis=1)
    keep = n >= 2
    if not keep.any():
        return None
    return float(_pair_agreement(counts[keep]).mean())


def fleiss_kappa(data: ArrayLike) -> float | None:
    """Fleiss' kappa: (P̄ − P̄e) / (1 − P̄e), with P̄e from the pooled category proportions."""
    counts = _equal_rater_counts(_matrix(data), "Fleiss' kappa")
    if counts is None:
        return None
    proportions = counts.sum(axis=0) / counts.sum()
    expected = float((proportions**2).sum())
    if expected >= 1.0:
        return None
    return (float(_pair_agreement(counts).mean()) - expected) / (1.0 - expected)


def randolph_kappa(data: ArrayLike, n_categories: int) -> float | None:
    """Randolph's free-marginal kappa (seed 001): (P̄ − 1/k) / (1 − 1/k), k the number of
    categories a rater could choose from (2 for yes/no), not only those observed."""
    matrix = _matrix(data)
    if n_categories < 2:
        raise ValueError("free-marginal kappa needs at least 2 categories")
    observed = np.unique(matrix[~np.isnan(matrix)]).size
    if observed > n_categories:
        raise ValueError(f"{observed} distinct values observed but n_categories is {n_categories}")
    counts = _equal_rater_counts(matrix, "Randolph's kappa")
    if counts is None:
        return None
    chance = 1.0 / n_categories
    return (float(_pair_agreement(counts).mean()) - chance) / (1.0 - chance)


def krippendorff_alpha(data: ArrayLike, level: Measurement = "nominal") -> float | None:
    """Krippendorff's alpha, 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck, from the coincidence
    matrix of the items with ≥ 2 ratings; missing ratings are simply not paired."""
    values, counts = _category_counts(_matrix(data))
    pairable = counts.sum(axis=1)
    counts, pairable = counts[pairable >= 2], pairable[pairable >= 2]
    if counts.size == 0:
        return None
    weight = 1.0 / (pairable - 1.0)
    coincidence = np.einsum("uc,uk,u->ck", counts, counts, weight) - np.diag(weight @ counts)
    marginals = coincidence.sum(axis=1)
    delta = _delta(level, values, marginals)
    expected = float(marginals @ delta @ marginals)
    if expected == 0.0:
        return None
    return 1.0 - (float(marginals.sum()) - 1.0) * float((coincidence * delta).sum()) / expected


def complete_items(data: ArrayLike) -> tuple[np.ndarray, int]:
    """The items rated by the most common number (≥ 2) of raters, and how many rated items were
    dropped; ties between counts keep the larger one."""
    matrix = _matrix(data)
    n = (~np.isnan(matrix)).sum(axis=0)
    tally = Counter(int(k) for k in n if k >= 2)
    if not tally:
        return matrix[:, :0], int((n > 0).sum())
    target = max(tally, key=lambda k: (tally[k], k))
    keep = n == target
    return matrix[:, keep], int((n > 0).sum() - keep.sum())


def rating_matrix(
    spec: RubricSpec | Mapping[str, Any],
    answers: Iterable[Answer | Mapping[str, Any]],
    question: str,
) -> RatingMatrix:
    """The raters × items matrix of one question's (validated) answers, in order of appearance."""
    rubric = as_spec(spec)
    q = rubric.question(question)
    return _rating_matrix(rubric, q, [a for a in as_answers(answers) if a.question == question])


def question_agreement(
    spec: RubricSpec | Mapping[str, Any],
    answers: Iterable[Answer | Mapping[str, Any]],
    *,
    measurement: Measurement | None = None,
    gate_convention: str = "missing",
    skills: Mapping[Hashable, str | None] | None = None,
) -> list[QuestionAgreement]:
    """Agreement on every question of the rubric except free text, in rubric order.

    Alpha's level of measurement is the question's (`measurement` in the spec: nominal for yes/no
    and choice, ordinal for scale and Likert by default); `measurement` here overrides it for
    scale and Likert questions (e.g. "interval"). Answers are the raw answers: a second-level
    question a rater skipped after a failed gate is missing, not 0 (``gate_convention="missing"``);
    ``"zero"`` counts it as the answer that scores 0, the convention of seed 001's score
    (:func:`gate_skips_as_zero`).
    """
    rubric = as_spec(spec)
    if gate_convention not in GATE_CONVENTIONS:
        raise ValueError(f"gate_convention must be one of {GATE_CONVENTIONS}")
    records = as_answers(answers)
    if gate_convention == "zero":
        records = gate_skips_as_zero(rubric, records, skills=skills)
    by_question: dict[str, list[Answer]] = defaultdict(list)
    for answer in records:
        by_question[answer.question].append(answer)
    unknown = set(by_question) - {q.key for q in rubric.questions}
    if unknown:
        raise AnswerError(f"unknown question {sorted(unknown)[0]!r} (rubric {rubric.key})")
    results = []
    for q in rubric.questions:
        if q.type == "text":
            continue
        matrix = _rating_matrix(rubric, q, by_question[q.key])
        # rubric_spec admits only MEASUREMENTS, and only text questions (skipped above) have none
        level = cast(
            Measurement,
            measurement if measurement and q.type in ("scale", "likert") else q.measurement,
        )
        complete, dropped = complete_items(matrix.values)
        ratings_per_item = (~np.isnan(complete)).sum(axis=0)
        has_complete = complete.shape[1] > 0
        results.append(
            QuestionAgreement(
                question=q.key,
                measurement=level,
                n_items=len(matrix.items),
                n_raters=len(matrix.raters),
                raters_per_item=int(ratings_per_item[0]) if has_complete else None,
                n_items_complete=complete.shape[1],
                n_items_dropped=dropped,
                percent_agreement=percent_agreement(complete) if has_complete else None,
                randolph_kappa=(randolph_kappa(complete, q.n_values) if has_complete else None),
                fleiss_kappa=fleiss_kappa(complete) if has_complete else None,
                krippendorff_alpha=krippendorff_alpha(matrix.values, level),
                convention=gate_convention,
            )
        )
    return results


def rater_deviations(
    spec: RubricSpec | Mapping[str, Any],
    answers: Iterable[Answer | Mapping[str, Any]],
    *,
    question: str | None = None,
    z_threshold: float = 2.0,
) -> list[RaterDeviation]:
    """Per rater: answer minus the mean of the other raters of the same item, pooled over the
    numeric questions (yes/no, scale, Likert, ordered choice) or one `question`."""
    rubric = as_spec(spec)
    items = as_answers(answers)
    deviations: dict[Hashable, list[np.ndarray]] = defaultdict(list)
    answered: dict[Hashable, int] = defaultdict(int)
    for q in rubric.questions:
        numeric = q.type in ("yesno", "scale", "likert") or (
            q.type == "choice" and q.measurement != "nominal"
        )
        if not numeric or (question is not None and q.key != question):
            continue
        matrix = _rating_matrix(rubric, q, [a for a in items if a.question == q.key])
        scaled = (matrix.values - q.minimum) / (q.maximum - q.minimum)
        rated = ~np.isnan(scaled)
        totals, n = np.nansum(scaled, axis=0), rated.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            others = (totals - scaled) / (n - 1)
        deviation = np.where(rated & (n >= 2), scaled - others, np.nan)
        for row, rater in enumerate(matrix.raters):
            deviations[rater].append(deviation[row][~np.isnan(deviation[row])])
            answered[rater] += int(rated[row].sum())
    pooled = {rater: np.concatenate(parts) for rater, parts in deviations.items()}
    mean_abs = {r: float(np.abs(d).mean()) for r, d in pooled.items() if d.size}
    spread = np.std(list(mean_abs.values()), ddof=1) if len(mean_abs) > 1 else 0.0
    centre = float(np.mean(list(mean_abs.values()))) if mean_abs else 0.0
    results = []
    for rater, d in pooled.items():
        z = float((mean_abs[rater] - centre) / spread) if d.size and spread > 0 else None
        results.append(
            RaterDeviation(
                rater=rater,
                n=int(d.size),
                mean_deviation=float(d.mean()) if d.size else None,
                mean_abs_deviation=mean_abs.get(rater),
                z=z,
                flagged=z is not None and z > z_threshold,
                n_answers=answered[rater],
            )
        )
    return results


def _numeric_answer(rubric: RubricSpec, key: str, answer: Answer) -> float:
    """`validate_answer` for a question with a numeric answer (every type but text)."""
    value = validate_answer(rubric, key, answer.value, turn=answer.turn)
    if isinstance(value, str):
        raise AnswerError(f"{key}: free-text answers have no agreement")
    return value


def _rating_matrix(rubric: RubricSpec, q: Question, answers: list[Answer]) -> RatingMatrix:
    if q.type == "text":
        raise AnswerError(f"{q.key}: free-text answers have no agreement")
    items: dict[tuple[Hashable, int | None], int] = {}
    raters: dict[Hashable, int] = {}
    cells: dict[tuple[int, int], float] = {}
    for answer in answers:
        value = _numeric_answer(rubric, q.key, answer)
        item = items.setdefault((answer.unit, answer.turn), len(items))
        rater = raters.setdefault(answer.rater, len(raters))
        if (rater, item) in cells:
            raise AnswerError(
                f"{q.key}: rater {answer.rater!r} answered unit {answer.unit!r}"
                f"{'' if answer.turn is None else f' turn {answer.turn}'} twice"
            )
        cells[(rater, item)] = value
    values = np.full((len(raters), len(items)), np.nan)
    for (rater, item), value in cells.items():
        values[rater, item] = value
    return RatingMatrix(question=q.key, values=values, items=list(items), raters=list(raters))


def _matrix(data: ArrayLike) -> np.ndarray:
    matrix: np.ndarray = np.asarray(data, dtype=float)
    if matrix.ndim != 2:
        raise ValueError("ratings must be a 2-D raters × items array (NaN for missing)")
    return matrix


def _category_counts(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The observed values (sorted) and the items × values table of how many raters chose each."""
    rated = ~np.isnan(matrix)
    values, codes = np.unique(matrix[rated], return_inverse=True)
    counts = np.zeros((matrix.shape[1], values.size))
    np.add.at(counts, (np.nonzero(rated)[1], codes), 1.0)
    return values, counts


def _pair_agreement(counts: np.ndarray) -> np.ndarray:
    n = counts.sum(axis=1)
    agreement: np.ndarray = ((counts**2).sum(axis=1) - n) / (n * (n - 1))
    return agreement


def _equal_rater_counts(matrix: np.ndarray, name: str) -> np.ndarray | None:
    counts = _category_counts(matrix)[1]
    n = counts.sum(axis=1)
    counts, n = counts[n > 0], n[n > 0]
    if n.size == 0:
        return None
    if n.min() != n.max():
        raise UnequalRatersError(
            f"{name} needs the same number of raters on every item; these items have "
            f"{int(n.min())} to {int(n.max())} ratings. Keep the complete items "
            "(complete_items) or use Krippendorff's alpha, which allows missing ratings."
        )
    return counts if n[0] >= 2 else None


def _delta(level: Measurement, values: np.ndarray, marginals: np.ndarray) -> np.ndarray:
    """Krippendorff's squared difference δ²_ck between the observed values c and k."""
    delta: np.ndarray
    if level == "nominal":
        delta = 1.0 - np.eye(values.size)
        return delta
    if level == "interval":
        delta = np.subtract.outer(values, values) ** 2
        return delta
    if level == "ordinal":
        # δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over the ranks between c and k.
        cumulative = np.cumsum(marginals)
        rank = np.arange(values.size)
        low, high = np.minimum.outer(rank, rank), np.maximum.outer(rank, rank)
        between = cumulative[high] - cumulative[low] + marginals[low]
        delta = (between - np.add.outer(marginals, marginals) / 2.0) ** 2
        return delta
    raise ValueError(f"unknown level of measurement {level!r}; use nominal, ordinal or interval")


GATE_CONVENTIONS = ("missing", "zero")


def gate_skips_as_zero(
    spec: RubricSpec | Mapping[str, Any],
    answers: Iterable[Answer | Mapping[str, Any]],
    *,
    skills: Mapping[Hashable, str | None] | None = None,
) -> list[Answer]:
    """The answers plus, for every second-level question a rater skipped after failing a gate,
    the answer that scores 0 (``no`` for a yes/no question whose positive answer is ``yes``; the
    scale's minimum) — seed 001's score convention, where such a question counts 0, applied to
    agreement. A gate failed at the dialogue level fills every turn the rater rated.

    ``skills`` (unit → skill) keeps questions that do not apply to a unit's skill unfilled.
    """
    rubric = as_spec(spec)
    records = as_answers(answers)
    by_unit: dict[tuple[Hashable, Hashable], list[Answer]] = defaultdict(list)
    for answer in records:
        by_unit[(answer.unit, answer.rater)].append(answer)
    filled = list(records)
    for (unit, rater), group in by_unit.items():
        skill = (skills or {}).get(unit)
        asked = [q for q in rubric.questions if q.applies_to(skill)]
        given = {(a.question, a.turn) for a in group}
        turns = sorted({a.turn for a in group if a.turn is not None})
        failed: set[int | None] = set()
        for answer in group:
            question = rubric.question(answer.question)
            if question.gate and question.score(_numeric_answer(rubric, question.key, answer)) == 0:
                failed.add(answer.turn)
        if not failed:
            continue
        for question in (q for q in asked if q.scored and not q.gate and q.type != "choice"):
            zero = _zero_answer(question)
            slots = [None] if question.level == "dialogue" else turns
            for turn in slots:
                gated = None in failed or turn in failed
                if gated and (question.key, turn) not in given:
                    filled.append(Answer(unit, rater, question.key, zero, turn))
    return filled


def _zero_answer(question: Question) -> float:
    if question.type == "yesno":
        return 0.0 if question.positive == "yes" else 1.0
    return float(question.minimum)


@dataclass(frozen=True)
class PooledKappa:
    """Randolph's free-marginal kappa over every yes/no question's items pooled (seed 001
    reports one such figure for its yes/no questions)."""

    convention: str
    n_items: int
    n_raters: int
    percent_agreement: float | None
    randolph_kappa: float | None


def pooled_yesno_kappa(
    spec: RubricSpec | Mapping[str, Any],
    answers: Iterable[Answer | Mapping[str, Any]],
    *,
    convention: str = "missing",
    skills: Mapping[Hashable, str | None] | None = None,
) -> PooledKappa:
    """One free-marginal kappa (k = 2) over the (question, unit, turn) items of all yes/no
    questions, gates included; items need the same number of raters, others are left out as in
    :func:`question_agreement`. ``convention``: ``missing`` drops second-level answers skipped
    after a failed gate, ``zero`` counts them as the answer that scores 0."""
    if convention not in GATE_CONVENTIONS:
        raise ValueError(f"convention must be one of {GATE_CONVENTIONS}, not {convention!r}")
    rubric = as_spec(spec)
    records = as_answers(answers)
    if convention == "zero":
        records = gate_skips_as_zero(rubric, records, skills=skills)
    yesno = {q.key for q in rubric.questions if q.type == "yesno"}
    items: dict[tuple[str, Hashable, int | None], int] = {}
    raters: dict[Hashable, int] = {}
    cells: dict[tuple[int, int], float] = {}
    for answer in records:
        if answer.question not in yesno:
            continue
        value = _numeric_answer(rubric, answer.question, answer)
        item = items.setdefault((answer.question, answer.unit, answer.turn), len(items))
        rater = raters.setdefault(answer.rater, len(raters))
        cells[(rater, item)] = value
    matrix = np.full((len(raters), len(items)), np.nan)
    for (rater, item), value in cells.items():
        matrix[rater, item] = value
    complete, _ = complete_items(matrix) if items else (matrix, 0)
    has = complete.shape[1] > 0 and complete.shape[0] > 0
    return PooledKappa(
        convention=convention,
        n_items=complete.shape[1],
        n_raters=len(raters),
        percent_agreement=percent_agreement(complete) if has else None,
        randolph_kappa=randolph_kappa(complete, 2) if has else None,
    )
