"""Helpers for metric-run tests that need real Celery workers."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

from metrics.models import MetricRun
from tests.conftest import REPO_ROOT
from tests.helpers import start_worker_process


def start_worker() -> subprocess.Popen:
    """Another worker process like the ``celery_worker_process`` fixture's (to replace a
    killed one)."""
    return start_worker_process(REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for(run: MetricRun, done: Callable[[MetricRun], bool], timeout: float = 120) -> MetricRun:
    """Poll the run until ``done(run)``; fail with its state after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        run.refresh_from_db()
        if done(run):
            return run
        if time.monotonic() > deadline:
            raise AssertionError(
                f"run {run.pk} still {run.status} {run.progress_done}/{run.progress_total}"
                f" after {timeout}s: {run.error}"
            )
        time.sleep(0.05)
