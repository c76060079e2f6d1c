"""Celery tasks of the chat app (queue `chat`, routed by `chat.tasks.*`): thin callers of services.

Tasks take ids and are idempotent, so a redelivered message (a worker died with the task
unacknowledged) finishes the work instead of repeating it.
"""

from __future__ import annotations

from chat.models import StaticRun
from chat.services import static_runs
from config.celery import app


@app.task(name="chat.tasks.static_run_execute")
def static_run_execute(run_id: int) -> str:
    """Answer the pending items of a static run; returns the run's status afterwards."""
    run = StaticRun.objects.filter(pk=run_id).first()
    if run is None:
        return "missing"
    return static_runs.static_run_execute(run=run).status
