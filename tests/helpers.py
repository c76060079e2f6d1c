"""Small helpers shared by test modules."""

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import IntegrityError, connection, transaction


def violates_constraint(create: Callable[[], object]) -> bool:
    """True when `create()` is refused by a database constraint (checked in a savepoint)."""
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False


def database_url_for_subprocess() -> str:
    """The URL of the database the tests use now, for a process a test starts."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{params['NAME']}"
    host = params.get("HOST") or "127.0.0.1"
    port = params.get("PORT") or 5432
    return f"postgres://{params['USER']}@{host}:{port}/{params['NAME']}"


# A real Celery worker on every queue, one task at a time, quiet and quick to start.
WORKER_COMMAND = [
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
]


def start_worker_process(cwd: Path, **popen: Any) -> subprocess.Popen[bytes]:
    """A Celery worker subprocess on the test database (``popen`` sets its output pipes)."""
    # No model warm-up in test workers: the tests that need a model load it on first use, and
    # warming every kernel in every test worker would only add CPU time to the suite.
    env = {
        "METRICS_WORKER_WARMUP": "false",
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
    }
    return subprocess.Popen(WORKER_COMMAND, cwd=cwd, env=env, **popen)
