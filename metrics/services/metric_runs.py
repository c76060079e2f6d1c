"""Metric runs: check, create and plan them, send their chunks, cancel, resume.

A run scores every model turn of its target dialogues (a campaign's, one static run's, or an
uploaded answer file's) with metrics of the registry (:mod:`metrics.scorers.registry`). The work
is split into chunks of one *system batch* (a backend's responses of one skill) × one metric
family, because corpus values and CIDEr-D's idf are defined over a whole system's batch; a worker
scores each chunk and the last one finishes the run (:mod:`metrics.services.metric_run_scoring`).

Recovery: each chunk is a leased unit (:class:`core.models.Leased`). A chunk whose worker died is
sent again by the job sweeper (:func:`core.jobs.jobs_sweep`), and the run is finished by whichever
chunk ends last (or by the sweeper), not by a chord callback a lost chunk would hold back forever.
"""

from __future__ import annotations

import dataclasses
import tempfile
import types
import typing
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.db import transaction

from chat.models import Campaign, Language, Skill, StaticRun
from chat.services import static_runs
from core.errors import ServiceError
from core.jobs import (
    ACTIVE,
    job_cancel,
    job_send_on_commit,
)
from metrics.models import FollowupSelection, JobStatus, MetricRun, MetricRunChunk
from metrics.scorers import followup
from metrics.scorers.base import Settings
from metrics.scorers.models import default_models
from metrics.scorers.offline import InputError, read_items
from metrics.scorers.registry import METRICS, PRESETS
from metrics.selectors import metric_runs as selectors
from metrics.selectors.preflight import local_models_dir
from metrics.services.followup_selection import selection_run_settings
from metrics.services.metric_run_scoring import WRITE_BATCH_SIZE, chunk_queue, metric_run_finish

RUN_NAME_MAX_LENGTH = 160  # MetricRun.name


