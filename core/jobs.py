"""Operations on background jobs, written once for every kind (see :mod:`core.models`).

How a job survives a worker crash:

1. A task **claims** its row (`job_claim`): a compare-and-set that succeeds only while the row is
   pending or running, not cancelled, and nobody holds a live lease. The claim writes a lease
   owner token and an expiry ``JOB_LEASE_SECONDS`` ahead.
2. While it works, a **heartbeat** thread (`Heartbeat`) renews the lease every
   ``JOB_HEARTBEAT_SECONDS`` and, in between, checks every ``JOB_CANCEL_CHECK_SECONDS`` that the
   job is still its own. Both fail once the job was cancelled (or another worker took the lease
   over): the work stops at its next step, and a model call in flight is abandoned.
   A **cancel** (`job_cancel`) ends the job at once, without any worker.
3. A worker that dies (a pool process or the whole worker killed, a machine gone) stops renewing.
   The **sweeper** (`jobs_sweep`, a Celery beat task every ``JOB_SWEEP_INTERVAL`` seconds) finds
   rows whose lease ran out and sends their task again; the new task claims the row and goes on
   from what is stored (the writes are idempotent). A row that was sent but never claimed for
   ``JOB_PENDING_TIMEOUT`` seconds (a lost message) is sent again too, and a row claimed
   ``JOB_MAX_ATTEMPTS`` times without finishing fails with the reason instead of killing
   workers forever.

Kinds register themselves (`register_job_kind`) from their app's ``ready()`` with the name of the
Celery task that runs a row: `core` imports no app, and every job reaches a worker the same way,
`job_send(kind, ids)` (services, retries and the sweeper alike), the task sent by name.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from core.errors import ServiceError
from core.models import ACTIVE, FINISHED, Job, JobStatus, Leased

logger = logging.getLogger(__name__)
R = TypeVar("R")

__all__ = [
    "ACTIVE",
    "FINISHED",
    "Heartbeat",
    "JobCancelled",
    "JobStatus",
    "JobStillRunning",
    "abandon_when_stopped",
    "job_cancel",
    "job_claim",
    "job_dispatched",
    "job_finish",
    "job_heartbeat",
    "job_is_live",
    "job_progress",
    "job_reset",
    "job_retry",
    "job_send",
    "job_send_on_commit",
    "job_still_held",
    "job_stop_event",
    "jobs_sweep",
    "new_lease_owner",
    "register_job_kind",
]


class JobCancelled(Exception):
    """Raised at a checkpoint of a job whose cancel was asked for (or whose lease was lost)."""


class JobStillRunning(ValueError):
    """A retry or resume of a job that a live worker still holds."""


def _rows(model: type[Leased]) -> QuerySet[Any, Any]:
    """Every row of a leased model, typed loosely: the helpers below filter on `Job` fields
    only after checking that the model is a `Job`."""
    return model._default_manager.all()


def lease_seconds() -> float:
    return float(settings.JOB_LEASE_SECONDS)


def new_lease_owner() -> str:
    """A token naming one execution of one task (unique across workers and machines)."""
    return uuid.uuid4().hex


def _live_lease(now: datetime) -> Q:
    return Q(lease_expires_at__gt=now)


def _pending_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=float(settings.JOB_PENDING_TIMEOUT))


# --- The worker side -------------------------------------------------------------------------


def job_dispatched(model: type[Leased], pks: list[int] | int) -> None:
    """Record that tasks for these rows were sent now (the sweeper's clock for lost messages)."""
    ids = [pks] if isinstance(pks, int) else list(pks)
    _rows(model).filter(pk__in=ids).update(dispatched_at=timezone.now())


def job_claim(model: type[Leased], pk: int, *, owner: str) -> bool:
    """Take the row for this execution; False when there is nothing to do for it (finished,
    cancelled, or another worker holds a live lease). A pending job that was cancelled before
    any worker came ends cancelled here."""
    now = timezone.now()
    if issubclass(model, Job):
        _rows(model).filter(pk=pk, status__in=ACTIVE, cancel_requested=True).exclude(
            _live_lease(now)
        ).update(status=JobStatus.CANCELLED, finished_at=now, lease_owner="", lease_expires_at=None)
    rows = _rows(model).filter(pk=pk, status__in=ACTIVE).exclude(_live_lease(now))
    if issubclass(model, Job):
        rows = rows.filter(cancel_requested=False)
    claimed = rows.update(
        status=JobStatus.RUNNING,
        lease_owner=owner,
        lease_expires_at=now + timedelta(seconds=lease_seconds()),
        heartbeat_at=now,
        attempts=F("attempts") + 1,
    )
    if claimed and issubclass(model, Job):
        _rows(model).filter(pk=pk, started_at__isnull=True).update(started_at=now)
    return bool(claimed)


def job_heartbeat(model: type[Leased], pk: int, *, owner: str) -> bool:
    """Renew the lease; False when the work must stop (cancel asked, lease lost, job ended)."""
    now = timezone.now()
    rows = _rows(model).filter(pk=pk, lease_owner=owner, status=JobStatus.RUNNING)
    if issubclass(model, Job):
        rows = rows.filter(cancel_requested=False)
    if rows.update(lease_expires_at=now + timedelta(seconds=lease_seconds()), heartbeat_at=now):
        return True
    # A row this connection cannot see (deleted, or not committed yet where the work runs inside
    # a caller's transaction) is no reason to stop: the work's own writes decide then.
    return not _rows(model).filter(pk=pk).exists()


def job_still_held(model: type[Leased], pk: int, *, owner: str) -> bool:
    """A read-only `job_heartbeat`: whether this execution may go on (its lease is still its
    own, the job is running and no cancel was asked for). Cheap enough to ask every few
    seconds, between the lease renewals."""
    rows = _rows(model).filter(pk=pk)
    held = rows.filter(lease_owner=owner, status=JobStatus.RUNNING)
    if issubclass(model, Job):
        held = held.filter(cancel_requested=False)
    # A row this connection cannot see is no reason to stop (as in `job_heartbeat`).
    return held.exists() or not rows.exists()


class Heartbeat:
    """Renews a lease from a background thread while the work runs in this one.

    ``with Heartbeat(Model, pk, owner=owner) as beat:`` ... ``beat.check()`` at each checkpoint
    raises :class:`JobCancelled` once a renewal (or a cancel check) failed. ``beat.stopped`` is
    an event that work blocked in one long call (a model request) can watch to abandon it.
    The lease is renewed every ``JOB_HEARTBEAT_SECONDS``; in between, every
    ``JOB_CANCEL_CHECK_SECONDS``, a read checks that the job was not cancelled, so a cancel
    frees the worker within a few seconds. The thread uses its own database connection and
    closes it when it stops.
    """

    def __init__(self, model: type[Leased], pk: int, *, owner: str) -> None:
        self.model, self.pk, self.owner = model, pk, owner
        self.stopped = threading.Event()  # the work must stop (set by a failed renewal)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{model.__name__}-{pk}")
        self._thread.daemon = True

    def _beat(self, renew: bool) -> bool:
        if renew:
            return job_heartbeat(self.model, self.pk, owner=self.owner)
        return job_still_held(self.model, self.pk, owner=self.owner)

    def _run(self) -> None:
        interval = float(settings.JOB_HEARTBEAT_SECONDS)
        poll = min(interval, float(settings.JOB_CANCEL_CHECK_SECONDS))
        renewed = time.monotonic()
        try:
            while not self._done.wait(poll):
                renew = time.monotonic() - renewed >= interval - poll / 2
                try:
                    if not self._beat(renew):
                        self.stopped.set()
                        return
                    if renew:
                        renewed = time.monotonic()
                except Exception:  # noqa: BLE001 - a database blip: the next beat tries again
                    logger.warning("heartbeat of %s %s failed", self.model.__name__, self.pk)
        finally:
            connections.close_all()

    def check(self) -> None:
        if self.stopped.is_set():
            raise JobCancelled(f"{self.model.__name__} {self.pk}")

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        self._context = _stop_event.set(self.stopped)
        return self

    def __exit__(self, *exc: object) -> None:
        _stop_event.reset(self._context)
        self._done.set()
        self._thread.join()


# The stop event of the `Heartbeat` the current code runs under: work blocked in one long call
# deep below the task (an LLM judge's requests) finds it here without it being passed down.
# A context variable, so `async_to_sync` carries it into the event loop that runs the call.
_stop_event: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "job_stop_event", default=None
)


