"""Campaign pages: researchers create and run campaigns; crowdworkers join through invite links."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat.forms import CampaignForm, JoinForm
from chat.models import Campaign
from chat.selectors import campaigns as selectors
from chat.services import campaigns as campaign_services
from chat.services import participation as services
from core.access import Role, role_required

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
    rows = [(c, selectors.campaign_progress(campaign=c)) for c in page]
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
def campaign_create(request: HttpRequest) -> HttpResponse:
    form = CampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            campaign = campaign_services.campaign_create(
                created_by=request.user, **form.service_arguments()
            )
        except ValidationError as exc:
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
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, _("已保存。"))
            return redirect("chat:campaign-detail", pk=campaign.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request, "chat/campaign_form.html", {"form": form, "campaign": campaign}, status=status
    )


@role_required(Role.RESEARCHER)
def campaign_detail(request: HttpRequest, pk: int) -> HttpResponse:
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
    except ValidationError as exc:
        for message in exc.messages:
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


@require_http_methods(["GET", "POST"])
def campaign_join(request: HttpRequest, token: str) -> HttpResponse:
    """An invite link: a crowdworker joins with the site's worker id, no password needed."""
    campaign = get_object_or_404(Campaign, invite_token=token)
    if campaign.status != Campaign.Status.ACTIVE:
        return render(request, "chat/join_closed.html", {"campaign": campaign}, status=410)

    worker_id, source = "", request.GET.get("source", "")
    for param, site in _WORKER_ID_PARAMS:
        if request.GET.get(param):
            worker_id, source = request.GET[param], source or site
            break
    form = JoinForm(request.POST or None, initial={"worker_id": worker_id})
    if request.method == "POST" and form.is_valid():
        worker_id = form.cleaned_data["worker_id"]
    if not worker_id:
        return render(request, "chat/join.html", {"campaign": campaign, "form": form})

    try:
        user = services.participant_join(campaign=campaign, external_id=worker_id, source=source)
    except services.ParticipationError as exc:
        form = JoinForm(data={"worker_id": worker_id})
        form.is_valid()
        form.add_error("worker_id", str(exc))
        return render(request, "chat/join.html", {"campaign": campaign, "form": form}, status=400)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, _("欢迎参加「%(name)s」！") % {"name": campaign.name})
    return redirect("home")
