"""Human scores from answers: one rater on one unit, then dialogues, systems and rankings.

Input is plain records (`Answer`, or dicts with the same keys), so the Django services feed it
from querysets and the import/export commands from files. A *unit* is what a rater rates as a
whole: a dialogue (a single-turn dialogue in static mode). Turn-level questions carry `turn`, the
0-based index of the model turn among the dialogue's model turns.

Conventions taken from the seeds:

- Gate rule, seed 001 单轮对话评测: the two first-level questions (grammar, unacceptable
  content) are answered before the ten second-level ones, and a reply that fails the first level
  scores 0 on the second. Here every gated question gets its lowest score (0 for yes/no), and the
  gates themselves are not counted in the overall score: the seed's full score has
  items × 5 × 2 × raters points, the ten second-level questions only.
- 0–100, seed 001: "满分 = 总测试题数 500 × 评测维度 5 × 判断指标 2 × 参与评测人数 3 = 15000",
  linearly mapped to 100. `normalised_score` is that ratio: Σ points / Σ full points × 100, where a
  yes/no question earns 1 point for its positive answer (a scale maps min..max onto 0..1). For the
  multi-turn protocol the full score counts every turn up to `max_turns` ("20 × 2 × 4 × 5 × 5 =
  4000"), so turns the conversation never reached earn nothing, as in the seed.
- MSDE (seed 000 §3.2) and Likert (seed 004) rubrics use the mean of their items.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from annotation.rubric_spec import (
    RESERVED_OVERALL_KEY,
    AnswerError,
    Question,
    RubricSpec,
    applicable_questions,
    as_spec,
    validate_answer,
)

OVERALL = RESERVED_OVERALL_KEY  # a question may not take this key while the rubric has an overall
# Bootstrap statistics are rows × resamples; chunking rows bounds them to about 40 MB of floats.
_BOOTSTRAP_CELLS = 5_000_000
Summary = tuple[float, float | None, int, float | None, float | None]  # mean, std, n, CI
Label = tuple[Hashable, str | None, str]  # unit (dialogue or system), skill, dimension


class IncompleteAnswersError(AnswerError):
    """A rater's answers for a unit lack a gate or a scored question that was not gated."""


@dataclass(frozen=True)
class Answer:
    """One rater's answer to one question, for a unit (dialogue) or one of its model turns."""

    unit: Hashable
    rater: Hashable
    question: str
    value: Any
    turn: int | None = None


@dataclass(frozen=True)
class UnitScore:
    """One rater's scores for one unit under a rubric, the gate rule applied.

    `scores` has one entry per (question, turn) slot (turn None for dialogue-level questions);
    `questions` one per question, a turn-level question's being the mean over its rated turns.
    `points` / `max_points` are the normalised points earned / possible (0..1 per slot) that the
    seed 001 0–100 score sums; a turn-level question has `max_turns` slots (without max_turns,
    one per rated turn).
    """

    unit: Hashable
    rater: Hashable
    skill: str | None
    gate_passed: bool
    scores: Mapping[tuple[str, int | None], float]
    questions: Mapping[str, float]
    overall: float | None
    points: float
    max_points: float
    n_unanswered: int = 0  # slots scored 0 because the rater left them unanswered


@dataclass(frozen=True)
class ScoreRow:
    """A summary of one dimension (a question key or `overall`) for a dialogue or a system.

    `unit` is the dialogue id (dialogue level) or the system name (system level); `n` counts
    raters (dialogue level) or dialogues (system level); the CI is a seeded percentile bootstrap
    over the same; `std` and the CI are None below 2 values. `rank` (system level only) is 1 for
    the best system within the same skill and dimension; ties share the lower rank.
    """

    unit: Hashable
    skill: str | None
    dimension: str
    mean: float
    std: float | None
    n: int
    ci_low: float | None
    ci_high: float | None
    rank: int | None = None


def as_answers(records: Iterable[Answer | Mapping[str, Any]]) -> list[Answer]:
    """Answers from dataclasses or dicts (keys unit, rater, question, value; optional turn)."""
    answers: list[Answer] = []
    for index, record in enumerate(records):
        if isinstance(record, Answer):
            answers.append(record)
            continue
        missing = [k for k in ("unit", "rater", "question", "value") if k not in record]
        if missing:
            raise AnswerError(f"record {index}: missing {', '.join(missing)}")
        answers.append(
            Answer(
                unit=record["unit"],
                rater=record["rater"],
                question=record["question"],
                value=record["value"],
                turn=record.get("turn"),
            )
        )
    return answers


