"""Celery tasks of metric runs: thin callers of :mod:`metrics.services.metric_runs`.

A run's chunks go out as one chord: every chunk task on the ``metrics`` queue (``gpu`` for
model-heavy families when CUDA is present), then ``finish_run`` once all have reported. Chunk
tasks record their own failures, so the callback always runs; a crashed worker's chunk is picked
up again by ``metric_run_resume``.
"""

from __future__ import annotations

from celery import chord, group, shared_task

from metrics.services import metric_runs as services


@shared_task(name="metrics.tasks.runs.score_chunk")
def score_chunk(chunk_id: int) -> str:
    return services.metric_run_score_chunk(chunk_id=chunk_id)


@shared_task(name="metrics.tasks.runs.finish_run")
def finish_run(run_id: int) -> str:
    return services.metric_run_finish(run_id=run_id)


def dispatch(*, run_id: int, chunks: list[tuple[int, str]]) -> None:
    """Send ``(chunk id, queue)`` pairs as a chord ending in ``finish_run`` (called on commit)."""
    if not chunks:
        finish_run.delay(run_id)
        return
    header = group(score_chunk.si(chunk_id).set(queue=queue) for chunk_id, queue in chunks)
    chord(header)(finish_run.si(run_id).set(queue="metrics"))