def job_stop_event() -> threading.Event | None:
    """The stop event of the job this code works for (`Heartbeat.stopped`), None outside one."""
    return _stop_event.get()


# How often `abandon_when_stopped` looks at its event.
_STOP_POLL_S = 0.25


async def abandon_when_stopped(work: Awaitable[R], stop: threading.Event | None) -> R:
    """Await `work`, or cancel it and raise `JobCancelled` within a fraction of a second of
    `stop` being set (the job was cancelled or its lease lost): a model call must not keep a
    cancelled job's worker busy until the model's timeout (issue 23 item 7)."""
    task = asyncio.ensure_future(work)
    if stop is None:
        return await task
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_STOP_POLL_S)
            if done:
                return task.result()
            if stop.is_set():
                raise JobCancelled("the work was abandoned: the job was stopped")
    finally:
        if not task.done():
            task.cancel()  # closes the requests and frees the backends' concurrency slots
            await asyncio.gather(task, return_exceptions=True)


def job_progress(
    model: type[Job], pk: int, *, done: int | None = None, add: int = 0, total: int | None = None
) -> None:
    """Set (``done``) or advance (``add``) a running job's progress, and its total if given."""
    fields: dict[str, Any] = {}
    if total is not None:
        fields["progress_total"] = total
    if done is not None:
        fields["progress_done"] = done
    elif add:
        fields["progress_done"] = F("progress_done") + add
    if fields:
        _rows(model).filter(pk=pk, status=JobStatus.RUNNING).update(**fields)


