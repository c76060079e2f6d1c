"""Web processes and management commands must not pay for the model libraries: loading the URLs
and every view, form and service behind them imports no torch, transformers or
sentence-transformers. Only the kernels that score or train import them, on the worker.

Nor for what only some requests or the workers need (issue 24, `manage.py check` start-up):
Celery and kombu (the task modules import the app), the views of the pages and of the API, with
their forms, serializers and services and what those load (numpy, the scorer registry: every
route is a `core.lazy_urls.lazy_path`), and drf-spectacular's views; and `django.setup()` alone
loads neither these nor
the judges' services and report code nor the live rating services (registered in
`AppConfig.ready` behind wrappers that import on call)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers")
ON_DEMAND = (
    "celery",
    "kombu",
    "config.celery",
    "core.api",
    "chat.api.datasets",
    "annotation.api.rating",
    "metrics.api.reports",
    "judges.api",
    "drf_spectacular.views",
    "numpy",
    "workspace.views",
    "chat.views.live",
    "annotation.views.results",
    "metrics.views.reports",
    "judges.views",
)
# Imported by their own pages' views, but not by `django.setup()`: the apps register them behind
# wrappers (AppConfig.ready), so a process that sets Django up and loads no URLconf skips them.
REGISTERED_IN_READY = ("judges.services", "judges.report", "annotation.services.live")

PROBE = """
import json, sys
import django
django.setup()
import config.urls, config.api_urls
from django.urls import get_resolver
get_resolver().url_patterns  # resolve every include
from core.lazy_urls import lazy_views
for view in lazy_views():  # every page's and endpoint's view, as the requests would load them
    view.load()
import metrics.scorers
print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))
"""
SETUP_PROBE = """
import json, sys
import django
django.setup()
print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))
"""


def _loaded_after(code: str) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_loading_the_urls_imports_no_model_library() -> None:
    assert _loaded_after(PROBE.format(heavy=HEAVY)) == []


def test_the_probe_would_see_torch_if_a_module_imported_it() -> None:
    code = PROBE.replace("import metrics.scorers", "import metrics.scorers.discriminator.model")
    assert _loaded_after(code.format(heavy=HEAVY)) == ["torch"]


def test_loading_the_urls_imports_nothing_only_some_requests_need() -> None:
    code = PROBE.replace("import metrics.scorers\n", "")
    code = code.replace("for view in lazy_views():", "for view in []:")
    assert _loaded_after(code.format(heavy=ON_DEMAND)) == []


def test_the_probe_would_see_an_api_view_once_its_view_is_used() -> None:
    code = PROBE.replace(
        "import metrics.scorers\n",
        "from django.urls import resolve\nresolve('/api/judges/').func.cls\n",
    ).replace("for view in lazy_views():", "for view in []:")
    loaded = _loaded_after(code.format(heavy=ON_DEMAND))
    assert "judges.api" in loaded


def test_setting_django_up_imports_neither_celery_nor_what_the_apps_register() -> None:
    code = SETUP_PROBE.format(heavy=ON_DEMAND + REGISTERED_IN_READY)
    assert _loaded_after(code) == []


def test_the_worker_finds_the_app_and_every_task_without_config_importing_it() -> None:
    """`celery -A config` looks in `config.celery` once `config` has no app attribute."""
    from celery.app.utils import find_app

    from config.celery import app

    assert find_app("config") is app
    app.loader.import_default_modules()
    assert {
        "core.ping",
        "core.jobs_sweep",
        "chat.tasks.static_run_execute",
        "annotation.expire_overdue_assignments",
        "metrics.tasks.runs.score_chunk",
        "metrics.tasks.reports.report_compute_task",
    } <= set(app.tasks)
