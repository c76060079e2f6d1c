"""Reads for rating jobs: their dialogues, raters' work queues and progress."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from annotation.models import Assignment, GoldItem, JobRater, Rating, RatingJob, Rubric
from annotation.rubric_spec import applicable_questions, as_spec, level_key
from annotation.selectors.review import model_alias
from chat.models import Dialogue, Turn
from chat.selectors.collection import grounding_view
from core.access import Role
from core.i18n import pick_text

# Assignments that hold (or held) a rater's work; expired and revoked ones went back to the pool.
ACTIVE_STATUSES = (
    Assignment.Status.PENDING,
    Assignment.Status.IN_PROGRESS,
    Assignment.Status.SUBMITTED,
)
OPEN_STATUSES = (Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS)


def experts() -> QuerySet[User]:
    """The experts who can rate: active, and able to log in. Raters created by a ratings import
    (the demo's simulated ones too) have no usable password until someone sets one: offering them
    a job, or handing them its items, would leave those items undone."""
    return (
        User.objects.filter(groups__name=Role.EXPERT.value, is_active=True)
        .exclude(password__startswith=UNUSABLE_PASSWORD_PREFIX)
        .distinct()
    )


def job_source_dialogues(job: RatingJob) -> QuerySet[Dialogue]:
    """The dialogues a job draws from: the accepted dialogues of its campaign (and static run)."""
    dialogues = Dialogue.objects.filter(campaign=job.campaign_id, status=Dialogue.Status.ACCEPTED)
    if job.static_run_id is not None:
        dialogues = dialogues.filter(static_run=job.static_run_id)
    return dialogues


def job_dialogues(job: RatingJob) -> QuerySet[Dialogue]:
    """The job's real items: its source dialogues (only the drawn sample when the job samples),
    minus the dialogues used as gold or onboarding items."""
    dialogues = job_source_dialogues(job)
    if job.sample_size is not None:
        dialogues = dialogues.filter(pk__in=job.sample)
    return dialogues.exclude(pk__in=GoldItem.objects.filter(job=job).values("dialogue"))


def draw_sample(
    candidates: Iterable[tuple[int, str, int | None]], *, size: int, seed: int
) -> list[int]:
    """Seed 001's sampling after generation: `size` dialogues per system, reproducibly.

    `candidates` are (dialogue pk, system name, scenario pk or None). The size counts dialogues
    per system (docs/rubrics.md), also when a scenario was collected several times per system
    (an interactive campaign's quota): drawing N *scenarios* and keeping all their dialogues
    would rate a multiple of N. Systems are paired by scenario where they can be: scenarios are
    put in one order shared by every system (those more systems have first, ties in a seeded
    random order) and each system takes one of its dialogues on each scenario in that order, so
    systems that share N scenarios are rated on the same N (the seed samples 500 of its 1500
    prompts' answers). A system lacking one of them takes its next scenario instead, then its
    dialogues without a scenario, then a second dialogue on a scenario, until it has N; what
    ended up unpaired is reported by `sample_pairing`. Without any scenario each system's
    dialogues are drawn on their own. Systems are visited in name order and every draw is
    `random.Random(seed)` over pk order, so the same dialogues, size and seed give the same
    sample.
    """
    rows = sorted(candidates)
    rng = random.Random(seed)
    by_system: dict[str, list[tuple[int, int | None]]] = defaultdict(list)
    for pk, system, scenario in rows:
        by_system[system].append((pk, scenario))
    if all(scenario is None for _, _, scenario in rows):
        picked: list[int] = []
        for system in sorted(by_system):
            pks = [pk for pk, _ in by_system[system]]
            picked += pks if size >= len(pks) else sorted(rng.sample(pks, size))
        return sorted(picked)
    scenarios = sorted({scenario for _, _, scenario in rows if scenario is not None})
    position = {scenario: i for i, scenario in enumerate(rng.sample(scenarios, len(scenarios)))}
    coverage = Counter(
        scenario
        for dialogues in by_system.values()
        for scenario in {s for _, s in dialogues if s is not None}
    )
    order = sorted(scenarios, key=lambda s: (-coverage[s], position[s]))
    picked = []
    for system in sorted(by_system):
        on_scenario: dict[int, list[int]] = defaultdict(list)
        loose: list[int] = []
        for pk, scenario in by_system[system]:
            (loose if scenario is None else on_scenario[scenario]).append(pk)
        queues = [
            rng.sample(on_scenario[s], len(on_scenario[s])) for s in order if s in on_scenario
        ]
        preference = [queue[0] for queue in queues] + rng.sample(loose, len(loose))
        depth = max(len(queue) for queue in queues) if queues else 0
        preference += [queue[i] for i in range(1, depth) for queue in queues if i < len(queue)]
        picked += preference[:size]
    return sorted(picked)


@dataclass(frozen=True)
class SamplePairing:
    """How a job's drawn sample came out: dialogues per system, and the scenarios that not every
    system is rated on (a system that lacks a drawn scenario takes another, docs/rubrics.md)."""

    per_system: dict[str, int]
    unpaired_scenarios: int
    short_systems: list[str]  # systems with fewer dialogues than the sample size (all they had)

    @property
    def paired(self) -> bool:
        return not self.unpaired_scenarios and not self.short_systems


def sample_pairing(job: RatingJob) -> SamplePairing | None:
    """The pairing report of a sampling job's drawn sample (None before it is drawn)."""
    if job.sample_size is None or not job.sample:
        return None
    rows = list(
        Dialogue.objects.filter(pk__in=job.sample).values_list("backend__name", "scenario_id")
    )
    per_system = Counter(system for system, _ in rows)
    systems_on: dict[int, set[str]] = defaultdict(set)
    for system, scenario in rows:
        if scenario is not None:
            systems_on[scenario].add(system)
    return SamplePairing(
        per_system=dict(sorted(per_system.items())),
        unpaired_scenarios=sum(len(s) < len(per_system) for s in systems_on.values()),
        short_systems=sorted(s for s, n in per_system.items() if n < job.sample_size),
    )


def model_turns(dialogue: Dialogue) -> list[Turn]:
    """The dialogue's model turns in order: the position is the kernels' turn index."""
    return list(
        Turn.objects.filter(dialogue=dialogue, speaker=Turn.Speaker.SYSTEM).order_by("index")
    )


def model_turn_ids(dialogue: Dialogue) -> list[int]:
    return [turn.pk for turn in model_turns(dialogue)]


def job_list() -> QuerySet[RatingJob]:
    """Every rating job, the campaigns' live (rate-while-chatting) jobs included: their results
    are read like any other job's."""
    return RatingJob.objects.select_related("campaign", "rubric", "static_run").annotate(
        n_total=Count("assignments", filter=Q(assignments__status__in=ACTIVE_STATUSES)),
        n_done=Count("assignments", filter=Q(assignments__status=Assignment.Status.SUBMITTED)),
    )


def rubric_choices() -> QuerySet[Rubric]:
    return Rubric.objects.order_by("key", "-version")


@dataclass(frozen=True)
class RaterProgress:
    rater_id: int
    username: str
    state: str
    reason: str
    total: int
    done: int
    expired: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


def _rated_dialogue_count(job: RatingJob) -> int:
    """The dialogues the job rates: its pool (accepted dialogues, sample, minus gold) and any
    dialogue it holds real work on outside that pool. A live job rates dialogues while they are
    being collected and a ratings import brings its own, so neither is in the accepted pool and
    counting the pool alone showed "(0 dialogues)" beside their submitted answers."""
    held = Assignment.objects.filter(
        job=job, kind=Assignment.Kind.REAL, status__in=ACTIVE_STATUSES
    ).values("dialogue")
    return (
        Dialogue.objects.filter(Q(pk__in=job_dialogues(job).values("pk")) | Q(pk__in=held))
        .distinct()
        .count()
    )


def job_progress(job: RatingJob) -> dict[str, Any]:
    """Progress of the whole job and per rater (active assignments: pending, started, done)."""
    counts = Assignment.objects.filter(job=job).aggregate(
        total=Count("id", filter=Q(status__in=ACTIVE_STATUSES)),
        done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        expired=Count("id", filter=Q(status=Assignment.Status.EXPIRED)),
        revoked=Count("id", filter=Q(status=Assignment.Status.REVOKED)),
    )
    per_rater: dict[int, Mapping[str, Any]] = {
        row["rater"]: row
        for row in Assignment.objects.filter(job=job)
        .values("rater")
        .annotate(
            total=Count("id", filter=Q(status__in=ACTIVE_STATUSES)),
            done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            expired=Count("id", filter=Q(status=Assignment.Status.EXPIRED)),
        )
    }
    raters = []
    for member in JobRater.objects.filter(job=job).select_related("rater"):
        row = per_rater.get(member.rater_id, {})
        raters.append(
            RaterProgress(
                rater_id=member.rater_id,
                username=member.rater.get_username(),
                state=member.state,
                reason=member.reason,
                total=row.get("total", 0),
                done=row.get("done", 0),
                expired=row.get("expired", 0),
            )
        )
    total = counts["total"]
    return {
        **counts,
        "percent": round(100 * counts["done"] / total) if total else 0,
        "dialogues": _rated_dialogue_count(job),
        "raters": raters,
    }


def rater_assignments(*, rater: User) -> QuerySet[Assignment]:
    """A rater's active assignments in open (not live) jobs, job by job in their order."""
    return (
        Assignment.objects.filter(
            rater=rater,
            status__in=ACTIVE_STATUSES,
            job__status=RatingJob.Status.OPEN,
            job__is_live=False,
        )
        .select_related("job")
        .order_by("job", "order", "id")
    )


def rater_jobs(*, rater: User) -> list[dict[str, Any]]:
    """The open jobs a rater has work in, with their progress."""
    rows = (
        Assignment.objects.filter(
            rater=rater,
            status__in=ACTIVE_STATUSES,
            job__status=RatingJob.Status.OPEN,
            job__is_live=False,
        )
        .values("job_id", "job__name")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)))
        .order_by("job__name")
    )
    return [
        {
            "id": row["job_id"],
            "name": row["job__name"],
            "total": row["total"],
            "done": row["done"],
            "percent": round(100 * row["done"] / row["total"]) if row["total"] else 0,
        }
        for row in rows
    ]


