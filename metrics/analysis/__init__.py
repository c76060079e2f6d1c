"""Correlation statistics of metric scores against human scores (no Django imports).

The offline ``correlate`` command, the Celery report task and the web pages share this code:

* :func:`load_score_csv` reads and validates a score CSV into :class:`ScoreRow` objects;
* :func:`run_study` (or :func:`correlate_csv` from two files) joins the scores at a level and
  computes every statistic into a JSON-ready :class:`CorrelationStudy`;
* :mod:`metrics.analysis.tables` lays a study out as report tables.
"""

from typing import TYPE_CHECKING, Any

from metrics.analysis.correlation import METHODS, Method
from metrics.analysis.join import LEVELS, Level
from metrics.analysis.results import CorrelationStudy, StudyConfig
from metrics.analysis.scores import ScoreFileError, ScoreRow, load_score_csv

if TYPE_CHECKING:
    from metrics.analysis.study import correlate_csv, run_study

__all__ = [
    "LEVELS",
    "METHODS",
    "CorrelationStudy",
    "Level",
    "Method",
    "ScoreFileError",
    "ScoreRow",
    "StudyConfig",
    "correlate_csv",
    "load_score_csv",
    "run_study",
]


def __getattr__(name: str) -> Any:
    # The statistics (scipy) load on first use (PEP 562): web pages import the results and table
    # layout from this package, and a web process must not pay for scipy at start-up.
    if name in ("correlate_csv", "run_study"):
        from metrics.analysis import study

        return getattr(study, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
