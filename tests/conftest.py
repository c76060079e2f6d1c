"""Shared personas and the real-worker fixture."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from core.access import Role
from tests.helpers import database_url_for_subprocess

REPO_ROOT = Path(__file__).resolve().parent.parent


def make_user(username: str, *roles: Role, password: str = "pw-123456", **extra: object) -> User:
    user = User.objects.create_user(username=username, password=password, **extra)
    for role in roles:
        user.groups.add(Group.objects.get(name=role.value))
    return user


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
    env = {**os.environ, "DATABASE_URL": database_url_for_subprocess()}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            "default,chat,metrics,gpu",
            "--pool=solo",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
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
