"""Static generation runs: every chosen backend answers every (or a seeded sample of N) context.

A run has one `StaticRunItem` per (backend, sample). `static_run_execute` works through the
pending items — up to `backend.concurrency_limit` requests at once per backend, all backends in
parallel — and writes each answer (the item row and its single-turn Dialogue) in one transaction
after re-checking, under a row lock, that the item is still pending. That compare-and-set is
what makes the job resumable: after a crash, or when a broker delivers the task twice, done items
are skipped and no answer is stored twice.

The run is a `core.models.Job`: the task claims it under a lease that a heartbeat thread renews,
so a run whose worker died is sent again by the sweeper (`core.jobs.jobs_sweep`) and finishes by
itself; the heartbeat is also how a cancel reaches the threads answering items, which abandon
a model call in flight (`complete_reply_sync(stop=...)`).
"""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import connections, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import (
    Backend,
    Campaign,
    Dataset,
    Dialogue,
    Sample,
    Skill,
    StaticRun,
    StaticRunItem,
    Turn,
)
from chat.services.campaigns import campaign_create
from chat.services.generation import (
    BackendError,
    build_request,
    complete_reply_sync,
)
from core.errors import ServiceError
from core.jobs import (
    Heartbeat,
    JobCancelled,
    job_cancel,
    job_claim,
    job_finish,
    job_is_live,
    job_send_on_commit,
    new_lease_owner,
)
from core.models import JobStatus

RUN_NAME_MAX_LENGTH = 160  # chat.StaticRun.name
ITEM_BATCH_SIZE = 2000


class StaticRunError(ServiceError):
    """A static run refused (bad arguments, a retry while it runs); ``errors`` maps arguments."""

    location_style = "prefix"


def context_history(context: Sequence[str]) -> list[tuple[str, str]]:
    """A sample's context as (speaker, text), oldest first, the LAST turn being the user's.

    Test sets (LIC 2021, LCCC) keep only utterances; the model answers the last one, so speakers
    alternate backwards from it.
    """
    last = len(context) - 1
    return [
        (Turn.Speaker.USER if (last - i) % 2 == 0 else Turn.Speaker.SYSTEM, text)
        for i, text in enumerate(context)
    ]


@dataclass(frozen=True)
class ExternalAnswer:
    """One answer a system produced elsewhere: its context (utterances, the last the user's),
    the answer, and the references to score it against."""

    external_id: str
    context: Sequence[str]
    answer: str
    references: Sequence[str] = ()


@transaction.atomic
def external_answers_store(
    *,
    name: str,
    system: str,
    skill: Skill,
    language: str,
    answers: Sequence[ExternalAnswer],
    created_by: User | None,
    batch_size: int = ITEM_BATCH_SIZE,
) -> Campaign:
    """Store answers generated elsewhere as the accepted single-answer dialogues of a new closed
    ``static`` campaign (the mode that tells scorers only the last turn is the system's): the
    context turns as :func:`context_history` reads them, then the answer with its references.
    The system is an inactive ``imported`` backend, created on first use."""
    backend, _created = Backend.objects.get_or_create(
        name=system[:120],
        defaults={"adapter": Backend.Adapter.IMPORTED, "active": False, "created_by": created_by},
    )
    campaign = Campaign.objects.create(
        name=name, mode=Campaign.Mode.STATIC, status=Campaign.Status.CLOSED, created_by=created_by
    )
    campaign.skills.add(skill)
    campaign.campaign_backends.create(backend=backend, alias="模型 A")
    now = timezone.now()
    dialogues = Dialogue.objects.bulk_create(
        [
            Dialogue(
                campaign=campaign,
                backend=backend,
                skill=skill,
                language=language,
                status=Dialogue.Status.ACCEPTED,
                external_id=answer.external_id,
                submitted_at=now,
            )
            for answer in answers
        ],
        batch_size=batch_size,
    )
    turns: list[Turn] = []
    for dialogue, answer in zip(dialogues, answers, strict=True):
        history = context_history(answer.context)
        turns.extend(
            Turn(dialogue=dialogue, index=index, speaker=speaker, text=text)
            for index, (speaker, text) in enumerate(history)
        )
        turns.append(
            Turn(
                dialogue=dialogue,
                index=len(history),
                speaker=Turn.Speaker.SYSTEM,
                text=answer.answer,
                references=list(answer.references),
            )
        )
    Turn.objects.bulk_create(turns, batch_size=batch_size)
    return campaign


