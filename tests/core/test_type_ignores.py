"""Every `# type: ignore` names the errors it silences and says why, on its own line.

A bare ignore hides whatever mypy finds on that line later; an unexplained one cannot be judged by
the next reader (is the checker wrong, or the code?). The form is
`# type: ignore[code]  # the reason`. Migrations (generated) and the virtualenv are not scanned.
"""

from __future__ import annotations

import re
import tokenize
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {".venv", "migrations", "node_modules", ".git"}

IGNORE = re.compile(r"#\s*type:\s*ignore")
JUSTIFIED = re.compile(r"#\s*type:\s*ignore\[[a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*\]\s+#\s*\S")


def _python_files() -> list[Path]:
    return [
        path
        for path in sorted(REPO_ROOT.rglob("*.py"))
        if not SKIPPED_DIRS.intersection(path.relative_to(REPO_ROOT).parts)
    ]


def _ignore_comments(path: Path) -> list[tuple[int, str]]:
    """(line, comment) for each comment token that is a type-ignore: strings that merely mention
    the pragma (like the patterns above) are not comments and are not counted."""
    with tokenize.open(path) as source:
        return [
            (token.start[0], token.string)
            for token in tokenize.generate_tokens(source.readline)
            if token.type == tokenize.COMMENT and IGNORE.match(token.string)
        ]


def unjustified(path: Path) -> list[str]:
    return [
        f"{path.relative_to(REPO_ROOT)}:{line}: {comment}"
        for line, comment in _ignore_comments(path)
        if not JUSTIFIED.match(comment)
    ]


def test_every_type_ignore_names_its_error_code_and_a_reason() -> None:
    offenders = [hit for path in _python_files() for hit in unjustified(path)]
    assert offenders == []


def test_the_scan_sees_bare_and_unexplained_ignores(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "a = f()  # type: ignore\n"
        "b = f()  # type: ignore[arg-type]\n"
        "c = f()  # type: ignore[arg-type]  # numba types the kernel when it compiles\n"
        "d = '# type: ignore'\n"
    )
    comments = _ignore_comments(sample)
    assert [line for line, _ in comments] == [1, 2, 3]
    assert [line for line, comment in comments if not JUSTIFIED.match(comment)] == [1, 2]
