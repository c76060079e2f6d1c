"""Celery tasks of the annotation app: thin callers of the services."""

from __future__ import annotations

from annotation.models import RatingJob
from annotation.services import rating_import_jobs
from annotation.services.rating_assignments import job_refresh
from config.celery import app


@app.task(name="annotation.expire_overdue_assignments")
def expire_overdue_assignments() -> int:
    """Expire overdue assignments of every open job, reassign them and assign dialogues
    accepted since; idempotent. Celery beat runs it every ASSIGNMENT_SWEEP_INTERVAL seconds;
    experts' pages do the same lazily when they fetch work."""
    expired = 0
    for job_id in RatingJob.objects.filter(status=RatingJob.Status.OPEN, is_live=False).values_list(
        "id", flat=True
    ):
        expired += job_refresh(job=RatingJob.objects.get(pk=job_id))
    return expired


@app.task(name="annotation.import_ratings")
def import_ratings_task(import_id: int) -> None:
    """Import one stored ratings file; a second delivery of the same id finds it taken (or
    ended) and does nothing."""
    rating_import_jobs.rating_import_run(import_id=import_id)
