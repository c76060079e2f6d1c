"""Celery tasks of the metrics app (thin callers of services), one module per area.

Imported here so that Celery's autodiscovery (which imports ``<app>.tasks``) registers them all.
"""

from metrics.tasks import reports, runs, training  # noqa: F401
