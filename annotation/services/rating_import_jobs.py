"""Large ratings files imported by a worker, with a progress bar and a cancel (issue 23 item 12).

A file of more than `INLINE_MAX_ROWS` data rows is stored with a `RatingImport` job and imported
by a Celery worker (`annotation.import_ratings`); a smaller one is imported while the request
waits, as before. The threshold is a row count because the import's time grows with the rows:
at the ≥ 2,000 rows/s the import must reach on a loaded machine (≈ 10,000 rows/s measured here),
10,000 rows take at most about 5 s — an MSDE-size study (≈ 21,000 ratings) or anything larger
runs as a job. The count is of the file's lines, so a multi-line text cell only counts towards
a job.

The import itself is `ratings_import`, all-or-nothing in one transaction: its progress is
written, and the cancel checked, from another database connection between its steps (a write
inside the transaction would stay invisible until the end and lock the job's row against the
heartbeat and the cancel). A cancel or a refusal rolls the whole import back.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from typing import IO

from django.contrib.auth.models import User
from django.db import connections

from annotation.models import RatingImport
from annotation.services.rating_import import (
    RatingImportError,
    RatingImportResult,
    import_target,
    ratings_import,
    read_upload,
)
from core.jobs import (
    FINISHED,
    Heartbeat,
    JobCancelled,
    JobStatus,
    job_cancel,
    job_claim,
    job_finish,
    job_progress,
    job_send_on_commit,
    job_still_held,
    new_lease_owner,
)

logger = logging.getLogger(__name__)

INLINE_MAX_ROWS = 10_000
PROGRESS_STEPS = 100
# The least time between two progress writes (each opens a connection of its own).
PROGRESS_INTERVAL_S = 0.5


def count_rows(data: bytes) -> int:
    """The file's data rows, counted by lines (the header and blank lines not counted)."""
    lines = sum(1 for line in data.splitlines() if line.strip())
    return max(0, lines - 1)


def rating_import_submit(
    *,
    fileobj: IO[bytes],
    campaign_name: str,
    rubric_ref: str,
    created_by: User | None = None,
    filename: str = "",
) -> RatingImportResult | RatingImport:
    """Import a ratings file now (up to `INLINE_MAX_ROWS` rows: the result), or store it as a
    job a worker imports after commit (the job). A campaign or rubric that does not exist and a
    file over the upload limit are refused at once either way."""
    data = read_upload(fileobj)
    if count_rows(data) <= INLINE_MAX_ROWS:
        return ratings_import(
            fileobj=io.BytesIO(data),
            campaign_name=campaign_name,
            rubric_ref=rubric_ref,
            created_by=created_by,
        )
    campaign, rubric = import_target(campaign_name=campaign_name, rubric_ref=rubric_ref)
    job = RatingImport.objects.create(
        campaign=campaign,
        rubric=rubric,
        filename=filename[:255],
        data=data,
        rows=count_rows(data),
        created_by=created_by,
        progress_total=PROGRESS_STEPS,
    )
    job_send_on_commit("rating_import", job.pk)
    return job


def rating_import_cancel(*, job: RatingImport) -> bool:
    """Stop a pending or running import (a running one at its next step, rolled back whole);
    False when it had already ended. The stored file is dropped."""
    cancelled = job_cancel(job=job)
    _drop_file(job.pk)
    return cancelled


def _drop_file(import_id: int) -> None:
    RatingImport.objects.filter(pk=import_id, status__in=FINISHED).update(data=b"")


class _ProgressWriter:
    """The import's progress callback: writes the job's progress and checks that the job may
    go on, both from a connection of its own (a short-lived thread), at most every
    `PROGRESS_INTERVAL_S` (and always at the end); raises JobCancelled once it may not."""

    def __init__(self, import_id: int, owner: str, beat: Heartbeat) -> None:
        self.import_id, self.owner, self.beat = import_id, owner, beat
        self.written = -1
        self.last = 0.0

    def __call__(self, fraction: float) -> None:
        self.beat.check()
        done = min(PROGRESS_STEPS, int(fraction * PROGRESS_STEPS))
        now = time.monotonic()
        if done == self.written or (
            done < PROGRESS_STEPS and now - self.last < PROGRESS_INTERVAL_S
        ):
            return
        self.written, self.last = done, now
        held = [True]

        def write() -> None:
            try:
                job_progress(RatingImport, self.import_id, done=done)
                held[0] = job_still_held(RatingImport, self.import_id, owner=self.owner)
            except Exception:  # noqa: BLE001 - a progress bar is no reason to fail the import
                logger.warning("progress of rating import %s not written", self.import_id)
            finally:
                connections.close_all()

        thread = threading.Thread(target=write, name=f"rating-import-progress-{self.import_id}")
        thread.start()
        thread.join()
        if not held[0]:
            raise JobCancelled(f"RatingImport {self.import_id}")


def rating_import_run(*, import_id: int) -> None:
    """Import a stored file (idempotent: an import a live worker holds is left alone; one whose
    worker died is imported again from the stored file, the first attempt having rolled back).

    A refused file fails the job with the refusal (row and column named); a cancel ends it
    cancelled; either way nothing is saved. The stored file is dropped once the job ends."""
    owner = new_lease_owner()
    if not job_claim(RatingImport, import_id, owner=owner):
        return  # another worker holds it, or it is finished or cancelled
    RatingImport.objects.filter(pk=import_id).update(
        progress_done=0, progress_total=PROGRESS_STEPS, error=""
    )
    try:
        with Heartbeat(RatingImport, import_id, owner=owner) as beat:
            _run(import_id, owner, beat)
    finally:
        _drop_file(import_id)


def _run(import_id: int, owner: str, beat: Heartbeat) -> None:
    job = RatingImport.objects.select_related("campaign", "rubric", "created_by").get(pk=import_id)
    try:
        result = ratings_import(
            fileobj=io.BytesIO(bytes(job.data)),
            campaign_name=job.campaign.name,
            rubric_ref=f"{job.rubric.key}:{job.rubric.version}",
            created_by=job.created_by,
            progress=_ProgressWriter(import_id, owner, beat),
        )
    except JobCancelled:
        job_finish(RatingImport, import_id, status=JobStatus.CANCELLED, owner=owner)
        return
    except RatingImportError as exc:
        job_finish(RatingImport, import_id, status=JobStatus.FAILED, owner=owner, error=str(exc))
        return
    except Exception as exc:
        job_finish(
            RatingImport,
            import_id,
            status=JobStatus.FAILED,
            owner=owner,
            error=f"internal error: {type(exc).__name__}: {exc}",
        )
        raise
    job_finish(
        RatingImport,
        import_id,
        status=JobStatus.DONE,
        owner=owner,
        progress_done=PROGRESS_STEPS,
        rating_job=result.job,
        result={
            "ratings": result.ratings,
            "dialogues": result.dialogues,
            "raters": result.raters,
            "new_raters": result.new_raters,
            "incomplete": result.incomplete,
        },
    )
