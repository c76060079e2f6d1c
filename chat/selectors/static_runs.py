"""Reads of static runs: lists, progress, failures and the answers side by side."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet

from chat.models import Backend, Sample, StaticRun, StaticRunItem, Turn
from core.access import Role, has_role


def static_run_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[StaticRun]:
    """Runs a user may manage: researchers (and admins) see all of them, others none."""
    if not has_role(user, Role.RESEARCHER):
        return StaticRun.objects.none()
    return StaticRun.objects.select_related("campaign", "dataset").prefetch_related("backends")


@dataclass(frozen=True)
class RunCounts:
    total: int
    done: int
    failed: int
    pending: int

    @property
    def percent(self) -> int:
        finished = self.done + self.failed
        return round(100 * finished / self.total) if self.total else 100


def static_run_counts(*, run: StaticRun) -> RunCounts:
    counts = StaticRunItem.objects.filter(run=run).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=StaticRunItem.Status.DONE)),
        failed=Count("id", filter=Q(status=StaticRunItem.Status.FAILED)),
    )
    return RunCounts(
        total=counts["total"],
        done=counts["done"],
        failed=counts["failed"],
        pending=counts["total"] - counts["done"] - counts["failed"],
    )


def static_run_failures(*, run: StaticRun) -> QuerySet[StaticRunItem]:
    return (
        StaticRunItem.objects.filter(run=run, status=StaticRunItem.Status.FAILED)
        .select_related("backend", "sample")
        .order_by("sample__index", "backend__name")
    )


def static_run_samples(*, run: StaticRun) -> QuerySet[Sample]:
    """The contexts the run answers (all of the dataset or its seeded sample), in file order."""
    return Sample.objects.filter(
        pk__in=StaticRunItem.objects.filter(run=run).values("sample_id")
    ).order_by("index")


@dataclass
class AnswerRow:
    """One context with the reference and each backend's answer (None while not answered)."""

    sample: Sample
    answers: list[tuple[Backend, StaticRunItem | None, str | None]] = field(default_factory=list)


def static_run_answer_rows(
    *, run: StaticRun, samples: list[Sample], backends: list[Backend]
) -> list[AnswerRow]:
    """The answers of `backends` to `samples` (one page of `static_run_samples`)."""
    items = StaticRunItem.objects.filter(run=run, sample__in=samples, backend__in=backends)
    by_key = {(item.sample_id, item.backend_id): item for item in items}
    dialogue_ids = [item.dialogue_id for item in by_key.values() if item.dialogue_id]
    # The answer is the last (system) turn of each single-turn dialogue.
    answers: dict[int, str] = {}
    for dialogue_id, text in (
        Turn.objects.filter(dialogue_id__in=dialogue_ids, speaker=Turn.Speaker.SYSTEM)
        .order_by("dialogue_id", "index")
        .values_list("dialogue_id", "text")
    ):
        answers[dialogue_id] = text
    rows = []
    for sample in samples:
        row = AnswerRow(sample=sample)
        for backend in backends:
            item = by_key.get((sample.pk, backend.pk))
            answer = answers.get(item.dialogue_id) if item and item.dialogue_id else None
            row.answers.append((backend, item, answer))
        rows.append(row)
    return rows
