"""Metric runs through a real Celery worker: the chord of chunks, a killed worker, cancel."""

from __future__ import annotations

import time

import pytest

from metrics.models import JobStatus
from metrics.services import metric_runs as services
from tests.metrics.runs.conftest import start_worker, wait_for
from tests.metrics.runs.expected import expected_scores, stored_scores
from tests.metrics.runs.factories import make_study

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

LEXICAL = ["f1", "bleu-1", "bleu-2", "rouge-l", "meteor", "dist-1", "dist-2", "cider", "length"]


def _ended(run) -> bool:
    return run.status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


def test_a_worker_scores_every_level_like_the_registry(celery_worker_process, researcher):
    study = make_study()
    run = services.metric_run_create(
        name="worker", campaign=study.campaign, metrics=LEXICAL, created_by=researcher
    )
    run = wait_for(run, _ended)
    assert run.status == JobStatus.DONE, run.error
    assert run.progress_done == run.progress_total == 4 * 7
    expected = expected_scores(study.dialogues, LEXICAL, {})
    stored = stored_scores(run)
    assert set(stored) == set(expected)
    for key, value in expected.items():
        assert stored[key] == pytest.approx(value, abs=1e-9), key


def test_resume_after_a_killed_worker_leaves_no_duplicates(celery_worker_process, researcher):
    study = make_study(dialogues_per_cell=60)
    run = services.metric_run_create(
        name="crash", campaign=study.campaign, metrics=LEXICAL, created_by=researcher
    )
    wait_for(run, lambda r: r.progress_done >= 2, timeout=120)
    celery_worker_process.kill()
    celery_worker_process.wait(timeout=10)
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING
    assert 2 <= run.progress_done < run.progress_total
    replacement = start_worker()
    try:
        assert services.metric_run_resume(run=run) == run.progress_total - run.progress_done
        run = wait_for(run, lambda r: _ended(r) and r.progress_done == r.progress_total)
        assert run.status == JobStatus.DONE, run.error
        expected = expected_scores(study.dialogues, LEXICAL, {})
        stored = stored_scores(run)  # fails on any duplicate unit
        assert set(stored) == set(expected)
        for key, value in expected.items():
            assert stored[key] == pytest.approx(value, abs=1e-9), key
    finally:
        replacement.terminate()
        replacement.wait(timeout=15)


def test_a_cancelled_run_stops_writing(celery_worker_process, researcher):
    study = make_study(dialogues_per_cell=60)
    run = services.metric_run_create(
        name="cancel", campaign=study.campaign, metrics=LEXICAL, created_by=researcher
    )
    wait_for(run, lambda r: r.progress_done >= 1, timeout=120)
    assert services.metric_run_cancel(run=run)
    done_at_cancel = run.progress_done
    time.sleep(3)
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED
    # At most the chunk that was being written when the cancel came in.
    assert run.progress_done <= done_at_cancel + 1 < run.progress_total