def sample_selection(*, dataset: Dataset, sample_size: int | None, seed: int) -> list[int]:
    """The ids of the samples a run answers: all of them, or a seeded random N in file order.

    The draw is over sample positions (`Sample.index`), so the same dataset file, N and seed pick
    the same contexts on any instance.
    """
    rows = list(
        Sample.objects.filter(dataset=dataset).order_by("index").values_list("id", flat=True)
    )
    if sample_size is None or sample_size >= len(rows):
        return rows
    chosen = sorted(random.Random(seed).sample(range(len(rows)), sample_size))
    return [rows[i] for i in chosen]


def _check_create(
    *,
    name: str,
    dataset: Dataset,
    backends: Sequence[Backend],
    sample_size: int | None,
    campaign: Campaign | None,
    campaign_name: str,
) -> None:
    errors: dict[str, str] = {}
    if not name:
        errors["name"] = _("请填写名称。")
    elif len(name) > RUN_NAME_MAX_LENGTH:
        errors["name"] = _("名称不能超过 %(n)d 个字符。") % {"n": RUN_NAME_MAX_LENGTH}
    if not backends:
        errors["backends"] = _("请至少选择一个模型后端。")
    else:
        uncallable = [b.name for b in backends if not b.active or b.adapter == "imported"]
        if uncallable:
            errors["backends"] = _("这些后端不可调用（已停用或为导入的系统）：%(names)s") % {
                "names": "、".join(uncallable)
            }
    if dataset.sample_count == 0:
        errors["dataset"] = _("数据集「%(name)s」没有样本。") % {"name": dataset.name}
    if sample_size is not None and sample_size < 1:
        errors["sample_size"] = _("抽样数量至少为 1（留空表示全部样本）。")
    elif sample_size is not None and sample_size > dataset.sample_count:
        errors["sample_size"] = _("数据集只有 %(n)d 个样本。") % {"n": dataset.sample_count}
    if campaign is not None:
        if campaign.mode != Campaign.Mode.STATIC:
            errors["campaign"] = _("评测活动「%(name)s」不是静态生成模式。") % {
                "name": campaign.name
            }
        else:
            in_campaign = set(campaign.campaign_backends.values_list("backend_id", flat=True))
            missing = [b.name for b in backends if b.pk not in in_campaign]
            if missing:
                errors["backends"] = _("这些后端不属于评测活动「%(campaign)s」：%(names)s") % {
                    "campaign": campaign.name,
                    "names": "、".join(missing),
                }
    elif not campaign_name:
        errors["campaign_name"] = _("请选择评测活动或填写新评测活动的名称。")
    elif Campaign._base_manager.filter(name=campaign_name).exists():
        errors["campaign_name"] = _("已有名为「%(name)s」的评测活动。") % {"name": campaign_name}
    if errors:
        raise StaticRunError.for_fields(errors)


