"""Judges: create and version them, preview and estimate, run them as metric runs.

A judge run is a :class:`metrics.models.MetricRun` with chunks of family ``judge:<part>``; each
chunk covers up to :data:`PART_SIZE` dialogues of one system batch (backend × skill), fixed at
creation in a :class:`JudgeChunk`. A chunk

1. renders a prompt per unit (dialogue-level questions once per dialogue, turn-level questions
   once per model turn, both orders of a pair in pairwise mode);
2. answers each from the cache or the backend (concurrently, within the backend's concurrency
   limit and the judge's rate limit), parsing each reply and asking again up to
   ``max_attempts`` when it is not fully parseable;
3. under the run's row lock, replaces its :class:`JudgeAnswer` rows, recomputes the metric
   scores of its dialogues *from the stored answers*, recomputes the affected system means, and
   marks itself done with a compare-and-set (so a re-run counts once and scores never double).

Unparseable, refused, truncated and failed answers are stored with their raw text and never
scored: a question without a valid answer simply has no score for that unit.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.models import Rubric
from annotation.rubric_spec import Question, RubricSpec, validate_spec
from annotation.scoring import Answer, IncompleteAnswersError, score_unit
from chat.backends.base import BackendSpec
from chat.backends.errors import BackendError
from chat.models import Backend, Campaign, Dialogue, StaticRun, Turn
from core.errors import ServiceError
from core.jobs import JobCancelled, abandon_when_stopped, job_finish, job_stop_event
from judges import client as judge_client
from judges import parsing, prompts
from judges.models import Judge, JudgeAnswer, JudgeCacheEntry, JudgeChunk, JudgeRun
from metrics.models import JobStatus, Level, MetricRun, MetricRunChunk, MetricScore
from metrics.selectors.metric_runs import target_dialogues

logger = logging.getLogger(__name__)

PART_SIZE = 100  # dialogues per chunk: progress granularity vs per-chunk overhead
OVERALL = "overall"
NAME_MAX_LENGTH = 160
MAX_SAMPLES = 20
MAX_ATTEMPTS = 10
SAMPLING_KEYS = {
    "temperature": (float, 0.0, 2.0),
    "max_tokens": (int, 1, 32_768),
    "n": (int, 1, MAX_SAMPLES),
    "aggregate": (str, ("mean", "majority")),
    "geval": (bool,),
    "top_logprobs": (int, 1, 20),
    "seed": (int, 0, 2**31 - 1),
    "rate_limit_per_s": (float, 0.0, 10_000.0),
}


class JudgeError(ServiceError):
    """Bad input for a judge or a judge run; ``field`` names what is wrong (``sampling: …``)."""

    location_style = "prefix"


# --- checks -------------------------------------------------------------------------------------


def check_sampling(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validated sampling settings (each error names the key)."""
    values = dict(values or {})
    unknown = sorted(set(values) - set(SAMPLING_KEYS))
    if unknown:
        raise JudgeError(
            f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(SAMPLING_KEYS)}",
            field="sampling",
        )
    for key, value in values.items():
        kind, *bounds = SAMPLING_KEYS[key]
        if kind is bool:
            if not isinstance(value, bool):
                raise JudgeError(f"{key} must be true or false, got {value!r}", field="sampling")
            continue
        if kind is str:
            if value not in bounds[0]:
                raise JudgeError(
                    f"{key} must be one of {', '.join(bounds[0])}, got {value!r}", field="sampling"
                )
            continue
        ok_type = isinstance(value, int | float) if kind is float else isinstance(value, int)
        if isinstance(value, bool) or not ok_type:
            raise JudgeError(f"{key} must be a number, got {value!r}", field="sampling")
        low, high = bounds
        if not low <= value <= high:
            raise JudgeError(f"{key} must be from {low} to {high}, got {value!r}", field="sampling")
    return values


def check_templates(templates: Mapping[str, Any] | None) -> dict[str, str]:
    templates = dict(templates or {})
    cleaned: dict[str, str] = {}
    for language, template in templates.items():
        if language not in prompts.LANGUAGES:
            raise JudgeError(
                f"unknown language {language!r} (use {', '.join(prompts.LANGUAGES)})",
                field="prompt_templates",
            )
        if template is None or (isinstance(template, str) and not template.strip()):
            continue  # an empty override means "use the generated template"
        try:
            prompts.validate_template(template, field=f"prompt_templates.{language}")
        except prompts.TemplateError as exc:
            raise JudgeError(exc.message, field=exc.field) from None
        cleaned[language] = template
    return cleaned


def _check_backend(backend: Backend) -> None:
    if backend.adapter == Backend.Adapter.IMPORTED:
        raise JudgeError("an imported system cannot be called, so it cannot judge", field="backend")
    if not backend.active:
        raise JudgeError(f"backend {backend.name!r} is not active", field="backend")


