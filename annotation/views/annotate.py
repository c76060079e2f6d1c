"""The annotation page: one item (a dialogue) of a rater's work, autosaved answer by answer."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotation.models import Assignment, RatingJob
from annotation.rubric_spec import AnswerError
from annotation.selectors import rating as selectors
from annotation.selectors.pairwise import pairwise_page
from annotation.services import rating_assignments as services
from annotation.services import ratings
from annotation.services.pairwise_answers import pairwise_submit
from annotation.services.quality import Onboarding, onboarding_result
from core.access import AuthenticatedHttpRequest, Role, role_required


def _assignment_for(request: AuthenticatedHttpRequest, pk: int) -> Assignment:
    assignment = get_object_or_404(
        Assignment.objects.select_related("job__rubric", "dialogue__skill", "dialogue__campaign"),
        pk=pk,
        job__is_live=False,
    )
    ratings.check_assignment_access(assignment=assignment, user=request.user)
    return assignment


def _page(request: HttpRequest, assignment: Assignment, **extra: object) -> dict:
    context = selectors.annotation_page(
        assignment=assignment,
        language=get_language() or "zh-hans",
        yes=_("是"),
        no=_("否"),
    )
    context["unanswered_count_as_zero"] = ratings.unanswered_count_as_zero(assignment)
    context.update(extra)
    return context


@role_required(Role.EXPERT)
def annotate_next(request: AuthenticatedHttpRequest, job_id: int) -> HttpResponse:
    """Send the rater to their next item (expiring overdue work first), or say they are done."""
    job = get_object_or_404(RatingJob, pk=job_id, is_live=False)
    if job.status != RatingJob.Status.OPEN:
        return render(request, "annotation/annotate_done.html", {"job": job, "closed": True})
    assignment = services.assignment_next(job=job, rater=request.user)
    if assignment is not None:
        return redirect("annotation:annotate-item", pk=assignment.pk)
    state, rate = onboarding_result(job=job, rater=request.user)
    context = {
        "job": job,
        "failed_screening": state == Onboarding.FAILED,
        "rate": rate,
    }
    return render(request, "annotation/annotate_done.html", context)


@role_required(Role.EXPERT)
def annotate_item(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    assignment = _assignment_for(request, pk)
    if assignment.status in (Assignment.Status.EXPIRED, Assignment.Status.REVOKED):
        messages.info(request, _("这一条已不再分配给您。"))
        return redirect("annotation:annotate-next", job_id=assignment.job_id)
    ratings.assignment_start(assignment=assignment)
    if assignment.job.is_pairwise:
        context = pairwise_page(assignment=assignment, language=get_language() or "zh-hans")
        return render(request, "annotation/annotate_pairwise.html", context)
    return render(request, "annotation/annotate_item.html", _page(request, assignment))


@role_required(Role.EXPERT)
@require_POST
def annotate_answer(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Autosave one answer (htmx). An invalid answer gets 422 and the precise reason."""
    assignment = _assignment_for(request, pk)
    turn = request.POST.get("turn") or None
    try:
        turn_id = int(turn) if turn is not None else None
    except ValueError:
        turn_id, error = None, _("turn：不是轮次 ID：%(turn)r") % {"turn": turn}
    else:
        error = ""
    if not error:
        try:
            ratings.rating_save(
                assignment=assignment,
                user=request.user,
                question=request.POST.get("question", ""),
                value=request.POST.get("value", ""),
                turn_id=turn_id,
            )
        except AnswerError as exc:
            error = ratings.answer_error_text(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect("annotation:annotate-item", pk=assignment.pk)
    context = _page(request, assignment, error=error)
    return render(
        request, "annotation/annotate_item.html#saved", context, status=422 if error else 200
    )


@role_required(Role.EXPERT)
@require_POST
def annotate_submit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Submit the item. With unanswered questions the page comes back with a warning naming
    them; where the rubric counts them as 0 (seed 001) the rater may then confirm."""
    assignment = _assignment_for(request, pk)
    if assignment.job.is_pairwise:
        return _pairwise_submit(request, assignment)
    unanswered: list[str] = []
    try:
        ratings.assignment_submit(
            assignment=assignment,
            user=request.user,
            confirm_unanswered=request.POST.get("confirm_unanswered") == "1",
        )
    except ratings.IncompleteError as exc:
        error = _("还有未回答的问题：%(missing)s") % {"missing": "、".join(exc.missing)}
        unanswered = exc.missing
    except AnswerError as exc:
        error = ratings.answer_error_text(exc)
    else:
        return redirect("annotation:annotate-next", job_id=assignment.job_id)
    context = _page(request, assignment, submit_error=error, unanswered=unanswered)
    return render(request, "annotation/annotate_item.html", context, status=400)


def _pairwise_submit(request: AuthenticatedHttpRequest, assignment: Assignment) -> HttpResponse:
    """A pairwise item is answered in one form: a side (`side-<key>`) and a reason
    (`reason-<key>`) per question. A refusal comes back with what was typed kept."""
    keys = {name.split("-", 1)[1] for name in request.POST if name.startswith(("side-", "reason-"))}
    posted = {
        key: (request.POST.get(f"side-{key}", ""), request.POST.get(f"reason-{key}", ""))
        for key in keys
    }
    try:
        pairwise_submit(assignment=assignment, user=request.user, answers=posted)
    except AnswerError as exc:
        context = pairwise_page(
            assignment=assignment, language=get_language() or "zh-hans", posted=posted
        )
        context["submit_error"] = ratings.answer_error_text(exc)
        return render(request, "annotation/annotate_pairwise.html", context, status=400)
    return redirect("annotation:annotate-next", job_id=assignment.job_id)
