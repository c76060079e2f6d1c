"""The researcher's review-policy page of a campaign: how many experts review each submitted
dialogue and how their decisions combine (MSDE §3.1 used 3 experts)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from annotation.forms import ReviewPolicyForm
from annotation.selectors import review as selectors
from annotation.services import review as services
from chat.models import Campaign
from core.access import Role, role_required


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def review_policy(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=campaign_id)
    policy = services.review_policy_for(campaign)
    initial = {
        "reviewers_per_dialogue": policy.reviewers_per_dialogue,
        "decision_rule": policy.decision_rule,
    }
    form = ReviewPolicyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.review_policy_set(campaign=campaign, **form.cleaned_data)
        except services.ReviewError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        else:
            messages.success(request, _("已保存「%(name)s」的审核规则。") % {"name": campaign.name})
            return redirect("annotation:review-policy", campaign_id=campaign.pk)
    context = {
        "campaign": campaign,
        "policy": policy,
        "is_saved": policy.pk is not None,
        "form": form,
        "overview": selectors.policy_overview(campaign_id=campaign.pk),
    }
    status = 400 if form.errors else 200
    return render(request, "annotation/policy_review.html", context, status=status)