def _check_rubric(rubric: Rubric, mode: str) -> RubricSpec:
    spec = validate_spec(rubric.spec)
    if not any(q.scored for q in spec.questions):
        raise JudgeError("the rubric has no scored question to judge", field="rubric")
    if mode == "pairwise" and not any(
        q.scored and not q.gate and q.level == "dialogue" for q in spec.questions
    ):
        raise JudgeError(
            "pairwise mode compares dialogue-level questions; this rubric has none", field="mode"
        )
    return spec


# --- create, version ----------------------------------------------------------------------------


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-")[:40]
    return slug or "judge"


@transaction.atomic
def judge_create(
    *,
    name: str,
    backend: Backend,
    rubric: Rubric,
    mode: str = Judge.Mode.DIRECT,
    sampling: Mapping[str, Any] | None = None,
    structured: str = Judge.Structured.AUTO,
    max_attempts: int = 3,
    prompt_templates: Mapping[str, Any] | None = None,
    price_input: float = 0.0,
    price_output: float = 0.0,
    description: str = "",
    key: str | None = None,
    created_by: AbstractBaseUser | None = None,
) -> Judge:
    """A new judge (version 1 of a new key). Raises :class:`JudgeError` naming the field."""
    name = name.strip()
    if not name:
        raise JudgeError("a judge name is required", field="name")
    if len(name) > NAME_MAX_LENGTH:
        raise JudgeError(f"longer than {NAME_MAX_LENGTH} characters", field="name")
    if key:
        key = _slug(key)
        if Judge.objects.filter(key=key).exists():
            raise JudgeError(
                f"a judge with key {key!r} exists; edit it to make a new version", field="key"
            )
    else:
        # From the name; a name with no Latin letters (中文) gives "judge", then judge-2, ….
        base, number = _slug(name), 1
        key = base
        while Judge.objects.filter(key=key).exists():
            number += 1
            key = f"{base[:35]}-{number}"
    return _save(
        Judge(key=key, version=1, created_by=created_by),
        name=name,
        backend=backend,
        rubric=rubric,
        mode=mode,
        sampling=sampling,
        structured=structured,
        max_attempts=max_attempts,
        prompt_templates=prompt_templates,
        price_input=price_input,
        price_output=price_output,
        description=description,
    )


def _save(judge: Judge, **fields: Any) -> Judge:
    if fields["mode"] not in Judge.Mode.values:
        raise JudgeError(
            f"unknown mode {fields['mode']!r} (use {', '.join(Judge.Mode.values)})", field="mode"
        )
    if fields["structured"] not in Judge.Structured.values:
        raise JudgeError(
            f"unknown value {fields['structured']!r} (use {', '.join(Judge.Structured.values)})",
            field="structured",
        )
    attempts = fields["max_attempts"]
    if (
        isinstance(attempts, bool)
        or not isinstance(attempts, int)
        or not 1 <= attempts <= MAX_ATTEMPTS
    ):
        raise JudgeError(f"must be a whole number from 1 to {MAX_ATTEMPTS}", field="max_attempts")
    for price in ("price_input", "price_output"):
        value = fields[price]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or value < 0
            or not math.isfinite(value)
        ):
            raise JudgeError("must be a number ≥ 0", field=price)
    _check_backend(fields["backend"])
    _check_rubric(fields["rubric"], fields["mode"])
    fields["sampling"] = check_sampling(fields["sampling"])
    fields["prompt_templates"] = check_templates(fields["prompt_templates"])
    for name, value in fields.items():
        setattr(judge, name, value)
    judge.save()
    return judge


@transaction.atomic
def judge_new_version(
    *, judge: Judge, created_by: AbstractBaseUser | None = None, **changes: Any
) -> Judge:
    """The next version of ``judge`` with ``changes`` applied; earlier versions stay as they
    were (their runs and scores keep naming them)."""
    latest = Judge.objects.select_for_update().filter(key=judge.key).order_by("-version").first()
    assert latest is not None
    fields = {
        "name": judge.name,
        "backend": judge.backend,
        "rubric": judge.rubric,
        "mode": judge.mode,
        "sampling": judge.sampling,
        "structured": judge.structured,
        "max_attempts": judge.max_attempts,
        "prompt_templates": judge.prompt_templates,
        "price_input": judge.price_input,
        "price_output": judge.price_output,
        "description": judge.description,
    }
    unknown = sorted(set(changes) - set(fields))
    if unknown:
        raise JudgeError(f"cannot change {', '.join(unknown)}", field=unknown[0])
    fields.update(changes)
    return _save(Judge(key=judge.key, version=latest.version + 1, created_by=created_by), **fields)


# --- the judge's plain configuration ------------------------------------------------------------


@dataclass(frozen=True)
class JudgeConfig:
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


