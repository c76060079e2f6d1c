"""The crowdworker's side-by-side page: one composer, two blind systems answering at once.

The page, the send (its response streams both replies, `a:`/`b:`-prefixed events of the chat
page's kinds, then `controls`: the status bar and vote panel once both replies are in), the
per-side stream (a reload or a broken connection, with `Last-Event-ID`, from any web process),
the per-side retry, the vote, the grounding ticks and the finish. The systems are only ever
"A" (left) and "B" (right) here: no name, alias or backend id reaches the page or a response
until the campaign reveals them after the vote (`chat.services.side_by_side_chat`).
Skip/abandon posts to the single chat's view with the left dialogue (both sides end together).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap, retarget

from chat.models import Campaign, Dialogue, SideBySide
from chat.selectors import collection as selectors
from chat.selectors.collection import ChatState
from chat.services import replies, scenario_assignment
from chat.services import side_by_side_chat as services
from chat.services.collection import CollectionError
from chat.services.db_threads import in_db_thread
from chat.views.live import (
    _crowdworker_verdict,
    _crowdworker_view,
    _event_stream,
    _failure_context,
    _in_request_language,
    _refusal_errors,
    _refused,
    _reply_events,
    after_finish,
)
from core.http import HtmxHttpRequest, wants_event_stream

PAGE = "chat/side_by_side.html"
PARTS = "chat/side_by_side_parts.html"
LIVE_PARTS = "chat/live_parts.html"
SIDES = ("a", "b")


def _side(conversation: SideBySide, side: str) -> Dialogue:
    return conversation.left if side == "a" else conversation.right


def _label(side: str) -> str:
    return side.upper()


def _controls_context(
    request: HtmxHttpRequest, conversation: SideBySide, state: services.ConversationState
) -> dict[str, Any]:
    context: dict[str, Any] = {
        "conversation": conversation,
        "state": state,
        "campaign": conversation.campaign,
        "outcomes": [
            ("a", _("A 更好")),
            ("b", _("B 更好")),
            ("tie", _("平局")),
            ("both_bad", _("都不好")),
        ],
    }
    if state.reveal:
        names = dict(
            Dialogue.objects.filter(
                pk__in=[conversation.left_id, conversation.right_id]
            ).values_list("pk", "backend__name")
        )
        context["revealed"] = {"a": names[conversation.left_id], "b": names[conversation.right_id]}
    return context


def _page_context(
    request: HtmxHttpRequest, conversation: SideBySide, failures: dict[str, Any]
) -> dict[str, Any]:
    left, right = conversation.left, conversation.right
    left_turns = selectors.dialogue_turns(dialogue=left)
    right_turns = selectors.dialogue_turns(dialogue=right)
    state = services.conversation_state(
        conversation=conversation, left_turns=left_turns, right_turns=right_turns
    )
    grounding = left.grounding or {}
    panes = []
    for side, dialogue, turns, side_state in (
        ("a", left, left_turns, state.left),
        ("b", right, right_turns, state.right),
    ):
        failure = failures.get(side) if side_state.awaiting_reply else None
        pane: dict[str, Any] = {
            "side": side,
            "label": _label(side),
            "turns": turns,
            "awaiting": side_state.awaiting_reply,
            "failure": failure,
        }
        if failure is not None:
            pane.update(_failure_context(dialogue.pk, failure))
        panes.append(pane)
    return {
        **_controls_context(request, conversation, state),
        "dialogue": left,
        "panes": panes,
        "sections": selectors.grounding_sections(skill=left.skill.key, grounding=grounding),
        "g": selectors.grounding_view(skill=left.skill.key, grounding=grounding),
        "situation": grounding.get("situation", ""),
        "used": set(left.grounding_used or []),
        "grounding_disabled": left.status != Dialogue.Status.IN_PROGRESS,
        "abandon_reasons": [
            (reason.value, reason.label) for reason in scenario_assignment.WORKER_ABANDON_REASONS
        ],
        "instructions": selectors.campaign_instructions(
            dialogue=left, language_code=request.LANGUAGE_CODE or ""
        ),
        "recollectable": left.status == Dialogue.Status.REJECTED
        and not left.recollections.exclude(status=Dialogue.Status.ABANDONED).exists(),
    }


async def _conversation(request: HtmxHttpRequest, pk: int) -> SideBySide:
    return await in_db_thread(services.worker_side_by_side_get, user=request.user, pk=pk)


async def _render(
    request: HtmxHttpRequest, template: str, context: dict[str, Any], **kw: Any
) -> HttpResponse:
    return await in_db_thread(
        _in_request_language, request, render, request, template, context, **kw
    )


@require_GET
@never_cache
@_crowdworker_view()
async def side_by_side_page(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    conversation = await _conversation(request, pk)
    failures = {
        side: await replies.reply_failure(dialogue=_side(conversation, side)) for side in SIDES
    }
    context = await in_db_thread(
        _in_request_language, request, _page_context, request, conversation, failures
    )
    return await _render(request, PAGE, context)


def _controls_html(
    request: HtmxHttpRequest,
    pk: int,
    known: tuple[SideBySide, services.ConversationState] | None = None,
) -> str:
    """The status bar and vote panel; `known`: the conversation and its state, when the caller
    has them already (a vote), else they are read."""
    if known is None:
        conversation = services.worker_side_by_side_get(user=request.user, pk=pk)
        known = conversation, services.conversation_state(conversation=conversation)
    context = _controls_context(request, *known)
    return render_to_string(PARTS + "#controls", context, request=request)


@require_GET
@never_cache
@_crowdworker_view(anonymous="forbid")
async def side_by_side_controls(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The status bar and the vote panel (after both replies are in, or a vote)."""
    html = await in_db_thread(_in_request_language, request, _controls_html, request, pk)
    return HttpResponse(html)


