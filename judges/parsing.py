"""Reading a judge's reply: structured JSON first, robust fallbacks, never a silent score.

:func:`parse_reply` turns a reply into per-question values, checked against the rubric
(``Question.clean``: a 3 on a 0–2 scale is refused, not clipped). A reply is

- ``ok`` when every asked question has a valid value;
- ``incomplete`` when some have (those are kept; the others are not scored);
- ``truncated`` when nothing usable came back and the backend said it stopped at its length
  limit (``finish_reason == "length"``);
- ``refused`` when the model declined (OpenAI's ``refusal`` field, ``content_filter``, or a
  refusal phrase with no answer);
- ``unparseable`` otherwise.

The caller retries every status but ``ok`` up to the judge's limit and stores the last raw text.

:func:`geval_expectation` implements G-Eval's probability-weighted score (Liu et al., 2023,
"G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment", §2.3:
score = Σᵢ p(sᵢ) × sᵢ over the scale's values sᵢ), read from the top log-probabilities of the
token that carries each question's value. No Django imports.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.rubric_spec import AnswerError, Question

OK, INCOMPLETE, TRUNCATED, REFUSED, UNPARSEABLE, ERROR = (
    "ok",
    "incomplete",
    "truncated",
    "refused",
    "unparseable",
    "error",
)
STATUSES = (OK, INCOMPLETE, TRUNCATED, REFUSED, UNPARSEABLE, ERROR)
VERDICTS = ("A", "B", "tie")
RATIONALE_MAX_CHARS = 4000

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_REFUSAL = re.compile(
    r"(I can(?:no|')t (?:help|assist|evaluate|comply)|I'm sorry, but|I am unable to|"
    r"我无法|我不能|抱歉，我|申し訳ありません|お答えできません)",
    re.I,
)
_YES = {"yes", "y", "true", "是", "是的", "はい", "1"}
_NO = {"no", "n", "false", "否", "不是", "いいえ", "0"}
_TIE = {"tie", "draw", "equal", "平局", "相当", "持平", "引き分け", "同程度", "c"}


@dataclass
class Parsed:
    """What one reply yielded: values per question key (cleaned), rationale, status, problems."""

    values: dict[str, Any] = field(default_factory=dict)
    rationale: str = ""
    status: str = UNPARSEABLE
    problems: list[str] = field(default_factory=list)
    # Where in the raw text each question's value starts (for G-Eval), when known.
    offsets: dict[str, int] = field(default_factory=dict)


def _json_objects(text: str) -> list[tuple[dict[str, Any], int]]:
    """Every JSON object in the text (fenced blocks first), with its start offset."""
    found: list[tuple[dict[str, Any], int]] = []
    decoder = json.JSONDecoder()
    candidates = [(m.group(1), m.start(1)) for m in _FENCE.finditer(text)] + [(text, 0)]
    for chunk, base in candidates:
        index = chunk.find("{")
        while index != -1:
            try:
                obj, end = decoder.raw_decode(chunk, index)
            except ValueError:
                index = chunk.find("{", index + 1)
                continue
            if isinstance(obj, dict):
                found.append((obj, base + index))
            index = chunk.find("{", end)
    return found


def _verdict(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    token = value.strip().strip("\"'“”「」").strip()
    if token.upper() in ("A", "B"):
        return token.upper()
    if token.lower() in _TIE or token in _TIE:
        return "tie"
    for prefix in ("A", "B"):  # "A is better", "对话A", "Dialogue B"
        if re.fullmatch(
            rf"(?:dialogue|response|reply|对话|回复|対話|応答)?\s*{prefix}\b.*", token, re.I
        ):
            return prefix
    return None


def _clean(question: Question, value: Any) -> float:
    if question.type == "yesno" and isinstance(value, str):
        token = value.strip().strip("\"'").lower()
        if token in _YES:
            return 1.0
        if token in _NO:
            return 0.0
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+(?:\.0+)?)\s*(?:分|点|/\s*\d+)?\s*", value)
        if match:
            value = float(match.group(1))
    return float(question.clean(value))


def _value_offset(text: str, key: str, start: int) -> int | None:
    match = re.compile(rf'"{re.escape(key)}"\s*:\s*"?').search(text, start)
    return match.end() if match else None


def _lines_fallback(text: str, questions: Sequence[Question], pairwise: bool) -> dict[str, Any]:
    """``key: value`` lines (``info: 2``, ``丰富度：2``) when the reply holds no usable JSON."""
    found: dict[str, Any] = {}
    for q in questions:
        names = [re.escape(q.key)] + [re.escape(v) for v in q.label.values() if v]
        pattern = (
            rf"(?:{'|'.join(names)})\s*[:：=]\s*\**\s*([A-Za-z0-9\u4e00-\u9fff\u3040-\u30ff]+)"
        )
        match = re.search(pattern, text, re.I)
        if match:
            found[q.key] = match.group(1)
    return found


def parse_reply(
    text: str,
    questions: Sequence[Question],
    *,
    mode: str = "direct",
    finish_reason: str | None = None,
    refusal: str | None = None,
) -> Parsed:
    """Parse one reply to the asked ``questions`` (see the module docstring for statuses)."""
    pairwise = mode == "pairwise"
    parsed = Parsed()
    if refusal:
        parsed.status, parsed.problems = REFUSED, [f"refused: {refusal[:300]}"]
        return parsed
    container_key = "winners" if pairwise else "scores"
    raw_values: dict[str, Any] = {}
    for obj, offset in _json_objects(text):
        inner = obj.get(container_key)
        if not isinstance(inner, dict):
            inner = obj.get("scores") if isinstance(obj.get("scores"), dict) else obj
        hits = {q.key: inner[q.key] for q in questions if q.key in inner}
        if hits:
            raw_values = hits
            rationale = obj.get("rationale") or obj.get("reason") or obj.get("explanation")
            parsed.rationale = str(rationale)[:RATIONALE_MAX_CHARS] if rationale else ""
            for key in hits:
                position = _value_offset(text, key, offset)
                if position is not None:
                    parsed.offsets[key] = position
            break
    if not raw_values:
        raw_values = _lines_fallback(text, questions, pairwise)
        if raw_values and not parsed.rationale:
            parsed.rationale = text.strip()[:RATIONALE_MAX_CHARS]
    for q in questions:
        if q.key not in raw_values:
            continue
        raw = raw_values[q.key]
        if pairwise:
            verdict = _verdict(raw)
            if verdict is None:
                parsed.problems.append(f"{q.key}: expected A, B or tie, got {raw!r}")
            else:
                parsed.values[q.key] = verdict
            continue
        try:
            parsed.values[q.key] = _clean(q, raw)
        except (AnswerError, ValueError, TypeError) as exc:
            parsed.problems.append(str(exc) if isinstance(exc, AnswerError) else f"{q.key}: {exc}")
    missing = [q.key for q in questions if q.key not in parsed.values]
    if not missing:
        parsed.status = OK
    elif parsed.values:
        parsed.status = INCOMPLETE
        parsed.problems.append(f"no valid answer for {', '.join(missing)}")
    elif finish_reason == "length":
        parsed.status = TRUNCATED
        parsed.problems.append("the reply was cut at the length limit before the answer")
    elif finish_reason == "content_filter" or _REFUSAL.search(text or ""):
        parsed.status = REFUSED
        parsed.problems.append("the model declined to answer")
    else:
        parsed.status = UNPARSEABLE
        parsed.problems.append("no answer to the questions found in the reply")
    return parsed


# --- G-Eval -------------------------------------------------------------------------------------


def _candidate_value(question: Question, token: str) -> float | None:
    token = token.strip().strip("\"'").strip()
    if not token:
        return None
    if question.type == "yesno":
        lowered = token.lower()
        if lowered in ("yes", "是", "はい"):
            return 1.0
        if lowered in ("no", "否", "いいえ"):
            return 0.0
        return None
    if re.fullmatch(r"-?\d+", token):
        value = int(token)
        if question.minimum <= value <= question.maximum:
            return float(value)
    return None


def geval_expectation(
    question: Question, top_logprobs: Sequence[Mapping[str, Any]]
) -> float | None:
    """Σ p(v)·score(v) / Σ p(v) over the candidate tokens that are valid answers.

    The probabilities are renormalised over the valid values (G-Eval's practice: tokens that
    are not a scale value carry no score). None when no candidate is a valid value.
    """
    weights: dict[float, float] = {}
    for entry in top_logprobs:
        value = _candidate_value(question, str(entry.get("token", "")))
        logprob = entry.get("logprob")
        if value is None or not isinstance(logprob, int | float) or math.isnan(logprob):
            continue
        weights[value] = weights.get(value, 0.0) + math.exp(logprob)
    total = sum(weights.values())
    if total <= 0:
        return None
    return sum(question.score(v) * w for v, w in weights.items()) / total


def geval_scores(
    text: str,
    tokens: Sequence[Mapping[str, Any]],
    questions: Sequence[Question],
    parsed: Parsed,
) -> dict[str, float]:
    """Per question, the G-Eval expectation at the token where its value starts.

    ``tokens`` is OpenAI's ``logprobs.content``: ``[{"token", "logprob", "top_logprobs": […]}]``
    in order; their texts concatenate to the reply.
    """
    starts: list[int] = []
    position = 0
    for token in tokens:
        starts.append(position)
        position += len(str(token.get("token", "")))
    out: dict[str, float] = {}
    for q in questions:
        offset = parsed.offsets.get(q.key)
        if offset is None or q.key not in parsed.values:
            continue
        index = None
        for i, start in enumerate(starts):
            end = start + len(str(tokens[i].get("token", "")))
            if start <= offset < end:
                index = i
                break
        if index is None:
            continue
        # The value's token may start with the opening quote or a space ('"yes', ' 2').
        candidates = list(tokens[index].get("top_logprobs") or [])
        if not candidates:
            candidates = [
                {"token": tokens[index].get("token"), "logprob": tokens[index].get("logprob")}
            ]
        expectation = geval_expectation(q, candidates)
        if expectation is not None:
            out[q.key] = expectation
    return out


# --- samples and orders -------------------------------------------------------------------------


def majority(values: Sequence[Any]) -> Any:
    """The most frequent value; ties go to the smallest (numbers) or first seen (verdicts), so
    the choice never depends on dictionary order."""
    counts = Counter(values)
    best = max(counts.values())
    tied = [v for v in counts if counts[v] == best]
    if all(isinstance(v, int | float) for v in tied):
        return min(tied)
    return next(v for v in values if v in tied)


def aggregate_samples(question: Question, values: Sequence[float], how: str) -> float | None:
    """One question's score over ``n`` samples: ``mean`` of the scores, or the score of the
    ``majority`` answer."""
    if not values:
        return None
    if how == "majority":
        return question.score(majority(values))
    return sum(question.score(v) for v in values) / len(values)


_FIRST = {"A": 1.0, "B": 0.0, "tie": 0.5}


def first_outcome(verdict: Any) -> float | None:
    """The outcome of the system shown as A under ``verdict``: 1 win, 0.5 tie, 0 loss; None
    when ``verdict`` is not one."""
    return _FIRST.get(verdict) if isinstance(verdict, str) else None


def swap_aggregate(forward: str | None, backward: str | None) -> tuple[float | None, str | None]:
    """Combine a pair's verdicts asked in both orders into (score of the first system, verdict).

    ``forward``: the verdict with system 1 shown as A; ``backward``: with system 1 shown as B.
    The score is the mean of the two orders' outcomes for system 1 (1 win, 0.5 tie, 0 loss).
    The verdict follows MT-Bench's conservative rule (Zheng et al., 2023, "Judging LLM-as-a-Judge
    with MT-Bench and Chatbot Arena", §3.4): a system wins only when preferred in both orders;
    any inconsistency is a tie. With one order missing, that order alone decides.
    """
    outcomes = []
    if forward in _FIRST:
        outcomes.append(_FIRST[forward])
    if backward in _FIRST:
        outcomes.append(1.0 - _FIRST[backward])
    if not outcomes:
        return None, None
    score = sum(outcomes) / len(outcomes)
    if all(o == 1.0 for o in outcomes):
        return score, "1"
    if all(o == 0.0 for o in outcomes):
        return score, "2"
    return score, "tie"


def position_flip(forward: str | None, backward: str | None) -> bool | None:
    """Whether the verdict changed with the order (system 1 first vs second); None if either is
    missing. A consistent judge answers A then B (or B then A, or tie twice)."""
    if forward not in _FIRST or backward not in _FIRST:
        return None
    return _FIRST[forward] != 1.0 - _FIRST[backward]
