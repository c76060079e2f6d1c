"""Celery tasks of metric runs: thin callers of :mod:`metrics.services.metric_runs`.

A run's chunks go out as one group: every chunk task on the ``metrics`` queue (``gpu`` for
model-heavy families when CUDA is present). The chunk that ends last finishes the run; a chunk
whose worker died is sent again by the job sweeper (``core.jobs``), which also finishes a run
whose last chunk's finish was lost. No chord: a chord's callback waits for the results of the
chunk tasks it was sent with, and a chunk sent again is a new task it would wait for forever.
"""

from __future__ import annotations

from celery import group

from config.celery import app
from metrics.services import metric_run_scoring


@app.task(name="metrics.tasks.runs.score_chunk")
def score_chunk(chunk_id: int) -> str:
    return metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)


@app.task(name="metrics.tasks.runs.finish_run")
def finish_run(run_id: int) -> str:
    return metric_run_scoring.metric_run_finish(run_id=run_id)


def dispatch(*, run_id: int, chunks: list[tuple[int, str]]) -> None:
    """Send ``(chunk id, queue)`` pairs (called on commit); a run without chunks is finished."""
    if not chunks:
        finish_run.delay(run_id)
        return
    group(score_chunk.si(chunk_id).set(queue=queue) for chunk_id, queue in chunks).apply_async()