def _sent_payload(request: HtmxHttpRequest, posted: services.PostedPair) -> str:
    """The `sent` event: the utterance in each pane and both pending replies."""
    conversation = posted.conversation
    data: dict[str, str] = {}
    for side, utterance in (("a", posted.left), ("b", posted.right)):
        context = {
            "turn": utterance.turn,
            "dialogue": utterance.dialogue,
            "alias": _label(side),
            "rate_while_chatting": False,
        }
        data[f"turn_{side}"] = render_to_string(LIVE_PARTS + "#turn", context, request=request)
        data[f"pending_{side}"] = render_to_string(
            PARTS + "#pending",
            {"conversation": conversation, "side": side, "label": _label(side)},
            request=request,
        )
    return json.dumps(data, ensure_ascii=False)


async def _merged(streams: dict[str, AsyncGenerator[str, None]]) -> AsyncGenerator[str, None]:
    """The events of several streams as they come, whichever stream sends first."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    async def pump(events: AsyncGenerator[str, None]) -> None:
        try:
            async with aclosing(events) as items:
                async for item in items:
                    await queue.put(item)
        finally:
            await queue.put(None)

    tasks = [asyncio.create_task(pump(events)) for events in streams.values()]
    try:
        finished = 0
        while finished < len(tasks):
            item = await queue.get()
            if item is None:
                finished += 1
            else:
                yield item
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _noting_saved(
    follow: AsyncGenerator[replies.ReplyEvent, None], side: str, saved: dict[str, ChatState]
) -> AsyncGenerator[replies.ReplyEvent, None]:
    """A reply's events, noting in `saved` the side's state once its reply is saved."""
    async with aclosing(follow) as events:
        async for event in events:
            if isinstance(event, replies.ReplySaved):
                saved[side] = event.state
            yield event


def _side_events(
    request: HtmxHttpRequest,
    conversation: SideBySide,
    side: str,
    follow: AsyncGenerator[replies.ReplyEvent, None],
) -> AsyncGenerator[str, None]:
    retry_url = reverse("chat:sbs-retry", args=[conversation.pk, side])
    return _reply_events(
        request,
        _side(conversation, side),
        _label(side),
        follow,
        prefix=f"{side}:",
        failed_template=PARTS + "#failed",
        extra={"side": side, "retry_url": retry_url},
        # The page's status bar comes with `controls`; the script uses only the turn.
        with_status=False,
    )


async def _send_events(
    request: HtmxHttpRequest, sent: str, posted: services.PostedPair
) -> AsyncGenerator[str, None]:
    yield f"event: sent\ndata: {sent}\n\n"
    conversation = posted.conversation
    saved: dict[str, ChatState] = {}
    follows = {
        side: _side_events(
            request,
            conversation,
            side,
            _noting_saved(
                replies.reply_follow_dispatched(utterance_id=utterance.turn.pk), side, saved
            ),
        )
        for side, utterance in (("a", posted.left), ("b", posted.right))
    }
    async with aclosing(_merged(follows)) as events:
        async for event in events:
            yield event
    # Both replies saved: the controls from their states and the votes the send read (no
    # query); after a failure, read.
    known = None
    if len(saved) == len(SIDES):
        state = services.state_of_sides(
            conversation=conversation, left=saved["a"], right=saved["b"], voted=posted.voted
        )
        known = conversation, state
    html = await in_db_thread(
        _in_request_language, request, _controls_html, request, conversation.pk, known
    )
    yield f"event: controls\ndata: {json.dumps({'html': html}, ensure_ascii=False)}\n\n"


@require_POST
async def side_by_side_send(request: HtmxHttpRequest, pk: int) -> HttpResponseBase:
    """Save the utterance on both sides and start both replies (two reply requests, each on
    its own stream and chat worker); the streamed answer follows both (see the module)."""
    text = request.POST.get("text", "")
    loop = asyncio.get_running_loop()

    def post() -> tuple[Any, Any, str]:
        verdict = _crowdworker_verdict(request)
        if not verdict:
            return verdict, None, ""
        try:
            posted = services.side_by_side_post(worker=request.user, pk=pk, text=text)
        except CollectionError as exc:
            return _refusal_errors(exc), None, ""
        dispatched = [
            asyncio.run_coroutine_threadsafe(
                replies.reply_dispatch(utterance_id=utterance.turn.pk), loop
            )
            for utterance in (posted.left, posted.right)
        ]
        sent = _sent_payload(request, posted) if wants_event_stream(request) else ""
        return posted, dispatched, sent

    outcome, dispatched, sent = await in_db_thread(_in_request_language, request, post)
    if outcome is None or isinstance(outcome, bool):
        return _refused(request, outcome, anonymous="login")
    if isinstance(outcome, list):
        if wants_event_stream(request):
            html = await in_db_thread(
                render_to_string, PARTS + "#composer-error", {"errors": outcome}, request=request
            )
            return HttpResponse(html, status=422)
        for error in outcome:
            messages.error(request, error)
        return redirect("chat:sbs-page", pk=pk)
    await asyncio.gather(*(asyncio.wrap_future(future) for future in dispatched))
    if not wants_event_stream(request):
        return redirect("chat:sbs-page", pk=pk)
    return _event_stream(_send_events(request, sent, outcome))


@require_GET
@_crowdworker_view(anonymous="forbid")
async def side_by_side_stream(request: HtmxHttpRequest, pk: int, side: str) -> HttpResponseBase:
    """One side's reply to the last utterance, as `dialogue_stream` serves a single chat's
    (same events, prefixed with the side), from `Last-Event-ID` on."""
    if side not in SIDES:
        return HttpResponseNotFound()
    try:
        after = replies.parse_cursor(request.headers.get("Last-Event-ID"))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    conversation = await _conversation(request, pk)
    follow = replies.reply_follow(dialogue=_side(conversation, side), after=after)
    return _event_stream(_side_events(request, conversation, side, follow))


@require_POST
@_crowdworker_view()
async def side_by_side_retry(request: HtmxHttpRequest, pk: int, side: str) -> HttpResponse:
    if side not in SIDES:
        return HttpResponseNotFound()
    conversation = await _conversation(request, pk)
    try:
        await replies.reply_retry(dialogue=_side(conversation, side))
    except CollectionError as exc:
        messages.error(request, str(exc))
        return redirect("chat:sbs-page", pk=pk)
    if not request.htmx:
        return redirect("chat:sbs-page", pk=pk)
    context = {"conversation": conversation, "side": side, "label": _label(side)}
    return await _render(request, PARTS + "#pending", context)


def _answer_with_controls(
    request: HtmxHttpRequest,
    pk: int,
    change: Callable[[], tuple[SideBySide, services.ConversationState] | None],
) -> HttpResponse:
    """Make a change (a vote, the grounding ticks) and answer with the refreshed status bar and
    vote panel (htmx) or the page; a refused change answers with its reason. `change` returns
    the conversation and its state after the change when it has them (else they are read)."""
    try:
        known = change()
    except CollectionError as exc:
        if request.htmx:
            html = render_to_string(
                PARTS + "#composer-error", {"errors": [str(exc)]}, request=request
            )
            return reswap(retarget(HttpResponse(html, status=422), "#composer-error"), "outerHTML")
        messages.error(request, str(exc))
        return redirect("chat:sbs-page", pk=pk)
    if not request.htmx:
        return redirect("chat:sbs-page", pk=pk)
    return HttpResponse(_controls_html(request, pk, known))


@require_POST
@_crowdworker_view()
async def side_by_side_vote(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    def vote() -> tuple[SideBySide, services.ConversationState]:
        cast = services.side_by_side_vote(
            worker=request.user,
            pk=pk,
            outcome=request.POST.get("outcome", ""),
            reason=request.POST.get("reason", ""),
        )
        return cast.conversation, cast.state

    return await in_db_thread(
        _in_request_language, request, _answer_with_controls, request, pk, vote
    )


@require_POST
@_crowdworker_view()
async def side_by_side_grounding(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    def tick() -> None:
        services.side_by_side_ticks(
            worker=request.user, pk=pk, item_ids=request.POST.getlist("used")
        )

    return await in_db_thread(
        _in_request_language, request, _answer_with_controls, request, pk, tick
    )


@require_POST
@_crowdworker_view()
async def side_by_side_submit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    def submit() -> HttpResponse:
        try:
            conversation = services.side_by_side_submit(
                worker=request.user,
                pk=pk,
                cannot_continue=request.POST.get("cannot_continue") == "1",
            )
        except CollectionError as exc:
            messages.error(request, str(exc))
            return redirect("chat:sbs-page", pk=pk)
        messages.success(request, _("对话已提交，等待审核。谢谢！"))
        campaign: Campaign = conversation.campaign
        if campaign.reveal_after_vote:
            return redirect("chat:sbs-page", pk=pk)  # the names first, then 「下一段」
        return after_finish(request, campaign.pk)

    return await in_db_thread(_in_request_language, request, submit)
