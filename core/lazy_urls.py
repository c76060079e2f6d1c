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

Only for class-based views whose ``as_view()`` returns a synchronous view (every DRF view):
Django asks a callback whether it is a coroutine function before it calls it, and this one says no
without importing anything; loading an async view is refused (:class:`ImproperlyConfigured`).
``check --deploy`` imports every lazy view (:func:`core.checks.check_lazy_views`), so a broken
import still fails the deploy check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern
from django.utils.functional import cached_property
from django.utils.module_loading import import_string

ViewDecorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class LazyView:
    """A class-based view named by its dotted path, imported and built on first use."""

    def __init__(
        self, target: str, initkwargs: dict[str, Any], decorators: Sequence[ViewDecorator] = ()
    ) -> None:
        module, _dot, name = target.rpartition(".")
        if not module or not name:
            raise ImproperlyConfigured(
                f"lazy view {target!r}: expected the dotted path of a view class, "
                "'package.module.ViewClass'"
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
        """The view function: the class imported and ``as_view(**initkwargs)`` called, once."""
        if self._view is None:
            with self._lock:
                if self._view is None:
                    self._view = self._build()
        return self._view

    def _build(self) -> Callable[..., Any]:
        view_class = import_string(self.target)
        as_view = getattr(view_class, "as_view", None)
        if as_view is None:
            raise ImproperlyConfigured(
                f"lazy view {self.target!r}: {view_class!r} is not a class-based view (no as_view)"
            )
        view: Callable[..., Any] = as_view(**self._initkwargs)
        if iscoroutinefunction(view):
            raise ImproperlyConfigured(
                f"lazy view {self.target!r} is asynchronous: route it with django.urls.path, "
                "a lazy view must be synchronous"
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
    *,
    name: str | None = None,
    decorators: Sequence[ViewDecorator] = (),
    **initkwargs: Any,
) -> LazyURLPattern:
    """``path(route, import_string(target).as_view(**initkwargs), name=name)``, imported lazily;
    ``decorators`` wrap the built view as they would wrap ``as_view()``'s (outermost first)."""
    pattern = RoutePattern(route, name=name, is_endpoint=True)
    return LazyURLPattern(pattern, LazyView(target, initkwargs, decorators), name=name)


def lazy_views(resolver: URLResolver | None = None) -> Iterator[LazyView]:
    """Every lazy view of the URLconf (the project's unless ``resolver`` is given)."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from lazy_views(entry)
        elif isinstance(entry.callback, LazyView):
            yield entry.callback
