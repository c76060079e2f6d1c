"""core.lazy_urls: an API view is imported on its first use, and routes, reverses and answers as
the ``path(…, View.as_view())`` it replaces."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from django.urls import resolve, reverse
from django.views import View
from rest_framework.views import APIView

from core.lazy_urls import LazyView, lazy_path, lazy_views

pytestmark = pytest.mark.django_db


class Plain(View):
    greeting = "hello"

    def get(self, request, *args, **kwargs):
        from django.http import HttpResponse

        return HttpResponse(f"{self.greeting} {kwargs.get('pk', '')}".strip())


class Asynchronous(View):
    async def get(self, request, *args, **kwargs):  # pragma: no cover - never served
        raise AssertionError


urlpatterns = [
    lazy_path("plain/<int:pk>/", f"{__name__}.Plain", name="lazy-plain", greeting="hi"),
    lazy_path("async/", f"{__name__}.Asynchronous", name="lazy-async"),
    lazy_path("missing/", f"{__name__}.Missing", name="lazy-missing"),
]


def test_the_pattern_reverses_and_resolves_without_loading_the_view() -> None:
    view = LazyView(f"{__name__}.Plain", {})
    pattern = lazy_path("x/", f"{__name__}.Plain", name="x")
    assert pattern.lookup_str == f"{__name__}.Plain"
    assert view.__module__ == __name__ and view.__name__ == "Plain"
    assert view._view is None


@override_settings(ROOT_URLCONF=__name__)
def test_the_first_request_builds_the_view_with_its_initkwargs(client) -> None:
    assert reverse("lazy-plain", kwargs={"pk": 3}) == "/plain/3/"
    match = resolve("/plain/3/")
    assert match.func.view_class is Plain  # attributes are the built view's
    assert client.get("/plain/3/").content == b"hi 3"


def test_a_dotted_path_without_a_module_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="'Plain': expected the dotted path"):
        lazy_path("x/", "Plain")


def test_an_asynchronous_view_is_refused_when_loaded() -> None:
    with pytest.raises(ImproperlyConfigured, match="is asynchronous"):
        LazyView(f"{__name__}.Asynchronous", {}).load()


def test_decorators_wrap_the_built_view() -> None:
    calls = []

    def tag(view):
        def wrapped(request, *args, **kwargs):
            calls.append("tag")
            return view(request, *args, **kwargs)

        return wrapped

    from django.test import RequestFactory

    view = LazyView(f"{__name__}.Plain", {}, decorators=[tag])
    assert view(RequestFactory().get("/"), pk=1).content == b"hello 1"
    assert calls == ["tag"]


@override_settings(ROOT_URLCONF=__name__)
def test_the_deploy_check_reports_a_lazy_view_that_cannot_load() -> None:
    errors = [e for e in run_checks(include_deployment_checks=True) if e.id == "core.E001"]
    assert [e.msg.split(" cannot")[0] for e in errors] == [
        f"lazy view {__name__}.Asynchronous",
        f"lazy view {__name__}.Missing",
    ]
    assert not [e for e in run_checks() if e.id == "core.E001"]  # a plain check imports none


def test_every_api_view_of_the_project_loads_and_is_a_drf_view() -> None:
    views = list(lazy_views())
    assert len(views) > 50
    for view in views:
        assert issubclass(view.load().cls, APIView), view.target
    assert "core.api.TokenLoginApi" in {view.target for view in views}
