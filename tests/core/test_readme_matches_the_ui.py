"""The README names what the UI and the Procfile really have: each "*menu → button*" path is a
navigation item and a button of the pages, each setting is listed once, and `make demo`'s
message names the processes the Procfile starts."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def _translated_strings(path: Path) -> set[str]:
    return set(re.findall(r'{% translate "([^"]+)" %}', path.read_text(encoding="utf-8")))


def test_each_menu_path_in_the_readme_names_a_menu_item_and_a_button_of_the_ui():
    navigation = _translated_strings(REPO_ROOT / "templates" / "base.html")
    buttons: set[str] = set()
    for template in REPO_ROOT.glob("*/templates/**/*.html"):
        html = template.read_text(encoding="utf-8")
        buttons |= set(re.findall(r'class="button[^"]*"[^>]*>{% translate "([^"]+)" %}</a>', html))
    paths = re.findall(r"\*([^*\n→]+) → ([^*\n]+)\*", README)
    assert len(paths) >= 7
    wrong = [
        f"{menu} → {button}"
        for menu, button in paths
        if menu.strip() not in navigation or button.strip() not in buttons
    ]
    assert not wrong, "README paths the UI does not have:\n" + "\n".join(wrong)


def test_each_setting_is_listed_once_in_the_readme():
    names = re.findall(r"^\| `([A-Z_]+)`", README, flags=re.M)
    repeated = sorted({name for name in names if names.count(name) > 1})
    assert not repeated, repeated


def test_make_demo_names_the_processes_the_procfile_starts():
    processes = re.findall(r"^(\w+):", (REPO_ROOT / "Procfile").read_text(), flags=re.M)
    assert processes == ["web", "worker", "beat", "chat"]
    makefile = (REPO_ROOT / "Makefile").read_text()
    echo = next(line for line in makefile.splitlines() if "Ctrl-C" in line)
    assert all(name in echo for name in processes), echo
    assert "stops both" not in echo and "stops both" not in README
