"""The one background-job model every long-running job of the platform builds on.

`Leased` is a unit of work a worker claims for a while (a lease it renews with heartbeats);
`Job` adds what a researcher sees (status, progress, error, who and when). Static runs, metric
runs, reports, discriminator training and follow-up selection are `Job`s; a metric run's chunks
are `Leased` units of their own. The operations on them (claim, heartbeat, progress, cancel,
finish, retry, and the sweeper that re-dispatches abandoned work) live in :mod:`core.jobs`.
"""

from __future__ import annotations

from typing import Any

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


class Workspace(models.Model):
    """A research group's own studies: every dataset, backend, campaign, rubric (not the presets),
    rating job, metric run, judge, report, discriminator and item selection belongs to one, and
    only its members see it (:func:`core.access.workspace_objects` filters every queryset)."""

    name = models.CharField(_("名称"), max_length=120, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in a workspace. Experts and crowdworkers need none: they see what they are
    assigned or invited to, in any workspace."""

    class Role(models.TextChoices):
        OWNER = "owner", _("所有者")
        RESEARCHER = "researcher", _("研究者")
        VIEWER = "viewer", _("只读成员")

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspace_memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.RESEARCHER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.workspace} ({self.role})"


class AuditEvent(models.Model):
    """Who created, changed, deleted, exported or moved what, in which workspace."""

    class Action(models.TextChoices):
        CREATE = "create", _("创建")
        CHANGE = "change", _("修改")
        DELETE = "delete", _("删除")
        EXPORT = "export", _("导出")
        MOVE = "move", _("移动")
        MEMBERS = "members", _("成员变更")

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="audit_events")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    object_type = models.CharField(max_length=60, blank=True)  # "chat.campaign"
    object_id = models.CharField(max_length=40, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["workspace", "-at"], name="auditevent_ws_at_idx")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.user} {self.action} {self.object_repr}"


class WorkspaceQuerySet(models.QuerySet):
    """A queryset that narrows itself to the current workspace scope (a researcher's request,
    a command's ``--workspace``) the first time it is built or copied inside one — so a form's
    or serializer's queryset declared at import is scoped too when a request uses it. Outside a
    scope (workers, migrations, the shell, expert and crowdworker pages) nothing is filtered."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # QuerySet's own signature
        self._workspace_scoped = False

    def _clone(self) -> WorkspaceQuerySet:
        clone: WorkspaceQuerySet = super()._clone()  # type: ignore[misc]  # Django-private
        clone._workspace_scoped = self._workspace_scoped
        return clone._in_current_scope()

    def marked_scoped(self) -> WorkspaceQuerySet:
        """A copy that no scope narrows further (`workspace_objects` filters it itself)."""
        clone: WorkspaceQuerySet = super()._clone()  # type: ignore[misc]  # Django-private
        clone._workspace_scoped = True
        return clone

    def _in_current_scope(self) -> WorkspaceQuerySet:
        if self._workspace_scoped:
            return self
        from core import access

        scope = access.current_scope()
        if scope is None:
            return self
        self._workspace_scoped = True
        scoped: WorkspaceQuerySet = access.workspace_objects(self, scope.user, scope.workspace)
        return scoped


class _ScopedManager(models.Manager):
    def get_queryset(self) -> WorkspaceQuerySet:
        queryset = super().get_queryset()
        assert isinstance(queryset, WorkspaceQuerySet)
        return queryset._in_current_scope()


WorkspaceManager = _ScopedManager.from_queryset(WorkspaceQuerySet)


class WorkspaceScoped(models.Model):
    """A row seen only in its workspace: a child (a dialogue, a sample) through its parent,
    named by ``workspace_lookup``; owners of a ``workspace`` column use :class:`WorkspaceOwned`."""

    workspace_lookup: str = "workspace"
    # Rows without a workspace (preset rubrics) are global: every workspace reads them.
    workspace_null_is_global: bool = False
    # Links to rows of other workspace-owned models, which must be in the same workspace.
    workspace_links: tuple[str, ...] = ()

    objects = WorkspaceManager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        from core.access import require_same_workspace

        linked = [getattr(self, name) for name in self.workspace_links if _link_is_set(self, name)]
        require_same_workspace(self, *linked)
        super().save(*args, **kwargs)


class WorkspaceOwned(WorkspaceScoped):
    """A top-level object of a workspace. A new row without one takes its parent's
    (``workspace_parent``: a rating job its campaign's), else the current scope's, else the
    deployment's only workspace; with several and no scope, saving it is an error. The objects it
    links to (``workspace_links``) must be in the same workspace."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.PROTECT, related_name="+", verbose_name=_("工作区")
    )
    workspace_parent: str | None = None

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.workspace_id is None and self.needs_workspace():
            self.workspace_id = self._workspace_for_new_row()
        super().save(*args, **kwargs)

    def needs_workspace(self) -> bool:
        return True

    def _workspace_for_new_row(self) -> int:
        if self.workspace_parent is not None:
            parent = getattr(self, self.workspace_parent)
            if parent is not None and parent.workspace_id is not None:
                return int(parent.workspace_id)
        from core import access

        scope = access.current_scope()
        if scope is not None and scope.workspace is not None:
            return scope.workspace.pk
        only = list(Workspace.objects.values_list("pk", flat=True)[:2])
        if len(only) == 1:
            return only[0]
        raise ValueError(
            f"{self._meta.label}: no workspace given and the deployment has {len(only) or 'no'}"
            " workspaces; pass one (--workspace on the command line)."
        )


def _link_is_set(row: models.Model, name: str) -> bool:
    return getattr(row, f"{name}_id", None) is not None