def judge_config(judge: Judge) -> JudgeConfig:
    spec = validate_spec(judge.rubric.spec)
    sampling = judge.sampling or {}
    backend = BackendSpec.from_backend(judge.backend)
    openai = backend.adapter == Backend.Adapter.OPENAI
    structured = judge.structured
    if structured == Judge.Structured.AUTO:
        # vLLM constrains decoding to the schema with its own guided_json field.
        vllm = backend.config.get("engine") == "vllm"
        structured = ("guided_json" if vllm else "json_schema") if openai else "none"
    if not openai:
        structured = "none"
    # G-Eval: log-probabilities from an OpenAI-compatible server, or read by a forward pass
    # from a local transformers model (judges.local_geval); other adapters return none.
    local = backend.adapter == Backend.Adapter.TRANSFORMERS
    geval = bool(sampling.get("geval")) and (openai or local)
    params = judge_client.Params(
        n=int(sampling.get("n", 1)),
        temperature=sampling.get("temperature"),
        max_tokens=sampling.get("max_tokens"),
        seed=sampling.get("seed"),
        logprobs=geval,
        top_logprobs=int(sampling.get("top_logprobs", 20)) if geval and openai else 0,
        response_format=structured,
    )
    aggregate = sampling.get("aggregate", "mean")
    signature = (
        f"judge={judge.key}@v{judge.version}|backend={judge.backend.name}|"
        f"model={backend.config.get('model') or backend.config.get('model_path') or ''}|"
        f"rubric={judge.rubric.key}@v{judge.rubric.version}|mode={judge.mode}|"
        f"n={params.n}|agg={aggregate}|geval={'yes' if geval else 'no'}|"
        f"format={structured}|T={params.temperature}"
    )
    return JudgeConfig(
        judge_id=judge.pk,
        prefix=judge.metric_prefix,
        mode=judge.mode,
        spec=spec,
        backend=backend,
        n=params.n,
        aggregate=aggregate,
        geval=geval,
        params=params,
        max_attempts=judge.max_attempts,
        templates=dict(judge.prompt_templates or {}),
        rate_limit=float(sampling.get("rate_limit_per_s", 0.0)),
        signature=signature,
    )


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


# --- units --------------------------------------------------------------------------------------


@dataclass
class DialogueData:
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
        positions = [i for i, t in enumerate(self.turns) if t[1] == Turn.Speaker.SYSTEM]
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


# --- cache --------------------------------------------------------------------------------------


def cache_key(config: JudgeConfig, prompt_hash: str, params: judge_client.Params) -> str:
    """sha256 of (backend, model, prompt hash, parameters): what makes two requests the same."""
    payload = judge_client.dumps([config.backend.id, config.model, prompt_hash, params.to_dict()])
    return hashlib.sha256(payload.encode()).hexdigest()


def _attempt_params(config: JudgeConfig, attempt: int) -> judge_client.Params:
    values = config.params.to_dict()
    values["attempt"] = attempt
    return judge_client.Params(**values)


def _cached(keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    keys = list(keys)
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(keys), 2000):
        found.update(
            JudgeCacheEntry.objects.filter(key__in=keys[start : start + 2000]).values_list(
                "key", "response"
            )
        )
    return found


# --- executing a part ---------------------------------------------------------------------------


@dataclass
class SampleResult:
    parsed: parsing.Parsed
    choice: judge_client.Choice
    geval: dict[str, float] = field(default_factory=dict)


@dataclass
class ItemResult:
    item: WorkItem
    samples: list[SampleResult] = field(default_factory=list)
    attempts: int = 0
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""


@dataclass
class PartTraffic:
    sent: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    new_entries: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _parse_completion(
    config: JudgeConfig, item: WorkItem, completion: judge_client.Completion
) -> list[SampleResult]:
    mode = "pairwise" if item.order else "direct"
    out = []
    for choice in completion.choices[: config.n]:
        parsed = parsing.parse_reply(
            choice.text,
            item.prompt.questions,
            mode=mode,
            finish_reason=choice.finish_reason,
            refusal=choice.refusal,
        )
        geval: dict[str, float] = {}
        if config.geval and mode == "direct" and choice.value_logprobs:
            # A local model's candidates, read where each value starts (judges.local_geval).
            for q in item.prompt.questions:
                entries = choice.value_logprobs.get(q.key)
                if entries and q.key in parsed.values:
                    expectation = parsing.geval_expectation(q, entries)
                    if expectation is not None:
                        geval[q.key] = expectation
        elif config.geval and choice.logprobs and mode == "direct":
            geval = parsing.geval_scores(
                choice.text, choice.logprobs, item.prompt.questions, parsed
            )
        out.append(SampleResult(parsed=parsed, choice=choice, geval=geval))
    return out


