from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.access import Role, primary_role
from workspace import selectors


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Each role lands on its own page: what is waiting for them and what to do next."""
    user = request.user
    assert isinstance(user, User)  # login_required: never the anonymous user here
    role = primary_role(user)
    if role in (Role.ADMIN, Role.RESEARCHER):
        context = selectors.researcher_home(user=user)
        return render(request, "workspace/home_researcher.html", context)
    if role == Role.EXPERT:
        context = selectors.expert_home(user=user)
        return render(request, "workspace/home_expert.html", context)
    if role == Role.CROWDWORKER:
        context = selectors.crowdworker_home(user=user)
        return render(request, "workspace/home_crowdworker.html", context)
    return render(request, "workspace/home_norole.html", status=403)
