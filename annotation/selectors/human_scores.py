"""Human scores of a rating job: the one place where `Rating` rows become scores.

Everything here feeds the scoring kernels (`annotation.scoring`) with plain `Answer` records, so
the gate rule, the per-skill questions and the seed 001 0–100 normalisation are the kernel's.
The correlation reports (metrics app), the results page, the exports and `export_human_scores`
all read these functions.

Only *real* ratings count: submitted assignments that are not quality-control items (gold,
duplicates, onboarding) by raters who are not blocked (`counted_assignments`). A turn index is
the 0-based position of the turn among the dialogue's model (system) turns, as in the kernels.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from django.db.models import Count, F, Q, QuerySet

from annotation.models import Assignment, JobRater, Rating, RatingJob
from annotation.rubric_spec import Question, RubricSpec, validate_spec
from annotation.scoring import (
    OVERALL,
    Answer,
    IncompleteAnswersError,
    ScoreRow,
    UnitScore,
    dialogue_scores,
    normalised_score,
    score_unit,
    system_scores,
)
from chat.models import Dialogue, Turn


@dataclass(frozen=True)
class HumanScore:
    """The mean over raters of one unit's score on one dimension."""

    dialogue_id: int
    turn_id: int | None  # the model Turn's pk for turn-level questions; None at dialogue level
    backend: str  # Backend.name (the real system name: researchers only)
    skill: str
    dimension: str  # question key, or "overall"
    value: float
    n_raters: int


@dataclass(frozen=True)
class NormalisedSystemScore:
    """Seed 001's 0–100 score of one system: Σ points / Σ full points × 100 over its ratings."""

    backend: str
    skill: str | None  # None: pooled over the system's skills
    score: float
    n_dialogues: int
    n_ratings: int  # (dialogue, rater) pairs


@dataclass(frozen=True)
class SkippedUnit:
    """A submitted (dialogue, rater) whose answers lack a required question: not scored."""

    dialogue_id: int
    rater_id: int
    reason: str


@dataclass(frozen=True)
class JobAnswers:
    """A job's counted answers in kernel form, with what is needed to label and join them."""

    spec: RubricSpec
    answers: list[Answer]  # unit = dialogue pk, rater = user pk, turn = model-turn index
    skills: dict[Hashable, str]  # dialogue pk → skill key (the unit of each answer)
    systems: dict[Hashable, str]  # dialogue pk → backend name
    turn_ids: dict[tuple[int, int], int]  # (dialogue pk, model-turn index) → Turn pk
    # every counted (dialogue pk, rater pk), with or without answers, in a stable order
    units: tuple[tuple[int, int], ...] = ()

    @property
    def fixed_denominator(self) -> bool:
        """Seed 001's 0–100 score has a fixed full score: unanswered questions count as 0."""
        return self.spec.overall == "normalised_100"

    def model_turn_counts(self) -> dict[int, int]:
        """Dialogue pk → its number of model turns."""
        counts: dict[int, int] = defaultdict(int)
        for dialogue_id, _ in self.turn_ids:
            counts[dialogue_id] += 1
        return counts


@dataclass(frozen=True)
class JobScores:
    """Every counted (dialogue, rater) scored by the kernel, and those that could not be."""

    data: JobAnswers
    unit_scores: list[UnitScore]
    skipped: list[SkippedUnit]

    @property
    def incomplete(self) -> list[UnitScore]:
        """Scored (dialogue, rater) pairs with unanswered questions, each counted as 0."""
        return [s for s in self.unit_scores if s.n_unanswered]

    @property
    def n_unanswered(self) -> int:
        return sum(s.n_unanswered for s in self.unit_scores)

    def completeness(self) -> dict[str, int | bool]:
        """How many rated dialogues (and answers) were incomplete, for pages, API and exports."""
        return {
            "n_units": len(self.unit_scores) + len(self.skipped),
            "n_incomplete_units": len(self.incomplete) + len(self.skipped),
            "n_unanswered": self.n_unanswered,
            "n_skipped_units": len(self.skipped),
            "unanswered_count_as_zero": self.data.fixed_denominator,
        }


# A live (rate-while-chatting) chat counts once the worker has finished it; a rejected one is
# collected again (its re-collection counts), an abandoned or unfinished one is no test.
LIVE_COUNTED_STATUSES = (Dialogue.Status.SUBMITTED, Dialogue.Status.ACCEPTED)


