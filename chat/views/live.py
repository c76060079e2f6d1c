"""The crowdworker's chat page: send, the streamed reply, grounding ticks, finish, re-collect.

The chat path (page, send, stream, retry, grounding ticks, submit) is async views: under ASGI a
sync view runs on a thread of its own per request and opens a database connection of its own,
so at load every POST waits for both. Their ORM work runs on the chat's database threads
(`chat.services.db_threads`: a fixed set with kept-open connections). A test keeps the chat path
async. The stream returns `text/event-stream` from an async iterator, so each chunk leaves as
soon as the model sends it; it only follows the reply's stream (see `chat.services.replies`),
so a client that goes away never stops or half-saves a reply, and any web process can serve it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from concurrent.futures import Future
from contextlib import aclosing
from functools import partial, wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import get_language, override
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from chat.models import Dialogue, Participant
from chat.selectors import collection as selectors
from chat.services import campaigns, replies, scenario_assignment
from chat.services import collection as services
from chat.services import side_by_side_chat as sbs_services
from chat.services.db_threads import in_db_thread
from core.access import Role, has_role, role_required
from core.http import HtmxHttpRequest, wants_event_stream

PARTS = "chat/live_parts.html"
logger = logging.getLogger(__name__)


def _failure_message(kind: str) -> str:
    messages_by_kind = {
        "timeout": _("模型在规定时间内没有回复。"),
        "unavailable": _("暂时连不上模型服务。"),
        "rate_limited": _("模型服务正忙（请求过多）。"),
        "bad_response": _("模型返回了无法识别的内容。"),
        "config": _("这个模型的配置有误，请联系研究者。"),
        "nothing_to_answer": _("没有等待模型回复的话。"),
        # Issue 23 item 4: nobody generates replies (no chat worker), or too many wait already.
        "no_worker": _("现在没有能生成回复的服务，已通知研究者。请稍后点击「重试」。"),
        "busy": _("平台正忙，等待回复的对话太多。请稍后点击「重试」。"),
    }
    return messages_by_kind.get(kind, _("模型回复失败。"))


def _failure_context(dialogue_id: int, failure: replies.ReplyFailed) -> dict[str, Any]:
    """What the worker sees of a failed reply: a neutral message in their language and the
    retry button. The backend's own message can name the model and internal hosts (breaking the
    blind aliases), so it never reaches the page: the generator records it for researchers
    (`ReplyFailure`, shown on the backend and campaign pages) and it goes to the log."""
    logger.warning(
        "reply failed for dialogue %s (%s): %s", dialogue_id, failure.kind, failure.detail
    )
    return {
        "dialogue_id": dialogue_id,
        "failure_message": _failure_message(failure.kind),
    }


def _dialogue_context(
    request: HtmxHttpRequest, dialogue: Dialogue, failure: replies.ReplyFailed | None = None
) -> dict[str, Any]:
    """Everything the chat page shows (sync: run it with `in_db_thread`). `failure`
    is the failed reply to the last utterance, from `replies.reply_failure`."""
    turns = selectors.dialogue_turns(dialogue=dialogue)
    state = selectors.chat_state(dialogue=dialogue, turns=turns)
    failure = failure if state.awaiting_reply else None
    grounding = dialogue.grounding or {}
    context: dict[str, Any] = {
        "dialogue": dialogue,
        "dialogue_id": dialogue.pk,
        "turns": turns,
        "state": state,
        "alias": selectors.backend_alias(dialogue=dialogue),
        "sections": selectors.grounding_sections(skill=dialogue.skill.key, grounding=grounding),
        "g": selectors.grounding_view(skill=dialogue.skill.key, grounding=grounding),
        "situation": grounding.get("situation", ""),
        "used": set(dialogue.grounding_used or []),
        "grounding_disabled": dialogue.status != Dialogue.Status.IN_PROGRESS,
        "abandon_reasons": [
            (reason.value, reason.label) for reason in scenario_assignment.WORKER_ABANDON_REASONS
        ],
        "instructions": selectors.campaign_instructions(
            dialogue=dialogue, language_code=get_language() or ""
        ),
        "rate_while_chatting": dialogue.campaign.rate_while_chatting,
        "failure": failure,
        "recollectable": dialogue.status == Dialogue.Status.REJECTED
        and not dialogue.recollections.exclude(status=Dialogue.Status.ABANDONED).exists(),
    }
    if failure is not None:
        context.update(_failure_context(dialogue.pk, failure))
    return context


AsyncView = Callable[..., Awaitable[HttpResponseBase]]


def _crowdworker_verdict(request: HttpRequest) -> bool | None:
    """None: anonymous; False: not a crowdworker; True: may chat. (Reads the session, the user
    and their roles: run it on the database threads.)"""
    if not request.user.is_authenticated:
        return None
    return has_role(request.user, Role.CROWDWORKER)


def _refused(request: HttpRequest, verdict: bool | None, *, anonymous: str) -> HttpResponseBase:
    """What `_crowdworker_verdict` refused: the login page (or 403), or 403."""
    if verdict is None and anonymous == "login":
        return redirect_to_login(request.get_full_path())
    raise PermissionDenied("This page is not available to your role.")


def _crowdworker_view(*, anonymous: str = "login") -> Callable[[AsyncView], AsyncView]:
    """`role_required(Role.CROWDWORKER)` for the chat's async views.

    The session, the user and their roles are read on the chat's database threads (one kept-open
    connection each), not on a thread of the request's own: the hot path opens no connection.
    `anonymous="forbid"` answers 403 instead of the login page (the event stream). The send
    makes the same check inside its one trip to those threads instead (`dialogue_send`).
    """

    def decorator(view: AsyncView) -> AsyncView:
        @wraps(view)
        async def wrapped(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            verdict = await in_db_thread(_crowdworker_verdict, request)
            if not verdict:
                return _refused(request, verdict, anonymous=anonymous)
            return await view(request, *args, **kwargs)

        return wrapped

    return decorator


async def _worker_dialogue(request: HtmxHttpRequest, pk: int) -> Dialogue:
    return await in_db_thread(selectors.worker_dialogue_get, user=request.user, pk=pk)


def _in_request_language(request: HttpRequest, func: Any, *args: Any, **kw: Any) -> Any:
    # The DB thread does not inherit the request's activated language (LocaleMiddleware, or a
    # campaign's fixed language): activate it there, or pages render in the default language.
    with override(getattr(request, "LANGUAGE_CODE", None)):
        return func(*args, **kw)


async def _render(
    request: HtmxHttpRequest, template: str, context: dict[str, Any], **kw: Any
) -> HttpResponse:
    return await in_db_thread(
        _in_request_language, request, render, request, template, context, **kw
    )


async def _page_context(request: HtmxHttpRequest, dialogue: Dialogue) -> dict[str, Any]:
    failure = await replies.reply_failure(dialogue=dialogue)
    return await in_db_thread(
        _in_request_language, request, _dialogue_context, request, dialogue, failure
    )


@require_GET
@never_cache
@_crowdworker_view()
async def dialogue_page(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The chat page. Never stored (`Cache-Control: no-store`): after 「完成」 the browser's
    Back must fetch it again and show the dialogue submitted, not a stored copy with 「发送」
    enabled (chat.js also reloads a copy restored from the back/forward cache)."""
    dialogue = await _worker_dialogue(request, pk)
    conversation = await in_db_thread(sbs_services.side_by_side_for_dialogue, dialogue_id=pk)
    if conversation is not None:
        return redirect("chat:sbs-page", pk=conversation)
    context = await _page_context(request, dialogue)
    return await _render(request, "chat/live_dialogue.html", context)


