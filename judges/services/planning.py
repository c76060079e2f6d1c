"""Planning a judge run: which dialogues each chunk covers, and the prompts of a chunk.

At creation (:mod:`judges.services.runs`) :func:`plan_parts` splits the target's dialogues into
parts of up to :data:`PART_SIZE` dialogues of one system batch (backend × skill), or into pairs
in pairwise mode (same-scenario pairs, and the pairs the study's human votes compared); each
part is fixed in a ``JudgeChunk``. When a chunk runs (:mod:`judges.services.chunks`),
:func:`plan_items` renders its prompts: dialogue-level questions once per dialogue, turn-level
questions once per model turn, both orders of a pair in pairwise mode. :func:`judge_preview`
shows the same prompts before any run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from chat.models import Campaign, Dialogue, Turn, Vote
from judges import prompts
from judges.models import Judge
from judges.scoring import DialogueData, JudgeConfig
from judges.services.config import JudgeError, check_templates, judge_config
from metrics.models import MetricRun
from metrics.selectors.metric_runs import target_dialogues

PART_SIZE = 100  # dialogues per chunk: progress granularity vs per-chunk overhead


# --- units (when a chunk runs) -----------------------------------------------------------------


def load_dialogues(ids: Iterable[int]) -> dict[int, DialogueData]:
    ids = list(ids)
    rows = Dialogue.objects.filter(pk__in=ids).values_list(
        "pk",
        "backend_id",
        "skill__key",
        "language",
        "grounding",
        "scenario_id",
        "scenario__grounding",
        "static_run_id",
        "campaign__mode",
        "campaign__static_answers",
    )
    out: dict[int, DialogueData] = {}
    for (
        pk,
        backend_id,
        skill,
        language,
        grounding,
        scenario,
        scenario_grounding,
        static_run,
        mode,
        static_answers,
    ) in rows:
        out[pk] = DialogueData(
            id=pk,
            backend_id=backend_id,
            skill=skill,
            language=language if language in prompts.LANGUAGES else "en",
            grounding=grounding or scenario_grounding or {},
            scenario_id=scenario,
            turns=[],
            static=static_run is not None or mode == Campaign.Mode.STATIC or static_answers,
        )
    turns = (
        Turn.objects.filter(dialogue_id__in=ids)
        .order_by("dialogue_id", "index")
        .values_list("dialogue_id", "pk", "speaker", "text", "references")
    )
    for dialogue_id, pk, speaker, text, references in turns.iterator(chunk_size=5000):
        refs = [r for r in (references or []) if isinstance(r, str) and r.strip()]
        out[dialogue_id].turns.append((pk, speaker, text, refs))
    return out


@dataclass
class WorkItem:
    unit_key: str  # without the sample suffix
    dialogue_id: int
    turn_id: int | None
    turn_index: int | None  # among the dialogue's model turns
    other_id: int | None
    order: str
    prompt: prompts.JudgePrompt
    language: str


def _reference(data: DialogueData, position: int) -> str:
    refs = data.turns[position][3]
    return refs[0] if refs else ""


def plan_items(
    config: JudgeConfig,
    dialogues: Mapping[int, DialogueData],
    *,
    dialogue_ids: Sequence[int] = (),
    pairs: Sequence[Sequence[int]] = (),
) -> tuple[list[WorkItem], dict[str, str]]:
    """The prompts of a part, and reasons for units that cannot be judged (by metric name)."""
    items: list[WorkItem] = []
    skipped: dict[str, str] = {}
    spec = config.spec
    for dialogue_id in dialogue_ids:
        data = dialogues.get(dialogue_id)
        if data is None:
            continue
        template = config.templates.get(data.language)
        model_positions = data.model_turns()
        if not model_positions:
            continue
        dialogue_qs = prompts.questions_for(spec, skill=data.skill, level="dialogue")
        if dialogue_qs:
            reference = ""
            if config.mode == "reference":
                reference = _reference(data, model_positions[-1])
                if not reference:
                    for q in dialogue_qs:
                        skipped[f"{config.prefix}:{q.key}"] = "no reference for some dialogues"
            if config.mode != "reference" or reference:
                view = data.view(model_positions[-1] + 1) if data.static else data.view()
                items.append(
                    WorkItem(
                        unit_key=f"d{dialogue_id}",
                        dialogue_id=dialogue_id,
                        turn_id=None,
                        turn_index=None,
                        other_id=None,
                        order="",
                        prompt=prompts.render(
                            spec=spec,
                            mode=config.mode,
                            level="dialogue",
                            view=view,
                            reference=reference,
                            template=template,
                            questions=dialogue_qs,
                        ),
                        language=data.language,
                    )
                )
        turn_qs = prompts.questions_for(spec, skill=data.skill, level="turn")
        if not turn_qs:
            continue
        limit = min((q.max_turns for q in turn_qs if q.max_turns), default=None)
        for index, position in enumerate(model_positions):
            if limit is not None and index >= limit:
                break
            reference = _reference(data, position) if config.mode == "reference" else ""
            if config.mode == "reference" and not reference:
                for q in turn_qs:
                    skipped[f"{config.prefix}:{q.key}"] = "no reference for some turns"
                continue
            turn_id = data.turns[position][0]
            items.append(
                WorkItem(
                    unit_key=f"d{dialogue_id}:t{turn_id}",
                    dialogue_id=dialogue_id,
                    turn_id=turn_id,
                    turn_index=index,
                    other_id=None,
                    order="",
                    prompt=prompts.render(
                        spec=spec,
                        mode=config.mode,
                        level="turn",
                        view=data.view(position),
                        reply=data.turns[position][2],
                        reference=reference,
                        template=template,
                        questions=turn_qs,
                    ),
                    language=data.language,
                )
            )
    for first, second in pairs:
        one, two = dialogues.get(first), dialogues.get(second)
        if one is None or two is None:
            continue
        questions = prompts.questions_for(spec, skill=one.skill, level="dialogue", mode="pairwise")
        if not questions:
            continue
        template = config.templates.get(one.language)
        for order, (a, b) in (("ab", (one, two)), ("ba", (two, one))):
            items.append(
                WorkItem(
                    unit_key=f"p{first}-{second}:{order}",
                    dialogue_id=first,
                    turn_id=None,
                    turn_index=None,
                    other_id=second,
                    order=order,
                    prompt=prompts.render(
                        spec=spec,
                        mode="pairwise",
                        level="dialogue",
                        view=a.view(),
                        other=b.view(),
                        template=template,
                        questions=questions,
                    ),
                    language=one.language,
                )
            )
    return items, skipped


# --- parts (at creation) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One chunk's share of a run: its system batch and its dialogues (or pairs, each with the
    [item, turn] keys its votes are written under)."""

    backend_id: int
    skill_id: int
    dialogues: list[int]
    pairs: list[list[int]]
    pair_items: list[list[list[Any]]] = field(default_factory=list)


