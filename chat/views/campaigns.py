"""Campaign pages: researchers create and run campaigns; crowdworkers join through invite links."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat.forms import CampaignForm, JoinForm
from chat.forms_votes import VoteImportForm
from chat.models import Campaign, Dialogue, Participant
from chat.selectors import backends as backend_selectors
from chat.selectors import campaigns as selectors
from chat.selectors import votes as vote_selectors
from chat.services import campaigns as campaign_services
from chat.services import participation as services
from chat.services.campaigns import CampaignError
from chat.services.scenario_assignment import AssignmentError, scenario_assign_next
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.security import rate_limited

_INVITE_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{1,40}")
# A signed cookie binds a participant to the browser that first joined (see campaign_join).
_BINDING_COOKIE = "participant"
_BINDING_SALT = "chat.participant-binding"
# Query parameters crowdsourcing sites append to a study link.
_WORKER_ID_PARAMS = (("worker_id", ""), ("PROLIFIC_PID", "prolific"), ("workerId", "mturk"))


@role_required(Role.RESEARCHER)
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = selectors.campaign_list(
        user=request.user,
        status=request.GET.get("status") or None,
        mode=request.GET.get("mode") or None,
    )
    page = Paginator(campaigns, 25).get_page(request.GET.get("page"))
    progress = selectors.campaigns_progress(campaigns=list(page))
    rows = [(c, progress[c.pk]) for c in page]
    return render(
        request,
        "chat/campaign_list.html",
        {
            "page": page,
            "rows": rows,
            "statuses": Campaign.Status.choices,
            "modes": Campaign.Mode.choices,
        },
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def campaign_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = CampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            campaign = campaign_services.campaign_create(
                created_by=request.user, **form.service_arguments()
            )
        except CampaignError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, _("已创建评测活动「%(name)s」。") % {"name": campaign.name})
            return redirect("chat:campaign-detail", pk=campaign.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request, "chat/campaign_form.html", {"form": form, "campaign": None}, status=status
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def campaign_edit(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    form = CampaignForm(request.POST or None, initial=CampaignForm.initial_for(campaign))
    if request.method == "POST" and form.is_valid():
        try:
            campaign_services.campaign_update(campaign=campaign, **form.service_arguments())
        except CampaignError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, _("已保存。"))
            return redirect("chat:campaign-detail", pk=campaign.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request, "chat/campaign_form.html", {"form": form, "campaign": campaign}, status=status
    )


@role_required(Role.RESEARCHER)
def campaign_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The campaign, its invite links, progress per cell (polled by htmx) and participants."""
    try:
        campaign = selectors.campaign_get(pk=pk)
    except Campaign.DoesNotExist:
        raise Http404 from None
    progress = selectors.campaign_progress(campaign=campaign)
    context = {"campaign": campaign, "progress": progress}
    if request.htmx:
        return render(request, "chat/campaign_detail.html#progress", context)
    invite = request.build_absolute_uri(reverse("chat:campaign-join", args=[campaign.invite_token]))
    context.update(
        {
            "invite_url": invite,
            "prolific_url": (
                f"{invite}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
            ),
            "mturk_url": f"{invite}?workerId=WORKER_ID",
            "participants": selectors.participant_list(campaign=campaign),
            "failures": backend_selectors.reply_failure_summary(campaign=campaign),
            # The rate-while-chatting results (created on the first live rating).
            "live_job": campaign.rating_jobs.filter(is_live=True).first(),
            "n_accepted": campaign.dialogues.filter(status=Dialogue.Status.ACCEPTED).count(),
            "openings": (
                selectors.opening_usage(campaign=campaign) if campaign.opening_dataset_id else []
            ),
            "vote_counts": vote_selectors.vote_counts(campaign=campaign),
            "vote_form": VoteImportForm(),
            "problems": (
                campaign_services.campaign_readiness_problems(campaign)
                if campaign.status != Campaign.Status.ACTIVE
                else []
            ),
        }
    )
    return render(request, "chat/campaign_detail.html", context)