@transaction.atomic
def static_run_create(
    *,
    name: str,
    dataset: Dataset,
    backends: Iterable[Backend],
    campaign: Campaign | None = None,
    campaign_name: str = "",
    sample_size: int | None = None,
    seed: int = 0,
    created_by: User | None = None,
) -> StaticRun:
    """Create a run and its pending items (one per backend × selected sample); does not start it.

    The answers go to `campaign` (a static campaign holding every backend), or to a new static
    campaign named `campaign_name` (default: the run's name) over the dataset's skills. Bad
    arguments raise `StaticRunError` (its ``errors`` keyed by argument name), and nothing is saved.
    """
    name = name.strip()
    campaign_name = (campaign_name or name).strip()
    backends = list(backends)
    _check_create(
        name=name,
        dataset=dataset,
        backends=backends,
        sample_size=sample_size,
        campaign=campaign,
        campaign_name=campaign_name,
    )
    if campaign is None:
        skill_ids = Sample.objects.filter(dataset=dataset).values_list("skill_id", flat=True)
        campaign = campaign_create(
            name=campaign_name,
            mode=Campaign.Mode.STATIC,
            skills=list(Skill.objects.filter(pk__in=skill_ids).values_list("key", flat=True)),
            backends=backends,
            datasets=[dataset],
            created_by=created_by,
        )
    sample_ids = sample_selection(dataset=dataset, sample_size=sample_size, seed=seed)
    run = StaticRun.objects.create(
        name=name,
        campaign=campaign,
        dataset=dataset,
        sample_size=sample_size,
        seed=seed,
        progress_total=len(sample_ids) * len(backends),
        created_by=created_by,
    )
    run.backends.set(backends)
    StaticRunItem.objects.bulk_create(
        (
            StaticRunItem(run=run, backend=backend, sample_id=sample_id)
            for backend in backends
            for sample_id in sample_ids
        ),
        batch_size=ITEM_BATCH_SIZE,
    )
    return run


def static_run_start(*, run: StaticRun) -> None:
    """Queue the run for a worker (queue `chat`) once the caller's transaction commits."""
    job_send_on_commit("static_run", run.pk)


def static_run_cancel(*, run: StaticRun) -> StaticRun:
    """Stop the run: it ends cancelled at once, whether a worker holds it, hangs on a model or
    died (a finished one is left as it is). A live worker learns it within
    JOB_CANCEL_CHECK_SECONDS, abandons its model calls and saves nothing more."""
    job_cancel(job=run)
    return run


@transaction.atomic
def static_run_retry_failed(*, run: StaticRun) -> int:
    """Put the failed items back to pending and queue the run again; returns how many items
    it will answer (the failed ones and any left pending).

    A cancelled run resumes too (its pending items are answered), and so does a run whose worker
    died (its lease ran out): done items are never asked again.
    """
    run = StaticRun.objects.select_for_update().get(pk=run.pk)
    if job_is_live(run):
        raise StaticRunError(_("运行尚未结束，结束后才能重试失败项。"))
    reset = StaticRunItem.objects.filter(run=run, status=StaticRunItem.Status.FAILED).update(
        status=StaticRunItem.Status.PENDING
    )
    queued = StaticRunItem.objects.filter(run=run, status=StaticRunItem.Status.PENDING).count()
    if not queued:
        return 0
    run.status = JobStatus.PENDING
    run.cancel_requested = False
    run.error = ""
    run.finished_at = None
    run.attempts = 0
    run.lease_owner, run.lease_expires_at, run.dispatched_at = "", None, None
    run.progress_done = F("progress_done") - reset
    run.save(
        update_fields=[
            "status",
            "cancel_requested",
            "error",
            "finished_at",
            "attempts",
            "lease_owner",
            "lease_expires_at",
            "dispatched_at",
            "progress_done",
        ]
    )
    static_run_start(run=run)
    return queued


def _claim(run_id: int, owner: str) -> bool:
    """Take the run under a lease; False when there is nothing to do (finished, cancelled, or
    another live worker holds it)."""
    claimed = job_claim(StaticRun, run_id, owner=owner)
    if claimed:
        # The run's static campaign is collecting now (it was created as a draft).
        Campaign.objects.filter(
            static_runs__pk=run_id, mode=Campaign.Mode.STATIC, status=Campaign.Status.DRAFT
        ).update(status=Campaign.Status.ACTIVE)
        # Re-count from the items, the source of truth: the run's counter is a running tally.
        items = StaticRunItem.objects.filter(run_id=run_id)
        StaticRun.objects.filter(pk=run_id).update(
            progress_total=items.count(),
            progress_done=items.exclude(status=StaticRunItem.Status.PENDING).count(),
        )
    return bool(claimed)