# --- what the annotation page shows ------------------------------------------------------------


def localized(texts: Any, language: str) -> str:
    """A label in the page's language, with the fallbacks of `core.i18n.pick_text`."""
    return pick_text(texts, language)


@dataclass(frozen=True)
class OptionView:
    value: str
    label: str
    definition: str
    shortcut: str


@dataclass(frozen=True)
class QuestionView:
    key: str
    type: str
    level: str
    label: str
    help: str
    gate: bool
    category: str
    options: tuple[OptionView, ...]
    pass_values: tuple[str, ...]  # a gate's answers that let the second level be asked
    turn_id: int | None
    turn_number: int | None  # 1-based, for people
    answer: str
    # A second-level question whose first-level (gate) question failed: not asked, scores 0.
    skipped: bool = False

    @property
    def dom_id(self) -> str:
        return f"q-{self.key}" + ("" if self.turn_id is None else f"-t{self.turn_id}")


def _value_text(value: float | None, text: str) -> str:
    if value is None:
        return text
    return str(int(value)) if float(value).is_integer() else str(value)


def _options(question: Any, language: str, yes: str, no: str) -> tuple[OptionView, ...]:
    def definition(key: str) -> str:
        return localized(question.levels.get(key, {}), language)

    if question.type in ("scale", "likert"):
        # Half-point (stepped) values are offered too; only whole values 0-9 get a digit key.
        keys = [level_key(v) for v in question.values]
        return tuple(
            OptionView(k, k, definition(k), k if k.isdigit() and int(k) <= 9 else "") for k in keys
        )
    if question.type == "yesno":
        return (OptionView("1", yes, "", "y"), OptionView("0", no, "", "n"))
    if question.type == "choice":
        return tuple(
            OptionView(str(i), localized(o.label, language), "", str(i + 1) if i < 9 else "")
            for i, o in enumerate(question.options)
        )
    return ()