def job_finish(
    model: type[Leased],
    pk: int,
    *,
    status: str,
    owner: str | None = None,
    error: str = "",
    **fields: Any,
) -> bool:
    """End an active job with a final status (and other fields), releasing its lease.

    With ``owner``, only the execution holding the lease may end it (one that lost its lease to
    another worker changes nothing). A job whose cancel was asked for ends ``cancelled`` unless
    it failed. Returns whether the row was ended by this call.
    """
    if status not in FINISHED:
        raise ValueError(f"not a final status: {status}")
    rows = _rows(model).filter(pk=pk, status__in=ACTIVE)
    if owner is not None:
        rows = rows.filter(lease_owner=owner)
    values: dict[str, Any] = {
        "status": status,
        "lease_owner": "",
        "lease_expires_at": None,
        **fields,
    }
    if issubclass(model, Job):
        values.update(error=error, finished_at=timezone.now())
        if status == JobStatus.DONE:
            ended = rows.filter(cancel_requested=True).update(
                **{**values, "status": JobStatus.CANCELLED}
            )
            if ended:
                return True
    elif error:
        values["error"] = error
    return bool(rows.update(**values))


# --- The researcher side ---------------------------------------------------------------------


def job_is_live(job: Job, *, now: datetime | None = None) -> bool:
    """Whether a worker holds the job or its task is still on its way to one."""
    now = now or timezone.now()
    if job.status not in ACTIVE:
        return False
    if job.lease_expires_at is not None:
        return job.lease_expires_at > now
    sent = job.dispatched_at or job.created_at
    return sent is not None and sent > _pending_cutoff(now) and not job.cancel_requested


def job_cancel(*, job: Job) -> bool:
    """Cancel a job; False when it had already ended.

    A cancel is a state change that needs no worker: the job ends ``cancelled`` at once,
    whether it is pending, running, or held by a worker that died or hangs on a model call
    (issue 23 item 7: waiting for the worker's next checkpoint, or for the sweeper when the
    worker died, left it "running" for minutes). A worker still on it finds out at its next
    cancel check (`Heartbeat`, every ``JOB_CANCEL_CHECK_SECONDS``), abandons what it is doing
    and writes nothing more: `job_finish` ends only active jobs, and the lease is gone.
    """
    now = timezone.now()
    asked = (
        _rows(type(job))
        .filter(pk=job.pk, status__in=ACTIVE)
        .update(
            cancel_requested=True,
            status=JobStatus.CANCELLED,
            finished_at=now,
            lease_owner="",
            lease_expires_at=None,
        )
    )
    job.refresh_from_db()
    return bool(asked)


