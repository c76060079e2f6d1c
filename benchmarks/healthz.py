"""Benchmark: how long `GET /healthz` takes, pinging the workers on every call (before) and
reusing a recent worker check (after, `HEALTH_WORKER_CHECK_MAX_AGE`).

Starts a real Celery worker (the Procfile's `worker` command, concurrency 1) on the configured
broker unless `--no-worker`, waits until it answers, then calls the view through the test client
`--calls` times in each mode and prints the first call and the median/max of the rest, in ms,
and the median also in units of the CPU reference (benchmarks/cpu_reference.py, timed in the same
run; the "after" median is CPU time, the "before" one mostly waits for the worker's answer).
The worker is stopped at the end. Run it against a migrated database and a broker of its own:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/platform_bench \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/5 CELERY_RESULT_BACKEND=redis://127.0.0.1:6379/5 \\
    .venv/bin/python benchmarks/healthz.py [--calls 20] [--no-worker]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from cpu_reference import cpu_reference_s, in_ref, reference_line  # noqa: E402  (benchmarks/, the script's folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--no-worker", action="store_true")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.cache import cache
    from django.test import Client, override_settings

    from core.health import WORKER_CHECK_CACHE_KEY, health_check

    worker = None
    if not args.no_worker:
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                "default",
                "--concurrency=1",
                "--loglevel=WARNING",
            ],
            cwd=REPO,
        )
        deadline = time.monotonic() + 120
        while not health_check(worker_timeout=2)["checks"]["worker"]["ok"]:
            if time.monotonic() > deadline:
                raise SystemExit("the worker did not answer within 120 s")
    try:
        ref = cpu_reference_s()
        print(reference_line(ref))
        client = Client()
        for label, max_age in (("before (ping every call)", 0.0), ("after (reuse 15 s)", 15.0)):
            cache.delete(WORKER_CHECK_CACHE_KEY)
            timings = []
            with override_settings(HEALTH_WORKER_CHECK_MAX_AGE=max_age, HEALTH_WORKER_TIMEOUT=5):
                for _ in range(args.calls):
                    start = time.perf_counter()
                    response = client.get("/healthz")
                    status = response.status_code
                    timings.append((time.perf_counter() - start) * 1000)
            rest = timings[1:]
            down = [k for k, c in response.json()["checks"].items() if not c["ok"]]
            print(
                f"{label}: status {status}, first {timings[0]:.0f} ms, "
                f"then median {statistics.median(rest):.1f} ms "
                f"{in_ref(statistics.median(rest) / 1000, ref)}, max {max(rest):.1f} ms "
                f"over {len(rest)} calls" + (f"; down: {', '.join(down)}" if down else "")
            )
    finally:
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=30)


if __name__ == "__main__":
    main()
