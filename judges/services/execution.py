"""Executing a chunk's prompts: each answered from the cache or the judge's backend.

:func:`execute_unless_stopped` sends a part's prompts concurrently, within the backend's
concurrency limit and the judge's rate limit, parses each reply and asks again (a new attempt
number, so a new cache key) up to ``max_attempts`` times while a reply is not fully parseable,
keeping the best. Every backend reply is cached by (backend, model, prompt hash, parameters)
(:func:`cache_key`): a re-run, a resumed run or another judge version with the same prompts and
settings pays nothing. The chunk handler (:mod:`judges.services.chunks`) calls this and writes
what comes back; a cancelled run abandons the part's requests.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chat.backends.errors import BackendError
from core.jobs import abandon_when_stopped, job_stop_event
from judges import client as judge_client
from judges import parsing
from judges.models import JudgeCacheEntry
from judges.scoring import JudgeConfig
from judges.services.planning import WorkItem

# --- cache --------------------------------------------------------------------------------------


def cache_key(config: JudgeConfig, prompt_hash: str, params: judge_client.Params) -> str:
    """sha256 of (backend, model, prompt hash, parameters): what makes two requests the same."""
    payload = judge_client.dumps([config.backend.id, config.model, prompt_hash, params.to_dict()])
    return hashlib.sha256(payload.encode()).hexdigest()


def attempt_params(config: JudgeConfig, attempt: int) -> judge_client.Params:
    """The request parameters of one attempt: the attempt number makes a retry a new request."""
    values = config.params.to_dict()
    values["attempt"] = attempt
    return judge_client.Params(**values)


def cached_responses(keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The cached responses of those of ``keys`` that have one."""
    keys = list(keys)
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(keys), 2000):
        found.update(
            JudgeCacheEntry.objects.filter(key__in=keys[start : start + 2000]).values_list(
                "key", "response"
            )
        )
    return found


def store_cache(config: JudgeConfig, traffic: PartTraffic) -> None:
    """Cache the responses a part was sent (kept even when its run is cancelled); a backend not
    saved (no id) has no cache."""
    if not traffic.new_entries or config.backend.id is None:
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
        params = attempt_params(config, attempt)
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


async def execute_unless_stopped(
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