async def _refusal(request: HtmxHttpRequest, pk: int, errors: list[str]) -> HttpResponse:
    if request.htmx or wants_event_stream(request):
        html = await in_db_thread(
            render_to_string, PARTS + "#composer-error", {"errors": errors}, request=request
        )
        return reswap(retarget(HttpResponse(html, status=422), "#composer-error"), "outerHTML")
    for error in errors:
        messages.error(request, error)
    dialogue = await _worker_dialogue(request, pk)
    context = await _page_context(request, dialogue)
    return await _render(request, "chat/live_dialogue.html", context, status=422)


def _sent_payload(request: HtmxHttpRequest, posted: services.PostedUtterance) -> str:
    """The `sent` event: the new turn, the pending reply and the status bar (only what the
    page changes: not the whole page's context)."""
    dialogue = posted.dialogue
    context = {
        "dialogue": dialogue,
        "dialogue_id": dialogue.pk,
        "turn": posted.turn,
        "state": posted.state,
        "alias": selectors.backend_alias(dialogue=dialogue),
        "rate_while_chatting": dialogue.campaign.rate_while_chatting,
        "oob": False,
    }
    return json.dumps(
        {
            "turn_html": render_to_string(PARTS + "#turn", context, request=request),
            "pending_html": render_to_string(PARTS + "#pending", context, request=request),
            "status_html": render_to_string(PARTS + "#status", context, request=request),
        },
        ensure_ascii=False,
    )


