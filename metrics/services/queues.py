"""Which Celery queue model-heavy work goes to: decided by configuration, never by the process
that enqueues (a web server has no GPU, so asking ``torch.cuda.is_available()`` there always said
no, and the ``gpu`` queue was never used)."""

from __future__ import annotations

from django.conf import settings

GPU_QUEUE = "gpu"
METRICS_QUEUE = "metrics"


def model_queue() -> str:
    """``gpu`` where the deployment says a GPU worker consumes it (``GPU_QUEUE=true``), else
    ``metrics``: for neural metric chunks, discriminator training and follow-up item selection."""
    return GPU_QUEUE if settings.GPU_QUEUE else METRICS_QUEUE


def model_queues(pks: list[int]) -> list[str]:
    """:func:`model_queue` for each of a model-heavy kind's rows (`core.jobs.JobKind.queue`)."""
    return [model_queue()] * len(pks)
