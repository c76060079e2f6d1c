"""Rubric specs: validation of the JSON a researcher writes, and of every answer given under it.

The shape is DESIGN.md's "Rubric spec". It has to express the rubrics of the seeds:

- seed 000 §3.2 (MSDE): 0–2 scales with a definition per level, applicable per skill;
- seed 001: yes/no questions, a first level of gate questions answered before the second,
  categories of two questions each, per-turn questions over at most 5 model turns, and a score
  normalised to 0–100;
- seed 004: 1–5 Likert items and their mean.

A broken spec is refused with every problem named by its path (`questions[3].max: must be
greater than min`), so the rubric editor and the API can point at the field.

No Django imports: the services, the import commands and offline scripts share this module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeGuard

LANGUAGES = ("zh-hans", "en", "ja")
QUESTION_TYPES = ("scale", "likert", "yesno", "choice", "text")
LEVELS = ("dialogue", "turn")
OVERALL_MODES = ("mean", "sum", "normalised_100", "none")
MEASUREMENTS = ("nominal", "ordinal", "interval")
LIKERT_MAX_POINTS = 10
TEXT_MAX_LENGTH = 5000
# Bounds on every number and text of a spec: a rating page renders one control per scale value,
# so an unbounded span (0..200000) made a 30 MB page and ±1e20 would exhaust the web process.
SCALE_MIN_VALUE, SCALE_MAX_VALUE = -1000, 1000
SCALE_MAX_VALUES = 101  # max - min + 1: a 0..100 slider-like scale at most
CHOICE_MAX_OPTIONS = 50
QUESTIONS_MAX = 200
VERSION_MAX = 1_000_000
OPTION_SCORE_MAX = 1_000_000.0
LABEL_MAX_LENGTH = 500  # titles, labels, option and level texts
LONG_TEXT_MAX_LENGTH = 20_000  # instructions and help

# The dimension name of a rubric's overall score (annotation.scoring.OVERALL).
RESERVED_OVERALL_KEY = "overall"
# A stepped scale may have at most this many values (a 0-100 slider in steps of 1 is 101).
MAX_SCALE_VALUES = 201
# Rating.question is a SlugField(max_length=60); keys are lowercase so exports stay unambiguous.
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")
_SLUG_RULE = "must be a slug (lowercase letters, digits, - and _; at most 60 characters)"
_YES = frozenset({"1", "yes", "y", "true", "是"})
_NO = frozenset({"0", "no", "n", "false", "否"})

_TOP_FIELDS = (
    "key",
    "version",
    "title",
    "instructions",
    "overall",
    "min_raters",
    "categories",
    "questions",
)
_COMMON_FIELDS = ("key", "type", "level", "label", "help", "skills", "gate", "category")
_TYPE_FIELDS: dict[str, tuple[str, ...]] = {
    "scale": ("min", "max", "step", "levels", "measurement"),
    "likert": ("points", "step", "levels", "measurement"),
    "yesno": ("positive", "measurement"),
    "choice": ("options", "measurement"),
    "text": (),
}
_ALL_QUESTION_FIELDS = frozenset(
    _COMMON_FIELDS + ("max_turns",) + tuple(f for fs in _TYPE_FIELDS.values() for f in fs)
)
_DEFAULT_MEASUREMENT = {
    "scale": "ordinal",
    "likert": "ordinal",
    "yesno": "nominal",
    "choice": "nominal",
}


class RubricSpecError(ValueError):
    """A broken spec. `errors` holds every (path, message) found, in document order."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{path}: {message}" for path, message in errors))


class AnswerError(ValueError):
    """An answer that the rubric does not accept (unknown question, wrong type, out of range)."""


@dataclass(frozen=True)
class Option:
    """One option of a `choice` question; the stored answer is the option's index."""

    label: Mapping[str, str]
    score: float | None


