"""Judge scores from stored answers: plain records in, numbers out; no Django.

Like :mod:`annotation.scoring` for human raters, this is the arithmetic alone, so it runs (and is
tested) in a program without Django: the judge's plain configuration (:class:`JudgeConfig`, built
from a ``Judge`` row by :func:`judges.services.config.judge_config`), a dialogue as the judge
reads it (:class:`DialogueData`, loaded by :func:`judges.services.planning.load_dialogues`) and
its answers (anything shaped like :class:`StoredAnswer`: the ``JudgeAnswer`` rows a chunk has
just written, or plain records). :mod:`judges.services.chunks` writes what comes out as
``MetricScore`` rows; :mod:`judges.selectors` reads the pairwise outcomes for the judge pages.

Only valid answers count: a question without one has no score for that unit. The judge's own
overall uses the rubric's rule (:func:`annotation.scoring.score_unit`), the judge taken as one
rater.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from annotation.rubric_spec import Question, RubricSpec
from annotation.scoring import Answer, IncompleteAnswersError, score_unit
from chat.backends.base import BackendSpec
from judges import client as judge_client
from judges import parsing, prompts

OVERALL = "overall"
# `chat.models.Turn.Speaker.SYSTEM` (a test holds them equal): the model's turns.
SYSTEM_SPEAKER = "system"


class StoredAnswer(Protocol):
    """What scoring reads of one judge answer (a ``judges.models.JudgeAnswer`` row)."""

    @property
    def dialogue_id(self) -> int: ...

    @property
    def other_dialogue_id(self) -> int | None: ...

    @property
    def turn_id(self) -> int | None: ...

    @property
    def order(self) -> str: ...  # "" (direct), "ab" or "ba" (the two orders of a pair)

    @property
    def sample(self) -> int: ...

    @property
    def values(self) -> Mapping[str, Any]: ...  # question key → parsed value

    @property
    def geval(self) -> Mapping[str, float]: ...  # question key → G-Eval expectation


@dataclass(frozen=True)
class JudgeConfig:
    """A judge version's settings as plain values: what planning, execution and scoring read."""

    judge_id: int
    prefix: str
    mode: str
    spec: RubricSpec
    backend: BackendSpec
    n: int
    aggregate: str
    geval: bool
    params: judge_client.Params
    max_attempts: int
    templates: Mapping[str, str]
    rate_limit: float
    signature: str

    @property
    def model(self) -> str:
        config = self.backend.config
        return str(config.get("model") or config.get("model_path") or "")


def metric_names(*, mode: str, spec: RubricSpec, prefix: str) -> list[str]:
    """The run's metric names: one per scored question the mode judges, then overall."""
    if mode == "pairwise":
        keys = [q.key for q in spec.questions if q.scored and not q.gate and q.level == "dialogue"]
    else:
        keys = [q.key for q in spec.questions if q.scored]
    names = [f"{prefix}:{key}" for key in keys]
    if mode == "pairwise" or spec.overall != "none":
        names.append(f"{prefix}:{OVERALL}")
    return names


@dataclass
class DialogueData:
    """A dialogue as the judge reads it: its turns in order and what the prompts show."""

    id: int
    backend_id: int
    skill: str
    language: str
    grounding: dict[str, Any]
    scenario_id: int | None
    turns: list[tuple[int, str, str, list[str]]]  # (turn id, speaker, text, references)
    static: bool

    def model_turns(self) -> list[int]:
        """Positions (in ``turns``) of the model's turns; a static answer's is only the last."""
        positions = [i for i, t in enumerate(self.turns) if t[1] == SYSTEM_SPEAKER]
        if self.static:
            return positions[-1:] if positions and positions[-1] == len(self.turns) - 1 else []
        return positions

    def view(self, upto: int | None = None) -> prompts.DialogueView:
        turns = self.turns if upto is None else self.turns[:upto]
        return prompts.DialogueView(
            turns=[(speaker, text) for _id, speaker, text, _refs in turns],
            skill=self.skill,
            language=self.language,
            grounding=self.grounding,
        )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _question_value(
    config: JudgeConfig, q: Question, answers: Sequence[StoredAnswer]
) -> float | None:
    """One unit's score on one question over its samples (G-Eval expectation when present)."""
    if config.geval:
        weighted = [a.geval[q.key] for a in answers if q.key in a.geval]
        if weighted:
            return _mean(weighted)
    values = [a.values[q.key] for a in answers if q.key in a.values]
    return parsing.aggregate_samples(q, values, config.aggregate)


def _discrete(q: Question, answers: Sequence[StoredAnswer], sample: int | None) -> float | None:
    values = [
        a.values[q.key]
        for a in answers
        if q.key in a.values and (sample is None or a.sample == sample)
    ]
    if not values:
        return None
    return parsing.majority(values) if sample is None else values[0]


