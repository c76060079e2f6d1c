"""No import loops where they grew before: a service never imports a task module (tasks are thin
callers of the services and are sent by name, `core.jobs.job_send`), and the scorer modules
import one another one way only. Imports inside functions count: a loop hidden in a function is
still a loop, only a later one."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.core.test_layering import LAYERS, REPO_ROOT


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module an import in the file names (``from a import b`` counts ``a`` and ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _is_tasks_module(name: str) -> bool:
    parts = name.split(".")
    return len(parts) >= 2 and parts[0] in LAYERS and parts[1] == "tasks"


def test_no_service_or_selector_imports_a_task_module() -> None:
    offenders = {}
    for app in LAYERS:
        for layer in ("services", "selectors"):
            for path in sorted((REPO_ROOT / app).glob(f"{layer}*")):
                files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
                for file in files:
                    tasks = sorted(name for name in _imports(file) if _is_tasks_module(name))
                    if tasks:
                        offenders[str(file.relative_to(REPO_ROOT))] = tasks
    assert offenders == {}, f"services send jobs by name (core.jobs.job_send): {offenders}"


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [node])):
            return found
    return None


def test_the_scorer_modules_import_one_another_one_way() -> None:
    package = REPO_ROOT / "metrics" / "scorers"
    modules = {_module_name(path): path for path in package.rglob("*.py")}
    graph = {
        name: {other for other in _imports(path) if other in modules and other != name}
        for name, path in modules.items()
    }
    # A package's __init__ importing its submodules is not a loop with them.
    for name in graph:
        graph[name] = {other for other in graph[name] if not name.startswith(other + ".")}
    assert _cycle(graph) is None, f"import loop: {' → '.join(_cycle(graph) or [])}"


def test_the_cycle_finder_finds_a_loop() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