@dataclass(frozen=True)
class Question:
    """One validated question. `minimum`/`maximum` bound the stored value (yes = 1, no = 0)."""

    key: str
    type: str
    level: str
    label: Mapping[str, str]
    help: Mapping[str, str]
    skills: tuple[str, ...] | None  # None: every skill
    levels: Mapping[str, Mapping[str, str]]
    gate: bool
    category: str | None
    max_turns: int | None
    minimum: int
    maximum: int
    positive: str | None  # yesno: the answer that scores 1 ("yes" or "no")
    options: tuple[Option, ...]
    measurement: str | None  # None for text
    # scale/likert: answers are minimum + k·step (1 by default; 0.5 for half points)
    step: float = 1.0

    @property
    def scored(self) -> bool:
        """Whether answers have a numeric score (text never; choice only with option scores)."""
        if self.type == "text":
            return False
        if self.type == "choice":
            return self.options[0].score is not None
        return True

    @property
    def min_score(self) -> float:
        return min(self._scores())

    @property
    def max_score(self) -> float:
        return max(self._scores())

    def _scores(self) -> list[float]:
        if self.type == "yesno":
            return [0.0, 1.0]
        if self.type == "choice":
            return [float(o.score) for o in self.options if o.score is not None]
        return [float(self.minimum), float(self.maximum)]

    @property
    def values(self) -> tuple[float, ...]:
        """The answers a scale or Likert question accepts, ascending (``minimum + k·step``)."""
        if self.type not in ("scale", "likert"):
            return ()
        step = _exact(self.step)
        count = int((self.maximum - self.minimum) / step)
        return tuple(float(self.minimum + k * step) for k in range(count + 1))

    @property
    def n_values(self) -> int:
        """How many answers a rater can choose from (the categories of free-marginal kappa)."""
        if self.type in ("scale", "likert"):
            return len(self.values)
        return self.maximum - self.minimum + 1

    def applies_to(self, skill: str | None) -> bool:
        return skill is None or self.skills is None or skill in self.skills

    def score(self, value: float) -> float:
        """The score of a cleaned answer: yes/no → 1 for the positive answer, else 0."""
        if self.type == "yesno":
            return float((value == 1.0) == (self.positive == "yes"))
        if self.type == "choice":
            return float(self.options[int(value)].score)  # type: ignore[arg-type]  # choices are scored
        return float(value)

    def clean(self, value: Any) -> float | str:
        """The canonical stored value of an answer, or AnswerError naming the question."""
        if self.type == "text":
            if not isinstance(value, str) or not value.strip():
                raise AnswerError(f"{self.key}: expected non-empty text")
            if len(value) > TEXT_MAX_LENGTH:
                raise AnswerError(f"{self.key}: text longer than {TEXT_MAX_LENGTH} characters")
            return value
        if self.type == "yesno":
            return self._clean_yesno(value)
        number = _as_number(value)
        if self.type in ("scale", "likert") and self.step != 1:
            on_step = _on_step(number, self.minimum, self.step)
            if on_step is None or not self.minimum <= on_step <= self.maximum:
                raise AnswerError(
                    f"{self.key}: expected a number from {self.minimum} to {self.maximum} "
                    f"in steps of {self.step:g}, got {value!r}"
                )
            return on_step
        what = "an option index" if self.type == "choice" else "a whole number"
        if number is None or not number.is_integer() or not self.minimum <= number <= self.maximum:
            raise AnswerError(
                f"{self.key}: expected {what} from {self.minimum} to {self.maximum}, got {value!r}"
            )
        return number

    def _clean_yesno(self, value: Any) -> float:
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, int | float) and value in (0, 1):
            return float(value)
        if isinstance(value, str) and value.strip().lower() in _YES | _NO:
            return float(value.strip().lower() in _YES)
        raise AnswerError(f"{self.key}: expected yes or no (1 or 0), got {value!r}")

    def check_turn(self, turn: int | None) -> None:
        """Turns are numbered among the dialogue's model turns: 0 is the first model reply."""
        if self.level == "dialogue":
            if turn is not None:
                raise AnswerError(f"{self.key}: a dialogue-level question takes no turn")
            return
        if turn is None:
            raise AnswerError(
                f"{self.key}: a turn-level question needs the index of the model turn (0 = first)"
            )
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise AnswerError(f"{self.key}: turn must be a whole number ≥ 0, got {turn!r}")
        if self.max_turns is not None and turn >= self.max_turns:
            raise AnswerError(
                f"{self.key}: turn {turn} is beyond max_turns {self.max_turns} (turns count from 0)"
            )


@dataclass(frozen=True)
class RubricSpec:
    """A validated rubric; build it with `validate_spec` (or `as_spec`)."""

    key: str
    version: int
    title: Mapping[str, str]
    instructions: Mapping[str, str]
    overall: str
    min_raters: int
    categories: Mapping[str, Mapping[str, str]]  # category key → label per language
    questions: tuple[Question, ...]

    def question(self, key: str) -> Question:
        for question in self.questions:
            if question.key == key:
                return question
        raise AnswerError(f"unknown question {key!r} (rubric {self.key} v{self.version})")


