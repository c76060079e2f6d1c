"""Fault injection: jobs finish by themselves after their worker is SIGKILLed.

A real prefork worker (two pool processes) and a real Celery beat run on the configured broker
(Redis here and in CI) with a short lease and sweep interval. Mid-run, the test kills either the
pool processes (the worker's parent survives and forks new ones) or the whole worker (and starts
a new one, as a supervisor would). Nobody resumes anything by hand: the beat's sweeper sees the
lease run out and sends the job again. Each job must end with exactly the rows an uninterrupted
run writes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db.models import Count

from chat.models import Dialogue, StaticRun, StaticRunItem
from chat.services import static_runs
from core.models import JobStatus
from metrics.models import MetricRun, MetricRunChunk
from metrics.services import metric_runs
from tests.chat.fake_openai import FakeOpenAI
from tests.chat.static_runs.helpers import make_dataset, openai_backend
from tests.conftest import REPO_ROOT
from tests.helpers import database_url_for_subprocess
from tests.metrics.runs.expected import expected_scores, stored_scores
from tests.metrics.runs.factories import make_study

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

LEXICAL = ["f1", "bleu-1", "bleu-2", "rouge-l", "meteor", "dist-1", "dist-2", "cider", "length"]
# Fast recovery for the test; production defaults are 10 s / 60 s / 30 s / 300 s. The visibility
# timeout brings back the tasks a killed worker had received but not started (decision 47).
JOB_ENV = {
    "JOB_HEARTBEAT_SECONDS": "0.5",
    "JOB_LEASE_SECONDS": "3",
    "JOB_SWEEP_INTERVAL": "1",
    "CELERY_VISIBILITY_TIMEOUT": "5",
}


class Cluster:
    """A prefork worker and a beat process, each in its own session so one kill takes a whole
    process tree."""

    def __init__(self, tmp: Path) -> None:
        self.env = {
            **os.environ,
            **JOB_ENV,
            "DATABASE_URL": database_url_for_subprocess(),
            "PLATFORM_VAR_DIR": str(tmp),
        }
        self.tmp = tmp
        self.worker = self._worker()
        self.beat = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=WARNING"],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _worker(self) -> subprocess.Popen:
        log = open(self.tmp / f"worker-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                "default,chat,metrics,gpu",
                "--pool=prefork",
                "--concurrency=2",
                "--loglevel=INFO",
                "--without-heartbeat",
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def pool_children(self) -> list[int]:
        path = Path(f"/proc/{self.worker.pid}/task/{self.worker.pid}/children")
        return [int(pid) for pid in path.read_text().split()]

    def kill_pool_children(self) -> list[int]:
        children = self.pool_children()
        assert children, "the worker has no pool processes"
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        return children

    def kill_whole_worker(self) -> None:
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait(timeout=10)

    def restart_worker(self) -> None:
        self.worker = self._worker()

    def stop(self) -> None:
        for proc in (self.worker, self.beat):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in (self.worker, self.beat):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)

    def logs(self) -> str:
        """The worker logs' tails and, to tell a hang from slowness, where every thread of the
        live worker's processes is now (py-spy; empty where ptrace is not allowed)."""
        tails = [p.read_text(errors="replace")[-3000:] for p in sorted(self.tmp.glob("*.log"))]
        return "\n".join([*tails, *map(_stacks, [self.worker.pid, *self._children()])])

    def _children(self) -> list[int]:
        try:
            return self.pool_children()
        except FileNotFoundError:
            return []