def job_reset(*, job: Job, **fields: Any) -> None:
    """Put a job that is not running back to pending (for a retry); raises
    :class:`JobStillRunning` while a live worker holds it. The caller sends its task."""
    model = type(job)
    if job_is_live(job):
        raise JobStillRunning(_("任务仍在运行，结束或取消后才能重试。"))
    _rows(model).filter(pk=job.pk).update(
        status=JobStatus.PENDING,
        cancel_requested=False,
        error="",
        finished_at=None,
        attempts=0,
        lease_owner="",
        lease_expires_at=None,
        dispatched_at=None,
        **fields,
    )
    job.refresh_from_db()


def job_retry(*, job: Job, refused: type[ServiceError], done: str, kind: str) -> None:
    """Run again a job that is not done and that no worker holds (failed, cancelled, or its
    worker died): reset its progress, and send it (a job of ``kind``) once the transaction
    commits. A done or still running job is refused with ``refused(message, field="status")``;
    ``done`` is the message for a done one."""
    if job.status == JobStatus.DONE:
        raise refused(done, field="status")
    try:
        job_reset(job=job, progress_done=0)
    except JobStillRunning as exc:
        raise refused(str(exc), field="status") from exc
    job_send_on_commit(kind, job.pk)


# --- The sweeper -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class JobKind:
    """How one leased model's rows are sent to a worker and swept.

    ``task`` is the registered name of the Celery task that runs a row (its one argument is the
    row's id); `job_send` sends it by name, so a service never imports a task module and the task
    module, a thin caller of the services, forms no import loop with them. ``queue`` is the queue
    for every row, or a function returning one queue per given row id (a metric run's chunks go to
    the queue of their family), or None for Celery's routing. ``eligible`` (a ``Q``, or a function
    of the sweep's time returning one) narrows which active rows are swept (a metric run's chunks
    only while their run is active); ``after_sweep(now)`` does the kind's own housekeeping
    (finishing metric runs whose chunks have all ended) and returns how many rows it changed;
    ``created_field`` is the row's creation time (a path for a unit of a job).
    """

    model: type[Leased]
    task: str
    queue: str | Callable[[list[int]], list[str]] | None = None
    eligible: Q | Callable[[datetime], Q] = dataclasses.field(default_factory=Q)
    after_sweep: Callable[[datetime], int] | None = None
    created_field: str = "created_at"


JOB_KINDS: dict[str, JobKind] = {}


def register_job_kind(
    name: str,
    *,
    model: type[Leased],
    task: str,
    queue: str | Callable[[list[int]], list[str]] | None = None,
    eligible: Q | Callable[[datetime], Q] | None = None,
    after_sweep: Callable[[datetime], int] | None = None,
    created_field: str = "created_at",
) -> None:
    """Register a kind of job (from its app's ``ready()``); see :class:`JobKind`."""
    JOB_KINDS[name] = JobKind(
        model=model,
        task=task,
        queue=queue,
        eligible=eligible or Q(),
        after_sweep=after_sweep,
        created_field=created_field,
    )


def job_send(kind: str, pks: int | list[int]) -> None:
    """Send the task of each row now, one message per row, and record when (the sweeper's clock
    for lost messages). The one way a job reaches a worker: services, retries and the sweeper."""
    job_kind = JOB_KINDS[kind]
    ids = [pks] if isinstance(pks, int) else list(pks)
    if not ids:
        return
    if callable(job_kind.queue):
        queues: list[str | None] = list(job_kind.queue(ids))
    else:
        queues = [job_kind.queue] * len(ids)
    job_dispatched(job_kind.model, ids)
    _send_tasks(job_kind.task, list(zip(ids, queues, strict=True)))


def job_send_on_commit(kind: str, pks: int | list[int]) -> None:
    """`job_send` once the caller's transaction commits (a worker must find the rows)."""
    transaction.on_commit(functools.partial(job_send, kind, pks))


