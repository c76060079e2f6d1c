"""Web processes and management commands must not pay for the model libraries: loading the URLs
(every view, form and service behind them) imports no torch, transformers or
sentence-transformers. Only the kernels that score or train import them, on the worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers")

PROBE = """
import json, sys
import django
django.setup()
import config.urls, config.api_urls
from django.urls import get_resolver
get_resolver().url_patterns  # resolve every include
import metrics.scorers
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
