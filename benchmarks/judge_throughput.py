"""Benchmark: an LLM judge over 2,000 dialogues with the MSDE rubric, through the fake server.

The judge is the fake OpenAI-compatible server of the tests (`tests/chat/fake_openai.py`) in a
process of its own, answering every request after `--latency` seconds (default 50 ms) with a
well-formed JSON judgement of the questions asked. The platform side is the real code path of a
judge run: `judge_run_create` (prompts rendered per dialogue from the rubric, estimate), then
every chunk scored by `metric_run_score_chunk` exactly as a Celery worker does (cache lookups,
concurrent requests under the backend's concurrency limit, parsing, answers and scores written
idempotently), by `--workers` worker threads.

Printed figures:
- judged items per second for the first run (target ≥ 200/s: the platform is never the
  bottleneck of a 50 ms endpoint at concurrency 32), and requests sent;
- the re-run answered from the request cache: wall time and requests sent (must be 0);
- peak memory (RSS) of this process;
- the CPU reference (benchmarks/cpu_reference.py), and each CPU-bound figure also in its units.

Run it against a database of its own (it is migrated; the rows it creates are deleted at the
end unless --keep):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/platform_bench \\
    .venv/bin/python benchmarks/judge_throughput.py [--dialogues 2000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import resource
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from cpu_reference import cpu_reference_s, in_ref, per_ref, reference_line  # noqa: E402  (benchmarks/, the script's folder)

SKILLS = ("chitchat", "knowledge", "recommendation", "persona")
EXCHANGES = [
    ("你好，最近在看什么电影？", "在看《流浪地球》，导演是郭帆，特效很震撼。"),
    ("你喜欢科幻片吗？", "喜欢，科幻片很有想象力，尤其是国产科幻。"),
    ("推荐一本书吧。", "推荐你读刘慈欣的《三体》，讲的是人类与三体文明的故事。"),
]


def _serve(latency: float, ready: multiprocessing.connection.Connection) -> None:
    from tests.chat.fake_openai import FakeOpenAI
    from tests.judges.helpers import answer_for

    with FakeOpenAI(reply_fn=answer_for, latency=latency, keep_alive=True) as server:
        ready.send(server.base_url)
        ready.recv()  # until the parent says stop


def _make_campaign(n: int, backends: int):  # type: ignore[no-untyped-def]  # returns a Campaign; Django is set up late
    from chat.models import Backend, Campaign, CampaignBackend, Dialogue, Skill, Turn

    stamp = int(time.time())
    campaign = Campaign.objects.create(name=f"judge-bench-{stamp}", mode=Campaign.Mode.INTERACTIVE)
    systems = [
        Backend.objects.create(
            name=f"judge-bench-system-{stamp}-{i}", adapter=Backend.Adapter.IMPORTED, active=False
        )
        for i in range(backends)
    ]
    for i, system in enumerate(systems):
        CampaignBackend.objects.create(campaign=campaign, backend=system, alias=f"模型 {i}")
    skills = {s.key: s for s in Skill.objects.filter(key__in=SKILLS)}
    dialogues = Dialogue.objects.bulk_create(
        [
            Dialogue(
                campaign=campaign,
                backend=systems[i % backends],
                skill=skills[SKILLS[i % len(SKILLS)]],
                language="zh",
                status=Dialogue.Status.ACCEPTED,
                grounding={
                    "knowledge": [["流浪地球", "导演", "郭帆"]],
                    "goal": [["电影", "流浪地球"]],
                },
            )
            for i in range(n)
        ],
        batch_size=1000,
    )
    turns = []
    for i, dialogue in enumerate(dialogues):
        for j in range(2):
            user, reply = EXCHANGES[(i + j) % len(EXCHANGES)]
            turns.append(Turn(dialogue=dialogue, index=2 * j, speaker="user", text=user))
            turns.append(
                Turn(dialogue=dialogue, index=2 * j + 1, speaker="system", text=f"{reply}（{i}）")
            )
    Turn.objects.bulk_create(turns, batch_size=2000)
    return campaign, systems


def _score(run, workers: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]  # run is a MetricRun; Django is set up late
    from django.db import connections

    from metrics.services import metric_run_scoring

    todo: queue.Queue[int] = queue.Queue()
    for chunk_id in run.chunks.order_by("pk").values_list("pk", flat=True):
        todo.put(chunk_id)
    errors: list[str] = []

    def worker() -> None:
        try:
            while True:
                try:
                    chunk_id = todo.get_nowait()
                except queue.Empty:
                    return
                outcome = metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
                if outcome != "done":
                    errors.append(f"chunk {chunk_id}: {outcome}")
        finally:
            connections.close_all()

    started, cpu = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    metric_run_scoring.metric_run_finish(run_id=run.pk)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if errors:
        run.refresh_from_db()
        first_error = run.chunks.exclude(error="").values_list("error", flat=True).first()
        raise SystemExit(f"chunks failed: {errors[:3]} {first_error}")
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dialogues", type=int, default=2000)
    parser.add_argument("--systems", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="worker threads scoring chunks")
    parser.add_argument("--part-size", type=int, default=None, help="dialogues per chunk")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import Rubric
    from chat.models import Backend
    from judges import services
    from judges.models import Judge, JudgeCacheEntry, JudgeRun
    from judges.services import planning

    if args.part_size:
        planning.PART_SIZE = args.part_size

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("fork").Process(
        target=_serve, args=(args.latency, child), daemon=True
    )
    server.start()
    base_url = parent.recv()

    campaign, systems = _make_campaign(args.dialogues, args.systems)
    stamp = campaign.name.rsplit("-", 1)[1]
    backend = Backend.objects.create(
        name=f"judge-bench-judge-{stamp}",
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": base_url, "model": f"bench-{stamp}", "max_retries": 0},
        concurrency_limit=args.concurrency,
        timeout_s=30,
    )
    judge = services.judge_create(
        name=f"bench {stamp}",
        key=f"bench-{stamp}",
        backend=backend,
        rubric=Rubric.objects.filter(key="msde").order_by("-version").first(),
    )
    try:
        t0 = time.perf_counter()
        run = services.judge_run_create(judge=judge, campaign=campaign, enqueue=False)
        create_s = time.perf_counter() - t0
        first_s, first_cpu = _score(run, args.workers)
        first = JudgeRun.objects.get(pk=run.pk)
        run.refresh_from_db()
        items = run.judge_answers.count()
        again = services.judge_run_create(judge=judge, campaign=campaign, enqueue=False)
        second_s, second_cpu = _score(again, args.workers)
        second = JudgeRun.objects.get(pk=again.pk)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ref = cpu_reference_s()
        print(reference_line(ref))
        print(
            f"dialogues: {args.dialogues} × MSDE rubric · systems: {args.systems} · "
            f"latency {args.latency * 1000:.0f} ms · concurrency {args.concurrency} · "
            f"workers {args.workers} · part size {planning.PART_SIZE}"
        )
        print(
            f"run create (render prompts, estimate, chunks): {create_s:.2f} s "
            f"{in_ref(create_s, ref)}"
        )
        print(
            f"first run: {items} judged items in {first_s:.2f} s = {items / first_s:.0f} items/s "
            f"(target ≥ 200/s); requests sent {first.requests_sent}; status {run.status}"
        )
        print(
            f"cache-hit re-run: {second_s:.2f} s = {items / second_s:.0f} items/s "
            f"{per_ref(items / second_s, ref)}; "
            f"requests sent {second.requests_sent}; cache hits {second.cache_hits}"
        )
        print(
            f"platform CPU (this process): first run {first_cpu / items * 1000:.2f} ms/item "
            f"{in_ref(first_cpu / items, ref)} (CPU-bound ceiling {items / first_cpu:.0f} items/s "
            f"{per_ref(items / first_cpu, ref)} on one free core), re-run "
            f"{second_cpu / items * 1000:.2f} ms/item {in_ref(second_cpu / items, ref)}"
        )
        print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"peak memory (RSS): {peak_mb:.0f} MiB")
    finally:
        parent.send("stop")
        server.join(5)
        if not args.keep:
            from metrics.models import MetricRun

            MetricRun.objects.filter(campaign=campaign).delete()
            Judge.objects.filter(pk=judge.pk).delete()
            JudgeCacheEntry.objects.filter(backend=backend).delete()
            campaign.delete()
            backend.delete()
            for system in systems:
                system.delete()


if __name__ == "__main__":
    main()
