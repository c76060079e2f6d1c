"""The reply engine: where a crowdworker's turn gets its reply.

A worker's utterance is saved by `chat.services.collection.worker_turn_post`; everything after
that is here. The model's reply is generated detached from the HTTP response that shows it: the
response only *follows* the reply's stream (`reply_follow`), which lives in Redis (or, embedded,
in memory; see `chat.services.reply_streams`). When the browser goes away mid-reply the
generator goes on and saves the turn whole; a reload, a second tab or a reconnect to another web
process follows the same stream, first receiving the text streamed so far (or, with
`Last-Event-ID`, what came after). One generator per utterance holds an expiring claim, so the
backend is called once.

The path of one reply: the chat view (`chat.views.live`) saves the utterance, then
`reply_dispatch` → with Redis, a job on the `chat` workers' queue, taken by
`chat.services.reply_worker` (`manage.py chat_worker`); in memory, a task on the web process's
own event loop → `reply_generate`: `_plan` (the prompt, `chat.services.generation.build_request`)
→ `chat.services.generation.stream_reply` (the backend adapter) → chunks appended to the stream
(`_ChunkWriter`) → `_save` (one INSERT) → the stream's `saved` event, which every
`reply_follow` in any process turns into the page's last update. `docs/architecture.md` draws it.

A failed generation (backend error or timeout) saves nothing; the worker's utterance stays and
the failure is the stream's last event, shown by every process with "retry" until retried.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable
from contextlib import aclosing, suppress
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.backends.httpcommon import redact
from chat.models import Dialogue, ReplyFailure, Turn
from chat.selectors.collection import ChatState, chat_state, chat_turns, with_finish_hint
from chat.services import reply_streams as streams_mod
from chat.services.collection import CollectionError, require_open
from chat.services.db_threads import in_db_thread
from chat.services.generation import BackendError, ChatRequest, build_request, stream_reply
from chat.services.reply_streams import (
    Claimed,
    RedisReplyStreams,
    ReplyStreams,
    StreamEvent,
    gather_quietly,
    reply_streams,
    uses_workers,
)

logger = logging.getLogger(__name__)

# Model output is untrusted: never store more than this (the adapters cut earlier by default).
MAX_REPLY_CHARS = 4000


# --- Streams, claims and events ---------------------------------------------------------------
#
# A reply lives in a stream keyed by the utterance it answers (`reply_streams`): the generator
# appends chunks, then `saved` or `failed`; any number of listeners in any process follow it.
# Exactly one generator per utterance holds its claim (set atomically, with an expiry renewed
# while it works), so the backend is called once however many tabs, reloads, retries and
# processes ask for the reply. Where the generator runs depends on the streams: with Redis, on a
# `chat` worker (`manage.py chat_worker`; a web process that dies mid-reply loses nothing, the
# browser reconnects to another one); in memory (the embedded default), in the web process's own
# event loop.
# A failure is the stream's last event, so every process sees it until a retry discards it.


@dataclass(frozen=True)
class ReplyChunk:
    text: str
    cursor: str = ""  # the SSE id of the last event it covers (see `reply_follow`)


@dataclass(frozen=True)
class ReplyReset:
    """The generator died mid-reply and another took over: the text shown so far is void."""

    cursor: str = ""


@dataclass(frozen=True)
class ReplySaved:
    """The reply is in the database; carries all a page needs so rendering needs no query."""

    turn: Turn
    state: ChatState
    rate_while_chatting: bool
    cursor: str = ""


@dataclass(frozen=True)
class ReplyFailed:
    # A BackendError kind, "nothing_to_answer", or (chat workers) "no_worker" (none took the
    # queued reply in time) or "busy" (the queue was full).
    kind: str
    detail: str  # the backend's message (English, safe to show)
    cursor: str = ""


ReplyEvent = ReplyChunk | ReplyReset | ReplySaved | ReplyFailed


@dataclass(frozen=True)
class _Plan:
    dialogue: Dialogue  # with backend, skill and campaign
    turns: list[Turn]  # up to and including the utterance to answer
    request: ChatRequest


def reply_key(*, utterance_id: int) -> str:
    """The stream (and claim) of the reply to one utterance (a user turn's id)."""
    return f"{settings.CHAT_REPLY_KEY_PREFIX}:reply:{utterance_id}"


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _plan(utterance_id: int) -> _Plan | ReplySaved | ReplyFailed:
    """What generating the reply to this utterance needs, or why there is nothing to do."""
    # `get`, not `first`: no ORDER BY to compile (this runs once per turn; profiled in
    # docs/scaling.md).
    try:
        utterance = Turn.objects.select_related(
            "dialogue__backend", "dialogue__skill", "dialogue__campaign"
        ).get(pk=utterance_id, speaker=Turn.Speaker.USER)
    except Turn.DoesNotExist:
        return ReplyFailed(kind="nothing_to_answer", detail="the utterance no longer exists")
    dialogue = utterance.dialogue
    turns = chat_turns(dialogue_id=dialogue.pk)
    later = [turn for turn in turns if turn.index > utterance.index]
    if later:
        return ReplySaved(
            turn=later[0],
            state=chat_state(dialogue=dialogue, turns=turns),
            rate_while_chatting=dialogue.campaign.rate_while_chatting,
        )
    try:
        request = build_request(
            backend=dialogue.backend,
            skill=dialogue.skill.key,
            language=dialogue.language,
            grounding=dialogue.grounding or {},
            history=[(turn.speaker, turn.text) for turn in turns],
        )
    except BackendError as exc:
        return ReplyFailed(kind=exc.kind, detail=str(exc))
    return _Plan(dialogue=dialogue, turns=turns, request=request)


def _save(plan: _Plan, text: str, latency_ms: int) -> ReplySaved:
    """Insert the reply (one statement: whole or nothing) and describe the dialogue after it.

    No lock is taken: the unique (dialogue, index) constraint stops a second reply to the same
    utterance (the claim already does; this is the last line), and the state is built from the
    turns read when generation started plus this reply, with the ticks and status read fresh
    (the worker may tick while waiting).
    """
    dialogue = plan.dialogue
    reply = Turn(
        dialogue=dialogue,
        index=plan.turns[-1].index + 1,
        speaker=Turn.Speaker.SYSTEM,
        text=text,
        prompt=plan.request.prompt,
        latency_ms=latency_ms,
    )
    try:
        reply.save(force_insert=True)
    except IntegrityError:
        # A re-run of this save after a lost connection, or a generator that lost its claim.
        logger.info("dialogue %s: reply %s was saved already", dialogue.pk, reply.index)
        turns = chat_turns(dialogue_id=dialogue.pk)
        reply = next(turn for turn in turns if turn.index == reply.index)
    else:
        turns = [*plan.turns, reply]
    # Keeps the reservation alive (assignment releases dialogues idle past a timeout).
    Dialogue.objects.filter(pk=dialogue.pk).update(updated_at=timezone.now())
    dialogue.status, dialogue.grounding_used = Dialogue.objects.values_list(
        "status", "grounding_used"
    ).get(pk=dialogue.pk)
    return ReplySaved(
        turn=reply,
        state=chat_state(dialogue=dialogue, turns=turns),
        rate_while_chatting=dialogue.campaign.rate_while_chatting,
    )


def _saved_data(saved: ReplySaved) -> dict[str, Any]:
    turn = saved.turn
    state = {k: v for k, v in asdict(saved.state).items() if k != "finish_hint"}
    return {
        "turn": {"id": turn.pk, "index": turn.index, "speaker": turn.speaker, "text": turn.text},
        "state": state,
        "rate": saved.rate_while_chatting,
    }


def _event(event: StreamEvent, utterance_id: int) -> ReplyEvent:
    cursor = f"{utterance_id}/{event.id}"
    if event.kind == streams_mod.CHUNK:
        return ReplyChunk(event.data["t"], cursor)
    if event.kind == streams_mod.RESET:
        return ReplyReset(cursor)
    if event.kind == streams_mod.FAILED:
        return ReplyFailed(event.data["kind"], event.data["detail"], cursor)
    turn = event.data["turn"]
    return ReplySaved(
        turn=Turn(pk=turn["id"], index=turn["index"], speaker=turn["speaker"], text=turn["text"]),
        # The hint is worded again in the language of the request that shows it.
        state=with_finish_hint(ChatState(**event.data["state"])),
        rate_while_chatting=event.data["rate"],
        cursor=cursor,
    )


class _ChunkWriter:
    """Appends chunks to the stream without ever making the backend wait.

    The first chunk goes out at once (the worker sees the reply start); later ones gather for
    `CHAT_STREAM_BATCH_MS` between appends. At 50 tokens/s that is a few appends a second instead
    of fifty, for Redis, for the web process relaying them and for the browser, at the cost of
    at most that many milliseconds of delay, which a reader does not notice.
    """

    def __init__(self, streams: ReplyStreams, key: str) -> None:
        self.streams, self.key = streams, key
        self.pending: list[str] = []
        self.task: asyncio.Task[None] | None = None
        self.interval = settings.CHAT_STREAM_BATCH_MS / 1000
        self.last_append = float("-inf")
        self.sleeping = False
        self.closing = False  # the reply is complete: no append waits for the interval any more

    def add(self, text: str) -> None:
        self.pending.append(text)
        if self.task is None or self.task.done():
            if self.task is not None:
                self.task.result()  # an append failed: stop generating
            self.task = asyncio.create_task(self._drain(batch=True))

    async def _drain(self, *, batch: bool) -> None:
        loop = asyncio.get_running_loop()
        while self.pending:
            wait = self.last_append + self.interval - loop.time()
            if batch and wait > 0 and not self.closing:
                self.sleeping = True
                try:
                    await asyncio.sleep(wait)
                finally:
                    self.sleeping = False
            text = "".join(self.pending)
            self.pending.clear()
            # The first append sets the stream's expiry, the terminal event sets it again.
            ttl = settings.CHAT_STREAM_TTL_S if self.last_append == float("-inf") else None
            self.last_append = loop.time()
            await self.streams.append(self.key, streams_mod.CHUNK, {"t": text}, ttl_s=ttl)

    async def flush(self) -> None:
        """Append what is left now (the reply is complete: no reason to wait). A drain that is
        about to start or between two appends would wait for the interval: `closing` stops it."""
        self.closing = True
        if self.task is not None and not self.task.done() and self.sleeping:
            # Only while it waits: its text is still in `pending`. Mid-append it must finish.
            self.task.cancel()
            with suppress(asyncio.CancelledError):
                await self.task
        elif self.task is not None:
            await self.task
        await self._drain(batch=False)


async def _keep_claim(streams: ReplyStreams, key: str, owner: str, worker: asyncio.Task) -> None:
    """Renew the claim while generating; stop the generation if the claim was lost (this
    process stalled past its expiry and another generator took over)."""
    ttl = settings.CHAT_CLAIM_TTL_S
    while True:
        await asyncio.sleep(ttl / 3)
        try:
            held = await streams.renew(key, owner, ttl)
        except Exception:  # Redis unreachable for a moment: try again at the next beat
            logger.warning("renewing the claim on %s failed", key, exc_info=True)
            continue
        if not held:
            logger.warning("lost the claim on %s: stopping this generation", key)
            worker.cancel()
            return


async def reply_generate(*, utterance_id: int, dispatch_token: str | None = None) -> bool:
    """Generate, stream and save the reply to one utterance unless another generator holds it
    or it is done. `dispatch_token` is the claim placed when the job was queued, which this
    generator takes over. Returns whether this call generated (or re-published) the reply."""
    streams = reply_streams()
    key = reply_key(utterance_id=utterance_id)
    owner = _owner()
    # What generating needs is read from the database while the claim is taken in Redis: one
    # wait instead of two before the model is called (thrown away when there is nothing to do).
    planned = asyncio.ensure_future(in_db_thread(_plan, utterance_id))
    claimed: Claimed | None = None
    try:
        claimed = await streams.claim(key, owner, settings.CHAT_CLAIM_TTL_S, replace=dispatch_token)
        if claimed is None or (claimed.last is not None and claimed.last.terminal):
            return False
        if claimed.last is not None:  # chunks of a generator that died: void them
            await streams.append(key, streams_mod.RESET, {}, ttl_s=settings.CHAT_STREAM_TTL_S)
        work = asyncio.current_task()
        assert work is not None
        keeper = asyncio.create_task(_keep_claim(streams, key, owner, work))
        try:
            outcome = await _generate(streams, key, utterance_id, planned)
        finally:
            keeper.cancel()
        if isinstance(outcome, ReplySaved):
            await streams.append(
                key, streams_mod.SAVED, _saved_data(outcome), ttl_s=settings.CHAT_STREAM_TTL_S
            )
        else:
            data = {"kind": outcome.kind, "detail": outcome.detail}
            await streams.append(key, streams_mod.FAILED, data, ttl_s=settings.CHAT_STREAM_TTL_S)
            await _record_quietly(utterance_id, outcome)
        return True
    finally:
        planned.cancel()  # (a no-op once it is done)
        await gather_quietly(planned)
        if claimed is not None:
            await gather_quietly(streams.release(key, owner))


async def _generate(
    streams: ReplyStreams,
    key: str,
    utterance_id: int,
    planned: Awaitable[_Plan | ReplySaved | ReplyFailed],
) -> ReplySaved | ReplyFailed:
    try:
        plan = await planned
        if not isinstance(plan, _Plan):
            return plan
        started = time.perf_counter()
        parts: list[str] = []
        length = 0
        writer = _ChunkWriter(streams, key)
        async with aclosing(
            stream_reply(backend=plan.dialogue.backend, request=plan.request)
        ) as chunks:
            async for chunk in chunks:
                chunk = chunk[: MAX_REPLY_CHARS - length]
                if chunk:
                    length += len(chunk)
                    parts.append(chunk)
                    writer.add(chunk)
                if length >= MAX_REPLY_CHARS:
                    break
        latency_ms = round((time.perf_counter() - started) * 1000)
        await writer.flush()
        return await _save_retrying(plan, "".join(parts), latency_ms, utterance_id)
    except BackendError as exc:
        return ReplyFailed(kind=exc.kind, detail=str(exc))
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("utterance %s: generating the reply failed", utterance_id)
        return ReplyFailed(kind="unavailable", detail="the platform failed to save the reply")


def _save_once(plan: _Plan, text: str, latency_ms: int) -> ReplySaved:
    try:
        return _save(plan, text, latency_ms)
    except (OperationalError, InterfaceError):
        # The connection may be the broken one (the database restarted): the next attempt
        # opens another. (Not inside a caller's transaction, which closing would end.)
        if not connection.in_atomic_block:
            connection.close()
        raise


async def _save_retrying(plan: _Plan, text: str, latency_ms: int, utterance_id: int) -> ReplySaved:
    """`_save`, tried again on a database error (PostgreSQL restarting, a connection killed),
    CHAT_SAVE_ATTEMPTS times in all, waiting 0.5 s, 1 s, 2 s, … in between: the reply the
    model gave is saved by itself once the database is back, instead of failing and waiting
    for the worker to click retry (issue 23 item 9). Safe to repeat: `_save` is one insert,
    whole or nothing, and recognises a reply that an attempt whose answer was lost saved."""
    attempts = max(1, settings.CHAT_SAVE_ATTEMPTS)
    for attempt in range(attempts):
        try:
            return await in_db_thread(_save_once, plan, text, latency_ms)
        except (OperationalError, InterfaceError) as exc:
            if attempt + 1 >= attempts:
                raise
            delay = 0.5 * 2**attempt
            logger.warning(
                "utterance %s: saving the reply failed (%s), trying again in %g s",
                utterance_id,
                exc,
                delay,
            )
            await asyncio.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


def reply_failure_record(*, utterance_id: int, failure: ReplyFailed) -> ReplyFailure | None:
    """Keep a failed reply's detail for researchers (backend and campaign pages, and the log).

    Only backend failures are kept ("nothing_to_answer" is no backend's fault). The detail is
    redacted of the backend's API key once more, as the adapters do, in case a message that
    did not pass through them (a platform error) quotes it."""
    if failure.kind == "nothing_to_answer":
        return None
    dialogue = (
        Dialogue.objects.select_related("backend")
        .filter(turns__pk=utterance_id)
        .only("pk", "campaign_id", "backend")
        .first()
    )
    if dialogue is None:
        return None
    backend = dialogue.backend
    secret = os.environ.get(backend.api_key_env) if backend.api_key_env else None
    detail = redact(failure.detail, secret)[:2000]
    logger.warning(
        "reply failed for dialogue %s on backend %s (%s): %s",
        dialogue.pk,
        backend.pk,
        failure.kind,
        detail,
    )
    return ReplyFailure.objects.create(
        backend=backend, dialogue=dialogue, kind=failure.kind[:30], detail=detail
    )


# Generations started in this process (memory streams): kept referenced until they finish.
_local_generations: set[asyncio.Task[bool]] = set()


async def reply_dispatch(*, utterance_id: int) -> bool:
    """Make sure a generator for this utterance's reply is on its way, exactly once.

    With shared streams a job is queued for a `chat` worker together with a claim (one Redis
    step), which the worker takes over: listeners arriving before it starts queue nothing more,
    and a job lost with its worker is queued again once the claim expires. In memory the
    generation starts in this process. Returns False when a generator already holds the claim.
    """
    streams = reply_streams()
    key = reply_key(utterance_id=utterance_id)
    if not uses_workers():
        if await streams.holder(key) is not None:
            return False
        # A fresh context: the task must not inherit the request's thread-sensitive executor,
        # which asgiref shuts down when the response ends while this task may still be running.
        task = asyncio.get_running_loop().create_task(
            reply_generate(utterance_id=utterance_id), context=contextvars.Context()
        )
        _local_generations.add(task)
        task.add_done_callback(_local_generations.discard)
        return True
    assert isinstance(streams, RedisReplyStreams)
    # The time it was queued is in the token, so any listener can tell how long the job has
    # waited for a worker (`_give_up_unclaimed`).
    token = f"{_QUEUED}{time.time():.3f}:{_owner()}"
    busy = {
        "kind": "busy",
        "detail": f"{settings.CHAT_REPLY_QUEUE_MAX} replies are waiting for a chat worker "
        "already (CHAT_REPLY_QUEUE_MAX): this one was not queued",
    }
    queued = await streams.claim_and_queue(
        key,
        token,
        settings.CHAT_DISPATCH_TTL_S,
        reply_queue_key(),
        _job(utterance_id, token),
        max_queued=settings.CHAT_REPLY_QUEUE_MAX,
        busy=busy,
        stream_ttl_s=settings.CHAT_STREAM_TTL_S,
    )
    if queued < 0:
        await _record_quietly(utterance_id, ReplyFailed(busy["kind"], busy["detail"]))
    return queued > 0


_QUEUED = "queued:"  # the prefix of a dispatch token: a job waiting in the queue for a worker


def _job(utterance_id: int, token: str) -> str:
    return json.dumps({"utterance": utterance_id, "token": token})


async def _record_quietly(utterance_id: int, failure: ReplyFailed) -> None:
    try:
        await in_db_thread(reply_failure_record, utterance_id=utterance_id, failure=failure)
    except Exception:  # the worker still gets the failure and the retry
        logger.exception("utterance %s: recording the failure failed", utterance_id)


async def _give_up_unclaimed(streams: ReplyStreams, utterance_id: int, holder: str) -> bool:
    """Fail the reply whose queued job no `chat` worker has taken for CHAT_UNCLAIMED_TIMEOUT_S
    (none is running, or all are stuck): the worker sees a message and a retry instead of a
    page waiting for ever, and the researcher sees the failure on the campaign page (issue 23
    item 4). True when this call failed it (its `failed` event is then the stream's next)."""
    if not holder.startswith(_QUEUED) or not isinstance(streams, RedisReplyStreams):
        return False
    try:
        queued_at = float(holder.removeprefix(_QUEUED).split(":", 1)[0])
    except ValueError:
        return False
    timeout = settings.CHAT_UNCLAIMED_TIMEOUT_S
    if time.time() - queued_at < timeout:
        return False
    depth = await streams.queue_depth(reply_queue_key())
    alive = len(await streams.keys_like(f"{reply_worker_key('')}*"))
    if alive:  # the workers are all busy (or stuck): the worker's message says "busy"
        failure = ReplyFailed(
            kind="busy",
            detail=f"{alive} chat workers are alive but none took the reply within "
            f"{timeout:g} s ({depth} replies queued): more workers, or more concurrency",
        )
    else:
        failure = ReplyFailed(
            kind="no_worker",
            detail=f"no chat worker took the reply within {timeout:g} s ({depth} replies "
            "queued): is `manage.py chat_worker` running? (/healthz lists the live ones)",
        )
    key = reply_key(utterance_id=utterance_id)
    given_up = await streams.fail_unclaimed(
        key,
        holder,
        reply_queue_key(),
        _job(utterance_id, holder),
        {"kind": failure.kind, "detail": failure.detail},
        ttl_s=settings.CHAT_STREAM_TTL_S,
    )
    if given_up:
        await _record_quietly(utterance_id, failure)
    return given_up


def reply_worker_key(name: str) -> str:
    """The heartbeat key of the `chat` worker `name` (`reply_worker_key("")`: their prefix)."""
    return f"{settings.CHAT_REPLY_KEY_PREFIX}:reply-workers:{name}"


def reply_queue_key() -> str:
    """The `chat` workers' job queue, a Redis list (see `chat.services.reply_worker`)."""
    return f"{settings.CHAT_REPLY_KEY_PREFIX}:reply-jobs"


def _last_utterance(dialogue: Dialogue) -> tuple[int | None, ReplySaved | ReplyFailed | None]:
    """The dialogue's last utterance, and what to show instead of following its reply when
    there is nothing to follow any more (its reply is saved) or nothing at all (no utterance).
    `dialogue` comes with its campaign (the caller has just loaded it): one query, the turns."""
    turns = chat_turns(dialogue_id=dialogue.pk)
    utterances = [turn for turn in turns if turn.speaker == Turn.Speaker.USER]
    if not utterances:
        failure = ReplyFailed(kind="nothing_to_answer", detail="the dialogue has no utterance yet")
        return None, failure
    if turns[-1].speaker == Turn.Speaker.SYSTEM:
        saved = ReplySaved(
            turn=turns[-1],
            state=chat_state(dialogue=dialogue, turns=turns),
            rate_while_chatting=dialogue.campaign.rate_while_chatting,
        )
        return utterances[-1].pk, saved
    return utterances[-1].pk, None


def parse_cursor(value: str | None) -> tuple[int, str] | None:
    """A `Last-Event-ID` as `reply_follow` writes it ("<utterance id>/<stream id>"), or None
    when absent; raises ValueError when malformed."""
    if not value:
        return None
    utterance, _, event_id = value.partition("/")
    if not utterance.isdigit() or not streams_mod.EVENT_ID.match(event_id):
        raise ValueError(f"malformed Last-Event-ID {value!r}")
    return int(utterance), event_id


async def reply_follow(
    *, dialogue: Dialogue, after: tuple[int, str] | None = None
) -> AsyncGenerator[ReplyEvent, None]:
    """Follow the reply to the dialogue's last utterance, from any process.

    Yields what was streamed so far as one `ReplyChunk` (or, with `after` from a `Last-Event-ID`,
    only what came after it), then each new batch of chunks, then `ReplySaved` or `ReplyFailed`.
    Chunks that arrived together leave as one event whose cursor is that of the last, so a
    reconnect resumes with no character lost or doubled. Leaving early stops nothing. When
    nobody is generating the reply (its job was lost, its worker died, or this is the first
    listener in memory mode) a generator is dispatched; the claim keeps it to one.
    """
    streams = reply_streams()
    utterance_id, settled = await in_db_thread(_last_utterance, dialogue)
    resuming = after is not None and after[0] == utterance_id
    if settled is not None:
        # A client resuming a reply saved meanwhile gets the rest of its stream, while it lasts.
        key = reply_key(utterance_id=utterance_id) if utterance_id is not None else ""
        if not (resuming and isinstance(settled, ReplySaved) and await streams.last(key)):
            yield settled
            return
    assert utterance_id is not None
    key = reply_key(utterance_id=utterance_id)
    cursor = after[1] if after is not None and resuming else "0"
    last = await streams.last(key)
    # (A failed reply is terminal: it waits for a retry.)
    if (last is None or not last.terminal) and await streams.holder(key) is None:
        await reply_dispatch(utterance_id=utterance_id)
    async with aclosing(_follow(streams, utterance_id, cursor)) as events:
        async for event in events:
            yield event


async def reply_follow_dispatched(*, utterance_id: int) -> AsyncGenerator[ReplyEvent, None]:
    """Follow the reply to an utterance just saved and dispatched (`reply_dispatch`), from its
    first event: what the streamed send answers with, knowing the utterance and that a
    generator is on its way, so nothing is read before the first blocked read."""
    async with aclosing(_follow(reply_streams(), utterance_id, "0")) as events:
        async for event in events:
            yield event


async def _follow(
    streams: ReplyStreams, utterance_id: int, cursor: str
) -> AsyncGenerator[ReplyEvent, None]:
    """The events of one reply's stream after `cursor` (see `reply_follow`)."""
    key = reply_key(utterance_id=utterance_id)
    wait = max(1.0, settings.CHAT_CLAIM_TTL_S / 3)
    while True:
        events = await streams.read(key, cursor, block_s=wait)
        if not events:
            # Quiet for a while. Ended before our cursor (a client reconnecting after the end)?
            # Otherwise, is a generator still on it? If not, the reply may be saved already (its
            # stream expired) or its generator died: ask for one (the claim keeps it to one).
            last = await streams.last(key)
            if last is not None and last.terminal:
                yield _event(last, utterance_id)
                return
            holder = await streams.holder(key)
            if holder is None:
                await reply_dispatch(utterance_id=utterance_id)
            else:
                await _give_up_unclaimed(streams, utterance_id, holder)
            continue
        cursor = events[-1].id
        parts: list[str] = []
        parts_cursor = ""
        for raw in events:
            event = _event(raw, utterance_id)
            if isinstance(event, ReplyChunk):
                parts.append(event.text)
                parts_cursor = event.cursor
                continue
            if parts:
                yield ReplyChunk("".join(parts), parts_cursor)
                parts = []
            yield event
            if isinstance(event, ReplySaved | ReplyFailed):
                return
        if parts:
            yield ReplyChunk("".join(parts), parts_cursor)


async def reply_failure(*, dialogue: Dialogue) -> ReplyFailed | None:
    """The failure of the reply to the dialogue's last utterance, as every process sees it."""
    utterance_id, settled = await in_db_thread(_last_utterance, dialogue)
    if utterance_id is None or settled is not None:
        return None
    last = await reply_streams().last(reply_key(utterance_id=utterance_id))
    if last is None or last.kind != streams_mod.FAILED:
        return None
    return ReplyFailed(last.data["kind"], last.data["detail"])


def _retry_check(dialogue_id: int) -> int:
    dialogue = Dialogue.objects.get(pk=dialogue_id)
    require_open(dialogue)
    last = dialogue.turns.order_by("-index").only("speaker").first()
    if last is None or last.speaker != Turn.Speaker.USER:
        raise CollectionError(_("没有等待模型回复的话。"))
    return last.pk


async def reply_retry(*, dialogue: Dialogue) -> None:
    """Answer the utterance again after a failure (the utterance stays; nothing else changes).

    Discarding the failed stream is atomic, so of two retries racing only one starts a
    generation; a retry while a reply is still being generated is refused."""
    utterance_id = await in_db_thread(_retry_check, dialogue.pk)
    streams = reply_streams()
    key = reply_key(utterance_id=utterance_id)
    if not await streams.discard_failed(key) and await streams.holder(key) is not None:
        raise CollectionError(_("模型还在回复，请稍候。"))
    await reply_dispatch(utterance_id=utterance_id)
