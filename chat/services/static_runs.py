"""Static generation runs: every chosen backend answers every (or a seeded sample of N) context.

A run has one `StaticRunItem` per (backend, sample). `static_run_execute` works through the
pending items — up to `backend.concurrency_limit` requests at once per backend, all backends in
parallel — and writes each answer (the item row and its single-turn Dialogue) in one transaction
after re-checking, under a row lock, that the item is still pending. That compare-and-set is
what makes the job resumable: after a crash, or when a broker delivers the task twice, done items
are skipped and no answer is stored twice.
"""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Iterable, Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
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
from chat.services.generation import BackendError, build_request, complete_reply_sync

RUN_NAME_MAX_LENGTH = 160  # chat.StaticRun.name
ITEM_BATCH_SIZE = 2000
FINISHED = (StaticRun.Status.DONE, StaticRun.Status.FAILED, StaticRun.Status.CANCELLED)


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
    elif Campaign.objects.filter(name=campaign_name).exists():
        errors["campaign_name"] = _("已有名为「%(name)s」的评测活动。") % {"name": campaign_name}
    if errors:
        raise ValidationError(errors)


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
    created_by: AbstractBaseUser | None = None,
) -> StaticRun:
    """Create a run and its pending items (one per backend × selected sample); does not start it.

    The answers go to `campaign` (a static campaign holding every backend), or to a new static
    campaign named `campaign_name` (default: the run's name) over the dataset's skills. Bad
    arguments raise `ValidationError` keyed by argument name, and nothing is saved.
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
    from chat import tasks  # the tasks module imports this one

    run_id = run.pk
    transaction.on_commit(lambda: tasks.static_run_execute.delay(run_id))


def static_run_cancel(*, run: StaticRun) -> StaticRun:
    """Ask the run to stop. A run that has not started is cancelled at once; a running one stops
    between items (the worker checks `cancel_requested`); a finished one is left as it is."""
    StaticRun.objects.filter(pk=run.pk).exclude(status__in=FINISHED).update(cancel_requested=True)
    StaticRun.objects.filter(pk=run.pk, status=StaticRun.Status.PENDING).update(
        status=StaticRun.Status.CANCELLED, finished_at=timezone.now()
    )
    run.refresh_from_db()
    return run


@transaction.atomic
def static_run_retry_failed(*, run: StaticRun) -> int:
    """Put the failed items back to pending and queue the run again; returns how many items
    it will answer (the failed ones and any left pending).

    A cancelled run resumes too (its pending items are answered), and so does a run whose worker
    died: done items are never asked again.
    """
    run = StaticRun.objects.select_for_update().get(pk=run.pk)
    if run.status in (StaticRun.Status.PENDING, StaticRun.Status.RUNNING):
        raise ValidationError(_("运行尚未结束，结束后才能重试失败项。"))
    reset = StaticRunItem.objects.filter(run=run, status=StaticRunItem.Status.FAILED).update(
        status=StaticRunItem.Status.PENDING
    )
    queued = StaticRunItem.objects.filter(run=run, status=StaticRunItem.Status.PENDING).count()
    if not queued:
        return 0
    run.status = StaticRun.Status.PENDING
    run.cancel_requested = False
    run.error = ""
    run.finished_at = None
    run.progress_done = F("progress_done") - reset
    run.save(update_fields=["status", "cancel_requested", "error", "finished_at", "progress_done"])
    static_run_start(run=run)
    return queued


def _claim(run_id: int) -> bool:
    """Mark the run running; False when there is nothing to do (finished or cancelled)."""
    now = timezone.now()
    StaticRun.objects.filter(
        pk=run_id, status=StaticRun.Status.PENDING, cancel_requested=True
    ).update(status=StaticRun.Status.CANCELLED, finished_at=now)
    claimed = StaticRun.objects.filter(
        pk=run_id, status__in=(StaticRun.Status.PENDING, StaticRun.Status.RUNNING)
    ).update(status=StaticRun.Status.RUNNING)
    if claimed:
        StaticRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
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


def _answer(*, item_id: int, run_id: int, backend: Backend) -> None:
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
        reply = complete_reply_sync(backend=backend, request=request)
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

    def __init__(
        self, *, run_id: int, backend: Backend, item_ids: list[int], stop: threading.Event
    ):
        self.run_id = run_id
        self.backend = backend
        self.items: queue.SimpleQueue[int] = queue.SimpleQueue()
        for item_id in item_ids:
            self.items.put(item_id)
        self.stop = stop
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._work, name=f"static-run-{run_id}-{backend.pk}-{i}")
            for i in range(min(backend.concurrency_limit, len(item_ids)))
        ]

    def _work(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    item_id = self.items.get_nowait()
                except queue.Empty:
                    return
                if _cancel_requested(self.run_id):
                    self.stop.set()
                    return
                _answer(item_id=item_id, run_id=self.run_id, backend=self.backend)
        except BaseException as exc:  # noqa: BLE001 - re-raised by static_run_execute
            self.errors.append(exc)
            self.stop.set()
        finally:
            connections.close_all()  # this thread's connections only


def _finish(run_id: int, errors: list[BaseException]) -> None:
    run = StaticRun.objects.get(pk=run_id)
    if errors:
        run.status = StaticRun.Status.FAILED
        run.error = f"{type(errors[0]).__name__}: {errors[0]}"
    elif run.cancel_requested:
        run.status = StaticRun.Status.CANCELLED
    elif run.items.filter(status=StaticRunItem.Status.FAILED).exists():
        run.status = StaticRun.Status.FAILED
    else:
        run.status = StaticRun.Status.DONE
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])


def static_run_execute(*, run: StaticRun) -> StaticRun:
    """Answer every pending item of the run; the work of the Celery task.

    Idempotent: a finished or cancelled run is left alone, and items already answered are
    skipped, so running it again after a crash finishes the job without duplicates. An error
    that is not one sample's (the database went away) marks the run failed and is re-raised.
    """
    if not _claim(run.pk):
        run.refresh_from_db()
        return run
    stop = threading.Event()
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
            lanes.append(_BackendLane(run_id=run.pk, backend=backend, item_ids=item_ids, stop=stop))
    threads = [thread for lane in lanes for thread in lane.threads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [error for lane in lanes for error in lane.errors]
    _finish(run.pk, errors)
    run.refresh_from_db()
    if errors:
        raise errors[0]
    return run