def _excluded_raters(job: RatingJob) -> QuerySet[JobRater, Mapping[str, object]]:
    return job.job_raters.exclude(state=JobRater.State.ACTIVE).values("rater_id")


def counted_assignments(*, job: RatingJob) -> QuerySet[Assignment]:
    """The assignments whose ratings are scores: submitted, real items, by raters of the job
    who are neither blocked nor screened out.

    Gold, duplicated and onboarding items exist to check raters; counting them would weigh some
    dialogues twice (duplicates) or mix screening items into the results. In a live job (rated
    while chatting) what counts is the chat, not the assignment: the ratings of every finished
    chat (`LIVE_COUNTED_STATUSES`) by its worker, whatever was left unrated (seed 001 scores
    those replies 0, it does not drop the chat); a chat still being held does not count yet.
    """
    if job.is_pairwise:
        # A pairwise job's answers are sides of a comparison, not scores of a dialogue: they
        # are read as votes (chat.Vote), never as human scores.
        return job.assignments.none()
    if job.is_live:
        done = Q(
            dialogue__status__in=LIVE_COUNTED_STATUSES,
            dialogue__campaign_id=job.campaign_id,
            rater_id=F("dialogue__worker_id"),
        )
    else:
        done = Q(status=Assignment.Status.SUBMITTED)
    return job.assignments.filter(done, kind=Assignment.Kind.REAL).exclude(
        rater_id__in=_excluded_raters(job)
    )


def counted_ratings(*, job: RatingJob) -> QuerySet[Rating]:
    return Rating.objects.filter(assignment__in=counted_assignments(job=job))


def live_chats(*, job: RatingJob) -> QuerySet[Dialogue]:
    """A live job's counted chats: its campaign's finished chats by workers it has not
    excluded (each chat's worker is its one rater)."""
    return Dialogue.objects.filter(
        campaign_id=job.campaign_id, status__in=LIVE_COUNTED_STATUSES, worker__isnull=False
    ).exclude(worker_id__in=_excluded_raters(job))


def counted_units(*, job: RatingJob) -> tuple[tuple[int, int], ...]:
    """Every counted (dialogue pk, rater pk), with or without answers, by dialogue then rater.

    A live job's units are its campaign's finished chats, each rated by its worker, whether or
    not an assignment exists: the live assignment is created with the first answer, so a chat
    ended ("cannot continue") before any reply was rated has none, and seed 001's fixed
    denominator (chats × 2 categories × 4 questions × 5 turns × testers) still counts it, at 0.
    """
    if not job.is_live:
        return tuple(
            counted_assignments(job=job)
            .order_by("dialogue_id", "rater_id")
            .values_list("dialogue_id", "rater_id")
            .distinct()
        )
    return tuple(live_chats(job=job).order_by("pk").values_list("pk", "worker_id"))


def job_answers(*, job: RatingJob) -> JobAnswers:
    """The counted ratings of `job` as kernel `Answer`s (text answers carry their text)."""
    rows = list(
        counted_ratings(job=job).values_list(
            "assignment__dialogue_id",
            "assignment__rater_id",
            "question",
            "turn_id",
            "value",
            "text",
        )
    )
    units = counted_units(job=job)
    dialogue_ids = {row[0] for row in rows} | {dialogue_id for dialogue_id, _ in units}
    dialogues = Dialogue.objects.filter(pk__in=dialogue_ids).values_list(
        "pk", "skill__key", "backend__name"
    )
    skills: dict[Hashable, str] = {pk: skill for pk, skill, _ in dialogues}
    systems: dict[Hashable, str] = {pk: backend for pk, _, backend in dialogues}
    turn_index, turn_ids = model_turn_indices(dialogue_ids)
    strays = {row[3] for row in rows if row[3] is not None and row[3] not in turn_index}
    if strays:
        # The rating services only attach turn-level answers to model turns.
        raise ValueError(f"job {job.name!r}: ratings on turns that are not model turns {strays}")
    answers = [
        Answer(
            unit=dialogue_id,
            rater=rater_id,
            question=question,
            value=text if value is None else value,
            turn=None if turn_id is None else turn_index[turn_id],
        )
        for dialogue_id, rater_id, question, turn_id, value, text in rows
    ]
    return JobAnswers(
        spec=validate_spec(job.rubric.spec),
        answers=answers,
        skills=skills,
        systems=systems,
        turn_ids=turn_ids,
        units=units,
    )


