"""Celery tasks of metric runs: thin callers of :mod:`metrics.services.metric_runs`.

A run's chunks go out as one group (`core.jobs.job_send`): every chunk task on the ``metrics``
queue, ``gpu`` for model-heavy families where the deployment has a GPU worker. The chunk that
ends last finishes the run; a chunk whose worker died is sent again by the job sweeper
(``core.jobs``), which also finishes a run whose last chunk's finish was lost. No chord: a
chord's callback waits for the results of the chunk tasks it was sent with, and a chunk sent
again is a new task it would wait for forever.
"""

from __future__ import annotations

from config.celery import app
from metrics.services import metric_run_scoring


@app.task(name="metrics.tasks.runs.score_chunk")
def score_chunk(chunk_id: int) -> str:
    return metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
