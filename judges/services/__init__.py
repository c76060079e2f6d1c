"""Judges: create and version them, preview and estimate, run them as metric runs.

One module per seam:

- :mod:`judges.services.config`: checks, :func:`judge_create`, :func:`judge_new_version`, and
  :func:`judge_config` (a version as the plain :class:`judges.scoring.JudgeConfig`);
- :mod:`judges.services.planning`: a run's parts (chunks) and a chunk's prompts, and
  :func:`judge_preview`;
- :mod:`judges.services.execution`: a chunk's prompts answered from the cache or the backend;
- :mod:`judges.scoring` (beside this package, Django-free like :mod:`annotation.scoring`): scores
  from stored answers;
- :mod:`judges.services.chunks`: the chunk handler, which runs the three above for one chunk and
  writes its answers and scores;
- :mod:`judges.services.runs`: :func:`judge_estimate` and :func:`judge_run_create`.

The execution path: :func:`judge_run_create` → ``metrics/tasks/runs.py`` (``score_chunk``, through
``metrics.services.metric_run_scoring``) → the handler that ``judges/apps.py`` registers,
:func:`judges.services.chunks.judge_chunk_score` (its docstring and ``docs/architecture.md``
follow it step by step).

This package re-exports what the views, the API, the ``judge`` command and the selectors call.
"""

from judges.scoring import metric_names
from judges.services.config import JudgeError, judge_config, judge_create, judge_new_version
from judges.services.planning import judge_preview
from judges.services.runs import judge_estimate, judge_run_create

__all__ = [
    "JudgeError",
    "judge_config",
    "judge_create",
    "judge_estimate",
    "judge_new_version",
    "judge_preview",
    "judge_run_create",
    "metric_names",
]
