"""The data of a prediction-powered estimate: a predictor's score on each dialogue of a rating
job's pool, and the job's human scores of one question (``metrics.services.ppi``).

A predictor is one metric of the chosen runs (an automatic metric, or an LLM judge's
``judge:<key>-v<N>:<question>``), or a combination of several: the mean of their z-scores, each
standardised over the pool's dialogues. Standardising uses no human score, so the combination is
a fixed function of the dialogue, as the estimate requires. A metric scored per turn only stands
for the dialogue by the mean of its turns, as in the correlation reports.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from annotation.models import RatingJob
from annotation.scoring import OVERALL
from annotation.selectors.human_scores import human_scores
from core.errors import ServiceError
from metrics.models import MetricScore

_CHUNK = 2000


class PredictorDataError(ServiceError):
    """Predictor scores that cannot be used as they are (one dialogue scored by two runs)."""

    location_style = "prefix"


def metric_dialogue_values(
    *, run_ids: Sequence[int], metric: str, dialogue_ids: Iterable[int]
) -> dict[int, float]:
    """One metric's score per dialogue: the dialogue-level score, or the mean of its turns'
    where a run scored the metric per turn only. Dialogues without a score are left out."""
    ids = sorted(set(dialogue_ids))
    base = MetricScore.objects.filter(run_id__in=run_ids, metric=metric)
    values: dict[int, float] = {}
    turn_sums: dict[int, list[float]] = defaultdict(list)
    seen: dict[int, int] = {}  # dialogue → the run whose score it has
    with_dialogue_level = set(
        base.filter(level="dialogue").values_list("run_id", flat=True).distinct()
    )
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        for run, dialogue, value in base.filter(
            level="dialogue", dialogue_id__in=chunk
        ).values_list("run_id", "dialogue_id", "value"):
            if dialogue in seen and seen[dialogue] != run:
                raise PredictorDataError(
                    f"metric {metric!r} scores dialogue {dialogue} in two runs ({seen[dialogue]} "
                    f"and {run}); choose one of them",
                    field="runs",
                )
            seen[dialogue] = run
            values[dialogue] = float(value)
        turn_runs = [r for r in run_ids if r not in with_dialogue_level]
        for dialogue, value in (
            base.filter(level="turn", run_id__in=turn_runs, turn__dialogue_id__in=chunk)
            .values_list("turn__dialogue_id", "value")
            .iterator()
        ):
            turn_sums[dialogue].append(float(value))
    for dialogue, turn_values in turn_sums.items():
        values.setdefault(dialogue, float(np.mean(turn_values)))
    return {d: v for d, v in values.items() if np.isfinite(v)}


def predictor_values(
    *, run_ids: Sequence[int], metrics: Sequence[str], dialogue_ids: Iterable[int]
) -> dict[int, float]:
    """The predictor on each dialogue that every one of its metrics scored (see the module
    docstring): the metric itself, or the mean of the metrics' z-scores."""
    ids = list(dialogue_ids)
    per_metric = [
        metric_dialogue_values(run_ids=run_ids, metric=m, dialogue_ids=ids) for m in metrics
    ]
    if len(per_metric) == 1:
        return per_metric[0]
    common = set.intersection(*(set(values) for values in per_metric)) if per_metric else set()
    keys = sorted(common)
    total = np.zeros(len(keys))
    for values in per_metric:
        column = np.array([values[k] for k in keys])
        spread = column.std()
        total += (column - column.mean()) / spread if spread > 0 else 0.0
    return dict(zip(keys, (total / len(per_metric)).tolist(), strict=True))


def job_question_scores(*, job: RatingJob, question: str = OVERALL) -> dict[int, float]:
    """The job's human score of ``question`` per dialogue: the mean over its raters."""
    return {
        s.dialogue_id: s.value
        for s in human_scores(job=job, level="dialogue")
        if s.dimension == question
    }
