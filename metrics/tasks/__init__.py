"""Celery tasks of the metrics app (thin callers of services), one module per area.

Imported here so that Celery's autodiscovery (which imports ``<app>.tasks``) registers them all.
A worker imports this package before it starts its pool, so the warm-up connected here runs in
every pool process (`worker_process_init`; `worker_ready` fires once, in the parent, after the
prefork children exist). Web processes never import it: they send tasks by name.
"""

from __future__ import annotations

import threading
from typing import Any

from celery.signals import worker_process_init

from metrics.tasks import reports, runs, training  # noqa: F401


@worker_process_init.connect(dispatch_uid="metrics-warm-up")
def warm_up_metrics(**kwargs: Any) -> threading.Thread | None:
    """Load the metric kernels' models in each new pool process (`services/warmup.py`)."""
    from metrics.services.warmup import start_warm_up

    return start_warm_up(**kwargs)