@role_required(Role.RESEARCHER)
@require_POST
def campaign_activate(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    try:
        campaign_services.campaign_activate(campaign=campaign)
    except CampaignError as exc:
        for message in exc.errors.values() or [str(exc)]:
            messages.error(request, message)
    else:
        messages.success(request, _("评测活动已开放，工作者现在可以通过邀请链接加入。"))
    return redirect("chat:campaign-detail", pk=pk)


@role_required(Role.RESEARCHER)
@require_POST
def campaign_close(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    campaign_services.campaign_close(campaign=campaign)
    messages.success(request, _("评测活动已结束，不再分配新的对话。"))
    return redirect("chat:campaign-detail", pk=pk)


def _bound_participant(request: HttpRequest, campaign: Campaign) -> int | None:
    value = request.get_signed_cookie(
        f"{_BINDING_COOKIE}-{campaign.pk}", default=None, salt=_BINDING_SALT
    )
    return int(value) if value and value.isdigit() else None


@require_http_methods(["GET", "POST"])
def campaign_join(request: HttpRequest, token: str) -> HttpResponse:
    """An invite link: a crowdworker joins with the site's worker id, no password needed.

    The GET only shows the form (the worker id from the site's query parameters filled in): the
    login happens on the POST, which carries a CSRF token, so a link planted elsewhere cannot log
    a visitor in as someone else, and whoever is logged in sees who they are before switching.
    """
    if not _INVITE_TOKEN_RE.fullmatch(token):
        raise Http404("no such invite link")
    campaign = get_object_or_404(Campaign, invite_token=token)
    if campaign.status != Campaign.Status.ACTIVE:
        return render(request, "chat/join_closed.html", {"campaign": campaign}, status=410)

    worker_id, source = "", request.GET.get("source", "")
    for param, site in _WORKER_ID_PARAMS:
        if request.GET.get(param):
            worker_id, source = request.GET[param], source or site
            break
    source = request.POST.get("source", source)
    bound = _bound_participant(request, campaign)
    context = {"campaign": campaign, "source": source, "current_user": request.user}
    if request.method != "POST":
        already = Participant.objects.filter(  # type: ignore[misc]  # anonymous: user_id None, no row
            campaign=campaign, user_id=request.user.pk, external_id=worker_id.strip()
        ).exists()
        if worker_id and already:  # this browser is this worker already: straight to the chat
            return _first_dialogue(request, campaign=campaign, user=request.user)
        form = JoinForm(initial={"worker_id": worker_id})
        return render(request, "chat/join.html", {**context, "form": form})

    if rate_limited(request, scope="join", per_minute=settings.JOIN_RATE_LIMIT_PER_MINUTE):
        form = JoinForm(request.POST)
        form.is_valid()
        form.add_error(None, _("加入请求过于频繁，请一分钟后再试。"))
        return render(request, "chat/join.html", {**context, "form": form}, status=429)
    form = JoinForm(request.POST)
    if not form.is_valid():
        return render(request, "chat/join.html", {**context, "form": form}, status=400)
    try:
        user = services.participant_join(
            campaign=campaign,
            external_id=form.cleaned_data["worker_id"],
            source=source,
            bound_participant_id=bound,
            resume_code=form.cleaned_data["resume_code"],
        )
    except services.ParticipationError as exc:
        field = "resume_code" if isinstance(exc, services.ResumeCodeRequired) else "worker_id"
        form.add_error(field, str(exc))
        status = 403 if field == "resume_code" else 400
        return render(
            request,
            "chat/join.html",
            {**context, "form": form, "ask_resume_code": field == "resume_code"},
            status=status,
        )
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session.set_expiry(campaign.worker_session_hours * 3600)
    participant = Participant.objects.get(campaign=campaign, user=user)
    messages.success(
        request,
        _("欢迎参加「%(name)s」！您的恢复码是 %(code)s：换用其他浏览器或设备继续时需要它。")
        % {"name": campaign.name, "code": participant.resume_code},
    )
    response = _first_dialogue(request, campaign=campaign, user=user)
    response.set_signed_cookie(
        f"{_BINDING_COOKIE}-{campaign.pk}",
        str(participant.pk),
        salt=_BINDING_SALT,
        max_age=365 * 24 * 3600,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return response


def _first_dialogue(request: HttpRequest, *, campaign: Campaign, user: Any) -> HttpResponse:
    """The invite link lands in the chat (the worker's dialogue in progress, else a new one),
    not one click before it; home when there is nothing to chat about now."""
    participant = Participant.objects.filter(campaign=campaign, user=user).first()
    if participant is None:
        return redirect("home")
    try:
        dialogue = scenario_assign_next(participant=participant)
    except AssignmentError:
        return redirect("home")
    if dialogue is None:
        return redirect("home")
    return redirect("chat:live-dialogue", pk=dialogue.pk)