def validate_spec(data: Any) -> RubricSpec:
    """Validate a spec dict (parsed JSON); raise RubricSpecError listing every problem."""
    errors: list[tuple[str, str]] = []
    spec = _Parser(errors).spec(data)
    if errors or spec is None:
        raise RubricSpecError(errors)
    return spec


def as_spec(spec: RubricSpec | Mapping[str, Any]) -> RubricSpec:
    """Accept a validated spec or a spec dict, so callers can pass `Rubric.spec` straight in."""
    return spec if isinstance(spec, RubricSpec) else validate_spec(spec)


def validate_answer(
    spec: RubricSpec | Mapping[str, Any],
    question_key: str,
    value: Any,
    *,
    turn: int | None = None,
    skill: str | None = None,
) -> float | str:
    """Check one answer and return its stored value (a float; text for `text` questions).

    Accepts what an import or a form posts: numbers or numeric strings; for yes/no also booleans
    and yes/no/y/n/是/否. `turn` is the 0-based index of the model turn for turn-level questions;
    with `skill`, a question that does not apply to that skill is refused.
    """
    question = as_spec(spec).question(question_key)
    if not question.applies_to(skill):
        raise AnswerError(f"{question.key}: does not apply to skill {skill!r}")
    question.check_turn(turn)
    return question.clean(value)


def applicable_questions(
    spec: RubricSpec | Mapping[str, Any], skill: str | None, level: str | None = None
) -> tuple[Question, ...]:
    """The questions asked for a dialogue of `skill` (None: all), optionally of one level."""
    return tuple(
        q
        for q in as_spec(spec).questions
        if q.applies_to(skill) and (level is None or q.level == level)
    )


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _exact(number: float) -> Fraction:
    """The decimal a researcher wrote (0.1 is 1/10, not the binary float nearest it)."""
    return Fraction(repr(float(number)))


def _on_step(number: float | None, minimum: int, step: float) -> float | None:
    """``number`` as the nearest ``minimum + k·step`` when it is one (to 1e-9), else None."""
    if number is None:
        return None
    exact_step = _exact(step)
    k = round((_exact(number) - minimum) / exact_step)
    value = minimum + k * exact_step
    return float(value) if abs(float(value) - number) <= 1e-9 else None


def _is_level_key(value: Any, bounds: tuple[int, int], step: float) -> bool:
    """A ``levels`` key names a value of the scale as written: ``"2"``, or ``"1.5"`` on a half-point
    scale (the annotation page looks definitions up by the value's text)."""
    if not isinstance(value, str) or not re.fullmatch(r"-?\d+(\.\d+)?", value):
        return False
    number = _on_step(float(value), bounds[0], step)
    return number is not None and bounds[0] <= number <= bounds[1] and value == level_key(number)


