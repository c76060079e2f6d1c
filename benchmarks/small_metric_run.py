"""Benchmark: how long a small metric run takes on the embedded defaults, as a researcher waits.

Issue 11's target: a small run (≤ 100 responses) with MSDE-16 finishes in ≤ 10 s on the
embedded defaults (SQLite, the SQLAlchemy/SQLite broker, the worker `make demo` starts). The
script builds a fresh embedded database in a temporary directory, loads the demo, starts a Celery
worker as the Procfile does (all queues, `WORKER_CONCURRENCY`, default 2, model warm-up on), has
both demo systems answer N/2 samples of the Chinese demo dialogues (a static run, not timed),
waits for the worker's model warm-up (as a researcher's run finds it minutes after `make demo`),
then times MSDE-16 from `metric_run_create` to the run's end, as the run page would show it.
Each time is printed also in units of the CPU reference (benchmarks/cpu_reference.py), timed
in the same run while the worker is idle.

    .venv/bin/python benchmarks/small_metric_run.py [--responses 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cpu_reference import cpu_reference_s, in_ref, reference_line  # noqa: E402  (benchmarks/, the script's folder)

TARGET_S = 10.0
CONCURRENCY = int(os.environ.get("WORKER_CONCURRENCY", "2"))


def _start_worker(log: Path) -> subprocess.Popen[bytes]:
    """The Procfile's worker (its queues and concurrency), its log in ``log``."""
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
            f"--concurrency={CONCURRENCY}",
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


def _warm(log: Path) -> bool:
    """Every pool process has finished its model warm-up (metrics.services.warmup): as when a
    researcher starts a run minutes after `make demo` started the worker."""
    return log.read_text(errors="replace").count("metrics warm-up done") >= CONCURRENCY


def _dataset(name: str):  # type: ignore[no-untyped-def]  # a Dataset; Django is set up late
    """The four Chinese demo datasets as one (96 samples), so 2 systems give ~100 responses."""
    import io

    from chat.models import Dataset
    from chat.services.datasets import dataset_import
    from workspace.demo import DEMO_DATA_DIR

    lines = b"".join(
        (DEMO_DATA_DIR / f"zh_{skill}.jsonl").read_bytes().rstrip(b"\n") + b"\n"
        for skill in ("chitchat", "knowledge", "persona", "recommendation")
    )
    return dataset_import(
        fileobj=io.BytesIO(lines),
        name=name,
        source_format=Dataset.Format.JSONL,
        language="zh",
        skill="knowledge",
        description="benchmarks/small_metric_run.py",
        created_by=None,
    )


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=100, help="responses scored (≤ 100)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from config.embedded import embedded_environment

    os.environ.update(embedded_environment("small-run-"))
    import django

    django.setup()
    import logging

    logging.getLogger("axes").setLevel(logging.WARNING)
    from django.core.management import call_command

    from chat.models import Backend, StaticRun
    from chat.services.static_runs import static_run_create, static_run_start
    from core.models import JobStatus
    from metrics.models import MetricRun
    from metrics.services.metric_runs import metric_run_create
    from workspace.demo import DEMO_CAMPAIGN_BACKENDS

    call_command("migrate", verbosity=0)
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    log = Path(os.environ["PLATFORM_VAR_DIR"]) / "worker.log"
    worker = _start_worker(log)
    try:
        backends = list(Backend.objects.filter(name__in=DEMO_CAMPAIGN_BACKENDS))
        dataset = _dataset("bench·96")
        per_backend = max(1, min(args.responses // len(backends), dataset.sample_count))
        static = static_run_create(
            name="small run",
            dataset=dataset,
            backends=backends,
            sample_size=per_backend,
            seed=1,
        )
        static_run_start(run=static)
        _wait_for(
            lambda: StaticRun.objects.get(pk=static.pk).status == JobStatus.DONE,
            300,
            "the static run (is the worker up?)",
        )
        _wait_for(lambda: _warm(log), 300, "the worker's model warm-up")
        static.refresh_from_db()
        responses = static.campaign.dialogues.count()
        ref = cpu_reference_s()
        print(reference_line(ref))
        print(f"{responses} responses from {len(backends)} systems; MSDE-16; target ≤ {TARGET_S} s")
        times = []
        for n in range(args.repeat):
            start = time.perf_counter()
            run = metric_run_create(name=f"MSDE-16 #{n}", metrics=["msde16"], static_run=static)
            _wait_for(
                lambda run=run: (
                    MetricRun.objects.get(pk=run.pk).status in (JobStatus.DONE, JobStatus.FAILED)
                ),
                600,
                "the metric run",
            )
            elapsed = time.perf_counter() - start
            run.refresh_from_db()
            times.append(elapsed)
            print(
                f"run {n + 1}: {elapsed:6.2f} s {in_ref(elapsed, ref)}  ({run.progress_total} "
                f"chunks, {run.status})" + ("  SLOW" if elapsed > TARGET_S else "")
            )
        print(
            f"median {statistics.median(times):.2f} s {in_ref(statistics.median(times), ref)}, "
            f"best {min(times):.2f} s, worst {max(times):.2f} s"
        )
    finally:
        worker.terminate()
        worker.wait(timeout=30)


if __name__ == "__main__":
    main()