def question_views(
    *,
    questions: Iterable[Any],
    language: str,
    answers: dict[tuple[str, int | None], str],
    turn_id: int | None = None,
    turn_number: int | None = None,
    categories: dict[str, Any] | None = None,
    yes: str = "是",
    no: str = "否",
) -> list[QuestionView]:
    views = []
    for q in questions:
        options = _options(q, language, yes, no)
        views.append(
            QuestionView(
                key=q.key,
                type=q.type,
                level=q.level,
                label=localized(q.label, language) or q.key,
                help=localized(q.help, language),
                gate=q.gate,
                category=localized((categories or {}).get(q.category or "", {}), language),
                options=options,
                pass_values=tuple(
                    o.value for o in options if q.gate and q.score(float(o.value)) > 0
                ),
                turn_id=turn_id,
                turn_number=turn_number,
                answer=answers.get((q.key, turn_id), ""),
            )
        )
    return views


def _gate_failed(gate: QuestionView) -> bool:
    return gate.answer != "" and gate.answer not in gate.pass_values


def _mark_skipped(views: list[QuestionView], scope: list[QuestionView]) -> list[QuestionView]:
    """Flag the second-level questions whose gate failed (seed 001: a failed first level
    makes the second level unasked and scored 0). A turn question's gates are its own turn's
    and the dialogue-level ones; the page's script keeps this up to date as answers change."""
    failed = any(q.gate and _gate_failed(q) for q in scope)
    if not failed:
        return views
    return [q if q.gate else replace(q, skipped=True) for q in views]


