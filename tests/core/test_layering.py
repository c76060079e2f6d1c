"""The apps form layers, and imports run one way only, from top to bottom:
workspace → judges → metrics → annotation → chat → core → config.

`core` is the pure base every app builds on; if it imported an app back, the base would depend on
the whole house (and every app on every other). Imports inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["core", "chat", "annotation", "metrics", "judges", "workspace"]


def imported_packages(app: str) -> dict[str, set[str]]:
    """Top-level package of every import in the app's modules, with the files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / app).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(REPO_ROOT)))
    return found


def test_core_imports_no_app() -> None:
    imports = imported_packages("core")
    offending = {app: imports[app] for app in LAYERS[1:] if app in imports}
    assert offending == {}, f"core must not import the apps built on it: {offending}"


@pytest.mark.parametrize("app", LAYERS)
def test_an_app_imports_only_the_layers_below_it(app: str) -> None:
    imports = imported_packages(app)
    above = LAYERS[LAYERS.index(app) + 1 :]
    offending = {upper: sorted(imports[upper]) for upper in above if upper in imports}
    assert offending == {}, f"{app} imports layers above it: {offending}"