def _refusal_errors(exc: services.CollectionError) -> list[str]:
    if not isinstance(exc, services.UtteranceRefused):
        return [str(exc)]
    errors = list(exc.messages)
    if exc.flagged:
        errors.append(_("不合格的发言次数过多，您的账号已被标记，研究者会进行核查。"))
    return errors


@require_POST
async def dialogue_send(request: HtmxHttpRequest, pk: int) -> HttpResponseBase:
    """Save the worker's utterance and start the reply.

    The chat page's script asks for `text/event-stream`: the answer is then the reply itself,
    streamed as `dialogue_stream` streams it, after a first event `sent` (the utterance's turn,
    the pending reply and the status bar). One request per turn instead of a send and then a
    stream: the second request's session, user, role and dialogue reads, its middleware and
    its first reads of the reply's stream were a third of the web tier's CPU per turn
    (docs/scaling.md). A connection that breaks mid-reply continues on `dialogue_stream` with
    `Last-Event-ID`. Without the script the form posts plainly and gets the page back.
    The crowdworker check of `_crowdworker_view` is made in the send's one trip to the
    database threads (a hand-off less on the turn's critical path).
    """
    text = request.POST.get("text", "")
    streamed = wants_event_stream(request)
    loop = asyncio.get_running_loop()

    def post() -> tuple[
        services.PostedUtterance | list[str] | bool | None, Future[bool] | None, str
    ]:
        """One trip to the database threads: the crowdworker check, the utterance (or why it
        was refused), and the `sent` event rendered while the event loop queues the reply."""
        verdict = _crowdworker_verdict(request)
        if not verdict:
            return verdict, None, ""
        try:
            posted = services.worker_turn_post(worker=request.user, dialogue_id=pk, text=text)
        except services.CollectionError as exc:
            return _refusal_errors(exc), None, ""
        # The reply's job leaves now, from the event loop, while this thread renders `sent`:
        # the fragments are off the way from the utterance to the model (docs/scaling.md).
        dispatched = asyncio.run_coroutine_threadsafe(
            replies.reply_dispatch(utterance_id=posted.turn.pk), loop
        )
        return posted, dispatched, _sent_payload(request, posted) if streamed else ""

    outcome, dispatched, sent = await in_db_thread(post)
    if outcome is None or isinstance(outcome, bool):
        return _refused(request, outcome, anonymous="login")
    if isinstance(outcome, list):
        return await _refusal(request, pk, outcome)
    assert dispatched is not None
    await asyncio.wrap_future(dispatched)
    if not streamed:
        return redirect("chat:live-dialogue", pk=pk)
    dialogue = outcome.dialogue
    alias = selectors.backend_alias(dialogue=dialogue)
    follow = replies.reply_follow_dispatched(utterance_id=outcome.turn.pk)
    return _event_stream(_sent_then_reply(sent, _reply_events(request, dialogue, alias, follow)))


async def _sent_then_reply(
    sent: str, reply: AsyncGenerator[str, None]
) -> AsyncGenerator[str, None]:
    # No id on `sent`: a reconnect without one replays the reply from its start.
    yield f"event: sent\ndata: {sent}\n\n"
    async with aclosing(reply) as events:
        async for event in events:
            yield event


