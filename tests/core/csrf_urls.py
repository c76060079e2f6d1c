"""URLs of `test_loop_middleware`'s tests: a form target, a page that hands out a token, and an
upload target that says what it received."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.urls import path
from django.views.decorators.csrf import csrf_exempt


def _accept_post(request: HttpRequest) -> HttpResponse:
    return HttpResponse("accepted")


def _token_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(get_token(request))


def _files(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    return HttpResponse(f"x={request.POST['x']} file={upload.size if upload else 0}")


urlpatterns = [
    path("post/", _accept_post),
    path("token/", _token_page),
    path("files/", csrf_exempt(_files)),
]
