"""HTML views of the review of collected dialogues (experts)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from annotation.selectors import review as selectors
from annotation.selectors.rating import localized
from annotation.services import review as services
from chat.models import Dialogue
from chat.selectors.collection import grounding_view
from core.access import AuthenticatedHttpRequest, Role, role_required


@role_required(Role.EXPERT)
def review_queue(request: AuthenticatedHttpRequest) -> HttpResponse:
    queue = selectors.review_queue(reviewer=request.user)
    return render(
        request,
        "annotation/review_queue.html",
        {"queue": queue[:50], "n_waiting": queue.count()},
    )


@role_required(Role.EXPERT)
def review_next(request: AuthenticatedHttpRequest) -> HttpResponse:
    dialogue = selectors.review_next(reviewer=request.user)
    if dialogue is None:
        messages.info(request, _("没有等待您审核的对话了。"))
        return redirect("annotation:review-queue")
    return redirect("annotation:review-dialogue", dialogue_id=dialogue.pk)


@role_required(Role.EXPERT)
@require_http_methods(["GET", "POST"])
def review_dialogue(request: AuthenticatedHttpRequest, dialogue_id: int) -> HttpResponse:
    dialogue = get_object_or_404(Dialogue, pk=dialogue_id)
    if dialogue.worker_id == request.user.pk:
        raise PermissionDenied(_("不能审核自己收集的对话。"))
    error = ""
    if request.method == "POST":
        try:
            services.review_submit(
                dialogue=dialogue,
                reviewer=request.user,
                decision=request.POST.get("decision", ""),
                reasons=request.POST.getlist("reasons"),
                comment=request.POST.get("comment", ""),
            )
        except services.ReviewError as exc:
            error = str(exc)
        else:
            messages.success(request, _("已记录您的审核结论。"))
            return redirect("annotation:review-next")
    language = get_language() or "zh-hans"
    dialogue = selectors.dialogue_for_display(dialogue_id=dialogue.pk)
    context = {
        "dialogue": dialogue,
        "alias": selectors.model_alias(dialogue),
        # The reviewer sees which items the worker ticked as used: "knowledge used
        # inaccurately" is judged on exactly that.
        "g": grounding_view(
            skill=dialogue.skill.key,
            grounding=dialogue.grounding,
            used=dialogue.grounding_used or [],
        ),
        "reasons": [
            (key, localized(labels, language)) for key, labels in services.REASON_TEMPLATES.items()
        ],
        "chosen": request.POST.getlist("reasons"),
        "comment": request.POST.get("comment", ""),
        "error": error,
        "already": selectors.reviews_of(dialogue=dialogue).filter(reviewer=request.user).exists(),
        "n_waiting": selectors.review_queue(reviewer=request.user).count(),
    }
    return render(request, "annotation/review_dialogue.html", context, status=400 if error else 200)