def model_turn_indices(
    dialogue_ids: Iterable[int],
) -> tuple[dict[int, int], dict[tuple[int, int], int]]:
    """Turn pk → index among its dialogue's model turns, and (dialogue, index) → Turn pk."""
    by_pk: dict[int, int] = {}
    by_index: dict[tuple[int, int], int] = {}
    position: dict[int, int] = defaultdict(int)
    turns = (
        Turn.objects.filter(dialogue_id__in=list(dialogue_ids), speaker=Turn.Speaker.SYSTEM)
        .order_by("dialogue_id", "index")
        .values_list("pk", "dialogue_id")
    )
    for pk, dialogue_id in turns:
        index = position[dialogue_id]
        position[dialogue_id] += 1
        by_pk[pk] = index
        by_index[(dialogue_id, index)] = pk
    return by_pk, by_index


def job_scores(*, job: RatingJob) -> JobScores:
    """Score every counted (dialogue, rater) with the kernel.

    Seed 001 rubrics (`normalised_100`) have a fixed denominator (prompts × questions × turns ×
    raters), so an unanswered question — a partly rated chat, an item submitted after the
    warning — scores 0 and stays in the full score, over every model turn up to `max_turns`;
    `UnitScore.n_unanswered` counts them. Other rubrics average what was answered, so a unit
    missing a required answer (imported, or rated under older rules) cannot be scored: one bad
    unit must not hide the rest of a job's results, so it is reported in `skipped` instead.
    """
    data = job_answers(job=job)
    groups: dict[tuple[Hashable, Hashable], list[Answer]] = {unit: [] for unit in data.units}
    for answer in data.answers:
        groups.setdefault((answer.unit, answer.rater), []).append(answer)
    scored: list[UnitScore] = []
    skipped: list[SkippedUnit] = []
    n_turns = data.model_turn_counts()
    for (unit, rater), answers in groups.items():
        skill = data.skills[unit]
        if data.fixed_denominator:
            scored.append(
                score_unit(
                    data.spec,
                    answers,
                    skill=skill,
                    unanswered="zero",
                    n_turns=n_turns[unit],  # type: ignore[index]  # units are Dialogue pks
                    unit_rater=(unit, rater),
                )
            )
            continue
        if not answers:
            continue  # nothing to average (e.g. only optional free-text questions)
        try:
            scored.append(score_unit(data.spec, answers, skill=skill))
        except IncompleteAnswersError as exc:
            skipped.append(SkippedUnit(dialogue_id=unit, rater_id=rater, reason=str(exc)))  # type: ignore[arg-type]  # Dialogue/User pks
    return JobScores(data=data, unit_scores=scored, skipped=skipped)


def human_scores(*, job: RatingJob, level: Literal["turn", "dialogue"]) -> list[HumanScore]:
    """Per unit and dimension, the mean over the unit's raters.

    Dialogue level: every scored question (a turn-level question's dialogue score is its mean
    over the rated turns) and `overall`, as `dialogue_score_rows`. Turn level: each turn-level
    scored question per model turn (the gate rule applied) and, when the rubric has an overall
    score, the turn's `overall` from that turn's questions (mean, sum, or 0–100).
    """
    if level not in ("turn", "dialogue"):
        raise ValueError(f"level must be 'turn' or 'dialogue', got {level!r}")
    scores = job_scores(job=job)
    data = scores.data
    if level == "dialogue":
        return [
            HumanScore(
                dialogue_id=row.unit,  # type: ignore[arg-type]  # units are Dialogue pks
                turn_id=None,
                backend=data.systems[row.unit],
                skill=row.skill or "",
                dimension=row.dimension,
                value=row.mean,
                n_raters=row.n,
            )
            for row in dialogue_scores(data.spec, scores.unit_scores)
        ]
    return _turn_scores(scores)


def dialogue_score_rows(
    *, job: RatingJob, seed: int = 0, n_boot: int = 1000, scores: JobScores | None = None
) -> list[ScoreRow]:
    """Per dialogue (unit = dialogue pk) and dimension: mean over raters, std, n, bootstrap CI.

    `scores` (from `job_scores`) saves scoring the job again when a caller needs several views.
    """
    scores = scores or job_scores(job=job)
    return dialogue_scores(scores.data.spec, scores.unit_scores, n_resamples=n_boot, seed=seed)


