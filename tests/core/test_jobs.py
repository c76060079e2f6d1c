"""The one job model: claim, heartbeat, cancel, retry and the sweeper, on every kind of job."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from chat.models import StaticRun
from chat.services import static_runs
from core import jobs
from core.jobs import JobStillRunning, job_cancel, job_claim, job_heartbeat, job_reset, jobs_sweep
from core.models import JobStatus
from metrics.models import FollowupSelection, MetricRun, Report, TrainedDiscriminator
from tests.chat.factories import DatasetFactory
from tests.chat.static_runs.helpers import make_dataset, retrieval_backend
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db


def _kinds_and_ids(sent_jobs) -> list[tuple[str, int]]:
    return [(job.kind, job.pk) for job in sent_jobs]


def _run() -> StaticRun:
    number = StaticRun.objects.count()
    dataset = make_dataset(name=f"数据{number}", n=2)
    backend = retrieval_backend(f"检索{number}", dataset)
    return static_runs.static_run_create(name=f"任务{number}", dataset=dataset, backends=[backend])


def test_every_background_job_shares_the_one_status_and_base() -> None:
    from core.models import Job

    for model in (StaticRun, MetricRun, Report, TrainedDiscriminator, FollowupSelection):
        assert issubclass(model, Job)
        assert model._meta.get_field("status").choices == JobStatus.choices
        for field in ("started_at", "finished_at", "cancel_requested", "lease_expires_at"):
            assert model._meta.get_field(field)


def test_a_second_claim_is_refused_while_the_lease_lives_and_taken_once_it_ran_out() -> None:
    run = _run()
    assert job_claim(StaticRun, run.pk, owner="a")
    assert not job_claim(StaticRun, run.pk, owner="b")
    StaticRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now())
    assert job_claim(StaticRun, run.pk, owner="b")
    run.refresh_from_db()
    assert (run.status, run.lease_owner, run.attempts) == (JobStatus.RUNNING, "b", 2)
    assert run.started_at is not None
    # The first worker, still alive somewhere, loses its heartbeat and stops.
    assert not job_heartbeat(StaticRun, run.pk, owner="a")
    assert job_heartbeat(StaticRun, run.pk, owner="b")


def test_cancel_ends_a_job_whose_worker_died_at_once() -> None:
    run = _run()
    job_claim(StaticRun, run.pk, owner="dead")
    StaticRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    static_runs.static_run_cancel(run=run)
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and run.finished_at is not None


def _job_of(model: type) -> Any:
    if model is StaticRun:
        return _run()
    if model is Report:
        return Report.objects.create(name="报告")
    return TrainedDiscriminator.objects.create(name="判别器", dataset=DatasetFactory())


@pytest.mark.parametrize("model", [StaticRun, Report, TrainedDiscriminator])
def test_cancel_ends_a_job_a_live_worker_holds_at_once_and_the_worker_loses_it(model) -> None:
    """Issue 23 item 7: a cancel is a state change, not a wish waiting for the worker's next
    checkpoint (or, when that worker is dead or hung, for the sweeper)."""
    job = _job_of(model)
    assert job_claim(model, job.pk, owner="live")
    assert job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.cancel_requested
    assert job.finished_at is not None and job.lease_owner == ""
    assert not jobs.job_still_held(model, job.pk, owner="live")
    assert not job_heartbeat(model, job.pk, owner="live")
    # What the worker still writes afterwards changes nothing; a second cancel says so.
    assert not jobs.job_finish(model, job.pk, status=JobStatus.DONE, owner="live")
    assert not job_cancel(job=job)


def test_retry_is_refused_while_a_worker_holds_the_job_and_allowed_once_it_died() -> None:
    run = _run()
    job_claim(StaticRun, run.pk, owner="w")
    run.refresh_from_db()
    with pytest.raises(JobStillRunning):
        job_reset(job=run)
    StaticRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    run.refresh_from_db()
    assert static_runs.static_run_retry_failed(run=run) == 2
    run.refresh_from_db()
    assert run.status == JobStatus.PENDING and run.attempts == 0


def test_the_sweeper_sends_a_job_whose_lease_ran_out_exactly_once(
    sent_jobs, django_capture_on_commit_callbacks
) -> None:
    run = _run()
    job_claim(StaticRun, run.pk, owner="dead")
    StaticRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        first = jobs_sweep()
        second = jobs_sweep()
    assert first.redispatched == {"static_run": [run.pk]}
    assert second.redispatched == {}
    assert _kinds_and_ids(sent_jobs) == [("static_run", run.pk)]


def test_the_sweeper_leaves_live_and_recently_sent_jobs_alone(sent_jobs) -> None:
    running, queued = _run(), _run()
    job_claim(StaticRun, running.pk, owner="alive")
    StaticRun.objects.filter(pk=queued.pk).update(dispatched_at=timezone.now())
    result = jobs_sweep()
    assert (result.redispatched, result.failed, result.cancelled) == ({}, {}, {})
    assert _kinds_and_ids(sent_jobs) == []


@override_settings(JOB_PENDING_TIMEOUT=60)
def test_the_sweeper_sends_again_a_job_whose_message_was_lost(
    sent_jobs, django_capture_on_commit_callbacks
) -> None:
    run = _run()
    StaticRun.objects.filter(pk=run.pk).update(dispatched_at=timezone.now() - timedelta(seconds=61))
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_sweep().redispatched == {"static_run": [run.pk]}
    assert _kinds_and_ids(sent_jobs) == [("static_run", run.pk)]


@override_settings(JOB_MAX_ATTEMPTS=3)
def test_a_job_that_keeps_killing_its_worker_fails_with_the_reason(sent_jobs) -> None:
    run = _run()
    StaticRun.objects.filter(pk=run.pk).update(
        status=JobStatus.RUNNING,
        attempts=3,
        lease_owner="x",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )
    result = jobs_sweep()
    run.refresh_from_db()
    assert result.failed == {"static_run": [run.pk]}
    assert run.status == JobStatus.FAILED and "3" in run.error and run.finished_at
    assert _kinds_and_ids(sent_jobs) == []


def test_the_sweeper_ends_a_cancelled_job_whose_worker_died(sent_jobs) -> None:
    run = _run()
    job_claim(StaticRun, run.pk, owner="dead")
    StaticRun.objects.filter(pk=run.pk).update(
        cancel_requested=True, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert jobs_sweep().cancelled == {"static_run": [run.pk]}
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED
    assert _kinds_and_ids(sent_jobs) == []


def test_every_job_kind_is_registered_with_the_sweeper() -> None:
    assert set(jobs.JOB_KINDS) >= {
        "static_run",
        "metric_run_chunk",
        "report",
        "trained_discriminator",
        "followup_selection",
    }


def test_every_job_kind_names_a_registered_celery_task() -> None:
    from config.celery import app

    app.loader.import_default_modules()  # what a worker does at start
    for name, kind in jobs.JOB_KINDS.items():
        assert kind.task in app.tasks, f"{name}: no Celery task named {kind.task!r}"


def test_job_send_marks_the_rows_sent_and_sends_each_to_its_queue(sent_jobs, settings) -> None:
    settings.GPU_QUEUE = True
    selection_ids = [11, 12]
    jobs.job_send("followup_selection", selection_ids)
    run = _run()
    jobs.job_send("static_run", run.pk)
    assert [(job.kind, job.pk, job.queue) for job in sent_jobs] == [
        ("followup_selection", 11, "gpu"),
        ("followup_selection", 12, "gpu"),
        ("static_run", run.pk, None),  # CELERY_TASK_ROUTES sends chat.tasks.* to `chat`
    ]
    run.refresh_from_db()
    assert run.dispatched_at is not None


def test_beat_runs_the_sweeper_on_the_configured_interval(settings) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["jobs-sweep"]
    assert entry["task"] == "core.jobs_sweep"
    assert entry["schedule"] == settings.JOB_SWEEP_INTERVAL
    assert settings.CELERY_TASK_REJECT_ON_WORKER_LOST and settings.CELERY_TASK_ACKS_LATE


def test_the_procfile_and_compose_run_exactly_one_beat() -> None:
    from tests.conftest import REPO_ROOT

    procfile = (REPO_ROOT / "Procfile").read_text().splitlines()
    assert [line for line in procfile if line.startswith("beat:")] == [
        "beat: .venv/bin/celery -A config beat --loglevel=INFO"
    ]
    compose = (REPO_ROOT / "docker-compose.yml").read_text()
    assert compose.count('"celery", "-A", "config", "beat"') == 1


def test_the_default_recovery_times_keep_the_readme_promise_of_90_seconds():
    """Both ways back after a worker dies fit in the README's 90 s: a lease that ran out
    (JOB_LEASE_SECONDS + JOB_SWEEP_INTERVAL) and a task received but never started (the
    visibility timeout + kombu's scan interval). It was 300 s + 10 s for the second."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "JOB_"))}
    env["CELERY_BROKER_URL"] = "redis://127.0.0.1:6379/0"
    code = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings');"
        "django.setup(); from django.conf import settings as s;"
        "o = s.CELERY_BROKER_TRANSPORT_OPTIONS;"
        "print(s.JOB_LEASE_SECONDS + s.JOB_SWEEP_INTERVAL,"
        " o['visibility_timeout'] + o['unacked_restore_interval'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    lease_path, received_path = map(float, out.stdout.split())
    assert lease_path <= 90 and received_path <= 90
