"""Celery tasks of the annotation app: thin callers of the services."""

from __future__ import annotations

from celery import shared_task

from annotation.models import RatingJob
from annotation.services.rating_assignments import assignments_generate, job_refresh


@shared_task(name="annotation.expire_overdue_assignments")
def expire_overdue_assignments() -> int:
    """Expire overdue assignments of every open job, reassign them and assign dialogues
    accepted since; idempotent. Experts' pages do this lazily too, so a beat is optional."""
    expired = 0
    for job_id in RatingJob.objects.filter(status=RatingJob.Status.OPEN, is_live=False).values_list(
        "id", flat=True
    ):
        expired += job_refresh(job=RatingJob.objects.get(pk=job_id))
    return expired


@shared_task(name="annotation.assign_job")
def assign_job(job_id: int) -> int:
    """Assign newly accepted dialogues of an open job (idempotent)."""
    job = RatingJob.objects.filter(pk=job_id).first()
    return 0 if job is None else assignments_generate(job=job)