def system_score_rows(
    *, job: RatingJob, seed: int = 0, n_boot: int = 1000, scores: JobScores | None = None
) -> list[ScoreRow]:
    """Per backend name × skill × dimension: mean over dialogues, std, n, 95% CI and rank."""
    scores = scores or job_scores(job=job)
    return system_scores(
        scores.data.spec,
        scores.unit_scores,
        systems=scores.data.systems,
        n_resamples=n_boot,
        seed=seed,
    )


def normalised_system_scores(
    *, job: RatingJob, scores: JobScores | None = None
) -> list[NormalisedSystemScore]:
    """Each system's 0–100 score (seed 001), pooled over skills and per skill, best first.

    Empty unless the job's rubric scores `normalised_100`.
    """
    scores = scores or job_scores(job=job)
    if scores.data.spec.overall != "normalised_100":
        return []
    groups: dict[tuple[str, str | None], list[UnitScore]] = defaultdict(list)
    for unit_score in scores.unit_scores:
        backend = scores.data.systems[unit_score.unit]
        groups[(backend, None)].append(unit_score)
        groups[(backend, unit_score.skill)].append(unit_score)
    results = []
    for (backend, skill), group in groups.items():
        value = normalised_score(group)
        if value is not None:
            results.append(
                NormalisedSystemScore(
                    backend=backend,
                    skill=skill,
                    score=value,
                    n_dialogues=len({s.unit for s in group}),
                    n_ratings=len(group),
                )
            )
    return sorted(results, key=lambda r: (r.skill is not None, r.skill or "", -r.score, r.backend))


def _turn_scores(scores: JobScores) -> list[HumanScore]:
    spec, data = scores.data.spec, scores.data
    turn_questions = [q for q in spec.questions if q.level == "turn" and q.scored]
    counted = [q for q in turn_questions if not q.gate]
    by_slot: dict[tuple[int, int, str], list[float]] = defaultdict(list)
    for unit_score in scores.unit_scores:
        dialogue_id: int = unit_score.unit  # type: ignore[assignment]  # units are Dialogue pks
        per_turn: dict[int, dict[str, float]] = defaultdict(dict)
        for (key, turn), value in unit_score.scores.items():
            if turn is not None:
                by_slot[(dialogue_id, turn, key)].append(value)
                per_turn[turn][key] = value
        if spec.overall == "none":
            continue
        for turn, values in per_turn.items():
            overall = _turn_overall(spec.overall, counted, values)
            if overall is not None:
                by_slot[(dialogue_id, turn, OVERALL)].append(overall)
    order = {q.key: i for i, q in enumerate(turn_questions)} | {OVERALL: len(turn_questions)}
    return [
        HumanScore(
            dialogue_id=dialogue_id,
            turn_id=data.turn_ids.get((dialogue_id, turn)),
            backend=data.systems[dialogue_id],
            skill=data.skills[dialogue_id],
            dimension=key,
            value=float(np.mean(values)),
            n_raters=len(values),
        )
        for (dialogue_id, turn, key), values in sorted(
            by_slot.items(), key=lambda item: (item[0][0], item[0][1], order[item[0][2]])
        )
    ]


def _turn_overall(mode: str, questions: list[Question], values: dict[str, float]) -> float | None:
    """One rater's overall score of one turn, from that turn's non-gate scored questions."""
    present = [q for q in questions if q.key in values]
    if not present:
        return None
    if mode == "mean":
        return float(np.mean([values[q.key] for q in present]))
    if mode == "sum":
        return float(sum(values[q.key] for q in present))
    points = sum((values[q.key] - q.min_score) / (q.max_score - q.min_score) for q in present)
    return 100.0 * points / len(present)


@dataclass(frozen=True)
class RaterShortfall:
    """A system rated by fewer raters than the rubric's ``min_raters``.

    Per item (``per_item``, every job but a live one): ``items_short`` of the system's ``items``
    rated items have fewer raters than the minimum, the fewest ``n_raters``. Per system (a live,
    multi-turn job): ``n_raters`` distinct testers in all.
    """

    backend: str
    n_raters: int
    min_raters: int
    per_item: bool = False
    items_short: int = 0
    items: int = 0


