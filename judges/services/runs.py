"""Judge runs: estimate one before it starts, and create it (its chunks planned and enqueued).

A judge run is a :class:`metrics.models.MetricRun` of one judge version over one target (a
campaign or a static run), with a :class:`judges.models.JudgeRun` beside it (the estimate, then
the traffic) and one :class:`judges.models.JudgeChunk` per chunk (its dialogues or pairs, fixed
here); a pairwise run also has a ``chat.VoteSource`` its chunks write their verdicts into as
votes (:mod:`judges.services.votes`). The chunks run like any metric run's
(``metrics/tasks/runs.py``) and are scored by the handler that ``judges/apps.py`` registers:
:mod:`judges.services.chunks` (whose docstring follows the whole execution path;
``docs/architecture.md`` too).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from chat.models import Campaign, StaticRun, VoteSource
from judges.models import Judge, JudgeChunk, JudgeRun
from judges.scoring import JudgeConfig, metric_names
from judges.services.config import NAME_MAX_LENGTH, JudgeError, check_backend, judge_config
from judges.services.execution import attempt_params, cache_key, cached_responses
from judges.services.planning import Part, load_dialogues, plan_items, plan_parts
from metrics.models import MetricRun, MetricRunChunk


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
            (cache_key(config, item.prompt.digest, attempt_params(config, 0)), item)
            for item in items
        ]
        hits = set(cached_responses(key for key, _item in keyed))
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
    created_by: User | None = None,
    enqueue: bool = True,
) -> MetricRun:
    """A metric run of the judge over one target; chunks are enqueued after commit (unless
    ``enqueue`` is False: the caller scores them itself, as ``manage.py judge run --here``)."""
    name = (name or f"{judge.name} v{judge.version}").strip()[:NAME_MAX_LENGTH]
    check_backend(judge.backend)
    config = judge_config(judge)
    draft = _target(campaign, static_run, include_submitted)
    parts = plan_parts(mode=config.mode, run=draft)
    if not parts:
        raise JudgeError(
            "the target has no dialogues to judge"
            + (
                " (pairwise mode needs dialogues of two systems on the same scenario, or human"
                " votes on pairs of the study's dialogues)"
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
    vote_source = None
    if config.mode == "pairwise":
        vote_source = VoteSource.objects.create(
            campaign=run.campaign,
            kind=VoteSource.Kind.JUDGE,
            label=judge.metric_prefix,
            created_by=created_by,
        )
    JudgeRun.objects.create(metric_run=run, judge=judge, estimate=estimate, vote_source=vote_source)
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
            JudgeChunk(chunk=c, dialogues=p.dialogues, pairs=p.pairs, pair_items=p.pair_items)
            for c, p in zip(chunks, parts, strict=True)
        ]
    )
    run.progress_total = len(chunks)
    run.save(update_fields=["progress_total"])
    if enqueue:
        from metrics.services import metric_runs as metric_run_services

        metric_run_services._enqueue_on_commit(run, [c.pk for c in chunks])
    return run
