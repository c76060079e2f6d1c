from typing import Any

from config.celery import app
from core.jobs import jobs_sweep


@app.task(name="core.ping")
def ping() -> str:
    """Answered by any live worker; `/healthz` uses it to prove a worker consumes the queue."""
    return "pong"


@app.task(name="core.jobs_sweep", ignore_result=True)
def jobs_sweep_task() -> dict[str, Any]:
    """Celery beat runs this every ``JOB_SWEEP_INTERVAL`` seconds: re-dispatch abandoned jobs."""
    return jobs_sweep().as_dict()
