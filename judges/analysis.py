"""Meta-evaluation of a judge against people (no Django imports).

- **Judge as rater** (:func:`rater_agreement`): per question, the judge's agreement with each
  expert and with the expert majority — Krippendorff's alpha (the platform's implementation,
  :func:`annotation.agreement.krippendorff_alpha`, at the question's measurement level) and
  Randolph's free-marginal kappa (seed 001's statistic) over the items both rated — next to the
  experts' agreement among themselves (alpha over all experts, and the mean of expert pairs), so
  "is the judge as consistent with the experts as they are with each other?" reads off one row.
- **Length bias** (:func:`length_bias`): Pearson r of the judge's score with reply length, and
  the partial correlation controlling for the human score,
  r_jl·h = (r_jl − r_jh r_lh) / √((1 − r_jh²)(1 − r_lh²)) — a judge that rewards length beyond
  what people reward has a positive partial r.
- **Position bias** (:func:`position_bias`): how often a pairwise verdict flips when the order is
  swapped, and how often the flipped verdicts favour the first-shown dialogue.
- **Self-preference** (:func:`self_preference`): when the judge's model is also an evaluated
  system, its standardised judge-minus-human score against the other systems' (Panickssery et
  al., 2024, "LLM Evaluators Recognize and Favor Their Own Generations", in spirit).
- **Score distributions** (:func:`distributions`) and **win rates** (:func:`win_rates`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations
from typing import Any, TypeVar

import numpy as np

from annotation.agreement import krippendorff_alpha, randolph_kappa
from annotation.rubric_spec import Question

Item = Hashable
_K = TypeVar("_K", bound=Hashable)


def n_categories(question: Question) -> int:
    if question.type == "yesno":
        return 2
    if question.type == "choice":
        return len(question.options)
    return question.maximum - question.minimum + 1


def _none_if_nan(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _pair(question: Question, a: Mapping[Item, float], b: Mapping[Item, float]) -> dict[str, Any]:
    shared = sorted(set(a) & set(b), key=str)
    if len(shared) < 2:
        return {"n": len(shared), "alpha": None, "kappa": None}
    matrix = np.array([[a[i] for i in shared], [b[i] for i in shared]], dtype=float)
    measurement = question.measurement or "nominal"
    return {
        "n": len(shared),
        "alpha": _none_if_nan(krippendorff_alpha(matrix, measurement)),  # type: ignore[arg-type]  # measurement strings are the rubric's own levels
        "kappa": _none_if_nan(randolph_kappa(matrix, n_categories(question))),
        "exact": float(np.mean(matrix[0] == matrix[1])),
    }


def expert_majority(
    question: Question, ratings: Mapping[Item, Mapping[Hashable, float]]
) -> dict[Item, float]:
    """Per item, the experts' most frequent answer; for ordinal/interval questions a tie is
    broken by the median of the tied values rounded down; a nominal tie leaves the item out."""
    out: dict[Item, float] = {}
    for item, by_rater in ratings.items():
        values = list(by_rater.values())
        if not values:
            continue
        counts = Counter(values)
        best = max(counts.values())
        tied = sorted(v for v in counts if counts[v] == best)
        if len(tied) == 1:
            out[item] = tied[0]
        elif (question.measurement or "nominal") != "nominal":
            out[item] = float(math.floor(float(np.median(tied))))
    return out


def rater_agreement(
    question: Question,
    ratings: Mapping[Item, Mapping[Hashable, float]],
    judge: Mapping[Item, float],
) -> dict[str, Any]:
    """Agreement of the judge with each expert, with the majority, and among the experts."""
    experts = sorted({r for by_rater in ratings.values() for r in by_rater}, key=str)
    per_expert = {}
    for expert in experts:
        theirs = {item: v[expert] for item, v in ratings.items() if expert in v}
        per_expert[str(expert)] = _pair(question, judge, theirs)
    majority = _pair(question, judge, expert_majority(question, ratings))
    items = sorted(ratings, key=str)
    among: float | None = None
    if experts and items:
        matrix = np.full((len(experts), len(items)), np.nan)
        for j, item in enumerate(items):
            for i, expert in enumerate(experts):
                if expert in ratings[item]:
                    matrix[i, j] = ratings[item][expert]
        among = _none_if_nan(krippendorff_alpha(matrix, question.measurement or "nominal"))  # type: ignore[arg-type]  # measurement strings are the rubric's own levels
    pair_alphas = []
    for one, two in combinations(experts, 2):
        a = {item: v[one] for item, v in ratings.items() if one in v}
        b = {item: v[two] for item, v in ratings.items() if two in v}
        alpha = _pair(question, a, b)["alpha"]
        if alpha is not None:
            pair_alphas.append(alpha)
    judge_alphas = [p["alpha"] for p in per_expert.values() if p["alpha"] is not None]
    return {
        "question": question.key,
        "measurement": question.measurement,
        "n_items": len(set(judge) & set(ratings)),
        "judge_vs_expert": per_expert,
        "judge_vs_majority": majority,
        "judge_vs_experts_mean_alpha": float(np.mean(judge_alphas)) if judge_alphas else None,
        "experts_alpha": among,
        "expert_pairs_mean_alpha": float(np.mean(pair_alphas)) if pair_alphas else None,
    }


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def partial_correlation(x: Sequence[float], y: Sequence[float], z: Sequence[float]) -> float | None:
    """Pearson partial correlation of x and y controlling for z (first-order formula)."""
    xa, ya, za = (np.asarray(v, dtype=float) for v in (x, y, z))
    r_xy, r_xz, r_yz = _pearson(xa, ya), _pearson(xa, za), _pearson(ya, za)
    if r_xy is None or r_xz is None or r_yz is None:
        return None
    denominator = math.sqrt((1 - r_xz**2) * (1 - r_yz**2))
    if denominator == 0:
        return None
    return (r_xy - r_xz * r_yz) / denominator


def length_bias(
    judge: Mapping[_K, float], human: Mapping[_K, float], length: Mapping[_K, float]
) -> dict[str, Any]:
    items = sorted(set(judge) & set(human) & set(length), key=str)
    j = np.array([judge[i] for i in items], dtype=float)
    h = np.array([human[i] for i in items], dtype=float)
    n = np.array([length[i] for i in items], dtype=float)
    return {
        "n": len(items),
        "judge_length_r": _pearson(j, n),
        "human_length_r": _pearson(h, n),
        "judge_length_partial_r": partial_correlation(j, n, h) if len(items) >= 4 else None,
    }


def position_bias(outcomes: Sequence[tuple[str | None, str | None]]) -> dict[str, Any]:
    """From (verdict with system 1 first, verdict with system 1 second) per pair and question:
    the flip rate and the share of flips that favoured whichever was shown first."""
    complete = [(f, b) for f, b in outcomes if f is not None and b is not None]
    first = {"A": 1.0, "B": 0.0, "tie": 0.5}
    flips = [(f, b) for f, b in complete if first[f] != 1.0 - first[b]]
    favour_first = [(f, b) for f, b in flips if f == "A" and b == "A"]
    favour_second = [(f, b) for f, b in flips if f == "B" and b == "B"]
    return {
        "n": len(complete),
        "flip_rate": len(flips) / len(complete) if complete else None,
        "first_position_rate": len(favour_first) / len(flips) if flips else None,
        "second_position_rate": len(favour_second) / len(flips) if flips else None,
    }


def self_preference(
    judge: Mapping[str, float], human: Mapping[str, float], own: str
) -> dict[str, Any] | None:
    """Per system means (judge, human); the own system's z(judge) − z(human) minus the mean of
    the other systems'. None when the judge's system is not among them or < 3 systems."""
    systems = sorted(set(judge) & set(human))
    if own not in systems or len(systems) < 3:
        return None
    j = np.array([judge[s] for s in systems])
    h = np.array([human[s] for s in systems])
    if np.std(j) == 0 or np.std(h) == 0:
        return None
    gap = (j - j.mean()) / j.std() - (h - h.mean()) / h.std()
    index = systems.index(own)
    others = np.delete(gap, index)
    return {
        "system": own,
        "judge_mean": float(j[index]),
        "human_mean": float(h[index]),
        "own_gap_z": float(gap[index]),
        "others_gap_z": float(others.mean()),
        "self_preference": float(gap[index] - others.mean()),
    }


def distributions(
    question: Question, judge: Sequence[float], human: Sequence[float]
) -> dict[str, Any]:
    """Shares of each answer value for the judge and for the experts, with means."""
    values = list(range(question.minimum, question.maximum + 1))
    if question.type == "yesno":
        values = [0, 1]

    def shares(data: Sequence[float]) -> dict[str, float]:
        counts = Counter(int(v) for v in data)
        total = sum(counts.values())
        return {str(v): (counts.get(v, 0) / total if total else 0.0) for v in values}

    return {
        "question": question.key,
        "values": [str(v) for v in values],
        "judge": shares(judge),
        "human": shares(human),
        "judge_mean": float(np.mean(judge)) if len(judge) else None,
        "human_mean": float(np.mean(human)) if len(human) else None,
        "n_judge": len(judge),
        "n_human": len(human),
    }


def win_rates(verdicts: Sequence[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    """Per system pair, from (system 1, system 2, verdict "1" | "2" | "tie"): wins, losses,
    ties and system 1's win rate (ties count half)."""
    table: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for one, two, verdict in verdicts:
        if verdict is None:
            continue
        if one > two:
            one, two = two, one
            verdict = {"1": "2", "2": "1"}.get(verdict, verdict)
        table[(one, two)][verdict] += 1
    rows = []
    for (one, two), counts in sorted(table.items()):
        n = sum(counts.values())
        rows.append(
            {
                "system_1": one,
                "system_2": two,
                "wins": counts["1"],
                "losses": counts["2"],
                "ties": counts["tie"],
                "n": n,
                "win_rate": (counts["1"] + 0.5 * counts["tie"]) / n if n else None,
            }
        )
    return rows