def score_unit(
    spec: RubricSpec | Mapping[str, Any],
    answers: Iterable[Answer | Mapping[str, Any]],
    *,
    skill: str | None = None,
    unanswered: Literal["error", "zero"] = "error",
    n_turns: int | None = None,
    unit_rater: tuple[Hashable, Hashable] | None = None,
) -> UnitScore:
    """Score one rater's answers for one unit; the questions asked are those for `skill`.

    Every answer is validated (unknown question, wrong level, out of range → AnswerError). The
    turns of turn-level questions are those the rater answered anything for, plus, when
    `n_turns` (the unit's number of model turns) is given, every model turn up to each
    question's `max_turns`.

    A gate or a scored question that is not gated but has no answer raises
    IncompleteAnswersError, unless `unanswered="zero"`: seed 001's denominator is fixed
    ("20 × 2 × 4 × 5 × 5 = 4000" multi-turn), so an unanswered question earns nothing and still
    counts in the full score; `n_unanswered` counts such slots. An unanswered gate fails nothing
    (the answered second-level questions of its scope keep their scores). `unit_rater` names
    the unit and rater when there may be no answers at all (every slot unanswered).
    """
    rubric = as_spec(spec)
    items = as_answers(answers)
    if not items and (unit_rater is None or unanswered != "zero"):
        raise AnswerError("no answers to score")
    unit, rater = unit_rater if unit_rater is not None else (items[0].unit, items[0].rater)
    values: dict[tuple[str, int | None], float | str] = {}
    for answer in items:
        if (answer.unit, answer.rater) != (unit, rater):
            raise AnswerError(
                f"score_unit takes one rater's answers for one unit; got unit {answer.unit!r} "
                f"rater {answer.rater!r} besides unit {unit!r} rater {rater!r}"
            )
        slot = (answer.question, answer.turn)
        if slot in values:
            raise AnswerError(f"unit {unit!r}, rater {rater!r}: two answers for {_slot_name(slot)}")
        values[slot] = validate_answer(
            rubric, answer.question, answer.value, turn=answer.turn, skill=skill
        )

    asked = applicable_questions(rubric, skill)
    answered_turns = {turn for (_, turn) in values if turn is not None}
    turns = sorted(answered_turns | set(range(n_turns or 0)))
    missing: list[tuple[str, int | None]] = []
    scores: dict[tuple[str, int | None], float] = {}
    failed_scopes: set[int | None] = set()  # None: the whole unit; an int: that turn
    for gate in (q for q in asked if q.gate):
        for slot in _slots(gate, turns):
            if slot not in values:
                missing.append(slot)
                continue
            scores[slot] = gate.score(values[slot])  # type: ignore[arg-type]  # gates are yes/no: a float
            if scores[slot] == 0.0:
                failed_scopes.add(slot[1])

    points = max_points = 0.0
    for question in (q for q in asked if q.scored and not q.gate):
        if question.level == "dialogue":
            max_points += 1
        else:
            max_points += question.max_turns if question.max_turns is not None else len(turns)
        for slot in _slots(question, turns):
            if None in failed_scopes or slot[1] in failed_scopes:
                scores[slot] = question.min_score
            elif slot in values:
                scores[slot] = question.score(values[slot])  # type: ignore[arg-type]  # scored: never text
            else:
                missing.append(slot)
                if unanswered == "zero":
                    scores[slot] = question.min_score
                continue
            points += (scores[slot] - question.min_score) / (
                question.max_score - question.min_score
            )
    if missing and unanswered != "zero":
        raise IncompleteAnswersError(
            f"unit {unit!r}, rater {rater!r}: no answer for "
            + ", ".join(_slot_name(slot) for slot in missing)
        )

    per_question: dict[str, list[float]] = defaultdict(list)
    for (key, _), score in scores.items():
        per_question[key].append(score)
    question_scores = {key: float(np.mean(v)) for key, v in per_question.items()}
    counted = [q.key for q in asked if q.scored and not q.gate and q.key in question_scores]
    return UnitScore(
        unit=unit,
        rater=rater,
        skill=skill,
        gate_passed=not failed_scopes,
        scores=scores,
        questions=question_scores,
        overall=_overall(rubric.overall, counted, question_scores, scores, points, max_points),
        points=points,
        max_points=max_points,
        n_unanswered=len(missing),
    )


def score_all(
    spec: RubricSpec | Mapping[str, Any],
    answers: Iterable[Answer | Mapping[str, Any]],
    *,
    skills: Mapping[Hashable, str | None] | None = None,
) -> list[UnitScore]:
    """`score_unit` for every (unit, rater) in `answers`, in order of first appearance.

    `skills` maps each unit to its skill (None, or no mapping: every question is asked).
    """
    rubric = as_spec(spec)
    groups: dict[tuple[Hashable, Hashable], list[Answer]] = defaultdict(list)
    for answer in as_answers(answers):
        groups[(answer.unit, answer.rater)].append(answer)
    results = []
    for (unit, _), group in groups.items():
        if skills is not None and unit not in skills:
            raise AnswerError(f"no skill given for unit {unit!r}")
        skill = None if skills is None else skills[unit]
        results.append(score_unit(rubric, group, skill=skill))
    return results


