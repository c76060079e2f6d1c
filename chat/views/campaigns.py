"""Campaign pages for crowdworkers: joining through an invite link."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from chat.forms import JoinForm
from chat.models import Campaign
from chat.services import participation as services

# Query parameters crowdsourcing sites append to a study link.
_WORKER_ID_PARAMS = (("worker_id", ""), ("PROLIFIC_PID", "prolific"), ("workerId", "mturk"))


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
