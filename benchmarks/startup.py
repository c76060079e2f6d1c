"""Benchmark: what a web process and a management command pay at start-up.

Printed figures (issue 14, item 3, and issue 24, item 4; targets in brackets):
- ``manage.py check`` wall time, median of ``--repeat`` runs after one warm-up (≤ 2 s);
- the same for a bare ``django-admin startproject`` run by the same interpreter, and the ratio
  of the two (≤ 2.5×): the figure that holds across machines of different speed, printed with
  the CPU reference loop (benchmarks/cpu_reference.py);
- the resident memory (VmRSS) of one web process — ``config.asgi:application`` under uvicorn, as
  the Procfile runs it — after the demo's pages have each been served once (≤ 200 MB);
- which model libraries that process loaded (torch, transformers, sentence-transformers: none).

The demo's pages are every same-site link on each demo role's home page (researcher, expert,
crowdworker; `manage.py load_demo`), fetched once each while logged in as that role. Everything
runs in a throw-away embedded installation (SQLite and the embedded broker under a temporary
``PLATFORM_VAR_DIR``), so nothing else is touched:

    .venv/bin/python benchmarks/startup.py [--repeat 5] [--root .] [--check-only]

``--root`` points at another checkout to measure it with the same script (a before/after);
``--check-only`` stops after the ``manage.py check`` figures. The warm-up writes the bytecode
caches (``PYTHONDONTWRITEBYTECODE`` is dropped for the measured processes): otherwise every run
would compile the project's modules from source and the bare project's few, a ratio of nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from cpu_reference import cpu_reference_s, reference_line

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


HEAVY = ("torch", "transformers", "sentence_transformers")
DEMO_USERS = [
    ("researcher", "researcher-demo"),
    ("expert", "expert-demo"),
    ("worker", "worker-demo"),
]
SKIP = re.compile(r"^/(accounts/logout|admin|static|api/docs|api/schema|i18n)")
CHECK_TARGET_S, RSS_TARGET_MB = 2.0, 200.0
RATIO_TARGET = 2.5  # manage.py check against a bare startproject's


def _env(var_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_", "CELERY_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(PLATFORM_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="config.settings")
    env.setdefault("SECRET_KEY", "startup-benchmark-only")
    env["SITE_HTTPS"] = "false"  # served over plain HTTP on 127.0.0.1, as `make demo` does
    return env


def _manage(root: Path, env: dict[str, str], *args: str) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one ``manage.py`` command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=root, env=env, check=True, capture_output=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _checks(
    roots: list[tuple[Path, dict[str, str]]], repeat: int
) -> list[tuple[list[float], float]]:
    """Per checkout: the wall times of ``repeat`` ``manage.py check`` runs after one warm-up, and
    their median CPU time. The warm-up byte-compiles and fills the OS file cache; the runs of the
    checkouts alternate, so that a machine busier at one moment weighs on each alike."""
    for root, env in roots:
        _manage(root, env, "check")
    runs: list[list[tuple[float, float]]] = [[] for _ in roots]
    for _ in range(repeat):
        for index, (root, env) in enumerate(roots):
            runs[index].append(_manage(root, env, "check"))
    return [
        ([wall for wall, _cpu in each], statistics.median(cpu for _wall, cpu in each))
        for each in runs
    ]


def _bare_project(where: Path) -> Path:
    """A bare ``django-admin startproject``, with the interpreter (and Django) measured."""
    where.mkdir()
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "bare", str(where)],
        check=True,
        capture_output=True,
    )
    return where


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _loaded_libraries(pid: int) -> list[str]:
    """Model libraries mapped into the process (their compiled parts show in its memory map)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return [name for name in HEAVY if f"/site-packages/{name}/" in maps]


def _login(client: httpx.Client, username: str, password: str) -> None:
    client.get("/accounts/login/")
    response = client.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
        headers={"Referer": str(client.base_url) + "/accounts/login/"},
    )
    if response.status_code != 302:
        raise RuntimeError(f"cannot log in as {username}: HTTP {response.status_code}")


def _serve_demo_pages(base_url: str) -> tuple[int, list[str]]:
    """Fetch every same-site link of each role's home page once; return (pages, failures)."""
    served, failures = 0, []
    for username, password in DEMO_USERS:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            _login(client, username, password)
            home = client.get("/")
            links = sorted(set(re.findall(r'href="(/[^"#]*)"', home.text)))
            served += 1
            for link in links:
                if SKIP.match(link):
                    continue
                response = client.get(link.replace("&amp;", "&"))
                served += 1
                if response.status_code >= 500:
                    failures.append(f"{username} {link}: HTTP {response.status_code}")
    return served, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="checkout to measure")
    parser.add_argument("--check-only", action="store_true", help="only the check figures")
    args = parser.parse_args()
    root = args.root.resolve()
    print(reference_line(cpu_reference_s()))  # to compare the times below across machines

    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        env = _env(Path(tmp))
        bare_env = {k: v for k, v in env.items() if k != "DJANGO_SETTINGS_MODULE"}
        (times, cpu_s), (bare_times, bare_cpu_s) = _checks(
            [(root, env), (_bare_project(Path(tmp) / "bare"), bare_env)], args.repeat
        )
        check_s, bare_s = statistics.median(times), statistics.median(bare_times)
        print(f"CPU reference loop: {cpu_reference_s():.2f} s")
        print(
            f"manage.py check: median {check_s:.2f} s over {args.repeat} runs "
            f"(min {min(times):.2f}, max {max(times):.2f}) — target ≤ {CHECK_TARGET_S:g} s: "
            f"{'met' if check_s <= CHECK_TARGET_S else 'NOT met'}"
        )
        # On a busy machine wall time mostly measures the wait for a core; CPU time does not.
        print(f"manage.py check: median CPU time (user + system) {cpu_s:.2f} s")
        print(
            f"bare startproject's check: median {bare_s:.2f} s, CPU time {bare_cpu_s:.2f} s "
            f"(min {min(bare_times):.2f}, max {max(bare_times):.2f})"
        )
        ratio, cpu_ratio = check_s / bare_s, cpu_s / bare_cpu_s
        print(
            f"manage.py check / bare startproject's: {ratio:.2f}× wall, {cpu_ratio:.2f}× CPU "
            f"— target ≤ {RATIO_TARGET:g}×: {'met' if ratio <= RATIO_TARGET else 'NOT met'}"
        )
        if args.check_only:
            return

        _manage(root, env, "migrate", "--noinput")
        _manage(root, env, "load_demo")
        port = _free_port()
        web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            cwd=root,
            env=env,
        )
        try:
            base_url = f"http://127.0.0.1:{port}"
            for _ in range(600):
                try:
                    httpx.get(base_url + "/accounts/login/", timeout=5)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            started_mb = _rss_mb(web.pid)
            served, failures = _serve_demo_pages(base_url)
            rss = _rss_mb(web.pid)
            libraries = _loaded_libraries(web.pid)
        finally:
            web.terminate()
            web.wait(timeout=30)

    print(f"web process RSS: {started_mb:.0f} MB after its first request (the login page)")
    print(
        f"web process RSS: {rss:.0f} MB after {served} demo pages served once — target ≤ "
        f"{RSS_TARGET_MB:g} MB: {'met' if rss <= RSS_TARGET_MB else 'NOT met'}"
    )
    print(f"model libraries loaded by the web process: {', '.join(libraries) or 'none'}")
    for failure in failures:
        print(f"  page failed: {failure}")


if __name__ == "__main__":
    main()
