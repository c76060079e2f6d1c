"""Shared personas and the real-worker fixture."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from core.access import Role
from tests.helpers import start_worker_process

REPO_ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """The test client and the browser tests' live server speak plain HTTP: the production
    defaults (HTTPS redirect, Secure cookies, HSTS; on whenever DEBUG is off) are tested on
    their own in tests/core/test_security.py. Set for the whole session, before any server or
    middleware reads them (SecurityMiddleware keeps its settings from when it is built)."""
    from django.conf import settings

    settings.SECURE_SSL_REDIRECT = False
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    settings.SECURE_HSTS_SECONDS = 0


def make_user(username: str, *roles: Role, password: str = "pw-123456", **extra: object) -> User:
    user = User.objects.create_user(username=username, password=password, **extra)
    for role in roles:
        user.groups.add(Group.objects.get(name=role.value))
    return user


@pytest.fixture(autouse=True)
def embedded_reply_streams(settings) -> None:
    """Tests serve the app from one process (a uvicorn thread, the test client): the embedded
    mode, replies in memory and generated in that process. The scaled-out mode, with Redis and
    `chat` workers, has tests of its own (tests/chat/live/test_scale_out.py) that override this."""
    settings.CHAT_REPLY_STREAMS_URL = "memory://"


@pytest.fixture(autouse=True)
def _metric_models_of_its_own(settings, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Models trained on the installation (the demo's vectors, `load_demo`) go to a folder of
    each test's own: one test's demo would otherwise give every later Chinese run a model."""
    settings.METRIC_MODELS_DIR = str(tmp_path_factory.mktemp("metric-models"))


@pytest.fixture(autouse=True)
def _chat_queries_see_the_test_transaction(request: pytest.FixtureRequest, settings) -> None:
    """The chat's async views run their queries on threads with connections of their own, which
    cannot see the rows of a test wrapped in a transaction: such tests run them on the test's
    thread instead (`CHAT_DB_THREADS = 0`); transactional tests keep the real threads."""
    marker = request.node.get_closest_marker("django_db")
    transactional = "transactional_db" in request.fixturenames or (
        marker is not None and marker.kwargs.get("transaction", False)
    )
    if not transactional:
        settings.CHAT_DB_THREADS = 0


@pytest.fixture(autouse=True)
def _each_test_starts_in_the_default_language() -> Iterator[None]:
    """A request through the test client activates its language on the test's thread
    (LocaleMiddleware, a campaign's fixed language) and nothing deactivates it: the tests after
    it would run in that language."""
    from django.utils import translation

    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _each_test_pings_the_workers_afresh() -> None:
    """/healthz reuses its last worker check for a while (HEALTH_WORKER_CHECK_MAX_AGE), in the
    cache: one test's answer (no worker) must not become the next one's."""
    from django.core.cache import cache

    from core.health import WORKER_CHECK_CACHE_KEY

    cache.delete(WORKER_CHECK_CACHE_KEY)


@pytest.fixture
def researcher(db) -> User:
    return make_user("rita", Role.RESEARCHER)


@pytest.fixture
def expert(db) -> User:
    return make_user("eddie", Role.EXPERT)


@pytest.fixture
def crowdworker(db) -> User:
    return make_user("cora", Role.CROWDWORKER)


def _client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def researcher_client(researcher: User) -> Client:
    return _client_for(researcher)


@pytest.fixture
def expert_client(expert: User) -> Client:
    return _client_for(expert)


@pytest.fixture
def crowdworker_client(crowdworker: User) -> Client:
    return _client_for(crowdworker)


@pytest.fixture
def celery_worker_process(
    django_db_serialized_rollback, transactional_db
) -> Iterator[subprocess.Popen]:
    """A real Celery worker process on the configured broker (Redis in CI, embedded otherwise).

    Eager mode would hide serialisation and transaction bugs, so integration tests use this. The
    worker sees only committed rows, hence a transactional database; the serialized rollback puts
    back what migrations created (roles, skills, rubric presets) once the test has flushed it.
    """
    proc = start_worker_process(REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _wait_until_the_worker_answers(proc)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_until_the_worker_answers(proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Block until the worker has booted and consumes its queues (importing torch and the metric
    kernels takes seconds, more on a loaded machine), so tests never race its start-up."""
    from celery.exceptions import TimeoutError as CeleryTimeout

    from core.tasks import ping

    result = ping.delay()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"the Celery worker exited at start:\n{output}")
        try:
            if result.get(timeout=1.0) == "pong":
                return
        except CeleryTimeout:
            continue
    proc.kill()
    pytest.fail(f"the Celery worker did not answer a ping within {timeout:.0f} s")


@dataclasses.dataclass(frozen=True)
class SentJob:
    kind: str
    pk: int
    queue: str | None


@pytest.fixture
def sent_jobs(monkeypatch) -> list[SentJob]:
    """The jobs sent to a worker (`core.jobs.job_send`, the one way a job is sent), recorded in
    order instead of being sent."""
    from core import jobs

    sent: list[SentJob] = []
    kinds = {kind.task: name for name, kind in jobs.JOB_KINDS.items()}

    def record(task: str, work: list[tuple[int, str | None]]) -> None:
        sent.extend(SentJob(kinds[task], pk, queue) for pk, queue in work)

    monkeypatch.setattr(jobs, "_send_tasks", record)
    return sent


@pytest.fixture
def run_jobs_inline(monkeypatch) -> None:
    """Every job sent (`core.jobs.job_send`) runs at once in this process, as a worker would run
    it (`Task.apply`: a failure is stored on the job by the task, not raised here)."""
    from config.celery import app
    from core import jobs

    app.loader.import_default_modules()  # the task modules, as a worker loads them

    def run(task: str, work: list[tuple[int, str | None]]) -> None:
        for pk, _queue in work:
            app.tasks[task].apply(args=(pk,))

    monkeypatch.setattr(jobs, "_send_tasks", run)