@require_POST
@_crowdworker_view()
async def dialogue_retry(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    dialogue = await _worker_dialogue(request, pk)
    try:
        await replies.reply_retry(dialogue=dialogue)
    except services.CollectionError as exc:
        if request.htmx:
            return HttpResponseClientRedirect(reverse("chat:live-dialogue", args=[dialogue.pk]))
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    if not request.htmx:
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    alias = await in_db_thread(selectors.backend_alias, dialogue=dialogue)
    context = {"dialogue_id": dialogue.pk, "alias": alias}
    return await _render(request, PARTS + "#pending", context)


@require_POST
@_crowdworker_view()
async def dialogue_grounding(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    dialogue = await _worker_dialogue(request, pk)
    try:
        dialogue = await in_db_thread(
            services.grounding_tick, dialogue=dialogue, item_ids=request.POST.getlist("used")
        )
    except services.CollectionError as exc:
        if request.htmx:
            html = await in_db_thread(
                render_to_string, PARTS + "#composer-error", {"errors": [str(exc)]}, request=request
            )
            return reswap(retarget(HttpResponse(html, status=422), "#composer-error"), "outerHTML")
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    if not request.htmx:
        return redirect("chat:live-dialogue", pk=dialogue.pk)

    def status() -> HttpResponse:
        context = _dialogue_context(request, dialogue)
        context["oob"] = True
        return render(request, PARTS + "#status", context)

    return await in_db_thread(status)


def _after_submit(request: HtmxHttpRequest, participant: Participant | None) -> HttpResponse:
    """The next dialogue, else the completion page, else home with the reason."""
    if participant is None:
        return redirect("home")
    try:
        following = scenario_assignment.scenario_assign_next(participant=participant)
    except scenario_assignment.AssignmentError as exc:
        messages.error(request, str(exc))
        return redirect("home")
    if following is not None:
        return redirect("chat:live-dialogue", pk=following.pk)
    if campaigns.completion_for(participant=participant) is not None:
        return redirect("chat:live-completion", pk=participant.campaign_id)
    status = scenario_assignment.worker_status(participant=participant)
    if status.flagged:
        messages.error(request, _("您的账号已被标记，暂时不能继续采集。"))
    elif status.rejected:
        messages.warning(request, _("请先重新采集被退回的对话。"))
    else:
        messages.info(request, _("目前没有可分配的对话，请稍后再来。"))
    return redirect("home")


@require_POST
@_crowdworker_view()
async def dialogue_submit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    dialogue = await _worker_dialogue(request, pk)

    def submit() -> HttpResponse:
        try:
            services.dialogue_submit(
                dialogue=dialogue, cannot_continue=request.POST.get("cannot_continue") == "1"
            )
        except services.CollectionError as exc:
            messages.error(request, str(exc))
            return redirect("chat:live-dialogue", pk=dialogue.pk)
        messages.success(request, _("对话已提交，等待审核。谢谢！"))
        return after_finish(request, dialogue.campaign_id)

    return await in_db_thread(submit)


def after_finish(request: HtmxHttpRequest, campaign_id: int) -> HttpResponse:
    """Where a worker goes after handing a dialogue (or conversation) in."""
    participant = selectors.worker_participant_get(user=request.user, campaign_id=campaign_id)
    if participant is not None and campaigns.completion_for(participant=participant):
        # The worker chooses: stop here with the code, or continue with the next dialogue.
        return redirect("chat:live-completion", pk=participant.campaign_id)
    return _after_submit(request, participant)


@role_required(Role.CROWDWORKER)
@require_POST
def dialogue_abandon(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Skip or abandon the reserved dialogue (with a reason); then the next one."""
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    try:
        scenario_assignment.dialogue_abandon(
            dialogue=dialogue,
            reason=request.POST.get("reason", ""),
            note=request.POST.get("note", ""),
        )
    except scenario_assignment.AssignmentError as exc:
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    messages.info(request, _("已放弃这段对话，它已还给其他工作者。"))
    participant = selectors.worker_participant_get(
        user=request.user, campaign_id=dialogue.campaign_id
    )
    if participant is not None and request.POST.get("then") == "stop":
        return redirect("chat:live-completion", pk=participant.campaign_id)
    return _after_submit(request, participant)


@role_required(Role.CROWDWORKER)
@require_POST
def dialogue_recollect(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    try:
        fresh = scenario_assignment.dialogue_recollect(dialogue=dialogue)
    except scenario_assignment.AssignmentError as exc:
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    return redirect("chat:live-dialogue", pk=fresh.pk)


@role_required(Role.CROWDWORKER)
@require_POST
def campaign_next(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Continue the dialogue in progress or start the next one."""
    participant = selectors.worker_participant_get(user=request.user, campaign_id=pk)
    if participant is None:
        raise PermissionDenied("You have not joined this campaign.")
    return _after_submit(request, participant)


@role_required(Role.CROWDWORKER)
@require_GET
def campaign_completion(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    participant = selectors.worker_participant_get(user=request.user, campaign_id=pk)
    if participant is None:
        raise PermissionDenied("You have not joined this campaign.")
    status = scenario_assignment.worker_status(participant=participant)
    completion = campaigns.completion_for(participant=participant, status=status)
    context = {
        "campaign": participant.campaign,
        "completion": completion,
        "status": status,
        "participant": participant,
    }
    return render(request, "chat/completion.html", context, status=200 if completion else 409)


# --- The streamed reply -----------------------------------------------------------------


def _sse(event: str, data: Any, event_id: str = "") -> str:
    # JSON keeps every payload on one `data:` line (no raw newlines inside an event).
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _saved_html(
    request: HtmxHttpRequest,
    event: replies.ReplySaved,
    alias: str,
    pk: int,
    with_status: bool = True,
) -> str:
    # Rendered from what the event carries (no query), with the request so that the status
    # bar's finish form gets its CSRF token. `with_status=False`: the page has a status bar of
    # its own (side by side: the `controls` event), so only the turn is rendered.
    context = {
        "turn": event.turn,
        "state": event.state,
        "alias": alias,
        "dialogue_id": pk,
        "rate_while_chatting": event.rate_while_chatting,
        "oob": False,
    }
    payload = {"turn_html": render_to_string(PARTS + "#turn", context, request=request)}
    if with_status:
        payload["status_html"] = render_to_string(PARTS + "#status", context, request=request)
    return json.dumps(payload, ensure_ascii=False)


async def _reply_events(
    request: HtmxHttpRequest,
    dialogue: Dialogue,
    alias: str,
    follow: AsyncGenerator[replies.ReplyEvent, None],
    *,
    prefix: str = "",
    failed_template: str = PARTS + "#failed",
    extra: dict[str, Any] | None = None,
    with_status: bool = True,
) -> AsyncGenerator[str, None]:
    """A reply's events (`replies.reply_follow`) as server-sent events. `prefix` goes before
    each event's name and `extra` into the failure's context (a side-by-side page follows two
    replies in one response: `a:chunk`, `b:chunk`, …); `with_status=False` leaves the status
    bar out of `saved` (see `_saved_html`)."""
    async with aclosing(follow) as events:
        async for event in events:
            if isinstance(event, replies.ReplyChunk):
                yield _sse(prefix + "chunk", event.text, event.cursor)
            elif isinstance(event, replies.ReplyReset):
                yield _sse(prefix + "reset", "", event.cursor)
            elif isinstance(event, replies.ReplySaved):
                payload = await in_db_thread(
                    _saved_html, request, event, alias, dialogue.pk, with_status
                )
                yield f"id: {event.cursor}\nevent: {prefix}saved\ndata: {payload}\n\n"
            else:
                context = {**_failure_context(dialogue.pk, event), **(extra or {})}
                render_failed = partial(render_to_string, failed_template, context, request=request)
                html = await in_db_thread(_in_request_language, request, render_failed)
                yield _sse(prefix + "failed", {"html": html}, event.cursor)


@require_GET
@_crowdworker_view(anonymous="forbid")
async def dialogue_stream(request: HtmxHttpRequest, pk: int) -> HttpResponseBase:
    """Server-sent events for the reply to the last utterance: `chunk` (text, JSON string),
    `reset` (a generator died mid-reply: clear the text, another one starts), then `saved` (the
    turn's and the status bar's HTML) or `failed` (the error and retry). Each event has an id;
    a reconnect that sends it back as `Last-Event-ID` (to this process or any other) continues
    right after it."""
    try:
        after = replies.parse_cursor(request.headers.get("Last-Event-ID"))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))

    dialogue = await in_db_thread(selectors.worker_dialogue_get, user=request.user, pk=pk)
    alias = selectors.backend_alias(dialogue=dialogue)
    follow = replies.reply_follow(dialogue=dialogue, after=after)
    return _event_stream(_reply_events(request, dialogue, alias, follow))


def _event_stream(events: AsyncGenerator[str, None]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(events, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response
