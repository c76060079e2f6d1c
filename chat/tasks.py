"""Celery tasks of the chat app (queue `chat`, routed by `chat.tasks.*`): thin callers of services.

Tasks take ids and are idempotent, so a redelivered message (a worker died with the task
unacknowledged) finishes the work instead of repeating it.
"""

from __future__ import annotations

from celery import shared_task

from chat.models import StaticRun
from chat.services import collection, static_runs


@shared_task(name="chat.tasks.static_run_execute")
def static_run_execute(run_id: int) -> str:
    """Answer the pending items of a static run; returns the run's status afterwards."""
    run = StaticRun.objects.filter(pk=run_id).first()
    if run is None:
        return "missing"
    return static_runs.static_run_execute(run=run).status


@shared_task(name="chat.tasks.reply_generate", ignore_result=True)
def reply_generate(utterance_id: int, dispatch_token: str | None = None) -> bool:
    """Generate, stream and save the reply to one utterance (a no-op when another generator
    holds its claim or it is done: a redelivered or doubled message calls the backend once)."""
    return collection.reply_generate_blocking(
        utterance_id=utterance_id, dispatch_token=dispatch_token
    )