def voted_pairs(run: MetricRun, dialogue_ids: Iterable[int]) -> dict[tuple[int, int], set[Any]]:
    """The distinct dialogue pairs the study's human votes compared (among ``dialogue_ids``),
    each (lower id, higher id) with the (item, turn) keys of its votes."""
    wanted = set(dialogue_ids)
    votes = (
        Vote.objects.filter(
            campaign_id=run.campaign_id,
            voter_kind=Vote.VoterKind.HUMAN,
            dialogue_a__isnull=False,
            dialogue_b__isnull=False,
        )
        .values_list("dialogue_a_id", "dialogue_b_id", "item", "turn")
        .distinct()
    )
    pairs: dict[tuple[int, int], set[Any]] = defaultdict(set)
    for a, b, item, turn in votes.iterator(chunk_size=5000):
        if a != b and a in wanted and b in wanted:
            pairs[(min(a, b), max(a, b))].add((item, turn))
    return pairs


def plan_parts(*, mode: str, run: MetricRun) -> list[Part]:
    """The run's chunks: system batches split into parts of :data:`PART_SIZE` dialogues; in
    pairwise mode, one pair per two backends' dialogues of the same scenario and skill (the
    first dialogue of each backend), and every pair of dialogues the study's human votes
    compared (imported with their conversations: these have no scenario), the pairs grouped by
    the first dialogue's backend and skill. A voted pair keeps its votes' items and turns (its
    judge votes are written under them, so they match the human votes: decision XX); a
    same-scenario pair is the scenario's item, turn 1."""
    dialogues = target_dialogues(run=run).filter(turns__speaker=Turn.Speaker.SYSTEM).distinct()
    rows = sorted(dialogues.values_list("pk", "backend_id", "skill_id", "scenario_id"))
    parts: list[Part] = []
    if mode != "pairwise":
        batches: dict[tuple[int, int], list[int]] = defaultdict(list)
        for pk, backend_id, skill_id, _scenario in rows:
            batches[(backend_id, skill_id)].append(pk)
        for (backend_id, skill_id), ids in sorted(batches.items()):
            for start in range(0, len(ids), PART_SIZE):
                parts.append(Part(backend_id, skill_id, ids[start : start + PART_SIZE], []))
        return parts
    info = {pk: (backend_id, skill_id) for pk, backend_id, skill_id, _scenario in rows}
    planned: dict[tuple[int, int], list[list[Any]]] = {}
    scenes: dict[tuple[int, int], dict[int, int]] = defaultdict(dict)
    for pk, backend_id, skill_id, scenario in rows:
        if scenario is not None:
            scenes[(scenario, skill_id)].setdefault(backend_id, pk)
    for (scenario, _skill_id), by_backend in sorted(scenes.items()):
        for (_b1, d1), (_b2, d2) in combinations(sorted(by_backend.items()), 2):
            planned[(d1, d2)] = [[str(scenario), 1]]
    for (d1, d2), voted in voted_pairs(run, info).items():
        if info[d1][0] == info[d2][0]:  # a vote compares two systems
            continue
        # A pair also on one scenario is judged once, under its votes' keys.
        pair = (d2, d1) if (d2, d1) in planned else (d1, d2)
        planned[pair] = [list(k) for k in sorted(voted)]
    grouped: dict[tuple[int, int], list[tuple[list[int], list[list[Any]]]]] = defaultdict(list)
    for (d1, d2), keys in planned.items():
        grouped[info[d1]].append(([d1, d2], keys))
    for (backend_id, skill_id), entries in sorted(grouped.items()):
        for start in range(0, len(entries), PART_SIZE):
            share = entries[start : start + PART_SIZE]
            parts.append(
                Part(
                    backend_id,
                    skill_id,
                    [],
                    [pair for pair, _keys in share],
                    [keys for _pair, keys in share],
                )
            )
    return parts


