"""The whole study as JSON (``CorrelationStudy.to_dict``); undefined values are null.

``extensions`` holds the sections that apps above ``metrics`` add to a report (the LLM judges'
tables), so the downloaded file equals the report's stored results."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from metrics.analysis.results import CorrelationStudy


def study_json(study: CorrelationStudy, extensions: Mapping[str, Any] | None = None) -> str:
    data = {**study.to_dict(), "extensions": dict(extensions or {})}
    # allow_nan=False: a NaN reaching this point is a bug, and JSON has no NaN.
    return json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False)
