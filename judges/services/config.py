"""Judges: check, create and version them, and read a version's plain configuration.

A judge is versioned: editing one saves the next version (:func:`judge_new_version`) and earlier
versions stay as they were, since their runs and scores name them. :func:`judge_config` turns a
version into the plain :class:`judges.scoring.JudgeConfig` that planning, execution and scoring
read. Every problem raises :class:`JudgeError` naming the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import Rubric
from annotation.rubric_spec import RubricSpec, validate_spec
from chat.backends.base import BackendSpec
from chat.models import Backend
from core.errors import ServiceError
from judges import client as judge_client
from judges import prompts
from judges.models import Judge
from judges.scoring import JudgeConfig

NAME_MAX_LENGTH = 160
MAX_SAMPLES = 20
MAX_ATTEMPTS = 10
# name → (type, bounds…): a number's (min, max), a string's allowed values, a flag's nothing.
SAMPLING_KEYS: dict[str, tuple[Any, ...]] = {
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


def check_backend(backend: Backend) -> None:
    """The judge's backend can be called now (a run checks again: it may have been deactivated)."""
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
    created_by: User | None = None,
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
    check_backend(fields["backend"])
    _check_rubric(fields["rubric"], fields["mode"])
    fields["sampling"] = check_sampling(fields["sampling"])
    fields["prompt_templates"] = check_templates(fields["prompt_templates"])
    for name, value in fields.items():
        setattr(judge, name, value)
    judge.save()
    return judge


@transaction.atomic
def judge_new_version(*, judge: Judge, created_by: User | None = None, **changes: Any) -> Judge:
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