def annotation_page(*, assignment: Assignment, language: str, yes: str, no: str) -> dict[str, Any]:
    """Everything the annotation page renders for one item, labels in `language`."""
    dialogue = assignment.dialogue
    spec = as_spec(assignment.job.rubric.spec)
    skill = dialogue.skill.key
    answers = {
        (r.question, r.turn_id): _value_text(r.value, r.text)
        for r in Rating.objects.filter(assignment=assignment)
    }
    turn_questions = applicable_questions(spec, skill, "turn")
    # A static campaign's dialogue is a dataset context plus ONE model answer (its last turn):
    # the earlier turns, either speaker, are context and are neither rated nor the model's.
    static = dialogue.campaign.answers_are_last_turns
    all_turns = list(dialogue.turns.order_by("index"))
    judged_id = all_turns[-1].pk if static and all_turns else None
    turns: list[dict[str, Any]] = []
    model_index = 0
    n_questions = 0
    for turn in all_turns:
        questions: list[QuestionView] = []
        if static:
            role = "judged" if turn.pk == judged_id else f"context-{turn.speaker}"
        else:
            role = turn.speaker
        if turn.speaker == Turn.Speaker.SYSTEM and (not static or turn.pk == judged_id):
            asked = [q for q in turn_questions if q.max_turns is None or model_index < q.max_turns]
            questions = question_views(
                questions=asked,
                language=language,
                answers=answers,
                turn_id=turn.pk,
                turn_number=model_index + 1,
                categories=dict(spec.categories),
                yes=yes,
                no=no,
            )
            model_index += 1
        n_questions += len(questions)
        turns.append({"turn": turn, "questions": questions, "role": role})
    dialogue_questions = question_views(
        questions=applicable_questions(spec, skill, "dialogue"),
        language=language,
        answers=answers,
        categories=dict(spec.categories),
        yes=yes,
        no=no,
    )
    dialogue_questions = _mark_skipped(dialogue_questions, dialogue_questions)
    for item in turns:
        item["questions"] = _mark_skipped(item["questions"], item["questions"] + dialogue_questions)
    n_questions += len(dialogue_questions)
    mine = Assignment.objects.filter(
        job=assignment.job, rater=assignment.rater, status__in=ACTIVE_STATUSES
    )
    done = mine.filter(status=Assignment.Status.SUBMITTED).count()
    total = mine.count()
    return {
        "assignment": assignment,
        "job": assignment.job,
        "dialogue": dialogue,
        "alias": model_alias(dialogue),
        "g": grounding_view(skill=dialogue.skill.key, grounding=dialogue.grounding),
        "turns": turns,
        "static": static,
        "dialogue_questions": dialogue_questions,
        "instructions": localized(spec.instructions, language),
        "rubric_title": localized(spec.title, language),
        "n_answered": len(answers),
        "n_questions": n_questions,
        "done": done,
        "total": total,
        "position": min(done + 1, total),
        "percent": round(100 * done / total) if total else 0,
        "editable": assignment.status in OPEN_STATUSES
        and assignment.job.status == RatingJob.Status.OPEN,
    }


