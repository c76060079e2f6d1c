"""Benchmark: a 20,000-dialogue JSONL export served by uvicorn — time to the first byte, total
time, size, and how much the web process grows while it sends the file.

Issue 23 item 2's targets: the first byte within 1 s, the web process grows by at most 20 MB.
Under ASGI, Django reads a *synchronous* iterator whole into a list before the first byte (the
whole file in the web process's memory); `core.http.stream_lines` sends batches as they are read.

The script fills the database named by DATABASE_URL (use PostgreSQL, your own database) with a
campaign of N dialogues × 10 turns (~3 KB of JSON each, ~65 MB in all) once — later runs reuse
it — then starts `uvicorn config.asgi:application` as in the Procfile, logs a researcher in, warms
the process up with a one-dialogue export, and downloads the big export with a streaming client.
The server's resident memory (VmRSS) is sampled every 10 ms during the download; "growth" is the
peak minus the value just before the request.

CPU reference (to compare figures across machines): the same pure-Python loop timed in the same
run, ``sum(i * i % 7 for i in range(5_000_000))`` (benchmarks/cpu_reference.py); the times are
printed also in its units.

    DATABASE_URL=postgres://…/platform_mine .venv/bin/python benchmarks/export_stream.py \
        [--dialogues 20000]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cpu_reference import cpu_reference_s, in_ref, reference_line  # noqa: E402  (benchmarks/, the script's folder)

TARGET_FIRST_BYTE_S = 1.0
TARGET_GROWTH_MB = 20.0
CAMPAIGN = "bench-export-stream"
TURN_TEXT = "这部电影是陈凯歌导演的，一九九三年上映，讲述了两位京剧演员半个世纪的悲欢离合。" * 3


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SITE_HTTPS", "false")
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database of your own")
    import logging

    import django

    logging.getLogger("axes").setLevel(logging.WARNING)
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _campaign(name: str, n_dialogues: int) -> int:
    """A campaign of `n_dialogues` submitted dialogues with 10 turns each (created once)."""
    from chat.models import Backend, Campaign, Dialogue, Skill, Turn

    campaign, created = Campaign.objects.get_or_create(name=name)
    if not created and Dialogue.objects.filter(campaign=campaign).count() == n_dialogues:
        return campaign.pk
    Dialogue.objects.filter(campaign=campaign).delete()
    backend, _ = Backend.objects.get_or_create(
        name="bench-export-backend", defaults={"adapter": Backend.Adapter.RETRIEVAL}
    )
    skill = Skill.objects.get(key="chitchat")
    batch = 2000
    for start in range(0, n_dialogues, batch):
        dialogues = Dialogue.objects.bulk_create(
            Dialogue(
                campaign=campaign,
                backend=backend,
                skill=skill,
                language="zh",
                status=Dialogue.Status.SUBMITTED,
                external_id=f"bench-{k}",
            )
            for k in range(start, min(start + batch, n_dialogues))
        )
        Turn.objects.bulk_create(
            Turn(
                dialogue=dialogue,
                index=i,
                speaker="user" if i % 2 == 0 else "system",
                text=f"{i}:{TURN_TEXT}",
            )
            for dialogue in dialogues
            for i in range(10)
        )
    return campaign.pk


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _download(url: str, cookies: dict[str, str], pid: int) -> dict[str, float]:
    import httpx

    peak = [_rss_mb(pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_mb(pid))
            time.sleep(0.01)

    before = _rss_mb(pid)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    size = 0
    first = None
    start = time.perf_counter()
    with (
        httpx.Client(cookies=cookies, timeout=600) as client,
        client.stream("GET", url) as response,
    ):
        if response.status_code != 200:
            raise SystemExit(f"GET {url} answered {response.status_code}")
        for chunk in response.iter_raw():
            if first is None and chunk:
                first = time.perf_counter() - start
            size += len(chunk)
    total = time.perf_counter() - start
    stop.set()
    sampler.join()
    return {
        "first_byte_s": first or total,
        "total_s": total,
        "mb": size / 1e6,
        "growth_mb": peak[0] - before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=20_000)
    args = parser.parse_args()
    _setup()
    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    from core.access import Role

    t0 = time.perf_counter()
    big = _campaign(CAMPAIGN, args.dialogues)
    small = _campaign(CAMPAIGN + "-warmup", 1)
    from django.db import connection

    with connection.cursor() as cursor:
        # Statistics as autovacuum would leave them: right after a bulk insert the planner
        # guesses 3 rows per campaign and joins the whole table for each chunk.
        cursor.execute("ANALYZE")
    print(f"data ready in {time.perf_counter() - t0:.1f} s ({args.dialogues} dialogues)")
    user, _ = User.objects.get_or_create(username="bench-export-researcher")
    from django.contrib.auth.models import Group

    user.groups.add(Group.objects.get(name=Role.RESEARCHER.value))
    client = Client()
    client.force_login(user)
    cookies = {"sessionid": client.cookies["sessionid"].value}

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import httpx

        base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                httpx.get(base + "/accounts/login/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        url = base + reverse("chat:campaign-dialogues-export", args=[big])
        _download(
            base + reverse("chat:campaign-dialogues-export", args=[small]), cookies, server.pid
        )
        figures = _download(url, cookies, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    reference = cpu_reference_s()
    print(reference_line(reference))
    print(f"export of {args.dialogues} dialogues: {figures['mb']:.1f} MB", end=" ")
    print(f"in {figures['total_s']:.1f} s {in_ref(figures['total_s'], reference)}")
    for name, value, target, unit in (
        ("first byte", figures["first_byte_s"], TARGET_FIRST_BYTE_S, "s"),
        ("web process growth", figures["growth_mb"], TARGET_GROWTH_MB, "MB"),
    ):
        verdict = "met" if value <= target else "MISSED"
        in_units = f" {in_ref(value, reference)}" if unit == "s" else ""
        print(f"{name}: {value:.2f} {unit}{in_units} (target ≤ {target:g} {unit}: {verdict})")


if __name__ == "__main__":
    main()