def _save_answer(
    *, item_id: int, backend: Backend, prompt: str, text: str, latency_ms: int
) -> None:
    with transaction.atomic():
        item = (
            StaticRunItem.objects.select_for_update(of=("self",))
            .select_related("run", "sample", "sample__dataset")
            .get(pk=item_id)
        )
        if item.status != StaticRunItem.Status.PENDING:
            return  # another delivery of the task answered it first
        sample, run = item.sample, item.run
        now = timezone.now()
        # Static answers are not reviewed (nobody collected them), so they go to rating directly.
        dialogue = Dialogue.objects.create(
            campaign_id=run.campaign_id,
            backend=backend,
            scenario=sample,
            skill_id=sample.skill_id,
            language=sample.dataset.language,
            status=Dialogue.Status.ACCEPTED,
            grounding=sample.grounding,
            static_run=run,
            submitted_at=now,
        )
        history = context_history(sample.context)
        turns = [
            Turn(dialogue=dialogue, index=i, speaker=speaker, text=utterance)
            for i, (speaker, utterance) in enumerate(history)
        ]
        turns.append(
            Turn(
                dialogue=dialogue,
                index=len(history),
                speaker=Turn.Speaker.SYSTEM,
                text=text,
                references=sample.references,
                prompt=prompt,
                latency_ms=latency_ms,
            )
        )
        Turn.objects.bulk_create(turns)
        StaticRunItem.objects.filter(pk=item.pk).update(
            status=StaticRunItem.Status.DONE,
            dialogue=dialogue,
            error="",
            attempts=F("attempts") + 1,
        )
        StaticRun.objects.filter(pk=run.pk).update(progress_done=F("progress_done") + 1)


def _save_failure(*, item_id: int, run_id: int, error: str) -> None:
    with transaction.atomic():
        failed = StaticRunItem.objects.filter(
            pk=item_id, status=StaticRunItem.Status.PENDING
        ).update(status=StaticRunItem.Status.FAILED, error=error, attempts=F("attempts") + 1)
        if failed:
            StaticRun.objects.filter(pk=run_id).update(progress_done=F("progress_done") + 1)


def _answer(*, item_id: int, run_id: int, backend: Backend, stop: threading.Event) -> None:
    item = StaticRunItem.objects.select_related("sample__skill", "sample__dataset").get(pk=item_id)
    if item.status != StaticRunItem.Status.PENDING:
        return
    sample = item.sample
    try:
        request = build_request(
            backend=backend,
            skill=sample.skill.key,
            language=sample.dataset.language,
            grounding=sample.grounding,
            history=context_history(sample.context),
        )
        reply = complete_reply_sync(backend=backend, request=request, stop=stop)
    except JobCancelled:
        return  # cancelled (or the lease was lost): the item stays pending, nothing is saved
    except BackendError as exc:
        _save_failure(item_id=item_id, run_id=run_id, error=str(exc))
        return
    except Exception as exc:  # noqa: BLE001
        # An adapter bug on one context must not stop the other contexts: it is recorded on
        # the item, retried with "retry failed", and the error names what went wrong.
        _save_failure(item_id=item_id, run_id=run_id, error=f"{type(exc).__name__}: {exc}")
        return
    _save_answer(
        item_id=item_id,
        backend=backend,
        prompt=request.prompt,
        text=reply.text,
        latency_ms=reply.latency_ms,
    )


def _cancel_requested(run_id: int) -> bool:
    return StaticRun.objects.filter(pk=run_id, cancel_requested=True).exists()


