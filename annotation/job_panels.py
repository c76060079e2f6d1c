"""Panels that apps above ``annotation`` add to a rating job's page.

``annotation`` may not import ``metrics`` (chat ← annotation ← metrics), yet a pairwise job's
page should show the agreement between its raters and the Bradley–Terry ranking of its systems,
which ``metrics`` computes. ``metrics`` registers a panel here in its ``AppConfig.ready``; the
job page renders every panel that applies to the job, in a slot of its own
(``#job-panels``), and says so when none is registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpRequest
from django.utils.safestring import SafeString

from annotation.models import RatingJob


@dataclass(frozen=True)
class JobPanel:
    """`render` returns the panel's HTML (a rendered template) for the job."""

    name: str
    applies: Callable[[RatingJob], bool]
    render: Callable[[HttpRequest, RatingJob], SafeString]


_panels: dict[str, JobPanel] = {}


def register(panel: JobPanel) -> None:
    _panels[panel.name] = panel


def unregister(name: str) -> JobPanel | None:
    """Remove a panel; returns it (a test puts it back with :func:`register`)."""
    return _panels.pop(name, None)


def panels_for(request: HttpRequest, job: RatingJob) -> list[dict[str, object]]:
    return [
        {"name": panel.name, "html": panel.render(request, job)}
        for panel in _panels.values()
        if panel.applies(job)
    ]