def _send_tasks(task: str, work: list[tuple[int, str | None]]) -> None:
    """Send the task named ``task`` for each ``(row id, queue)`` by name (`Celery.send_task`:
    the sender needs no task module; ``CELERY_TASK_ROUTES`` still route by the name), over one
    producer connection however many rows."""
    from config.celery import app  # the project's app and broker (Celery is loaded only here)

    with app.producer_or_acquire() as producer:
        for pk, queue in work:
            options = {"queue": queue} if queue else {}
            app.send_task(task, args=(pk,), producer=producer, **options)


@dataclasses.dataclass
class SweepResult:
    redispatched: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    cancelled: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    failed: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    housekeeping: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _stale(now: datetime) -> Q:
    """Active rows nobody works on: the lease ran out, or the task was sent (or the row
    created) longer than the pending timeout ago and no worker ever claimed it."""
    expired = Q(lease_expires_at__lte=now)
    never_claimed = Q(lease_expires_at__isnull=True, sent__lte=_pending_cutoff(now))
    return Q(status__in=ACTIVE) & (expired | never_claimed)


def _sweep_kind(name: str, kind: JobKind, now: datetime, result: SweepResult) -> None:
    model = kind.model
    is_job = issubclass(model, Job)
    eligible = kind.eligible(now) if callable(kind.eligible) else kind.eligible
    if is_job:
        # A cancel whose worker died (or that came while nobody held the job) ends it now.
        cancelled = list(
            _rows(model)
            .filter(eligible, status__in=ACTIVE, cancel_requested=True)
            .exclude(_live_lease(now))
            .values_list("pk", flat=True)
        )
        if cancelled:
            _rows(model).filter(pk__in=cancelled, status__in=ACTIVE).update(
                status=JobStatus.CANCELLED, finished_at=now, lease_owner="", lease_expires_at=None
            )
            result.cancelled[name] = cancelled
    # Never sent (the process that created it died before its commit hook): its creation time.
    rows = _rows(model).annotate(sent=Coalesce("dispatched_at", kind.created_field))
    stale = rows.filter(eligible, _stale(now))
    if is_job:
        stale = stale.filter(cancel_requested=False)
    max_attempts = int(settings.JOB_MAX_ATTEMPTS)
    for pk, attempts in stale.values_list("pk", "attempts"):
        with transaction.atomic():
            # Compare-and-set on the state we saw: two sweepers never both send it.
            again = (
                _rows(model)
                .filter(pk=pk, status__in=ACTIVE)
                .filter(Q(lease_expires_at__lte=now) | Q(lease_expires_at__isnull=True))
            )
            if attempts >= max_attempts:
                message = _(
                    "执行此任务的 worker 已 %(n)d 次中途退出（进程被终止或内存不足），任务已停止。"
                    "请检查 worker 日志后重试。"
                ) % {"n": attempts}
                values: dict[str, Any] = {
                    "status": JobStatus.FAILED,
                    "error": message,
                    "lease_owner": "",
                    "lease_expires_at": None,
                }
                if is_job:
                    values["finished_at"] = now
                if again.update(**values):
                    result.failed.setdefault(name, []).append(pk)
                continue
            if again.update(lease_owner="", lease_expires_at=None, dispatched_at=now):
                result.redispatched.setdefault(name, []).append(pk)
                transaction.on_commit(functools.partial(job_send, name, pk))
    if kind.after_sweep is not None:
        result.housekeeping += kind.after_sweep(now)


def jobs_sweep(*, now: datetime | None = None) -> SweepResult:
    """Re-dispatch every abandoned job and unit, end cancelled ones, fail those that keep
    killing their worker. Safe to run anywhere, any number of times, concurrently."""
    now = now or timezone.now()
    result = SweepResult()
    for name, kind in JOB_KINDS.items():
        try:
            _sweep_kind(name, kind, now, result)
        except Exception:  # one kind's trouble must not stop the others' recovery
            logger.exception("sweeping %s failed", name)
    if result.redispatched or result.cancelled or result.failed:
        logger.warning("job sweep: %s", result.as_dict())
    return result