class _BackendLane:
    """The pending items of one backend, answered by `concurrency_limit` threads."""

    def __init__(self, *, run_id: int, backend: Backend, item_ids: list[int], beat: Heartbeat):
        self.run_id = run_id
        self.backend = backend
        self.items: queue.SimpleQueue[int] = queue.SimpleQueue()
        for item_id in item_ids:
            self.items.put(item_id)
        self.beat = beat
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._work, name=f"static-run-{run_id}-{backend.pk}-{i}")
            for i in range(min(backend.concurrency_limit, len(item_ids)))
        ]

    def _work(self) -> None:
        try:
            while not (self.stop.is_set() or self.beat.stopped.is_set()):
                try:
                    item_id = self.items.get_nowait()
                except queue.Empty:
                    return
                if _cancel_requested(self.run_id):
                    return
                _answer(
                    item_id=item_id,
                    run_id=self.run_id,
                    backend=self.backend,
                    stop=self.beat.stopped,
                )
        except BaseException as exc:  # noqa: BLE001 - re-raised by static_run_execute
            self.errors.append(exc)
            self.stop.set()
        finally:
            connections.close_all()  # this thread's connections only


def _finish(run_id: int, owner: str, errors: list[BaseException]) -> None:
    """End the run as its items say. Only the execution holding the lease ends it: one that
    lost its lease (it stalled and the sweeper gave the run to another worker) changes nothing."""
    run = StaticRun.objects.get(pk=run_id)
    error = ""
    if errors:
        status, error = JobStatus.FAILED, f"{type(errors[0]).__name__}: {errors[0]}"
    elif run.cancel_requested:
        status = JobStatus.CANCELLED
    elif run.items.filter(status=StaticRunItem.Status.PENDING).exists():
        return  # stopped without a cancel: the lease was lost, the new holder finishes
    elif run.items.filter(status=StaticRunItem.Status.FAILED).exists():
        status = JobStatus.FAILED
    else:
        status = JobStatus.DONE
    ended = job_finish(StaticRun, run_id, status=status, owner=owner, error=error)
    if ended and status == JobStatus.DONE:
        # Its answers are all in: the static campaign is finished unless another run of it
        # is still to come.
        busy = StaticRun.objects.filter(
            campaign_id=run.campaign_id, status__in=(JobStatus.PENDING, JobStatus.RUNNING)
        ).exists()
        if not busy:
            Campaign.objects.filter(pk=run.campaign_id, mode=Campaign.Mode.STATIC).update(
                status=Campaign.Status.CLOSED
            )


def static_run_execute(*, run: StaticRun) -> StaticRun:
    """Answer every pending item of the run; the work of the Celery task.

    Idempotent: a finished or cancelled run is left alone, and items already answered are
    skipped, so running it again after a crash finishes the job without duplicates. An error
    that is not one sample's (the database went away) marks the run failed and is re-raised.
    """
    owner = new_lease_owner()
    if not _claim(run.pk, owner):
        run.refresh_from_db()
        return run
    with Heartbeat(StaticRun, run.pk, owner=owner) as beat:
        errors = _answer_pending(run, beat)
        _finish(run.pk, owner, errors)
    run.refresh_from_db()
    if errors:
        raise errors[0]
    return run


def _answer_pending(run: StaticRun, beat: Heartbeat) -> list[BaseException]:
    """Answer the pending items, every backend's lane in parallel; the errors that stopped
    lanes (not one sample's backend error, which is stored on its item)."""
    lanes = []
    for backend in run.backends.order_by("pk"):
        item_ids = list(
            StaticRunItem.objects.filter(
                run=run, backend=backend, status=StaticRunItem.Status.PENDING
            )
            .order_by("sample__index")
            .values_list("id", flat=True)
        )
        if item_ids:
            lanes.append(_BackendLane(run_id=run.pk, backend=backend, item_ids=item_ids, beat=beat))
    threads = [thread for lane in lanes for thread in lane.threads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [error for lane in lanes for error in lane.errors]
