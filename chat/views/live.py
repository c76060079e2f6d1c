"""The crowdworker's chat page: send, the streamed reply, grounding ticks, finish, re-collect.

Every view but the stream is a plain (sync) view behind `role_required`. The stream is an async
view returning `text/event-stream` from an async iterator, so under ASGI (uvicorn) each chunk
leaves as soon as the model sends it; it only listens to the reply's generation task (see
`chat.services.collection`), so a client that goes away never stops or half-saves a reply.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from chat.models import Dialogue, Participant
from chat.selectors import collection as selectors
from chat.services import assignment, campaigns
from chat.services import collection as services
from core.access import Role, has_role, role_required

PARTS = "chat/live_parts.html"


def _failure_message(kind: str) -> str:
    messages_by_kind = {
        "timeout": _("模型在规定时间内没有回复。"),
        "unavailable": _("暂时连不上模型服务。"),
        "rate_limited": _("模型服务正忙（请求过多）。"),
        "bad_response": _("模型返回了无法识别的内容。"),
        "config": _("这个模型的配置有误，请联系研究者。"),
        "nothing_to_answer": _("没有等待模型回复的话。"),
    }
    return messages_by_kind.get(kind, _("模型回复失败。"))


def _failure_context(dialogue_id: int, failure: services.ReplyFailed) -> dict[str, Any]:
    return {
        "dialogue_id": dialogue_id,
        "failure_message": _failure_message(failure.kind),
        "failure_detail": failure.detail,
    }


def _dialogue_context(request: HttpRequest, dialogue: Dialogue) -> dict[str, Any]:
    turns = selectors.dialogue_turns(dialogue=dialogue)
    state = selectors.chat_state(dialogue=dialogue, turns=turns)
    failure = services.generation_failure(dialogue=dialogue) if state.awaiting_reply else None
    grounding = dialogue.grounding or {}
    context: dict[str, Any] = {
        "dialogue": dialogue,
        "dialogue_id": dialogue.pk,
        "turns": turns,
        "state": state,
        "alias": selectors.backend_alias(dialogue=dialogue),
        "sections": selectors.grounding_sections(skill=dialogue.skill.key, grounding=grounding),
        "situation": grounding.get("situation", ""),
        "used": set(dialogue.grounding_used or []),
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


@role_required(Role.CROWDWORKER)
@require_GET
def dialogue_page(request: HttpRequest, pk: int) -> HttpResponse:
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    return render(request, "chat/live_dialogue.html", _dialogue_context(request, dialogue))


def _refusal(request: HttpRequest, dialogue: Dialogue, errors: list[str]) -> HttpResponse:
    if request.htmx:
        html = render_to_string(PARTS + "#composer-error", {"errors": errors}, request=request)
        return reswap(retarget(HttpResponse(html, status=422), "#composer-error"), "outerHTML")
    for error in errors:
        messages.error(request, error)
    context = _dialogue_context(request, dialogue)
    return render(request, "chat/live_dialogue.html", context, status=422)


@role_required(Role.CROWDWORKER)
@require_POST
def dialogue_send(request: HttpRequest, pk: int) -> HttpResponse:
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    try:
        turn = services.post_user_turn(dialogue=dialogue, text=request.POST.get("text", ""))
    except services.UtteranceRefused as exc:
        errors = list(exc.messages)
        if exc.flagged:
            errors.append(_("不合格的发言次数过多，您的账号已被标记，研究者会进行核查。"))
        return _refusal(request, dialogue, errors)
    except services.CollectionError as exc:
        return _refusal(request, dialogue, [str(exc)])
    if not request.htmx:
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    dialogue.refresh_from_db()
    context = _dialogue_context(request, dialogue)
    context.update({"turn": turn, "oob": True})
    return render(request, PARTS + "#sent", context)


@role_required(Role.CROWDWORKER)
@require_POST
def dialogue_retry(request: HttpRequest, pk: int) -> HttpResponse:
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    try:
        services.retry_system_turn(dialogue=dialogue)
    except services.CollectionError as exc:
        if request.htmx:
            return HttpResponseClientRedirect(reverse("chat:live-dialogue", args=[dialogue.pk]))
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    if not request.htmx:
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    context = {"dialogue_id": dialogue.pk, "alias": selectors.backend_alias(dialogue=dialogue)}
    return render(request, PARTS + "#pending", context)


@role_required(Role.CROWDWORKER)
@require_POST
def dialogue_grounding(request: HttpRequest, pk: int) -> HttpResponse:
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    try:
        dialogue = services.tick_grounding(dialogue=dialogue, item_ids=request.POST.getlist("used"))
    except services.CollectionError as exc:
        if request.htmx:
            html = render_to_string(PARTS + "#composer-error", {"errors": [str(exc)]})
            return reswap(retarget(HttpResponse(html, status=422), "#composer-error"), "outerHTML")
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    if not request.htmx:
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    context = _dialogue_context(request, dialogue)
    context["oob"] = True
    return render(request, PARTS + "#status", context)


def _after_submit(request: HttpRequest, participant: Participant | None) -> HttpResponse:
    """The next dialogue, else the completion page, else home with the reason."""
    if participant is None:
        return redirect("home")
    try:
        following = assignment.assign_next(participant=participant)
    except assignment.AssignmentError as exc:
        messages.error(request, str(exc))
        return redirect("home")
    if following is not None:
        return redirect("chat:live-dialogue", pk=following.pk)
    if campaigns.completion_for(participant=participant) is not None:
        return redirect("chat:live-completion", pk=participant.campaign_id)
    status = assignment.worker_status(participant=participant)
    if status.flagged:
        messages.error(request, _("您的账号已被标记，暂时不能继续采集。"))
    elif status.rejected:
        messages.warning(request, _("请先重新采集被退回的对话。"))
    else:
        messages.info(request, _("目前没有可分配的对话，请稍后再来。"))
    return redirect("home")


def _participant(user: Any, campaign_id: int) -> Participant | None:
    return (
        Participant.objects.select_related("campaign")
        .filter(campaign_id=campaign_id, user_id=user.pk)
        .first()
    )


@role_required(Role.CROWDWORKER)
@require_POST
def dialogue_submit(request: HttpRequest, pk: int) -> HttpResponse:
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    try:
        services.submit(dialogue=dialogue)
    except services.CollectionError as exc:
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    messages.success(request, _("对话已提交，等待审核。谢谢！"))
    return _after_submit(request, _participant(request.user, dialogue.campaign_id))


@role_required(Role.CROWDWORKER)
@require_POST
def dialogue_recollect(request: HttpRequest, pk: int) -> HttpResponse:
    dialogue = selectors.worker_dialogue_get(user=request.user, pk=pk)
    try:
        fresh = assignment.recollect(dialogue=dialogue)
    except assignment.AssignmentError as exc:
        messages.error(request, str(exc))
        return redirect("chat:live-dialogue", pk=dialogue.pk)
    return redirect("chat:live-dialogue", pk=fresh.pk)


@role_required(Role.CROWDWORKER)
@require_POST
def campaign_next(request: HttpRequest, pk: int) -> HttpResponse:
    """Continue the dialogue in progress or start the next one."""
    participant = _participant(request.user, pk)
    if participant is None:
        raise PermissionDenied("You have not joined this campaign.")
    return _after_submit(request, participant)


@role_required(Role.CROWDWORKER)
@require_GET
def campaign_completion(request: HttpRequest, pk: int) -> HttpResponse:
    participant = _participant(request.user, pk)
    if participant is None:
        raise PermissionDenied("You have not joined this campaign.")
    completion = campaigns.completion_for(participant=participant)
    context = {"campaign": participant.campaign, "completion": completion}
    return render(request, "chat/completion.html", context, status=200 if completion else 409)


# --- The streamed reply -----------------------------------------------------------------


def _sse(event: str, data: Any) -> str:
    # JSON keeps every payload on one `data:` line (no raw newlines inside an event).
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _reply_events(dialogue: Dialogue, alias: str) -> AsyncIterator[str]:
    async with aclosing(services.generate_system_turn(dialogue=dialogue)) as replies:
        async for event in replies:
            if isinstance(event, services.ReplyChunk):
                yield _sse("chunk", event.text)
            elif isinstance(event, services.ReplySaved):
                # Rendered from what the event carries: no query while streaming.
                context = {
                    "turn": event.turn,
                    "state": event.state,
                    "alias": alias,
                    "dialogue_id": dialogue.pk,
                    "rate_while_chatting": event.rate_while_chatting,
                    "oob": False,
                }
                yield _sse(
                    "saved",
                    {
                        "turn_html": render_to_string(PARTS + "#turn", context),
                        "status_html": render_to_string(PARTS + "#status", context),
                    },
                )
            else:
                html = render_to_string(PARTS + "#failed", _failure_context(dialogue.pk, event))
                yield _sse("failed", {"html": html})


async def dialogue_stream(request: HttpRequest, pk: int) -> HttpResponse:
    """Server-sent events for the reply to the last utterance: `chunk` (text, JSON string),
    then `saved` (the turn's and the status bar's HTML) or `failed` (the error and retry)."""
    user = await request.auser()
    if not user.is_authenticated or not await sync_to_async(has_role)(user, Role.CROWDWORKER):
        raise PermissionDenied("This page is not available to your role.")

    def load() -> tuple[Dialogue, str]:
        dialogue = selectors.worker_dialogue_get(user=user, pk=pk)
        alias = selectors.backend_alias(dialogue=dialogue)
        # Give the connection back now: a stream may last a minute, and a hundred open streams
        # must not hold a hundred idle database connections.
        connection.close()
        return dialogue, alias

    dialogue, alias = await sync_to_async(load)()
    response = StreamingHttpResponse(
        _reply_events(dialogue, alias), content_type="text/event-stream; charset=utf-8"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response
