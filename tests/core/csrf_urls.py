"""URLs of `test_loop_middleware`'s CSRF test: a form target and a page that hands out a token."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.urls import path


def _accept_post(request: HttpRequest) -> HttpResponse:
    return HttpResponse("accepted")


def _token_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(get_token(request))


urlpatterns = [path("post/", _accept_post), path("token/", _token_page)]