def _stacks(pid: int) -> str:
    py_spy = Path(sys.executable).with_name("py-spy")
    try:
        done = subprocess.run(
            [str(py_spy), "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"py-spy dump {pid}: {exc}"
    return f"py-spy dump {pid}:\n{done.stdout[-4000:]}{done.stderr[-500:]}"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    running = Cluster(tmp_path)
    _wait(lambda: len(running.pool_children()) == 2, timeout=120, what="two pool processes")
    try:
        yield running
    finally:
        running.stop()


def _wait(condition: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except FileNotFoundError:  # /proc of a process that is starting or gone
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _static_run(server: FakeOpenAI, n: int) -> StaticRun:
    dataset = make_dataset(n=n)
    backend = openai_backend("慢模型", server.base_url, limit=1)
    run = static_runs.static_run_create(name="会崩溃", dataset=dataset, backends=[backend])
    static_runs.static_run_start(run=run)  # no transaction here: queued at once
    return run


def _answered(run: StaticRun) -> int:
    return StaticRunItem.objects.filter(run=run, status="done").count()


def _assert_static_run_whole(run: StaticRun, n: int) -> None:
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    assert (run.progress_done, run.progress_total) == (n, n)
    assert run.attempts >= 2  # it really was claimed again after the kill
    per_item = Dialogue.objects.filter(static_run=run).values("static_item").annotate(k=Count("id"))
    assert len(per_item) == n and {row["k"] for row in per_item} == {1}
    assert Dialogue.objects.filter(static_run=run).count() == n
    assert not StaticRunItem.objects.filter(run=run).exclude(status="done").exists()
    assert not StaticRunItem.objects.filter(run=run, dialogue__isnull=True).exists()


def _finished(job) -> bool:
    job.refresh_from_db()
    return job.status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


def test_a_static_run_finishes_by_itself_after_its_pool_processes_are_killed(cluster):
    n = 24
    with FakeOpenAI(reply="慢慢地回答", token_delay=0.03) as server:
        run = _static_run(server, n)
        _wait(lambda: _answered(run) >= n // 2, timeout=90, what="half of the answers")
        cluster.kill_pool_children()
        run.refresh_from_db()
        assert run.status == JobStatus.RUNNING and _answered(run) < n
        _wait(lambda: _finished(run), timeout=90, what=f"the run to end\n{cluster.logs()}")
    _assert_static_run_whole(run, n)


def test_a_static_run_finishes_by_itself_after_the_whole_worker_is_killed(cluster):
    n = 24
    with FakeOpenAI(reply="慢慢地回答", token_delay=0.03) as server:
        run = _static_run(server, n)
        _wait(lambda: _answered(run) >= n // 2, timeout=90, what="half of the answers")
        cluster.kill_whole_worker()
        run.refresh_from_db()
        assert run.status == JobStatus.RUNNING and _answered(run) < n
        cluster.restart_worker()  # what a supervisor (systemd, compose) does; no resume by hand
        _wait(lambda: _finished(run), timeout=120, what=f"the run to end\n{cluster.logs()}")
    _assert_static_run_whole(run, n)


def _in_flight(run: MetricRun) -> list[int]:
    """Chunks being scored right now, once some are done: a kill then loses work in flight."""
    run.refresh_from_db()
    if run.progress_done < 2:
        return []
    return list(run.chunks.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


def _kill_mid_chunk(cluster: Cluster, run: MetricRun, kill: str) -> None:
    """Kill while a chunk is being scored; chunks take a fraction of a second, so when the
    chunk seen running had finished by the time the signal landed, try again on the next."""
    for _ in range(10):
        _wait(lambda: bool(_in_flight(run)), timeout=120, what="a chunk in flight")
        running = _in_flight(run)
        if kill == "pool_children":
            cluster.kill_pool_children()
        else:
            cluster.kill_whole_worker()
        if MetricRunChunk.objects.filter(pk__in=running, status=JobStatus.RUNNING).exists():
            if kill == "whole_worker":
                cluster.restart_worker()
            return  # a chunk was lost with its worker
        if kill == "whole_worker":
            cluster.restart_worker()
        _wait(lambda: len(cluster.pool_children()) == 2, timeout=120, what="new pool processes")
    raise AssertionError("never caught a chunk in flight")


def _assert_metric_run_whole(run: MetricRun, study) -> None:
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    assert run.progress_done == run.progress_total == run.chunks.count()
    assert run.chunks.filter(attempts__gte=2).exists()  # a chunk was claimed again
    assert not run.chunks.exclude(status=JobStatus.DONE).exists()
    expected = expected_scores(study.dialogues, LEXICAL, {})
    stored = stored_scores(run)  # fails on any duplicate unit
    assert set(stored) == set(expected)
    for key, value in expected.items():
        assert stored[key] == pytest.approx(value, abs=1e-9), key


@pytest.mark.parametrize("kill", ["pool_children", "whole_worker"])
def test_a_metric_run_finishes_by_itself_after_its_worker_is_killed(cluster, kill):
    study = make_study(dialogues_per_cell=120)
    run = metric_runs.metric_run_create(name="崩溃", campaign=study.campaign, metrics=LEXICAL)
    _kill_mid_chunk(cluster, run, kill)
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING and run.progress_done < run.progress_total
    _wait(lambda: _finished(run), timeout=180, what=f"the run to end\n{cluster.logs()}")
    _assert_metric_run_whole(run, study)


# A worker's process as far as receiving one task from the `chat` queue (late acknowledgement,
# as Celery's settings ask) and no further: the test SIGKILLs it there.
_RECEIVE_AND_HANG = """
import os, sys, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from kombu import Exchange, Queue
from config.celery import app

with app.connection_for_read() as conn:
    queue = Queue("chat", Exchange("chat"), routing_key="chat")
    got = lambda body, message: print("received", flush=True)
    with conn.Consumer(queue, accept=["json"], callbacks=[got], prefetch_count=1):
        conn.drain_events(timeout=60)
        time.sleep(600)
"""


def test_a_task_a_killed_worker_had_received_but_not_started_comes_back_by_itself(tmp_path):
    """The slow case of recovery (issue 23 item 9): the worker died after receiving the task and
    before claiming its job, so no lease ran out and the sweeper cannot see it (its pending
    timeout, 15 min, is sized for long queues). It comes back by Redis' visibility timeout, and
    that is what the README's 90 s promise rests on for this case: CELERY_VISIBILITY_TIMEOUT
    (80 s by default, 5 s here) + kombu's 10 s scan of unacknowledged tasks."""
    with FakeOpenAI(reply="好的") as server:
        run = _static_run(server, 2)
        env = {**os.environ, **JOB_ENV, "DATABASE_URL": database_url_for_subprocess()}
        receiver = subprocess.Popen(
            [sys.executable, "-c", _RECEIVE_AND_HANG],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert receiver.stdout is not None
        assert receiver.stdout.readline().strip() == b"received"
        os.killpg(receiver.pid, signal.SIGKILL)
        receiver.wait(timeout=10)
        died = time.monotonic()
        run.refresh_from_db()
        assert run.status == JobStatus.PENDING and run.attempts == 0  # never claimed

        cluster = Cluster(tmp_path)
        try:
            _wait(lambda: _finished(run), timeout=150, what=f"the run to end\n{cluster.logs()}")
        finally:
            cluster.stop()
        waited = time.monotonic() - died
    run.refresh_from_db()
    assert run.status == JobStatus.DONE and run.attempts == 1
    assert Dialogue.objects.filter(static_run=run).count() == 2
    # Handed out again by the visibility timeout, not sooner (nothing else could have).
    assert waited >= float(JOB_ENV["CELERY_VISIBILITY_TIMEOUT"])