def shortfalls_plan(
    *, item_raters: Iterable[tuple[str, Hashable | None, int]], minimum: int, per_item: bool
) -> list[RaterShortfall]:
    """The shortfalls from (backend, item or None, distinct raters of it) rows, by backend.

    Seed 001 asks for "每组评测数据…至少3名测试人员" — at least 3 raters *per item* — in the
    single-turn protocol, and for at least 5 testers per system in the multi-turn one, where each
    tester rates only the conversations they hold. So a live job counts distinct raters per
    system and every other job (imported ratings included) counts raters per item: three experts
    who each rated a third of the answers once are one rater per item, not three. A row with
    item None stands for a system with no counted rating yet (0 raters).
    """
    per_backend: dict[str, list[int]] = defaultdict(list)
    for backend, item, n in item_raters:
        per_backend[backend].extend([n] if item is not None else [])
    out = []
    for backend, counts in sorted(per_backend.items()):
        if not per_item:
            # Distinct testers per system: the caller passes one row per backend.
            n_raters = sum(counts)
            if n_raters < minimum:
                out.append(RaterShortfall(backend, n_raters, minimum))
            continue
        short = [n for n in counts if n < minimum]
        if short or not counts:
            out.append(
                RaterShortfall(
                    backend,
                    min(counts, default=0),
                    minimum,
                    per_item=True,
                    items_short=len(short),
                    items=len(counts),
                )
            )
    return out


def rater_shortfalls(*, job: RatingJob, scores: JobScores | None = None) -> list[RaterShortfall]:
    """Systems whose counted ratings fall short of the rubric's ``min_raters`` (seed 001: ≥ 3
    raters per item single-turn, ≥ 5 testers per system multi-turn; see `shortfalls_plan`)."""
    scores = scores or job_scores(job=job)
    systems = scores.data.systems
    rows: list[tuple[str, Hashable | None, int]] = [(b, None, 0) for b in set(systems.values())]
    if job.is_live:
        testers: dict[str, set[Hashable]] = defaultdict(set)
        for unit_score in scores.unit_scores:
            testers[systems[unit_score.unit]].add(unit_score.rater)
        rows += [(backend, 0, len(found)) for backend, found in testers.items()]
    else:
        raters: dict[tuple[str, Hashable], set[Hashable]] = defaultdict(set)
        for unit_score in scores.unit_scores:
            backend = systems[unit_score.unit]
            raters[(backend, unit_score.unit)].add(unit_score.rater)
        rows += [(backend, unit, len(found)) for (backend, unit), found in raters.items()]
    return shortfalls_plan(
        item_raters=rows, minimum=scores.data.spec.min_raters, per_item=not job.is_live
    )


@dataclass(frozen=True)
class JobShortfalls:
    """A rating job of a campaign with the systems it rates by too few raters."""

    job: RatingJob
    min_raters: int
    shortfalls: list[RaterShortfall]


def campaign_rater_shortfalls(*, campaign_id: int) -> list[JobShortfalls]:
    """For each rating job of a campaign (live job included), the systems with counted ratings
    from fewer distinct raters than the rubric's ``min_raters`` (seed 001: ≥ 3 / ≥ 5).

    One aggregate query per job (the campaign page shows it on every load), over the counted
    assignments (`counted_assignments`) of the job's rated systems: every system with a counted
    rating, or, before any, every system among the job's dialogues. A live job counts the
    workers of its finished chats (`counted_units`), whether they rated anything or not.
    """
    from annotation.selectors.rating import job_dialogues

    results = []
    jobs = RatingJob.objects.filter(campaign_id=campaign_id).select_related("rubric")
    for job in jobs.order_by("pk"):
        minimum = validate_spec(job.rubric.spec).min_raters
        if minimum <= 1:
            continue
        rows: list[tuple[str, Hashable | None, int]]
        if job.is_live:
            # Testers are the workers of the finished chats (`counted_units`), rated or not.
            rows = [
                (name, 0, n)
                for name, n in live_chats(job=job)
                .values_list("backend__name")
                .annotate(n=Count("worker_id", distinct=True))
                .values_list("backend__name", "n")
            ]
        else:
            rows = list(
                counted_assignments(job=job)
                .values_list("dialogue__backend__name", "dialogue_id")
                .annotate(n=Count("rater_id", distinct=True))
                .values_list("dialogue__backend__name", "dialogue_id", "n")
            )
            names = job_dialogues(job).values_list("backend__name", flat=True).distinct()
            rows += [(name, None, 0) for name in names]
        shortfalls = shortfalls_plan(item_raters=rows, minimum=minimum, per_item=not job.is_live)
        if shortfalls:
            results.append(JobShortfalls(job=job, min_raters=minimum, shortfalls=shortfalls))
    return results
