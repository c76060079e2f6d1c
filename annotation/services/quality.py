"""Rater quality in a job: its settings, the onboarding (screening) gate, and the flags a
researcher reviews before blocking a rater.

The checks themselves are the plain-Python kernels of `annotation.rater_quality`; this module
feeds them the job's ratings. Turn indexes are positions among the dialogue's model turns.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext as _

from annotation.models import Assignment, GoldItem, Rating, RatingJob
from annotation.pairwise import LEFT
from annotation.rater_quality import (
    Accuracy,
    Flag,
    FlagKind,
    ItemTime,
    accuracy_flags,
    gold_accuracy,
    pattern_flags,
    self_consistency,
    time_flags,
)
from annotation.scoring import Answer
from chat.models import Turn
from core.errors import ServiceError
from core.i18n import punctuation


class QualitySettingsError(ServiceError):
    """Quality settings out of range or unknown. The message names every key at fault
    (`quality_settings.<key>：…` in the active language's punctuation, joined by "; ");
    `errors` maps each key to its own message."""

    location_style = "in_message"

    def __init__(self, errors: Mapping[str, str]) -> None:
        message = "; ".join(
            f"quality_settings.{k}{punctuation('colon')}{m}" for k, m in errors.items()
        )
        super().__init__(message, field="quality_settings", errors=errors)


@dataclass(frozen=True)
class QualitySettings:
    """Rater-quality settings of a job (stored in `RatingJob.quality_settings`)."""

    gold_rate: float = 0.0  # share of gold items mixed into each rater's work (0.05 = 5%)
    duplicate_rate: float = 0.0  # share of a rater's real items shown twice
    # Accuracy on the onboarding set needed to go on (a pairwise job defaults to ACUTE-Eval's
    # 0.75, `PAIRWISE_DEFAULTS`).
    onboarding_threshold: float = 0.8
    gold_min_accuracy: float = 0.7  # below: flagged
    consistency_min: float = 0.7  # self-consistency on duplicates below: flagged
    min_seconds: float | None = None  # an item rated faster: flagged
    n_sd: float = 2.0  # time outliers beyond mean ± n_sd·SD
    pattern_min_items: int = 10  # constant/alternating answers over at least this many items
    tolerance: float = 0.0  # accepted difference to gold / own earlier answers

    @classmethod
    def parse(cls, data: Mapping[str, Any] | None) -> QualitySettings:
        """Validate a settings dict; every problem is named by its key."""
        data = dict(data or {})
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        errors = {key: _("未知的设置") for key in unknown}
        values: dict[str, Any] = {}
        for key in ("gold_rate", "duplicate_rate"):
            values[key] = _number(data, key, errors, low=0.0, high=0.5)
        for key in ("onboarding_threshold", "gold_min_accuracy", "consistency_min"):
            values[key] = _number(data, key, errors, low=0.0, high=1.0)
        values["n_sd"] = _number(data, "n_sd", errors, low=0.5, high=10.0)
        values["tolerance"] = _number(data, "tolerance", errors, low=0.0, high=100.0)
        values["min_seconds"] = _number(data, "min_seconds", errors, low=0.0, high=86400.0)
        pattern = data.get("pattern_min_items", cls.pattern_min_items)
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 3:
            errors["pattern_min_items"] = _("必须是 ≥ 3 的整数")
        values["pattern_min_items"] = pattern
        if errors:
            raise QualitySettingsError(errors)
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _number(
    data: Mapping[str, Any], key: str, errors: dict[str, str], *, low: float, high: float
) -> float | None:
    default = QualitySettings.__dataclass_fields__[key].default
    value = data.get(key, default)
    if value is None or value == "":
        return None if key == "min_seconds" else default  # type: ignore[return-value]  # Field.default is untyped; the numbers' defaults are floats
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            errors[key] = _("必须是数字，收到 %(value)r") % {"value": value}
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        errors[key] = _("必须是数字，收到 %(value)r") % {"value": value}
        return None
    if not low <= value <= high:
        errors[key] = _("必须在 %(low)s 到 %(high)s 之间") % {
            "low": f"{low:g}",
            "high": f"{high:g}",
        }
        return None
    return float(value)


# ParlAI's ACUTE-Eval blocks a worker whose onboarding accuracy is below 0.75
# (`onboarding_threshold`); a pairwise job starts from that.
PAIRWISE_DEFAULTS: dict[str, Any] = {"onboarding_threshold": 0.75}


def job_quality(job: RatingJob) -> QualitySettings:
    return QualitySettings.parse(job.quality_settings)


class Onboarding(StrEnum):
    NONE = "none"  # the job has no onboarding set
    PENDING = "pending"  # not every onboarding item is submitted yet
    PASSED = "passed"
    FAILED = "failed"


def _turn_positions(dialogue_ids: Iterable[int]) -> dict[int, int]:
    """Turn id → its position among its dialogue's model turns."""
    positions: dict[int, int] = {}
    counters: dict[int, int] = defaultdict(int)
    for turn_id, dialogue_id in (
        Turn.objects.filter(dialogue__in=set(dialogue_ids), speaker=Turn.Speaker.SYSTEM)
        .order_by("dialogue", "index")
        .values_list("id", "dialogue_id")
    ):
        positions[turn_id] = counters[dialogue_id]
        counters[dialogue_id] += 1
    return positions


def _answers(assignments: Iterable[Assignment], unit_of: Mapping[int, Hashable]) -> list[Answer]:
    """Numeric answers of the given assignments; `unit_of` maps an assignment id to its unit."""
    assignment_list = list(assignments)
    by_id = {a.pk: a for a in assignment_list}
    positions = _turn_positions(a.dialogue_id for a in assignment_list)
    answers = []
    for rating in Rating.objects.filter(assignment__in=by_id, value__isnull=False):
        assignment = by_id[rating.assignment_id]
        answers.append(
            Answer(
                unit=unit_of[assignment.pk],
                rater=assignment.rater_id,
                question=rating.question,
                value=rating.value,
                turn=None if rating.turn_id is None else positions[rating.turn_id],
            )
        )
    return answers


def _gold_map(job: RatingJob, purpose: str) -> dict[tuple[Hashable, str, int | None], float]:
    gold: dict[tuple[Hashable, str, int | None], float] = {}
    for item in GoldItem.objects.filter(job=job, purpose=purpose):
        for answer in item.answers:
            gold[(item.dialogue_id, answer["question"], answer["turn"])] = float(answer["value"])
    return gold


def onboarding_result(*, job: RatingJob, rater: User) -> tuple[Onboarding, float | None]:
    """Whether `rater` passed the job's screening set, and their accuracy on it."""
    n_items = GoldItem.objects.filter(job=job, purpose=GoldItem.Purpose.ONBOARDING).count()
    if n_items == 0:
        return Onboarding.NONE, None
    submitted = list(
        Assignment.objects.filter(
            job=job,
            rater=rater,
            kind=Assignment.Kind.ONBOARDING,
            status=Assignment.Status.SUBMITTED,
        )
    )
    if len(submitted) < n_items:
        return Onboarding.PENDING, None
    settings = job_quality(job)
    if job.is_pairwise:
        accuracy = pairwise_accuracy(job, submitted, GoldItem.Purpose.ONBOARDING).get(rater.pk)
    else:
        answers = _answers(submitted, {a.pk: a.dialogue_id for a in submitted})
        accuracy = gold_accuracy(
            answers, _gold_map(job, GoldItem.Purpose.ONBOARDING), tolerance=settings.tolerance
        ).get(rater.pk)
    rate = accuracy.rate if accuracy is not None else None
    if rate is None or rate < settings.onboarding_threshold:
        return Onboarding.FAILED, rate
    return Onboarding.PASSED, rate


def job_flags(job: RatingJob) -> list[Flag]:
    """Every quality flag of the job's raters: timing, patterns, gold accuracy, consistency."""
    settings = job_quality(job)
    submitted = list(
        Assignment.objects.filter(job=job, status=Assignment.Status.SUBMITTED).exclude(
            kind=Assignment.Kind.ONBOARDING
        )
    )
    flags: list[Flag] = []
    times = [
        ItemTime(a.rater_id, a.dialogue_id, (a.submitted_at - a.started_at).total_seconds())
        for a in submitted
        if a.started_at and a.submitted_at
    ]
    flags += time_flags(times, min_seconds=settings.min_seconds, n_sd=settings.n_sd)

    real = [a for a in submitted if a.kind == Assignment.Kind.REAL]
    real_answers = _answers(real, {a.pk: a.dialogue_id for a in real})
    order: dict[tuple[Hashable, Hashable], int] = {
        (a.rater_id, a.dialogue_id): a.order for a in real
    }
    pattern = pattern_flags(real_answers, min_items=settings.pattern_min_items, order=order)
    if job.is_pairwise:
        pattern = [_side_worded(flag, real_answers) for flag in pattern]
    flags += pattern

    if job.is_pairwise:
        return flags + _pairwise_flags(job, submitted, settings)

    gold = [a for a in submitted if a.kind == Assignment.Kind.GOLD]
    if gold:
        accuracy = gold_accuracy(
            _answers(gold, {a.pk: a.dialogue_id for a in gold}),
            _gold_map(job, GoldItem.Purpose.GOLD),
            tolerance=settings.tolerance,
        )
        flags += accuracy_flags(
            accuracy, minimum=settings.gold_min_accuracy, kind=FlagKind.LOW_GOLD_ACCURACY
        )

    duplicates = [a for a in submitted if a.kind == Assignment.Kind.DUPLICATE]
    if duplicates:
        unit_of = {a.pk: f"duplicate-{a.pk}" for a in duplicates}
        consistency = self_consistency(
            real_answers + _answers(duplicates, unit_of),
            {f"duplicate-{a.pk}": a.dialogue_id for a in duplicates},
            tolerance=settings.tolerance,
        )
        flags += accuracy_flags(
            consistency, minimum=settings.consistency_min, kind=FlagKind.LOW_SELF_CONSISTENCY
        )
    return flags


def flags_by_rater(flags: Iterable[Flag]) -> dict[Hashable, list[Flag]]:
    grouped: dict[Hashable, list[Flag]] = defaultdict(list)
    for flag in flags:
        grouped[flag.rater].append(flag)
    return dict(grouped)


def pairwise_accuracy(
    job: RatingJob, assignments: Iterable[Assignment], purpose: str
) -> dict[Hashable, Accuracy]:
    """Per rater, how often they chose the known better side of the job's gold or onboarding
    pairs (`purpose`) among `assignments`, over the questions each pair checks. The stored
    answer is a side (left = 0), turned into a dialogue by the assignment's order."""
    items = {
        frozenset((item.dialogue_id, item.dialogue_b_id)): item
        for item in GoldItem.objects.filter(job=job, purpose=purpose)
    }
    by_id = {a.pk: a for a in assignments}
    checked: dict[Hashable, list[bool]] = defaultdict(list)
    for rating in Rating.objects.filter(assignment__in=by_id, value__isnull=False).order_by("pk"):
        assignment = by_id[rating.assignment_id]
        item = items.get(frozenset((assignment.dialogue_id, assignment.dialogue_b_id)))
        if item is None or rating.question not in {a["question"] for a in item.answers}:
            continue
        chosen = assignment.dialogue_id if rating.value == LEFT else assignment.dialogue_b_id
        checked[assignment.rater_id].append(chosen == item.dialogue_id)
    return {rater: Accuracy(rater, len(v), sum(v)) for rater, v in checked.items()}


def _pairwise_flags(
    job: RatingJob, submitted: list[Assignment], settings: QualitySettings
) -> list[Flag]:
    """Gold-pair accuracy; and a constant answer reads as what it is: always the same side."""
    flags: list[Flag] = []
    gold = [a for a in submitted if a.kind == Assignment.Kind.GOLD]
    if gold:
        flags += accuracy_flags(
            pairwise_accuracy(job, gold, GoldItem.Purpose.GOLD),
            minimum=settings.gold_min_accuracy,
            kind=FlagKind.LOW_GOLD_ACCURACY,
        )
    return flags


def _side_worded(flag: Flag, answers: list[Answer]) -> Flag:
    """A pairwise job's constant-answer flag, worded by side ("always chose the left side"):
    the stored answer is the side, so a rater who always clicks one side shows up here."""
    if flag.kind != FlagKind.CONSTANT_ANSWERS:
        return flag
    values = [a.value for a in answers if a.rater == flag.rater and a.question == flag.question]
    side = "left" if values[0] == LEFT else "right"
    detail = f"all {len(values)} answers chose the {side} side"
    return Flag(flag.rater, flag.kind, detail, question=flag.question)