def level_key(value: float) -> str:
    """The text of a scale value: ``2`` for whole numbers, ``1.5`` otherwise."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


class _Parser:
    """Walks a spec, appending (path, message) for every problem; returns None where broken."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors

    def fail(self, path: str, message: str) -> None:
        self.errors.append((path, message))

    def spec(self, data: Any) -> RubricSpec | None:
        if not isinstance(data, Mapping):
            self.fail("spec", "must be a JSON object")
            return None
        self.unknown_fields(data, _TOP_FIELDS, "")
        key = self.slug(data, "key", "key", required=True)
        version = data.get("version")
        if version is None:
            self.fail("version", "is required")
        elif not _is_int(version) or not 1 <= version <= VERSION_MAX:
            self.fail("version", f"must be an integer from 1 to {VERSION_MAX}")
        title = self.text_map(data.get("title"), "title", required=True)
        instructions = self.text_map(
            data.get("instructions"), "instructions", required=False, limit=LONG_TEXT_MAX_LENGTH
        )
        overall = data.get("overall", "mean")
        if overall not in OVERALL_MODES:
            self.fail("overall", f"must be one of {', '.join(OVERALL_MODES)}")
        min_raters = data.get("min_raters", 1)
        if not _is_int(min_raters) or min_raters < 1:
            self.fail("min_raters", "must be an integer ≥ 1")
        categories = self.categories(data.get("categories"))
        questions = self.questions(data.get("questions"), overall, categories)
        if self.errors:
            return None
        return RubricSpec(
            key=key,  # type: ignore[arg-type]  # validated above
            version=version,  # type: ignore[arg-type]  # validated above
            title=title,  # type: ignore[arg-type]  # validated above
            instructions=instructions or {},
            overall=overall,
            min_raters=min_raters,
            categories=categories or {},
            questions=questions,
        )

    def categories(self, data: Any) -> dict[str, dict[str, str]] | None:
        if data is None:
            return None
        if not isinstance(data, Mapping) or not data:
            self.fail("categories", "must be an object mapping a category key to its label")
            return None
        parsed: dict[str, dict[str, str]] = {}
        for key, label in data.items():
            if not _SLUG.match(key):
                self.fail(f"categories.{key}", _SLUG_RULE)
                continue
            text = self.text_map(label, f"categories.{key}", required=True)
            if text is not None:
                parsed[key] = text
        return parsed

    def questions(
        self, data: Any, overall: Any, categories: Mapping[str, Any] | None
    ) -> tuple[Question, ...]:
        if not isinstance(data, list) or not data:
            self.fail("questions", "must be a non-empty list")
            return ()
        if len(data) > QUESTIONS_MAX:
            self.fail("questions", f"at most {QUESTIONS_MAX} questions (got {len(data)})")
            return ()
        parsed: list[Question] = []
        first_path: dict[str, str] = {}
        for index, item in enumerate(data):
            path = f"questions[{index}]"
            question = self.question(item, path)
            if question is None:
                continue
            if question.key in first_path:
                original = first_path[question.key]
                self.fail(f"{path}.key", f'duplicate of {original}.key ("{question.key}")')
                continue
            first_path[question.key] = path
            if (
                question.key == RESERVED_OVERALL_KEY
                and overall in OVERALL_MODES
                and overall != "none"
            ):
                # Scores, exports and reports name the rubric's aggregate "overall" beside the
                # question keys; a question of that name would be written twice per unit.
                self.fail(
                    f"{path}.key",
                    f'"overall" names the rubric\'s overall score (overall: "{overall}"); rename '
                    'the question (e.g. "overall_quality") or set "overall": "none" so that the '
                    "question itself is the overall score",
                )
            if categories is not None and question.category not in (None, *categories):
                self.fail(f"{path}.category", "not defined in categories")
            if (
                overall == "normalised_100"
                and question.level == "turn"
                and question.scored
                and not question.gate
                and question.max_turns is None
            ):
                self.fail(
                    f"{path}.max_turns",
                    "required for turn-level questions when overall is normalised_100",
                )
            parsed.append(question)
        if (
            overall in OVERALL_MODES
            and overall != "none"
            and len(parsed) == len(data)
            and not any(q.scored and not q.gate for q in parsed)
        ):
            self.fail(
                "questions",
                f'overall "{overall}" needs a scored question that is not a gate '
                "(text is not scored; a choice needs option scores)",
            )
        return tuple(parsed)

    def question(self, data: Any, path: str) -> Question | None:
        if not isinstance(data, Mapping):
            self.fail(path, "must be an object")
            return None
        n_errors = len(self.errors)
        self.unknown_fields(data, _ALL_QUESTION_FIELDS, f"{path}.")
        key = self.slug(data, "key", f"{path}.key", required=True)
        qtype = data.get("type")
        if qtype is None:
            self.fail(f"{path}.type", "is required")
        elif qtype not in QUESTION_TYPES:
            self.fail(f"{path}.type", f"must be one of {', '.join(QUESTION_TYPES)}")
        else:
            allowed = _COMMON_FIELDS + ("max_turns",) + _TYPE_FIELDS[qtype]
            for name in data:
                if name in _ALL_QUESTION_FIELDS and name not in allowed:
                    self.fail(f"{path}.{name}", f"not used by {qtype} questions")
        level = data.get("level")
        if level is None:
            self.fail(f"{path}.level", "is required")
        elif level not in LEVELS:
            self.fail(f"{path}.level", f"must be one of {', '.join(LEVELS)}")
        label = self.text_map(data.get("label"), f"{path}.label", required=True)
        help_text = self.text_map(
            data.get("help"), f"{path}.help", required=False, limit=LONG_TEXT_MAX_LENGTH
        )
        skills = self.skills(data.get("skills"), f"{path}.skills")
        category = self.slug(data, "category", f"{path}.category", required=False)
        gate = data.get("gate", False)
        if not isinstance(gate, bool):
            self.fail(f"{path}.gate", "must be true or false")
        elif gate and qtype in QUESTION_TYPES and qtype != "yesno":
            self.fail(f"{path}.gate", "only yesno questions can be gates")
        max_turns = data.get("max_turns")
        if max_turns is not None:
            if level == "dialogue":
                self.fail(f"{path}.max_turns", "only turn-level questions have max_turns")
            elif not _is_int(max_turns) or max_turns < 1:
                self.fail(f"{path}.max_turns", "must be an integer ≥ 1")
        bounds = self.bounds(data, qtype, path)
        step = (
            self.step(data.get("step", 1), bounds, f"{path}.step")
            if qtype
            in (
                "scale",
                "likert",
            )
            else 1.0
        )
        levels = {}
        if qtype in ("scale", "likert"):
            levels = self.levels(data.get("levels"), bounds, step, f"{path}.levels")
        positive = data.get("positive", "yes")
        if qtype == "yesno" and positive not in ("yes", "no"):
            self.fail(f"{path}.positive", 'must be "yes" or "no"')
        options = self.options(data.get("options"), qtype, f"{path}.options")
        measurement = None
        if qtype in _DEFAULT_MEASUREMENT:
            measurement = data.get("measurement", _DEFAULT_MEASUREMENT[qtype])
            if measurement not in MEASUREMENTS:
                self.fail(f"{path}.measurement", f"must be one of {', '.join(MEASUREMENTS)}")
        if len(self.errors) > n_errors or bounds is None:
            return None
        return Question(
            key=key,  # type: ignore[arg-type]  # validated above
            type=qtype,  # type: ignore[arg-type]  # validated above
            level=level,  # type: ignore[arg-type]  # validated above
            label=label,  # type: ignore[arg-type]  # validated above
            help=help_text or {},
            skills=skills,
            levels=levels,
            gate=gate,
            category=category,
            max_turns=max_turns,
            minimum=bounds[0],
            maximum=bounds[1],
            positive=positive if qtype == "yesno" else None,
            options=options,
            measurement=measurement,
            step=step if step is not None else 1.0,
        )

    def step(self, data: Any, bounds: tuple[int, int] | None, path: str) -> float | None:
        """A positive number that divides the range (max − min) exactly, e.g. 0.5 for half
        points on 1–5; at most MAX_SCALE_VALUES values."""
        if not _is_number(data) or data <= 0:
            self.fail(path, "must be a positive number (e.g. 1, or 0.5 for half points)")
            return None
        if bounds is None:
            return float(data)
        span = Fraction(bounds[1] - bounds[0])
        count = span / _exact(data)
        if count.denominator != 1:
            self.fail(
                path,
                f"must divide the range {bounds[0]}..{bounds[1]} into whole steps "
                f"({bounds[1] - bounds[0]} / {data:g} is not a whole number)",
            )
            return None
        if count + 1 > MAX_SCALE_VALUES:
            self.fail(path, f"gives {count + 1} values; at most {MAX_SCALE_VALUES}")
            return None
        return float(data)

    def bounds(self, data: Mapping[str, Any], qtype: Any, path: str) -> tuple[int, int] | None:
        if qtype == "scale":
            low, high = data.get("min"), data.get("max")
            for name, value in (("min", low), ("max", high)):
                if value is None:
                    self.fail(f"{path}.{name}", "is required")
                elif not _is_int(value):
                    self.fail(f"{path}.{name}", "must be an integer")
                elif not SCALE_MIN_VALUE <= value <= SCALE_MAX_VALUE:
                    self.fail(
                        f"{path}.{name}",
                        f"must be between {SCALE_MIN_VALUE} and {SCALE_MAX_VALUE} (got {value})",
                    )
                    return None
            if not (_is_int(low) and _is_int(high)):
                return None
            if high <= low:
                self.fail(f"{path}.max", "must be greater than min")
                return None
            if high - low + 1 > SCALE_MAX_VALUES:
                self.fail(
                    f"{path}.max",
                    f"a scale has at most {SCALE_MAX_VALUES} values (min {low}, max {high} "
                    f"gives {high - low + 1})",
                )
                return None
            return low, high
        if qtype == "likert":
            points = data.get("points")
            if points is None:
                self.fail(f"{path}.points", "is required")
                return None
            if not _is_int(points) or not 2 <= points <= LIKERT_MAX_POINTS:
                self.fail(f"{path}.points", f"must be an integer from 2 to {LIKERT_MAX_POINTS}")
                return None
            return 1, points
        if qtype == "choice":
            options = data.get("options")
            if isinstance(options, list) and len(options) >= 2:
                return 0, len(options) - 1
            return None
        if qtype == "yesno":
            return 0, 1
        # Text answers have no numeric range; (0, 0) keeps Question's bounds plain integers.
        return (0, 0) if qtype == "text" else None

    def levels(
        self, data: Any, bounds: tuple[int, int] | None, step: float | None, path: str
    ) -> dict[str, dict[str, str]]:
        if data is None:
            return {}
        if not isinstance(data, Mapping) or not data:
            self.fail(path, "must be an object mapping a scale value to its definition")
            return {}
        parsed: dict[str, dict[str, str]] = {}
        for value, definition in data.items():
            if bounds is not None and not _is_level_key(value, bounds, step or 1.0):
                steps = "" if (step or 1.0) == 1 else f" in steps of {step:g}"
                self.fail(
                    f"{path}.{value}",
                    f"not a value of the scale ({bounds[0]}..{bounds[1]}{steps})",
                )
                continue
            text = self.text_map(definition, f"{path}.{value}", required=True)
            if text is not None:
                parsed[value] = text
        return parsed

    def options(self, data: Any, qtype: Any, path: str) -> tuple[Option, ...]:
        if qtype != "choice":
            return ()
        if not isinstance(data, list) or len(data) < 2:
            self.fail(path, "must be a list of at least 2 options")
            return ()
        if len(data) > CHOICE_MAX_OPTIONS:
            self.fail(path, f"at most {CHOICE_MAX_OPTIONS} options (got {len(data)})")
            return ()
        options: list[Option] = []
        for index, item in enumerate(data):
            item_path = f"{path}[{index}]"
            if not isinstance(item, Mapping):
                self.fail(item_path, "must be an object")
                continue
            self.unknown_fields(item, ("label", "score"), f"{item_path}.")
            label = self.text_map(item.get("label"), f"{item_path}.label", required=True)
            score = item.get("score")
            if score is not None and not _is_number(score):
                self.fail(f"{item_path}.score", "must be a number")
            elif score is not None and not abs(float(score)) <= OPTION_SCORE_MAX:
                self.fail(
                    f"{item_path}.score",
                    f"must be between -{OPTION_SCORE_MAX:g} and {OPTION_SCORE_MAX:g}",
                )
            elif label is not None:
                options.append(Option(label=label, score=None if score is None else float(score)))
        if len(options) == len(data):
            scores = [o.score for o in options if o.score is not None]
            if scores and len(scores) != len(options):
                self.fail(path, "give a score to every option or to none")
            elif scores and min(scores) == max(scores):
                self.fail(path, "option scores must not all be equal")
        return tuple(options)

    def skills(self, data: Any, path: str) -> tuple[str, ...] | None:
        if data is None:
            return None
        if not isinstance(data, list) or not data:
            self.fail(path, "must be a non-empty list of skill keys (leave it out for every skill)")
            return None
        seen: list[str] = []
        for index, skill in enumerate(data):
            if not isinstance(skill, str) or not _SLUG.match(skill):
                self.fail(f"{path}[{index}]", _SLUG_RULE)
            elif skill in seen:
                self.fail(f"{path}[{index}]", f'duplicate skill "{skill}"')
            else:
                seen.append(skill)
        return tuple(seen)

    def slug(self, data: Mapping[str, Any], name: str, path: str, *, required: bool) -> str | None:
        value = data.get(name)
        if value is None:
            if required:
                self.fail(path, "is required")
            return None
        if not isinstance(value, str) or not _SLUG.match(value):
            self.fail(path, _SLUG_RULE)
            return None
        return value

    def text_map(
        self, data: Any, path: str, *, required: bool, limit: int = LABEL_MAX_LENGTH
    ) -> dict[str, str] | None:
        if data is None:
            if required:
                self.fail(path, "is required")
            return None
        if not isinstance(data, Mapping) or not data:
            languages = ", ".join(LANGUAGES)
            self.fail(path, f"must be an object mapping a language ({languages}) to text")
            return None
        parsed: dict[str, str] = {}
        for language, text in data.items():
            if language not in LANGUAGES:
                self.fail(f"{path}.{language}", f"unknown language; use {', '.join(LANGUAGES)}")
            elif not isinstance(text, str) or not text.strip():
                self.fail(f"{path}.{language}", "must be non-empty text")
            elif len(text) > limit:
                self.fail(f"{path}.{language}", f"longer than {limit} characters ({len(text)})")
            else:
                parsed[language] = text
        return parsed

    def unknown_fields(self, data: Mapping[str, Any], allowed: Any, prefix: str) -> None:
        for name in data:
            if name not in allowed:
                self.fail(f"{prefix}{name}", "unknown field")