def _quality(samples: Sequence[SampleResult]) -> tuple[int, int]:
    return (
        sum(s.parsed.status == parsing.OK for s in samples),
        sum(len(s.parsed.values) for s in samples),
    )


async def _judge_item(
    config: JudgeConfig,
    item: WorkItem,
    cached: Mapping[str, dict[str, Any]],
    traffic: PartTraffic,
    http: Any,
    rate: judge_client.RateLimiter | None,
) -> ItemResult:
    result = ItemResult(item=item)
    best: list[SampleResult] | None = None
    for attempt in range(config.max_attempts):
        params = _attempt_params(config, attempt)
        key = cache_key(config, item.prompt.digest, params)
        entry = cached.get(key) or (traffic.new_entries.get(key) or (None, None, None))[2]
        result.attempts = attempt + 1
        if entry is not None:
            completion = judge_client.Completion.from_dict(entry)
            traffic.cache_hits += 1
            from_cache = True
        else:
            try:
                completion = await judge_client.call(
                    http,
                    config.backend,
                    system=item.prompt.system,
                    user=item.prompt.user,
                    language=item.language,
                    params=params,
                    schema=item.prompt.schema,
                    rate=rate,
                    questions=item.prompt.questions if item.order == "" else (),
                )
            except BackendError as exc:
                if exc.kind == "config":
                    raise
                result.error = str(exc)
                continue
            traffic.sent += 1
            traffic.notes.extend(completion.notes)
            traffic.prompt_tokens += completion.prompt_tokens
            traffic.completion_tokens += completion.completion_tokens
            result.prompt_tokens += completion.prompt_tokens
            result.completion_tokens += completion.completion_tokens
            traffic.new_entries[key] = (item.prompt.digest, params.to_dict(), completion.to_dict())
            from_cache = False
        samples = _parse_completion(config, item, completion)
        if not samples:
            result.error = "the backend returned no choices"
            continue
        if best is None or _quality(samples) >= _quality(best):
            best, result.cached = samples, from_cache
        if all(s.parsed.status == parsing.OK for s in samples):
            break
    result.samples = best or []
    if best:
        result.error = ""
    return result


async def _execute_unless_stopped(
    config: JudgeConfig,
    items: Sequence[WorkItem],
    cached: Mapping[str, dict[str, Any]],
    traffic: PartTraffic,
) -> list[ItemResult]:
    """`_execute`, abandoned when the chunk's job stops (its run was cancelled)."""
    return await abandon_when_stopped(_execute(config, items, cached, traffic), job_stop_event())


async def _execute(
    config: JudgeConfig,
    items: Sequence[WorkItem],
    cached: Mapping[str, dict[str, Any]],
    traffic: PartTraffic,
) -> list[ItemResult]:
    http = judge_client.http_client(config.backend) if config.backend.adapter == "openai" else None
    rate = (
        judge_client.rate_limiter(config.backend.id, config.rate_limit)
        if config.rate_limit
        else None
    )
    # Bounded fan-out: the limiter bounds requests in flight; this bounds tasks alive at once.
    gate = asyncio.Semaphore(max(config.backend.concurrency_limit * 2, 4))

    async def one(item: WorkItem) -> ItemResult:
        async with gate:
            return await _judge_item(config, item, cached, traffic, http, rate)

    try:
        return list(await asyncio.gather(*(one(item) for item in items)))
    finally:
        if http is not None:
            await http.close()


# --- scores from stored answers -----------------------------------------------------------------


def _answer_rows(run: MetricRun, results: Sequence[ItemResult]) -> list[JudgeAnswer]:
    rows = []
    for result in results:
        item = result.item
        samples = result.samples or [None]
        for index, sample in enumerate(samples):
            if sample is None:
                status, raw, values, problems, rationale, finish = (
                    JudgeAnswer.Status.ERROR,
                    "",
                    {},
                    [result.error or "no answer"],
                    "",
                    "",
                )
                geval: dict[str, float] = {}
            else:
                status = sample.parsed.status
                raw = sample.choice.text or (sample.choice.refusal or "")
                values = sample.parsed.values
                problems = sample.parsed.problems
                rationale = sample.parsed.rationale
                finish = sample.choice.finish_reason or ""
                geval = sample.geval
            rows.append(
                JudgeAnswer(
                    run=run,
                    unit_key=f"{item.unit_key}:s{index}",
                    dialogue_id=item.dialogue_id,
                    turn_id=item.turn_id,
                    other_dialogue_id=item.other_id,
                    order=item.order,
                    sample=index,
                    status=status,
                    attempts=max(result.attempts, 1),
                    values=values,
                    geval=geval,
                    rationale=rationale,
                    raw=raw,
                    problems=problems[:20],
                    finish_reason=finish[:40],
                    prompt_hash=item.prompt.digest,
                    prompt_tokens=result.prompt_tokens if index == 0 else 0,
                    completion_tokens=result.completion_tokens if index == 0 else 0,
                    cached=result.cached,
                )
            )
    return rows


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _question_value(
    config: JudgeConfig, q: Question, answers: Sequence[JudgeAnswer]
) -> float | None:
    """One unit's score on one question over its samples (G-Eval expectation when present)."""
    if config.geval:
        weighted = [a.geval[q.key] for a in answers if q.key in a.geval]
        if weighted:
            return _mean(weighted)
    values = [a.values[q.key] for a in answers if q.key in a.values]
    return parsing.aggregate_samples(q, values, config.aggregate)