# --- preview ------------------------------------------------------------------------------------


def judge_preview(
    *, judge: Judge, dialogue: Dialogue, other: Dialogue | None = None, template: str | None = None
) -> list[prompts.JudgePrompt]:
    """The prompts the judge would send for ``dialogue`` (the first of each kind: dialogue-level
    and turn-level; both orders with ``other`` in pairwise mode), with an unsaved ``template``
    override when given (the edit form previews before saving)."""
    config = judge_config(judge)
    if template is not None:
        language = dialogue.language if dialogue.language in prompts.LANGUAGES else "en"
        checked = check_templates({language: template})
        config = JudgeConfig(**{**config.__dict__, "templates": {**config.templates, **checked}})
    ids = [dialogue.pk] + ([other.pk] if other is not None else [])
    data = load_dialogues(ids)
    if config.mode == "pairwise":
        if other is None:
            raise JudgeError("choose a second dialogue to compare with", field="other")
        items, _ = plan_items(config, data, pairs=[[dialogue.pk, other.pk]])
    else:
        items, skipped = plan_items(config, data, dialogue_ids=[dialogue.pk])
        if not items and skipped:
            raise JudgeError(next(iter(skipped.values())), field="dialogue")
    seen: set[str] = set()
    out = []
    for item in items:
        kind = "turn" if item.turn_id else (item.order or "dialogue")
        if kind not in seen:
            seen.add(kind)
            out.append(item.prompt)
    if not out:
        raise JudgeError("this dialogue has no model turn to judge", field="dialogue")
    return out
