"""Celery tasks: correlation reports (thin callers of metrics.services.reports)."""

from __future__ import annotations

from config.celery import app
from metrics.services import reports as services


@app.task(name="metrics.tasks.reports.report_compute_task")
def report_compute_task(report_id: int) -> None:
    """Compute one report; a second delivery of the same id finds it taken and does nothing."""
    services.report_compute(report_id=report_id)
