"""Live per-turn rating: the small form under each model reply in the chat (htmx partial)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from annotation.rubric_spec import AnswerError
from annotation.selectors.rating import question_views
from annotation.services import live as services
from annotation.services.ratings import answer_error_text
from chat.models import Dialogue, Turn
from chat.selectors.collection import backend_alias, chat_state
from core.access import AuthenticatedHttpRequest, Role, role_required


@role_required(Role.CROWDWORKER)
@require_http_methods(["GET", "POST"])
def live_turn_rating(request: AuthenticatedHttpRequest, turn_id: int) -> HttpResponse:
    """GET: the questions for this reply; POST: save the answers given (worker of the dialogue)."""
    turn = get_object_or_404(
        Turn.objects.select_related("dialogue__campaign", "dialogue__skill"), pk=turn_id
    )
    error, saved, status = "", False, 200
    try:
        services.check_live_access(turn=turn, user=request.user)
        if request.method == "POST":
            answers = {
                key: request.POST[key]
                for key in request.POST
                if key not in ("csrfmiddlewaretoken",)
            }
            services.live_rating_save(turn=turn, user=request.user, answers=answers)
            saved = True
    except AnswerError as exc:
        error, status = answer_error_text(exc), 422
    questions, index = services.live_questions(turn=turn)
    given: dict[tuple[str, int | None], str] = {
        (key, turn.pk): _as_text(value)
        for key, value in services.live_answers(turn=turn, user=request.user).items()
    }
    context = {
        "turn": turn,
        "number": index + 1,
        "questions": question_views(
            questions=questions,
            language=get_language() or "zh-hans",
            answers=given,
            turn_id=turn.pk,
            turn_number=index + 1,
            categories=services.live_categories(turn=turn),
            yes=_("是"),
            no=_("否"),
        ),
        "error": error,
        "saved": saved,
    }
    if request.method == "POST":
        # The chat's status bar follows (out of band): answering the last reply's questions
        # unlocks the composer, and 「完成」 shows how many answers are still missing.
        context.update(
            chat_status=True,
            state=chat_state(dialogue=turn.dialogue),
            alias=backend_alias(dialogue=turn.dialogue),
            dialogue_id=turn.dialogue_id,
        )
    return render(request, "annotation/live_turn_form.html", context, status=status)


def _as_text(value: float | str) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@role_required(Role.CROWDWORKER)
@require_http_methods(["GET"])
def live_guide(request: HttpRequest, dialogue_id: int) -> HttpResponse:
    """The live rubric's instructions and categories, loaded into the chat page's side panel."""
    dialogue = get_object_or_404(
        Dialogue.objects.select_related("campaign", "skill"), pk=dialogue_id
    )
    if dialogue.worker_id != request.user.pk:
        raise PermissionDenied(_("只有这段对话的众包人员可以给它的回复评分。"))
    guide = services.live_guide(dialogue=dialogue, language=get_language() or "")
    return render(request, "annotation/live_guide.html", {"rating_guide": guide})
