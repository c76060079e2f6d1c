"""The one background-job model every long-running job of the platform builds on.

`Leased` is a unit of work a worker claims for a while (a lease it renews with heartbeats);
`Job` adds what a researcher sees (status, progress, error, who and when). Static runs, metric
runs, reports, discriminator training and follow-up selection are `Job`s; a metric run's chunks
are `Leased` units of their own. The operations on them (claim, heartbeat, progress, cancel,
finish, retry, and the sweeper that re-dispatches abandoned work) live in :mod:`core.jobs`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class JobStatus(models.TextChoices):
    PENDING = "pending", _("排队中")
    RUNNING = "running", _("运行中")
    DONE = "done", _("已完成")
    FAILED = "failed", _("失败")
    CANCELLED = "cancelled", _("已取消")


ACTIVE = (JobStatus.PENDING, JobStatus.RUNNING)
FINISHED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


class Leased(models.Model):
    """Work a worker holds under a lease in the database.

    A worker that claims the row writes its ``lease_owner`` token and a ``lease_expires_at`` it
    renews with heartbeats while it works. A worker that dies stops renewing, so the lease runs
    out and the sweeper (``core.tasks.jobs_sweep``, run by Celery beat) sends the work again —
    without waiting for a broker's visibility timeout. ``attempts`` counts claims since the
    last (re)start; past ``JOB_MAX_ATTEMPTS`` the sweeper fails the work instead of sending a
    task that kills its worker every time once more.
    """

    status = models.CharField(max_length=10, choices=JobStatus, default=JobStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    # When a task for this row was last sent to the broker (None: never yet).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Job(Leased):
    """A background job: status, progress, error, who asked for it and when it ran."""

    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    # Set by a cancel; the worker stops at its next checkpoint and ends the job "cancelled".
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress_done__lte=models.F("progress_total")) | Q(progress_total=0),
                name="%(app_label)s_%(class)s_progress_bounded",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="%(class)s_lease_idx"),
        ]

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED

    @property
    def progress_percent(self) -> int:
        if not self.progress_total:
            return 100 if self.status == JobStatus.DONE else 0
        return min(100, round(100 * self.progress_done / self.progress_total))


class Versioned(models.Model):
    """A definition kept in versions under a stable ``key`` (a rubric, a judge): a version that is
    in use never changes, an edit creates the next one. Subclasses declare ``key`` (a slug of
    their own length); ``Meta`` subclasses extend ``Versioned.Meta.constraints``."""

    key: str
    version = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["key", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["key", "version"], name="%(class)s_unique_key_version"),
        ]

    def __str__(self) -> str:
        return f"{self.key} v{self.version}"