class MetricRunError(ServiceError):
    """Bad input for a run; ``field`` (and ``line`` of an uploaded file) say where.

    ``str(exc)`` reads ``"<field>: <what is wrong>"`` or, for an upload,
    ``"<file> line N, field 'F': <what is wrong>"``.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        filename: str | None = None,
    ) -> None:
        self.filename = filename
        super().__init__(message, field=field, line=line)

    def where(self) -> str:
        if self.line is None:
            return self.field or ""
        field = f", field {self.field!r}" if self.field else ""
        return f"{self.filename or 'upload'} line {self.line}{field}"


# --- Checks -------------------------------------------------------------------------------------


def check_metric_names(names: Iterable[str]) -> list[str]:
    """Metric names (and preset names, expanded) validated against the registry, in order."""
    wanted: list[str] = []
    unknown: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        members = PRESETS.get(name.lower().replace(" ", ""), (name,))
        for member in members:
            if member not in METRICS:
                unknown.append(member)
            elif member not in wanted:
                wanted.append(member)
    if unknown:
        raise MetricRunError(
            f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRICS)}; "
            f"presets: {', '.join(PRESETS)}",
            field="metrics",
        )
    if not wanted:
        raise MetricRunError("choose at least one metric", field="metrics")
    return wanted


def _type_ok(value: Any, annotation: Any) -> bool:
    allowed = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else ()
    options = allowed or (annotation,)
    for option in options:
        if typing.get_origin(option) in (tuple, list) and isinstance(value, list | tuple):
            return True  # the items are checked by Settings
        if option is type(None) and value is None:
            return True
        if option is bool and isinstance(value, bool):
            return True
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if option is float and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if option is str and isinstance(value, str):
            return True
    return False


def check_settings(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's stored settings: the given ones validated (each error names the setting), plus
    a packaged model for the English neural metrics when none is given (for another language,
    a model trained on this installation, e.g. the demo's demo-quality vectors)."""
    values = dict(values or {})
    hints = typing.get_type_hints(Settings)
    known = {f.name for f in dataclasses.fields(Settings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise MetricRunError(
            f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}",
            field="settings",
        )
    for key, value in values.items():
        if not _type_ok(value, hints[key]):
            raise MetricRunError(
                f"setting {key}={value!r} has the wrong type (expected {hints[key]})",
                field="settings",
            )
    if values.get("followup_selection") is not None:
        _take_selection_settings(values)
    try:
        settings = Settings.from_dict(values)
    except (ValueError, TypeError) as exc:
        raise MetricRunError(str(exc), field="settings") from exc
    for key, model in default_models(settings.lang, local_models_dir()).items():
        if not values.get(key):
            values[key] = model
    return values


def _selection(selection_id: int) -> FollowupSelection:
    selection = FollowupSelection.objects.filter(pk=selection_id).first()
    if selection is None:
        raise MetricRunError(
            f"followup_selection: there is no item selection {selection_id}", field="settings"
        )
    if selection.status != JobStatus.DONE:
        raise MetricRunError(
            f"followup_selection: item selection {selection_id} ({selection.name!r}) has not "
            f"chosen its items yet (status: {selection.status})",
            field="settings",
        )
    return selection


def _take_selection_settings(values: dict[str, Any]) -> None:
    """Complete ``values`` with the follow-up settings of the run's item selection (setting
    ``followup_selection``, :func:`selection_run_settings`, the one definition); a setting given
    with another value is refused, naming both: items chosen on one scorer input (layout,
    normalisation, max length, model, language, follow-ups) do not carry over to another."""
    selection = _selection(values["followup_selection"])
    for key, chosen in selection_run_settings(selection).items():
        given = values.get(key)
        if given is None or given == "":  # not given: the selection's
            if chosen is not None:
                values[key] = chosen
        elif (list(given) if key == "followup_items" else given) != chosen:
            raise MetricRunError(
                f"setting {key}={given!r} differs from item selection {selection.pk} "
                f"({selection.name!r}), which chose its items with {key}={chosen!r}; leave the "
                "setting out to use the selection's, or run a selection with this value",
                field="settings",
            )


def check_selected_items(names: Sequence[str], values: Mapping[str, Any]) -> None:
    """Refuse, when the run is configured, what would fail while it runs: a ``*-selected``
    metric without chosen items, or with items the language's follow-up set does not have, or
    with the items of a selection that used the other likelihood (conditional or joint)."""
    selected = [n for n in names if n in followup.VARIANTS and followup.VARIANTS[n].requires_items]
    if not selected:
        return
    settings = Settings.from_dict(values)
    if settings.followup_selection is not None:
        selection = _selection(settings.followup_selection)
        other = [n for n in selected if followup.VARIANTS[n].conditional != selection.conditional]
        if other:
            chosen_for = "fed-cond-selected" if selection.conditional else "fed-selected"
            raise MetricRunError(
                f"{', '.join(other)}: item selection {selection.pk} ({selection.name!r}) chose "
                f"its items for {chosen_for}, with the other likelihood (conditional or joint)",
                field="settings",
            )
    if not settings.followup_items:
        raise MetricRunError(
            f"{', '.join(selected)} need the chosen follow-up items (setting followup_items, "
            "e.g. from an item selection)",
            field="settings",
        )
    try:
        followup.load_followups(settings.lang, settings.followup_override).select(
            "all", settings.followup_items
        )
    except (ValueError, OSError) as exc:
        raise MetricRunError(f"followup_items: {exc}", field="settings") from exc


# --- Create -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Upload:
    """An answer file in the ``score_responses`` input format, and whose answers they are."""

    fileobj: IO[bytes]
    filename: str
    system: str = "uploaded"
    skill: str = "chitchat"


def _read_upload(upload: Upload, *, need_references: bool) -> list[Any]:
    """Parse the upload with the offline command's reader (one format, one parser)."""
    limit = django_settings.DATASET_UPLOAD_MAX_BYTES
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as handle:
        size = 0
        for block in iter(lambda: upload.fileobj.read(1 << 20), b""):
            size += len(block)
            if size > limit:
                raise MetricRunError(
                    f"{upload.filename} is larger than {limit // (1 << 20)} MiB "
                    "(DATASET_UPLOAD_MAX_BYTES)",
                    field="file",
                )
            handle.write(block)
        handle.flush()
        try:
            return read_items(Path(handle.name), need_references=need_references)
        except InputError as exc:
            if exc.line == 0:
                raise MetricRunError(f"{upload.filename}: {exc.problem}", field="file") from exc
            raise MetricRunError(
                exc.problem, field=exc.field, line=exc.line, filename=upload.filename
            ) from exc


def _import_upload(
    *,
    upload: Upload,
    run_name: str,
    language: str,
    metrics: Sequence[str],
    created_by: User | None,
) -> Campaign:
    """Store the answers as single-turn dialogues of a new campaign: the context turns
    (alternating, the last one the user's), then the system's answer with its references.

    The campaign's mode is ``static`` (an upload is a static generation done elsewhere), which
    tells the scorer that only the last turn of each dialogue is the system's answer.
    """
    need_refs = any(METRICS[m].needs_reference for m in metrics)
    items = _read_upload(upload, need_references=need_refs)
    system = upload.system.strip()
    if not system:
        raise MetricRunError("name the system whose answers these are", field="system")
    skill = Skill.objects.filter(key=upload.skill).first()
    if skill is None:
        known = ", ".join(Skill.objects.values_list("key", flat=True))
        raise MetricRunError(f"unknown skill {upload.skill!r} (known: {known})", field="skill")
    name = f"{run_name} · {upload.filename}"[:150]
    suffix = 1
    while Campaign.objects.filter(name=name).exists():
        suffix += 1
        name = f"{run_name} · {upload.filename} ({suffix})"[:160]
    return static_runs.external_answers_store(
        name=name,
        system=system,
        skill=skill,
        language=language,
        answers=[
            static_runs.ExternalAnswer(
                external_id=str(item.id),
                context=item.context or [],
                answer=item.hypothesis,
                references=item.references or [],
            )
            for item in items
        ],
        created_by=created_by,
        batch_size=WRITE_BATCH_SIZE,
    )


def _chunks_for(run: MetricRun) -> list[MetricRunChunk]:
    families: dict[str, list[str]] = defaultdict(list)
    for name in run.metrics:
        families[METRICS[name].family].append(name)
    batches = selectors.system_batches(run=run)
    skills_of: dict[int, set[int]] = defaultdict(set)
    for backend_id, skill_id in batches:
        skills_of[backend_id].add(skill_id)
    chunks = []
    for family, names in families.items():
        for backend_id, skill_id in batches:
            chunks.append(
                MetricRunChunk(
                    run=run, backend_id=backend_id, skill_id=skill_id, family=family, metrics=names
                )
            )
        for backend_id, skills in skills_of.items():
            if len(skills) > 1:
                chunks.append(
                    MetricRunChunk(
                        run=run, backend_id=backend_id, skill_id=None, family=family, metrics=names
                    )
                )
    return chunks


@transaction.atomic
def metric_run_create(
    *,
    name: str,
    metrics: Iterable[str],
    settings: Mapping[str, Any] | None = None,
    campaign: Campaign | None = None,
    static_run: StaticRun | None = None,
    upload: Upload | None = None,
    include_submitted: bool = False,
    created_by: User | None = None,
) -> MetricRun:
    """Create a run over exactly one target and enqueue its chunks once the transaction commits.

    Raises :class:`MetricRunError` naming the field (or the upload's line); nothing is saved then.
    """
    name = name.strip()
    if not name:
        raise MetricRunError("a run name is required", field="name")
    if len(name) > RUN_NAME_MAX_LENGTH:
        raise MetricRunError(f"longer than {RUN_NAME_MAX_LENGTH} characters", field="name")
    targets = [t for t in (campaign, static_run, upload) if t is not None]
    if len(targets) != 1:
        raise MetricRunError(
            "choose exactly one target: a campaign, a static run or an uploaded file",
            field="target",
        )
    names = check_metric_names(metrics)
    stored_settings = check_settings(settings)
    check_selected_items(names, stored_settings)
    if upload is not None:
        language = stored_settings.get("lang", "zh")
        if language not in Language.values:
            raise MetricRunError(f"unknown language {language!r}", field="settings")
        campaign = _import_upload(
            upload=upload,
            run_name=name,
            language=language,
            metrics=names,
            created_by=created_by,
        )
        target = MetricRun.Target.UPLOAD
    elif static_run is not None:
        campaign = static_run.campaign
        target = MetricRun.Target.STATIC_RUN
    else:
        target = MetricRun.Target.CAMPAIGN
    assert campaign is not None
    run = MetricRun.objects.create(
        name=name,
        campaign=campaign,
        static_run=static_run,
        target=target,
        include_submitted=include_submitted,
        metrics=names,
        metric_settings=stored_settings,
        created_by=created_by,
    )
    chunks = _chunks_for(run)
    if not chunks:
        raise MetricRunError(
            "the target has no model turns to score"
            + ("" if include_submitted or target != "campaign" else " among accepted dialogues"),
            field="target",
        )
    MetricRunChunk.objects.bulk_create(chunks)
    run.progress_total = len(chunks)
    run.save(update_fields=["progress_total"])
    _enqueue_on_commit(run, [c.pk for c in run.chunks.all()])
    return run


def _enqueue_on_commit(run: MetricRun, chunk_ids: list[int]) -> None:
    """Send the chunks once the transaction commits, each to its family's queue; a run with
    nothing left to score is finished instead."""
    if chunk_ids:
        job_send_on_commit("metric_run_chunk", chunk_ids)
    else:
        run_id = run.pk
        transaction.on_commit(lambda: metric_run_finish(run_id=run_id))


def metric_run_chunk_queues(chunk_ids: list[int]) -> list[str]:
    """The queue of each chunk (:func:`chunk_queue` of its family), in the order given."""
    families = dict(MetricRunChunk.objects.filter(pk__in=chunk_ids).values_list("pk", "family"))
    return [chunk_queue(families.get(pk, ""), pk) for pk in chunk_ids]


def metric_runs_finish_ended(now: object = None) -> int:
    """Finish the active runs none of whose chunks is still to do (the last chunk's own finish
    was lost with its worker, or a chunk was failed by the sweeper); returns how many."""
    ended = MetricRun.objects.filter(status__in=ACTIVE).exclude(chunks__status__in=ACTIVE)
    return sum(
        1 for run_id in ended.values_list("pk", flat=True) if metric_run_finish(run_id=run_id)
    )


# --- Cancel, resume -----------------------------------------------------------------------------


@transaction.atomic
def metric_run_cancel(*, run: MetricRun) -> bool:
    """Stop a pending or running run at once, its chunks with it; False when the run had
    already ended. A chunk still scoring learns it from its heartbeat within
    JOB_CANCEL_CHECK_SECONDS (an LLM judge's requests are abandoned then) and stores nothing
    (it writes only under the run's lock, after checking the run). `metric_run_resume` puts
    every chunk not done back to pending."""
    cancelled = job_cancel(job=run)
    if cancelled:
        run.chunks.filter(status__in=ACTIVE).update(
            status=JobStatus.CANCELLED, lease_owner="", lease_expires_at=None
        )
    return cancelled


@transaction.atomic
def metric_run_resume(*, run: MetricRun) -> int:
    """Re-enqueue every chunk not done (after a crash, a failure or a cancel); returns how many.

    Safe while old tasks are still queued or running: a chunk replaces its own rows and is
    counted once, so duplicates of a chunk cost time, never a duplicate score.
    """
    run = MetricRun.objects.select_for_update().get(pk=run.pk)
    if run.status == JobStatus.DONE:
        raise MetricRunError("the run is already done", field="status")
    todo = list(run.chunks.exclude(status=JobStatus.DONE).values_list("pk", flat=True))
    run.chunks.filter(pk__in=todo).update(
        status=JobStatus.PENDING,
        error="",
        attempts=0,
        lease_owner="",
        lease_expires_at=None,
        dispatched_at=None,
    )
    run.status = JobStatus.RUNNING if run.started_at else JobStatus.PENDING
    run.error = ""
    run.finished_at = None
    run.cancel_requested = False
    run.save(update_fields=["status", "error", "finished_at", "cancel_requested"])
    _enqueue_on_commit(run, todo)
    return len(todo)