def normalised_score(unit_scores: Iterable[UnitScore]) -> float | None:
    """Seed 001's 0–100 system score: Σ points / (items × questions × turns × raters) × 100.

    The denominator is Σ max_points over the (unit, rater) pairs, which equals the seed's
    items × 5 × 2 × raters (single turn) or items × 2 × 4 × 5 × raters (multi-turn) when every
    item has the same number of raters, and stays exact when they differ.
    """
    scores = list(unit_scores)
    full = sum(s.max_points for s in scores)
    return None if full == 0 else 100.0 * sum(s.points for s in scores) / full


def bootstrap_ci(
    values: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of the (weighted) mean; (None, None) below 2 values."""
    w = [1.0] * len(values) if weights is None else list(weights)
    _, _, _, low, high = _summaries([(list(values), w)], n_resamples, confidence, seed)[0]
    return low, high


def dialogue_scores(
    spec: RubricSpec | Mapping[str, Any],
    unit_scores: Iterable[UnitScore],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[ScoreRow]:
    """Per dialogue and dimension, the mean over raters (with std, n and a bootstrap CI)."""
    rubric = as_spec(spec)
    by_unit: dict[Hashable, list[UnitScore]] = defaultdict(list)
    for score in unit_scores:
        by_unit[score.unit].append(score)
    labels: list[Label] = []
    samples: list[tuple[list[float], list[float]]] = []
    for unit, scores in by_unit.items():
        for dimension in _dimensions(rubric):
            values, weights = _rater_values(rubric, scores, dimension)
            if values:
                labels.append((unit, scores[0].skill, dimension))
                samples.append((values, weights))
    return _rows(labels, _summaries(samples, n_resamples, confidence, seed))


def system_scores(
    spec: RubricSpec | Mapping[str, Any],
    unit_scores: Iterable[UnitScore],
    *,
    systems: Mapping[Hashable, str],
    by_skill: bool = True,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[ScoreRow]:
    """Per system (× skill) and dimension: mean over dialogues of the dialogue means, ranked.

    `systems` maps each unit to its system (backend) name. Each dialogue counts once whatever
    its number of raters; n, std and the bootstrap CI are over dialogues. For a `normalised_100`
    rubric the overall mean equals `normalised_score` of the group (seed 001's formula), and its
    CI resamples dialogues for the same ratio. With `by_skill=False` the skills are pooled (skill
    None). Rows come sorted by skill, dimension (rubric order) and rank.
    """
    rubric = as_spec(spec)
    groups: dict[tuple[str, str | None], dict[Hashable, list[UnitScore]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for score in unit_scores:
        if score.unit not in systems:
            raise AnswerError(f"no system given for unit {score.unit!r}")
        skill = score.skill if by_skill else None
        groups[(systems[score.unit], skill)][score.unit].append(score)
    labels: list[Label] = []
    samples: list[tuple[list[float], list[float]]] = []
    for (system, skill), units in groups.items():
        for dimension in _dimensions(rubric):
            # A dialogue weighs its full points for the 0–100 overall, so that the weighted mean
            # of dialogue scores is Σ points / Σ full points (normalised_score); else it weighs 1.
            ratio = dimension == OVERALL and rubric.overall == "normalised_100"
            values, weights = [], []
            for scores in units.values():
                rater_values, rater_weights = _rater_values(rubric, scores, dimension)
                if rater_values:
                    total = sum(rater_weights)
                    values.append(
                        sum(v * w for v, w in zip(rater_values, rater_weights, strict=True)) / total
                    )
                    weights.append(total if ratio else 1.0)
            if values:
                labels.append((system, skill, dimension))
                samples.append((values, weights))
    return _ranked(rubric, _rows(labels, _summaries(samples, n_resamples, confidence, seed)))


def _rows(labels: list[Label], summaries: list[Summary]) -> list[ScoreRow]:
    return [
        ScoreRow(unit, skill, dimension, mean, std, n, low, high)
        for (unit, skill, dimension), (mean, std, n, low, high) in zip(
            labels, summaries, strict=True
        )
    ]


def _ranked(rubric: RubricSpec, rows: list[ScoreRow]) -> list[ScoreRow]:
    from scipy.stats import rankdata  # here: scipy.stats costs web processes ~1 s to import

    order = {dimension: i for i, dimension in enumerate(_dimensions(rubric))}
    by_group: dict[tuple[str | None, str], list[ScoreRow]] = defaultdict(list)
    for row in rows:
        by_group[(row.skill, row.dimension)].append(row)
    ranked = []
    for skill, dimension in sorted(by_group, key=lambda g: (g[0] or "", order[g[1]])):
        group = by_group[(skill, dimension)]
        ranks = rankdata([-row.mean for row in group], method="min")
        ranked.extend(
            sorted(
                (replace(row, rank=int(rank)) for row, rank in zip(group, ranks, strict=True)),
                key=lambda row: (row.rank, str(row.unit)),
            )
        )
    return ranked


def _rater_values(
    rubric: RubricSpec, scores: list[UnitScore], dimension: str
) -> tuple[list[float], list[float]]:
    """One value per rater for a dimension, with the weight that keeps 0–100 exact."""
    if dimension != OVERALL or rubric.overall == "none":
        # without an overall score, a question may be keyed "overall" (rubric_spec refuses it
        # otherwise): it is then a question like any other
        values = [s.questions[dimension] for s in scores if dimension in s.questions]
        return values, [1.0] * len(values)
    rated = [(s.overall, s.max_points) for s in scores if s.overall is not None]
    overall = [value for value, _ in rated]
    if rubric.overall == "normalised_100":
        return overall, [max_points for _, max_points in rated]
    return overall, [1.0] * len(rated)


def _summaries(
    samples: list[tuple[list[float], list[float]]],
    n_resamples: int,
    confidence: float,
    seed: int,
) -> list[Summary]:
    """(weighted mean, std, n, ci_low, ci_high) of each (values, weights) sample.

    Samples of the same size share one seeded set of resamples (the draws a lone
    `default_rng(seed)` would make), held as counts (resamples × n: how often each value is
    drawn), so a resampled weighted mean is a matrix product and thousands of dialogue rows are
    bootstrapped at once; every row's CI is the same whichever other rows come with it.
    """
    by_size: dict[int, list[int]] = defaultdict(list)
    for position, (values, _) in enumerate(samples):
        by_size[len(values)].append(position)
    results: list[Summary | None] = [None] * len(samples)
    alpha = (1.0 - confidence) / 2.0
    for size, positions in by_size.items():
        v = np.array([samples[p][0] for p in positions], dtype=float)
        w = np.array([samples[p][1] for p in positions], dtype=float)
        means = (v * w).sum(axis=1) / w.sum(axis=1)
        stds = v.std(axis=1, ddof=1) if size > 1 else None
        lows = highs = None
        if size > 1:
            index = np.random.default_rng(seed).integers(0, size, size=(n_resamples, size))
            offsets = (index + size * np.arange(n_resamples)[:, None]).ravel()
            counts = np.bincount(offsets, minlength=n_resamples * size).reshape(n_resamples, size)
            lows, highs = np.empty(len(positions)), np.empty(len(positions))
            chunk = max(1, _BOOTSTRAP_CELLS // n_resamples)
            for start in range(0, len(positions), chunk):
                rows = slice(start, start + chunk)
                stats = ((v[rows] * w[rows]) @ counts.T) / (w[rows] @ counts.T)
                lows[rows], highs[rows] = np.quantile(stats, [alpha, 1.0 - alpha], axis=1)
        for row, p in enumerate(positions):
            results[p] = (
                float(means[row]),
                None if stds is None else float(stds[row]),
                size,
                None if lows is None else float(lows[row]),
                None if highs is None else float(highs[row]),
            )
    return [r for r in results if r is not None]


def _dimensions(rubric: RubricSpec) -> list[str]:
    keys = [q.key for q in rubric.questions if q.scored]
    return keys + [OVERALL] if rubric.overall != "none" else keys


def _overall(
    mode: str,
    counted: list[str],
    question_scores: Mapping[str, float],
    scores: Mapping[tuple[str, int | None], float],
    points: float,
    max_points: float,
) -> float | None:
    if mode == "mean":
        return float(np.mean([question_scores[k] for k in counted])) if counted else None
    if mode == "sum":
        return float(sum(score for (key, _), score in scores.items() if key in counted))
    if mode == "normalised_100":
        return 100.0 * points / max_points if max_points else None
    return None


def _slots(question: Question, turns: list[int]) -> list[tuple[str, int | None]]:
    if question.level == "dialogue":
        return [(question.key, None)]
    limit = question.max_turns
    return [(question.key, turn) for turn in turns if limit is None or turn < limit]


def _slot_name(slot: tuple[str, int | None]) -> str:
    key, turn = slot
    return key if turn is None else f"{key} (turn {turn})"
