"""core.lazy_urls: a view (an API class, a page's function) is imported on its first use, and
routes, reverses and answers as the ``path(…)`` it replaces."""

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


def page(request, pk, colour="grey"):
    from django.http import HttpResponse

    return HttpResponse(f"page {pk} {colour}")


async def live_page(request, pk):
    from django.http import HttpResponse

    return HttpResponse(f"live {pk}")


urlpatterns = [
    lazy_path("plain/<int:pk>/", f"{__name__}.Plain", name="lazy-plain", greeting="hi"),
    lazy_path("page/<int:pk>/", f"{__name__}.page", {"colour": "red"}, name="lazy-page"),
    lazy_path("live/<int:pk>/", f"{__name__}.live_page", name="lazy-live", is_async=True),
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


@override_settings(ROOT_URLCONF=__name__)
def test_a_view_function_is_served_with_the_patterns_kwargs(client) -> None:
    assert reverse("lazy-page", kwargs={"pk": 2}) == "/page/2/"
    assert client.get("/page/2/").content == b"page 2 red"


@override_settings(ROOT_URLCONF=__name__)
def test_an_async_view_declared_so_is_a_coroutine_function_to_django(async_client) -> None:
    from asgiref.sync import async_to_sync, iscoroutinefunction

    fresh = lazy_path("live/<int:pk>/", f"{__name__}.live_page", is_async=True).callback
    assert iscoroutinefunction(fresh) and fresh._view is None  # told without importing
    assert iscoroutinefunction(resolve("/live/5/").func)
    response = async_to_sync(async_client.get)("/live/5/")
    assert response.content == b"live 5"


def test_a_view_of_the_other_kind_than_declared_is_refused_when_loaded() -> None:
    from core.lazy_urls import AsyncLazyView

    with pytest.raises(
        ImproperlyConfigured, match="is asynchronous: declare it with is_async=True"
    ):
        LazyView(f"{__name__}.live_page", {}).load()
    with pytest.raises(
        ImproperlyConfigured, match="is synchronous: declare it with is_async=False"
    ):
        AsyncLazyView(f"{__name__}.page", {}).load()
    with pytest.raises(ImproperlyConfigured, match="a view function takes no as_view"):
        LazyView(f"{__name__}.page", {"greeting": "hi"}).load()


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


def test_every_view_of_the_project_loads_as_declared_and_every_api_view_is_a_drf_view() -> None:
    """Every page and API route is lazy (what `check` and start-up do not import); each loads, is
    of the kind it was declared (`load` refuses otherwise), and the API's are DRF views."""
    views = list(lazy_views())
    api = [view for view in views if ".api." in view.target or view.target.startswith("drf_")]
    assert len(api) > 50 and len(views) - len(api) > 100
    for view in views:
        view.load()
    for view in api:
        assert issubclass(view.load().cls, APIView), view.target
    assert "core.api.TokenLoginApi" in {view.target for view in api}
    assert {view.target for view in views if view.is_async} >= {"chat.views.live.dialogue_send"}
