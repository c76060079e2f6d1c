"""URL patterns whose view is imported on its first request, not when the URLconf loads.

The API's views load DRF's serializers and renderers (with what DRF's ``compat`` pulls in:
``requests``, the PostgreSQL fields, Markdown, Pygments), the services behind each endpoint and
what those import. ``manage.py check`` and every other management command load the whole URLconf,
and so does a web process on start-up, whether or not it will ever answer an API request
(issue 24: that cost ``check`` about twice what its HTML pages do). So ::

    lazy_path("datasets/", "chat.api.datasets.DatasetListApi", name="api-dataset-list")

is ``path("datasets/", DatasetListApi.as_view(), name=...)`` with the import put off: the pattern
resolves, reverses and passes the URL checks without it, and the first request — or the first
read of one of the view's attributes (the schema generator's ``cls``, a middleware's
``csrf_exempt``) — imports the class and calls ``as_view(**initkwargs)``, once.

The HTML pages' function views go the same way (``lazy_path("datasets/",
"chat.views.datasets.dataset_list", name=...)``): their forms and services load numpy, the
scorer registry and the rating statistics. Django asks a callback whether it is a coroutine
function before it calls it, so an asynchronous view (the live chat's) is declared as such
(``is_async=True``) and its lazy stand-in is one; a view whose import shows the other kind is
refused (:class:`ImproperlyConfigured`). ``check --deploy`` imports every lazy view
(:func:`core.checks.check_lazy_views`), so a broken import or a wrong declaration still fails the
deploy check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern
from django.utils.functional import cached_property
from django.utils.module_loading import import_string

ViewDecorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class LazyView:
    """A view (a class-based view, or a view function) named by its dotted path, imported and
    built on first use."""

    is_async = False

    def __init__(
        self, target: str, initkwargs: dict[str, Any], decorators: Sequence[ViewDecorator] = ()
    ) -> None:
        module, _dot, name = target.rpartition(".")
        if not module or not name:
            raise ImproperlyConfigured(
                f"lazy view {target!r}: expected the dotted path of a view, "
                "'package.module.ViewClass' or 'package.module.view_function'"
            )
        self.target = target
        # What Django's URL machinery reads to name a view, without importing it.
        self.__module__ = module
        self.__name__ = self.__qualname__ = name
        self._initkwargs = initkwargs
        self._decorators = tuple(decorators)
        self._view: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def load(self) -> Callable[..., Any]:
        """The view function: the class imported and ``as_view(**initkwargs)`` called, once.

        Imported outside any workspace scope, as at start-up: the first request to load a view
        module is some researcher's, and a form's or serializer's queryset declared in it at
        import must not be narrowed to that researcher's workspace for everyone after
        (`core.models.WorkspaceQuerySet` scopes a queryset built inside a scope for good)."""
        if self._view is None:
            from core.access import unscoped

            with self._lock, unscoped():
                if self._view is None:
                    self._view = self._build()
        return self._view

    def _build(self) -> Callable[..., Any]:
        found = import_string(self.target)
        as_view = getattr(found, "as_view", None)
        view: Callable[..., Any]
        if as_view is not None:
            view = as_view(**self._initkwargs)
        elif self._initkwargs:
            raise ImproperlyConfigured(
                f"lazy view {self.target!r}: {sorted(self._initkwargs)} given, but a view "
                "function takes no as_view() arguments"
            )
        elif callable(found):
            view = found
        else:
            raise ImproperlyConfigured(f"lazy view {self.target!r}: {found!r} is not a view")
        if iscoroutinefunction(view) != self.is_async:
            kind = "asynchronous" if iscoroutinefunction(view) else "synchronous"
            raise ImproperlyConfigured(
                f"lazy view {self.target!r} is {kind}: declare it with is_async={not self.is_async}"
            )
        for decorator in reversed(self._decorators):
            view = decorator(view)
        return view

    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self.load()(request, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Called only for what this object lacks: the built view's attributes (view_class, cls,
        # initkwargs, csrf_exempt…). Dunders stay unresolved: copying or inspecting the pattern
        # imports nothing.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self.load(), name)

    def __repr__(self) -> str:
        return f"<LazyView {self.target}>"


class AsyncLazyView(LazyView):
    """A :class:`LazyView` of an asynchronous view: a coroutine function to Django."""

    is_async = True

    def __init__(
        self, target: str, initkwargs: dict[str, Any], decorators: Sequence[ViewDecorator] = ()
    ) -> None:
        super().__init__(target, initkwargs, decorators)
        markcoroutinefunction(self)

    async def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.load()(request, *args, **kwargs)


class LazyURLPattern(URLPattern):
    """A URL pattern of a :class:`LazyView`: names its view by the dotted path it was given."""

    callback: LazyView

    @cached_property
    def lookup_str(self) -> str:
        # URLPattern's reads the view's `view_class`, which would import it on the first reverse.
        return self.callback.target


def lazy_path(
    route: str,
    target: str,
    kwargs: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    is_async: bool = False,
    decorators: Sequence[ViewDecorator] = (),
    **initkwargs: Any,
) -> LazyURLPattern:
    """``path(route, import_string(target).as_view(**initkwargs), kwargs, name=name)`` for a
    class-based view, ``path(route, import_string(target), kwargs, name=name)`` for a view
    function, imported lazily; ``decorators`` wrap the built view as they would wrap
    ``as_view()``'s (outermost first); an asynchronous view is declared ``is_async=True``."""
    pattern = RoutePattern(route, name=name, is_endpoint=True)
    view_type = AsyncLazyView if is_async else LazyView
    return LazyURLPattern(pattern, view_type(target, initkwargs, decorators), kwargs, name=name)


def lazy_views(resolver: URLResolver | None = None) -> Iterator[LazyView]:
    """Every lazy view of the URLconf (the project's unless ``resolver`` is given)."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from lazy_views(entry)
        elif isinstance(entry.callback, LazyView):
            yield entry.callback
