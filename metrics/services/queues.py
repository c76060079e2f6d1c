"""Which Celery queue model-heavy work goes to: decided by configuration, never by the process
that enqueues (a web server has no GPU, so asking ``torch.cuda.is_available()`` there always said
no, and the ``gpu`` queue was never used)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from core.jobs import job_dispatched
from core.models import Leased

GPU_QUEUE = "gpu"
METRICS_QUEUE = "metrics"


def model_queue() -> str:
    """``gpu`` where the deployment says a GPU worker consumes it (``GPU_QUEUE=true``), else
    ``metrics``: for neural metric chunks, discriminator training and follow-up item selection."""
    return GPU_QUEUE if settings.GPU_QUEUE else METRICS_QUEUE


def model_job_send(model: type[Leased], pk: int, task: Any) -> None:
    """Mark a model-heavy job (a training, a follow-up selection) dispatched and send its Celery
    ``task`` with the job's id to :func:`model_queue`."""
    job_dispatched(model, pk)
    task.apply_async(args=[pk], queue=model_queue())
