"""The statistics and report writers must run in programs without Django (DESIGN: layout)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_analysis_and_reporting_import_no_django() -> None:
    code = (
        "import sys, metrics.analysis, metrics.analysis.tables, metrics.analysis.bradley_terry, "
        "metrics.analysis.preference_agreement, metrics.analysis.pairwise_accuracy, "
        "metrics.analysis.ppi, metrics.analysis.ppi_planning, metrics.reporting; "
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