def _discrete(q: Question, answers: Sequence[JudgeAnswer], sample: int | None) -> float | None:
    values = [
        a.values[q.key]
        for a in answers
        if q.key in a.values and (sample is None or a.sample == sample)
    ]
    if not values:
        return None
    return parsing.majority(values) if sample is None else values[0]


def direct_scores(
    config: JudgeConfig, data: DialogueData, answers: Sequence[JudgeAnswer]
) -> tuple[dict[str, float], dict[tuple[str, int], float]]:
    """A dialogue's scores from its stored answers: per metric name at the dialogue level, and
    per (metric name, turn id) for turn-level questions."""
    spec = config.spec
    dialogue_answers = [a for a in answers if a.turn_id is None]
    by_turn: dict[int, list[JudgeAnswer]] = defaultdict(list)
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


def pair_outcomes(
    config: JudgeConfig, answers: Sequence[JudgeAnswer]
) -> dict[tuple[int, int], dict[str, tuple[float | None, str | None, bool | None]]]:
    """Per pair (dialogue 1, dialogue 2) and question: (score of dialogue 1, verdict, flipped)."""
    by_pair: dict[tuple[int, int], dict[str, list[JudgeAnswer]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for answer in answers:
        if answer.order and answer.other_dialogue_id is not None:
            by_pair[(answer.dialogue_id, answer.other_dialogue_id)][answer.order].append(answer)
    out: dict[tuple[int, int], dict[str, tuple[float | None, str | None, bool | None]]] = {}
    keys = [
        q.key for q in config.spec.questions if q.scored and not q.gate and q.level == "dialogue"
    ]
    for pair, orders in by_pair.items():
        outcome = {}
        for key in keys:
            forward = [a.values[key] for a in orders.get("ab", []) if key in a.values]
            backward = [a.values[key] for a in orders.get("ba", []) if key in a.values]
            f = parsing.majority(forward) if forward else None
            b = parsing.majority(backward) if backward else None
            score, verdict = parsing.swap_aggregate(f, b)
            outcome[key] = (score, verdict, parsing.position_flip(f, b))
        out[pair] = outcome
    return out


def _pairwise_scores(
    config: JudgeConfig, answers: Sequence[JudgeAnswer]
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


def _score_rows(
    run: MetricRun,
    config: JudgeConfig,
    dialogue_ids: Iterable[int],
    *,
    dialogues: Mapping[int, DialogueData] | None = None,
    answers: Sequence[JudgeAnswer] | None = None,
) -> list[MetricScore]:
    """The scores of ``dialogue_ids`` from their stored answers (``answers``: the rows just
    written, when they are all of them — direct mode, where a part owns its dialogues)."""
    ids = sorted(set(dialogue_ids))
    if dialogues is None or any(i not in dialogues for i in ids):
        dialogues = load_dialogues(ids)
    rows: list[MetricScore] = []
    if config.mode == "pairwise":
        answers = list(
            JudgeAnswer.objects.filter(run=run).filter(
                Q(dialogue_id__in=ids) | Q(other_dialogue_id__in=ids)
            )
        )
        for dialogue_id, metrics in _pairwise_scores(config, answers).items():
            data = dialogues.get(dialogue_id)
            if data is None:
                continue
            for name, value in metrics.items():
                rows.append(_row(run, data, name, value))
        return rows
    by_dialogue: dict[int, list[JudgeAnswer]] = defaultdict(list)
    wanted = set(ids)
    source = (
        answers if answers is not None else JudgeAnswer.objects.filter(run=run, dialogue_id__in=ids)
    )
    for answer in source:
        if answer.dialogue_id in wanted:
            by_dialogue[answer.dialogue_id].append(answer)
    for dialogue_id, answers in by_dialogue.items():
        data = dialogues[dialogue_id]
        dialogue, turns = direct_scores(config, data, answers)
        for name, value in dialogue.items():
            rows.append(_row(run, data, name, value))
        for (name, turn_id), value in turns.items():
            rows.append(_row(run, data, name, value, turn_id=turn_id))
    return rows


def _row(
    run: MetricRun, data: DialogueData, name: str, value: float, turn_id: int | None = None
) -> MetricScore:
    return MetricScore(
        run=run,
        metric=name,
        level=Level.TURN if turn_id else Level.DIALOGUE,
        turn_id=turn_id,
        dialogue_id=data.id,
        backend_id=data.backend_id,
        group=data.skill,
        value=float(value),
    )


def _system_rows(run: MetricRun, backend_ids: Iterable[int]) -> list[MetricScore]:
    """Each backend's mean dialogue score per skill and over all skills (group "")."""
    sums: dict[tuple[int, str, str], list[float]] = defaultdict(list)
    for backend_id, metric, group, value in MetricScore.objects.filter(
        run=run, level=Level.DIALOGUE, backend_id__in=list(backend_ids)
    ).values_list("backend_id", "metric", "group", "value"):
        sums[(backend_id, metric, group)].append(value)
        sums[(backend_id, metric, "")].append(value)
    return [
        MetricScore(
            run=run,
            metric=metric,
            level=Level.SYSTEM,
            backend_id=backend_id,
            group=group,
            value=sum(values) / len(values),
        )
        for (backend_id, metric, group), values in sums.items()
    ]


# --- the chunk handler --------------------------------------------------------------------------


def judge_chunk_queue(chunk_id: int) -> str:
    """A local ``transformers`` judge runs a model: the configured model queue (``gpu`` where a
    GPU worker consumes it); any other judge only waits on a server: ``chat`` (I/O-bound)."""
    adapter = (
        JudgeRun.objects.filter(metric_run__chunks__pk=chunk_id)
        .values_list("judge__backend__adapter", flat=True)
        .first()
    )
    if adapter == Backend.Adapter.TRANSFORMERS:
        from metrics.services.queues import model_queue

        return model_queue()
    return "chat"


def judge_chunk_score(chunk_id: int, owner: str) -> str:
    """Judge one chunk (see the module docstring) under the lease `owner` holds. Idempotent;
    returns what happened. A failure ends the chunk only while `owner` still holds it: an
    execution that lost its lease to another worker leaves that worker's chunk alone."""
    chunk = MetricRunChunk.objects.select_related("run").filter(pk=chunk_id).first()
    if chunk is None or chunk.status == JobStatus.DONE:
        return "skipped"
    run = chunk.run
    try:
        judge_run = JudgeRun.objects.select_related("judge__backend", "judge__rubric").get(
            metric_run=run
        )
        part = JudgeChunk.objects.get(chunk=chunk)
        config = judge_config(judge_run.judge)
        ids = set(part.dialogues) | {d for pair in part.pairs for d in pair}
        dialogues = load_dialogues(ids)
        items, skipped = plan_items(
            config, dialogues, dialogue_ids=part.dialogues, pairs=part.pairs
        )
        keys = [
            cache_key(config, item.prompt.digest, _attempt_params(config, attempt))
            for item in items
            for attempt in range(config.max_attempts)
        ]
        cached = _cached(keys)
        traffic = PartTraffic()
        # A cancel is seen before each part (the chunk task checks the run), during it (the
        # chunk's heartbeat sees the chunk cancelled with its run, and the part's requests are
        # abandoned) and when the part is written (under the run's lock).
        try:
            results = async_to_sync(_execute_unless_stopped)(config, items, cached, traffic)
        except JobCancelled:
            _store_cache(config, traffic)  # what was paid for is kept for the resume
            return "cancelled"
        if items and all(r.error and not r.samples for r in results):
            raise BackendError(
                f"every request failed; first: {results[0].error}", kind="unavailable"
            )
        return _write_part(chunk, run, config, part, results, traffic, skipped, items, dialogues)
    except Exception as exc:  # noqa: BLE001 - recorded on the chunk; a resume runs it again
        logger.warning("judge chunk %s failed: %s", chunk_id, exc)
        job_finish(
            MetricRunChunk,
            chunk_id,
            status=JobStatus.FAILED,
            owner=owner,
            error=f"{type(exc).__name__}: {exc}"[:2000],
        )
        return "failed"


@transaction.atomic
def _write_part(
    chunk: MetricRunChunk,
    run: MetricRun,
    config: JudgeConfig,
    part: JudgeChunk,
    results: Sequence[ItemResult],
    traffic: PartTraffic,
    skipped: Mapping[str, str],
    items: Sequence[WorkItem],
    dialogues: Mapping[int, DialogueData],
) -> str:
    locked = MetricRun.objects.select_for_update().get(pk=run.pk)
    if locked.status == JobStatus.CANCELLED:
        _store_cache(config, traffic)  # what was paid for is kept for the resume
        return "cancelled"
    _store_cache(config, traffic)
    answers = _answer_rows(run, results)
    keys = [f"{item.unit_key}:s{i}" for item in items for i in range(max(config.n, 1))]
    for start in range(0, len(keys), 2000):
        JudgeAnswer.objects.filter(run=run, unit_key__in=keys[start : start + 2000]).delete()
    JudgeAnswer.objects.bulk_create(answers, batch_size=2000)
    affected = set(part.dialogues) | {d for pair in part.pairs for d in pair}
    names = metric_names(mode=config.mode, spec=config.spec, prefix=config.prefix)
    MetricScore.objects.filter(
        run=run, metric__in=names, dialogue_id__in=affected, level__in=(Level.TURN, Level.DIALOGUE)
    ).delete()
    rows = _score_rows(
        run,
        config,
        affected,
        dialogues=dialogues,
        answers=answers if config.mode != "pairwise" else None,
    )
    MetricScore.objects.bulk_create(rows, batch_size=2000)
    backends = {dialogues[d].backend_id for d in affected if d in dialogues}
    MetricScore.objects.filter(
        run=run, level=Level.SYSTEM, backend_id__in=backends, metric__in=names
    ).delete()
    MetricScore.objects.bulk_create(_system_rows(run, backends), batch_size=2000)
    unavailable = dict(skipped)
    failed = sum(1 for a in answers if a.status != JudgeAnswer.Status.OK)
    if failed:
        note = f"{failed} of {len(answers)} judge answers not fully parsed (stored, not scored)"
        for name in names:
            unavailable.setdefault(name, note)
    marked = (
        MetricRunChunk.objects.filter(pk=chunk.pk)
        .exclude(status=JobStatus.DONE)
        .update(
            status=JobStatus.DONE,
            lease_owner="",
            lease_expires_at=None,
            responses=len(items),
            signatures=dict.fromkeys(names, config.signature),
            unavailable=unavailable,
            error="",
            finished_at=timezone.now(),
        )
    )
    if marked:
        MetricRun.objects.filter(pk=run.pk).update(progress_done=F("progress_done") + 1)
    notes = list(dict.fromkeys(traffic.notes))[:5]
    JudgeRun.objects.filter(pk=run.pk).update(
        requests_sent=F("requests_sent") + traffic.sent,
        cache_hits=F("cache_hits") + traffic.cache_hits,
        prompt_tokens=F("prompt_tokens") + traffic.prompt_tokens,
        completion_tokens=F("completion_tokens") + traffic.completion_tokens,
    )
    if notes:
        judge_run = JudgeRun.objects.get(pk=run.pk)
        judge_run.notes = list(dict.fromkeys([*judge_run.notes, *notes]))[:20]
        judge_run.save(update_fields=["notes"])
    return "done"


def _store_cache(config: JudgeConfig, traffic: PartTraffic) -> None:
    if not traffic.new_entries:
        return
    JudgeCacheEntry.objects.bulk_create(
        [
            JudgeCacheEntry(
                key=key,
                backend_id=config.backend.id,
                model=config.model[:200],
                prompt_hash=prompt_hash,
                params=params,
                response=response,
            )
            for key, (prompt_hash, params, response) in traffic.new_entries.items()
        ],
        batch_size=1000,
        ignore_conflicts=True,
    )
    traffic.new_entries.clear()


# --- create a run, estimate ---------------------------------------------------------------------


def _target(
    campaign: Campaign | None, static_run: StaticRun | None, include_submitted: bool
) -> MetricRun:
    """An unsaved MetricRun describing the target (used to select its dialogues)."""
    if (campaign is None) == (static_run is None):
        raise JudgeError("choose exactly one target: a campaign or a static run", field="target")
    if static_run is not None:
        return MetricRun(
            campaign=static_run.campaign, static_run=static_run, target=MetricRun.Target.STATIC_RUN
        )
    return MetricRun(
        campaign=campaign, target=MetricRun.Target.CAMPAIGN, include_submitted=include_submitted
    )


@dataclass(frozen=True)
class Part:
    backend_id: int
    skill_id: int
    dialogues: list[int]
    pairs: list[list[int]]


def plan_parts(*, mode: str, run: MetricRun) -> list[Part]:
    """The run's chunks: system batches split into parts of :data:`PART_SIZE` dialogues; in
    pairwise mode, one pair per two backends' dialogues of the same scenario and skill (the
    first dialogue of each backend), the pairs grouped by the first dialogue's backend."""
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
    scenes: dict[tuple[int, int], dict[int, int]] = defaultdict(dict)
    for pk, backend_id, skill_id, scenario in rows:
        if scenario is not None:
            scenes[(scenario, skill_id)].setdefault(backend_id, pk)
    grouped: dict[tuple[int, int], list[list[int]]] = defaultdict(list)
    for (_scenario, skill_id), by_backend in sorted(scenes.items()):
        for (b1, d1), (_b2, d2) in combinations(sorted(by_backend.items()), 2):
            grouped[(b1, skill_id)].append([d1, d2])
    for (backend_id, skill_id), pairs in sorted(grouped.items()):
        for start in range(0, len(pairs), PART_SIZE):
            parts.append(Part(backend_id, skill_id, [], pairs[start : start + PART_SIZE]))
    return parts


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per CJK character, 1.3 per other word."""
    cjk = len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]", text))
    words = len(
        re.findall(r"[A-Za-z0-9]+|[^\sA-Za-z0-9\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]", text)
    )
    return cjk + math.ceil(words * 1.3)


def judge_estimate(
    *,
    judge: Judge,
    campaign: Campaign | None = None,
    static_run: StaticRun | None = None,
    include_submitted: bool = False,
) -> dict[str, Any]:
    """Before a run: units, requests, tokens and cost (estimated), and how many requests the
    cache already answers (those cost nothing)."""
    run = _target(campaign, static_run, include_submitted)
    config = judge_config(judge)
    return _estimate(judge, config, plan_parts(mode=config.mode, run=run))


def _estimate(judge: Judge, config: JudgeConfig, parts: Sequence[Part]) -> dict[str, Any]:
    """`judge_estimate` of parts already planned (a run's creation plans them once for both)."""
    prompt_tokens = completion_tokens = requests = cached = 0
    units = 0
    for part in parts:
        ids = set(part.dialogues) | {d for pair in part.pairs for d in pair}
        items, _ = plan_items(
            config, load_dialogues(ids), dialogue_ids=part.dialogues, pairs=part.pairs
        )
        units += len(items)
        keyed = [
            (cache_key(config, item.prompt.digest, _attempt_params(config, 0)), item)
            for item in items
        ]
        hits = set(_cached(key for key, _item in keyed))
        for key, item in keyed:
            calls = 1 if config.backend.adapter == "openai" else config.n
            if key in hits:
                cached += calls
                continue
            requests += calls
            prompt_tokens += calls * estimate_tokens(item.prompt.system + item.prompt.user)
            per_answer = config.params.max_tokens or (40 + 15 * len(item.prompt.questions))
            completion_tokens += config.n * per_answer
    cost = (prompt_tokens * judge.price_input + completion_tokens * judge.price_output) / 1_000_000
    return {
        "chunks": len(parts),
        "units": units,
        "requests": requests,
        "cached_requests": cached,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost": round(cost, 6),
    }


@transaction.atomic
def judge_run_create(
    *,
    judge: Judge,
    name: str = "",
    campaign: Campaign | None = None,
    static_run: StaticRun | None = None,
    include_submitted: bool = False,
    created_by: AbstractBaseUser | None = None,
    enqueue: bool = True,
) -> MetricRun:
    """A metric run of the judge over one target; chunks are enqueued after commit (unless
    ``enqueue`` is False: the caller scores them itself, as ``manage.py judge run --here``)."""
    name = (name or f"{judge.name} v{judge.version}").strip()[:NAME_MAX_LENGTH]
    _check_backend(judge.backend)
    config = judge_config(judge)
    draft = _target(campaign, static_run, include_submitted)
    parts = plan_parts(mode=config.mode, run=draft)
    if not parts:
        raise JudgeError(
            "the target has no dialogues to judge"
            + (
                " (pairwise mode needs dialogues of two systems on the same scenario)"
                if config.mode == "pairwise"
                else ""
            ),
            field="target",
        )
    estimate = _estimate(judge, config, parts)
    names = metric_names(mode=config.mode, spec=config.spec, prefix=config.prefix)
    run = MetricRun.objects.create(
        name=name,
        campaign=draft.campaign,
        static_run=draft.static_run,
        target=draft.target,
        include_submitted=include_submitted,
        metrics=names,
        metric_settings={"judge": judge.pk, "judge_key": judge.key, "judge_version": judge.version},
        created_by=created_by,
    )
    JudgeRun.objects.create(metric_run=run, judge=judge, estimate=estimate)
    chunks = MetricRunChunk.objects.bulk_create(
        [
            MetricRunChunk(
                run=run,
                backend_id=p.backend_id,
                skill_id=p.skill_id,
                family=f"judge:{i}",
                metrics=names,
            )
            for i, p in enumerate(parts)
        ]
    )
    chunks = list(run.chunks.order_by("pk"))
    JudgeChunk.objects.bulk_create(
        [
            JudgeChunk(chunk=c, dialogues=p.dialogues, pairs=p.pairs)
            for c, p in zip(chunks, parts, strict=True)
        ]
    )
    run.progress_total = len(chunks)
    run.save(update_fields=["progress_total"])
    if enqueue:
        from metrics.services import metric_runs as metric_run_services

        metric_run_services._enqueue_on_commit(run, [c.pk for c in chunks])
    return run


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