def direct_scores(
    config: JudgeConfig, data: DialogueData, answers: Sequence[StoredAnswer]
) -> tuple[dict[str, float], dict[tuple[str, int], float]]:
    """A dialogue's scores from its stored answers: per metric name at the dialogue level, and
    per (metric name, turn id) for turn-level questions."""
    spec = config.spec
    dialogue_answers = [a for a in answers if a.turn_id is None]
    by_turn: dict[int, list[StoredAnswer]] = defaultdict(list)
    for answer in answers:
        if answer.turn_id is not None:
            by_turn[answer.turn_id].append(answer)
    turn_index = {tid: i for i, tid in enumerate(data.turns[p][0] for p in data.model_turns())}
    dialogue: dict[str, float] = {}
    turns: dict[tuple[str, int], float] = {}
    for q in prompts.questions_for(spec, skill=data.skill, level="dialogue"):
        value = _question_value(config, q, dialogue_answers)
        if value is not None:
            dialogue[f"{config.prefix}:{q.key}"] = value
    for q in prompts.questions_for(spec, skill=data.skill, level="turn"):
        per_turn = []
        for turn_id, turn_answers in by_turn.items():
            value = _question_value(config, q, turn_answers)
            if value is not None:
                turns[(f"{config.prefix}:{q.key}", turn_id)] = value
                per_turn.append(value)
        if per_turn:
            dialogue[f"{config.prefix}:{q.key}"] = sum(per_turn) / len(per_turn)
    if spec.overall != "none":
        # The rubric's own overall (gate rule, seed 001's 0–100) from the judge's discrete
        # answers, treating the judge as one rater: per sample then averaged ("mean"), or from
        # the majority answers ("majority").
        samples = [None] if config.aggregate == "majority" else sorted({a.sample for a in answers})
        overalls = []
        for sample in samples:
            kernel_answers = []
            for q in prompts.questions_for(spec, skill=data.skill, level="dialogue"):
                value = _discrete(q, dialogue_answers, sample)
                if value is not None:
                    kernel_answers.append(Answer(data.id, "judge", q.key, value))
            for q in prompts.questions_for(spec, skill=data.skill, level="turn"):
                for turn_id, turn_answers in by_turn.items():
                    value = _discrete(q, turn_answers, sample)
                    if value is not None and turn_id in turn_index:
                        kernel_answers.append(
                            Answer(data.id, "judge", q.key, value, turn_index[turn_id])
                        )
            if not kernel_answers:
                continue
            try:
                overall = score_unit(spec, kernel_answers, skill=data.skill).overall
            except IncompleteAnswersError:
                continue
            if overall is not None:
                overalls.append(overall)
        if overalls:
            dialogue[f"{config.prefix}:{OVERALL}"] = sum(overalls) / len(overalls)
    return dialogue, turns


def pairwise_keys(config: JudgeConfig) -> list[str]:
    """The questions a pair is compared on: the scored dialogue-level questions but the gates."""
    return [
        q.key for q in config.spec.questions if q.scored and not q.gate and q.level == "dialogue"
    ]


def order_verdicts(
    config: JudgeConfig, answers: Sequence[StoredAnswer]
) -> dict[tuple[int, int], dict[str, dict[str, str]]]:
    """Per pair (dialogue 1, dialogue 2), order ("ab": dialogue 1 shown as A, "ba": shown as B)
    and question: the verdict ("A", "B" or "tie", of the order's A and B) over the samples —
    their majority, as :func:`parsing.majority` breaks ties. A question no sample of an order
    answered has no verdict in that order."""
    by_pair: dict[tuple[int, int], dict[str, list[StoredAnswer]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for answer in answers:
        if answer.order and answer.other_dialogue_id is not None:
            by_pair[(answer.dialogue_id, answer.other_dialogue_id)][answer.order].append(answer)
    keys = pairwise_keys(config)
    out: dict[tuple[int, int], dict[str, dict[str, str]]] = {}
    for pair, orders in by_pair.items():
        out[pair] = {}
        for order, order_answers in orders.items():
            verdicts = {}
            for key in keys:
                values = [a.values[key] for a in order_answers if key in a.values]
                if values:
                    verdicts[key] = parsing.majority(values)
            out[pair][order] = verdicts
    return out


def order_overall(verdicts: Mapping[str, str]) -> str | None:
    """One order's overall verdict from its questions' verdicts: the side whose mean outcome
    (1 win, 0.5 tie, 0 loss, as :func:`pairwise_scores` averages for the ``overall`` metric) is
    above one half; "tie" at one half; None without a verdict."""
    outcomes = [parsing.first_outcome(v) for v in verdicts.values()]
    known = [o for o in outcomes if o is not None]
    if not known:
        return None
    mean = sum(known) / len(known)
    return "A" if mean > 0.5 else "B" if mean < 0.5 else "tie"


def pair_outcomes(
    config: JudgeConfig, answers: Sequence[StoredAnswer]
) -> dict[tuple[int, int], dict[str, tuple[float | None, str | None, bool | None]]]:
    """Per pair (dialogue 1, dialogue 2) and question: (score of dialogue 1, verdict, flipped)."""
    out: dict[tuple[int, int], dict[str, tuple[float | None, str | None, bool | None]]] = {}
    keys = pairwise_keys(config)
    for pair, orders in order_verdicts(config, answers).items():
        outcome = {}
        for key in keys:
            f = orders.get("ab", {}).get(key)
            b = orders.get("ba", {}).get(key)
            score, verdict = parsing.swap_aggregate(f, b)
            outcome[key] = (score, verdict, parsing.position_flip(f, b))
        out[pair] = outcome
    return out


def pairwise_scores(
    config: JudgeConfig, answers: Sequence[StoredAnswer]
) -> dict[int, dict[str, float]]:
    """Per dialogue: its mean pair outcome (1 win, 0.5 tie, 0 loss) per question, and overall."""
    collected: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (one, two), outcome in pair_outcomes(config, answers).items():
        scores = []
        for key, (score, _verdict, _flip) in outcome.items():
            if score is None:
                continue
            scores.append(score)
            collected[one][f"{config.prefix}:{key}"].append(score)
            collected[two][f"{config.prefix}:{key}"].append(1.0 - score)
        if scores:
            mean = sum(scores) / len(scores)
            collected[one][f"{config.prefix}:{OVERALL}"].append(mean)
            collected[two][f"{config.prefix}:{OVERALL}"].append(1.0 - mean)
    return {d: {m: sum(v) / len(v) for m, v in metrics.items()} for d, metrics in collected.items()}