# --- gold and onboarding items -----------------------------------------------------------------


def gold_items(job: RatingJob) -> QuerySet[GoldItem]:
    """The job's gold and onboarding items with their dialogues, onboarding first."""
    return GoldItem.objects.filter(job=job).select_related("dialogue").order_by("-purpose", "id")


def gold_dialogue(job: RatingJob, ref: str) -> Dialogue | None:
    """A dialogue of the job's campaign (and static run) by its id or its external id."""
    ref = ref.strip()
    if not ref:
        return None
    dialogues = Dialogue.objects.filter(campaign=job.campaign_id).select_related("skill")
    if job.static_run_id is not None:
        dialogues = dialogues.filter(static_run=job.static_run_id)
    by_external = dialogues.filter(external_id=ref).first()
    if by_external is not None:
        return by_external
    return dialogues.filter(pk=int(ref)).first() if ref.isdigit() else None


@dataclass(frozen=True)
class GoldField:
    """One known answer a researcher may give: a question, for the dialogue or one model turn."""

    name: str  # the form field's name
    key: str
    label: str
    turn: int | None  # model-turn index from 0 (the kernels' numbering), None: dialogue level
    options: tuple[OptionView, ...]


@dataclass(frozen=True)
class GoldGroup:
    """The known-answer fields of the whole dialogue, or of one model reply (shown with it)."""

    turn: int | None
    text: str
    fields: tuple[GoldField, ...]


def gold_field_name(key: str, turn: int | None) -> str:
    return f"a-{key}" if turn is None else f"a-{key}-t{turn}"


def gold_groups(
    *, job: RatingJob, dialogue: Dialogue, language: str, yes: str, no: str
) -> list[GoldGroup]:
    """The questions of the job's rubric that apply to `dialogue`'s skill, as known-answer
    fields: dialogue-level ones first, then the turn-level ones per model reply (up to each
    question's `max_turns`). Free-text questions have no known answer and are left out."""
    spec = as_spec(job.rubric.spec)
    skill = dialogue.skill.key

    def fields(level: str, turn: int | None) -> tuple[GoldField, ...]:
        return tuple(
            GoldField(
                name=gold_field_name(q.key, turn),
                key=q.key,
                label=localized(q.label, language) or q.key,
                turn=turn,
                options=_options(q, language, yes, no),
            )
            for q in applicable_questions(spec, skill, level)
            if q.type != "text" and (turn is None or q.max_turns is None or turn < q.max_turns)
        )

    groups = []
    dialogue_fields = fields("dialogue", None)
    if dialogue_fields:
        groups.append(GoldGroup(turn=None, text="", fields=dialogue_fields))
    for index, turn in enumerate(model_turns(dialogue)):
        turn_fields = fields("turn", index)
        if turn_fields:
            groups.append(GoldGroup(turn=index, text=turn.text, fields=turn_fields))
    return groups
