"""Benchmark: N crowdworkers chatting at once with a streaming model, through the real ASGI app.

Each simulated worker holds a whole conversation (default 10 turns) on its own dialogue: send an
utterance (the chat page's htmx POST), read the reply's event stream until the `saved` event,
send the next one — all workers at the same time. The model is the fake streaming
OpenAI-compatible server of the tests (`tests/chat/fake_openai.py`) on loopback, in a process
of its own that notes when it wrote each reply's last token. The app is `config.asgi:application`
under uvicorn in a subprocess, as in production, on PostgreSQL (`DATABASE_URL`) with Redis as the
broker (`CELERY_BROKER_URL`).

Printed figures:
- platform overhead per turn: from the backend writing the reply's last token to the client
  receiving the `saved` event (turn saved in the database, final event sent), p50 / p95 / max.
  Both instants are CLOCK_MONOTONIC readings (system-wide on Linux), taken in the fake backend's
  process and in this one; target: p95 ≤ 50 ms with 100 concurrent sessions;
- turns lost: utterances accepted by the app without a saved reply afterwards (must be 0), and
  replies whose saved text differs from what the backend sent;
- turns per second over the load phase, and the time to the first streamed chunk.

Run it against a database of its own (it is migrated; the rows it creates are deleted at the
end unless --keep). `CONN_MAX_AGE=0` because under ASGI every request runs in a thread of its
own, so a persistent connection is never reused (Django's advice for ASGI):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/platform_bench \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/5 CONN_MAX_AGE=0 \\
    .venv/bin/python benchmarks/chat_load.py [--workers 100] [--turns 10] [--token-delay 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPLY = "我也很喜欢那部电影，陈凯歌导演的，张国荣和巩俐主演，一九九三年上映，拿过金棕榈奖。"
CSRF = "b" * 32


# --- The fake backend, in its own process --------------------------------------------------


def serve_fake_backend(port_file: str, times_file: str, token_delay: float) -> None:
    """Serve the fake model until stdin closes; then write when each reply's last token left."""
    from tests.chat.fake_openai import FakeOpenAI

    finished: dict[str, float] = {}

    class TimedFake(FakeOpenAI):
        async def _respond(self, request, behaviour, fail, writer) -> None:  # type: ignore[no-untyped-def]
            await super()._respond(request, behaviour, fail, writer)
            messages = (request.json or {}).get("messages") or [{}]
            finished[messages[-1].get("content", "")] = time.monotonic()

    with TimedFake(reply=REPLY, token_delay=token_delay) as fake:
        Path(port_file).write_text(str(fake.port))
        sys.stdin.read()
    Path(times_file).write_text(json.dumps(finished, ensure_ascii=False))


# --- Set-up in the database ------------------------------------------------------------------


@dataclass
class Study:
    campaign_id: int
    backend_id: int
    dialogues: list[int]
    user_ids: list[int]
    cookies: list[dict[str, str]]


def create_study(*, workers: int, turns: int, base_url: str, tag: str) -> Study:
    from django.contrib.auth.models import Group, User
    from django.test import Client

    from chat.models import (
        Backend,
        Campaign,
        CampaignBackend,
        Dataset,
        Dialogue,
        Participant,
        Sample,
        Skill,
    )

    knowledge = Skill.objects.get(key="knowledge")
    backend = Backend.objects.create(
        name=f"bench-fake-{tag}",
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": base_url, "model": "fake-model", "max_retries": 0},
        timeout_s=60,
        concurrency_limit=workers * 2,
    )
    dataset = Dataset.objects.create(
        name=f"bench-{tag}", skill=knowledge, language="zh", source_format="jsonl"
    )
    grounding = {"knowledge": [["霸王别姬", "导演", "陈凯歌"]], "goal": ["START", "霸王别姬"]}
    sample = Sample.objects.create(
        dataset=dataset, index=0, external_id="0", skill=knowledge, grounding=grounding
    )
    campaign = Campaign.objects.create(
        name=f"bench-{tag}",
        status=Campaign.Status.ACTIVE,
        max_turns=turns,
        # Every worker says similar things: keep the checks running, but not the repeat rule.
        acceptability={"reject_repeats": False},
    )
    campaign.skills.add(knowledge)
    campaign.datasets.add(dataset)
    CampaignBackend.objects.create(campaign=campaign, backend=backend, alias="模型 A")
    group = Group.objects.get(name="crowdworker")
    study = Study(campaign.pk, backend.pk, [], [], [])
    for i in range(workers):
        user = User.objects.create(username=f"bench-{tag}-{i}")
        user.groups.add(group)
        Participant.objects.create(campaign=campaign, user=user, external_id=f"w{i}")
        dialogue = Dialogue.objects.create(
            campaign=campaign,
            backend=backend,
            scenario=sample,
            skill=knowledge,
            language="zh",
            worker=user,
            grounding=grounding,
        )
        client = Client()
        client.force_login(user)
        study.dialogues.append(dialogue.pk)
        study.user_ids.append(user.pk)
        study.cookies.append({"sessionid": client.cookies["sessionid"].value, "csrftoken": CSRF})
    return study


def delete_study(study: Study) -> None:
    from django.contrib.auth.models import User

    from chat.models import Backend, Campaign, Dataset, Dialogue

    campaign = Campaign.objects.get(pk=study.campaign_id)
    Dialogue.objects.filter(campaign=campaign).delete()
    dataset_ids = list(campaign.datasets.values_list("pk", flat=True))
    campaign.delete()
    Dataset.objects.filter(pk__in=dataset_ids).delete()
    Backend.objects.filter(pk=study.backend_id).delete()
    User.objects.filter(pk__in=study.user_ids).delete()


# --- The simulated workers ---------------------------------------------------------------


@dataclass
class TurnRecord:
    key: str  # the utterance, which the fake backend saw as the last message
    sent_at: float
    first_chunk_at: float | None = None
    saved_at: float | None = None
    text: str = ""


@dataclass
class WorkerLog:
    turns: list[TurnRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def chat(
    base: str, dialogue_id: int, cookies: dict[str, str], turns: int, w: int
) -> WorkerLog:
    import httpx

    log = WorkerLog()
    headers = {"HX-Request": "true", "X-CSRFToken": CSRF}
    async with httpx.AsyncClient(
        base_url=base, cookies=cookies, headers=headers, timeout=120
    ) as client:
        for t in range(turns):
            utterance = f"第{t + 1}轮，工作者{w}号想聊聊霸王别姬这部电影。"
            record = TurnRecord(key=utterance, sent_at=time.monotonic())
            response = await client.post(
                f"/chat/work/dialogues/{dialogue_id}/send/", data={"text": utterance}
            )
            if response.status_code != 200:
                log.errors.append(f"send {t}: HTTP {response.status_code} {response.text[:120]}")
                return log
            log.turns.append(record)
            parts: list[str] = []
            url = f"/chat/work/dialogues/{dialogue_id}/stream/"
            async with client.stream("GET", url) as stream:
                buffer = ""
                async for text in stream.aiter_text():
                    buffer += text
                    while "\n\n" in buffer:
                        raw, buffer = buffer.split("\n\n", 1)
                        name = raw.split("\n", 1)[0].removeprefix("event: ")
                        data = json.loads(raw.split("data: ", 1)[1])
                        if name == "chunk":
                            record.first_chunk_at = record.first_chunk_at or time.monotonic()
                            parts.append(data)
                        elif name == "saved":
                            record.saved_at = time.monotonic()
                        else:
                            log.errors.append(f"turn {t}: {name}: {str(data)[:200]}")
            record.text = "".join(parts)
            if record.saved_at is None:
                return log
    return log


async def load(base: str, study: Study, turns: int) -> tuple[list[WorkerLog], float]:
    started = time.monotonic()
    logs = await asyncio.gather(
        *(
            chat(base, dialogue, cookies, turns, w)
            for w, (dialogue, cookies) in enumerate(
                zip(study.dialogues, study.cookies, strict=True)
            )
        )
    )
    return list(logs), time.monotonic() - started


# --- Processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, what: str, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start within {timeout:.0f} s")
        time.sleep(0.1)


def percentile(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        if len(values) > 1
        else values[0]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=100, help="simulated crowdworkers")
    parser.add_argument("--turns", type=int, default=10, help="turns per conversation")
    parser.add_argument(
        "--token-delay",
        type=float,
        default=0.02,
        help="seconds between tokens (0.02 = 50 tokens/s, a fast vLLM deployment)",
    )
    parser.add_argument("--web-workers", type=int, default=1, help="uvicorn processes")
    parser.add_argument("--keep", action="store_true", help="keep the rows it created")
    parser.add_argument("--fake-backend", nargs=2, metavar=("PORT_FILE", "TIMES_FILE"))
    args = parser.parse_args()
    if args.fake_backend:
        serve_fake_backend(*args.fake_backend, token_delay=args.token_delay)
        return

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import logging

    import django

    logging.getLogger("httpx").setLevel(logging.WARNING)

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from chat.models import Turn

    db = settings.DATABASES["default"]
    print(
        f"database: {db['ENGINE'].rsplit('.', 1)[-1]} {db.get('NAME')}, "
        f"CONN_MAX_AGE={db.get('CONN_MAX_AGE')}; broker: {settings.CELERY_BROKER_URL}"
    )
    call_command("migrate", verbosity=0)

    tmp = Path(tempfile.mkdtemp(prefix="chat-load-"))
    port_file, times_file = tmp / "port", tmp / "times.json"
    fake = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--token-delay",
            str(args.token_delay),
            "--fake-backend",
            str(port_file),
            str(times_file),
        ],
        stdin=subprocess.PIPE,
        cwd=ROOT,
    )
    wait_for(lambda: port_file.exists() and port_file.read_text(), "the fake backend")
    backend_url = f"http://127.0.0.1:{port_file.read_text()}/v1"

    tag = time.strftime("%Y%m%d%H%M%S")
    study = create_study(workers=args.workers, turns=args.turns, base_url=backend_url, tag=tag)
    connection.close()

    port = free_port()
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
            "--workers",
            str(args.web_workers),
            "--log-level",
            "warning",
            "--backlog",
            "4096",
        ],
        cwd=ROOT,
        env={**os.environ},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        import httpx

        def up() -> bool:
            try:
                return httpx.get(f"{base}/accounts/login/", timeout=60).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, "uvicorn", timeout=300)
        for _ in range(args.web_workers * 2):  # import every view in every process first
            httpx.get(f"{base}/chat/work/dialogues/0/", cookies=study.cookies[0], timeout=120)

        print(
            f"{args.workers} workers × {args.turns} turns, reply of {len(REPLY)} characters "
            f"streamed one character per {args.token_delay * 1000:.0f} ms, "
            f"{args.web_workers} uvicorn process(es)"
        )
        logs, elapsed = asyncio.run(load(base, study, args.turns))
    finally:
        web.send_signal(signal.SIGINT)
        web.wait(30)
        assert fake.stdin is not None
        fake.stdin.close()
        fake.wait(30)

    finished: dict[str, float] = json.loads(times_file.read_text())
    records = [r for log in logs for r in log.turns]
    errors = [e for log in logs for e in log.errors]
    overheads = [
        (r.saved_at - finished[r.key]) * 1000
        for r in records
        if r.saved_at is not None and r.key in finished
    ]
    first_chunk = [(r.first_chunk_at - r.sent_at) * 1000 for r in records if r.first_chunk_at]

    saved_replies = 0
    lost = wrong = 0
    for dialogue_id in study.dialogues:
        turns = list(Turn.objects.filter(dialogue_id=dialogue_id).order_by("index"))
        for i, turn in enumerate(turns):
            if turn.speaker != Turn.Speaker.USER:
                continue
            reply = turns[i + 1] if i + 1 < len(turns) else None
            if reply is None or reply.speaker != Turn.Speaker.SYSTEM:
                lost += 1
            else:
                saved_replies += 1
                wrong += reply.text != REPLY
    expected = args.workers * args.turns

    print(f"turns completed: {saved_replies} of {expected} ({len(errors)} errors)")
    for error in errors[:5]:
        print(f"  error: {error}")
    print(f"turns lost: {lost} (utterances saved without their reply); wrong replies: {wrong}")
    if overheads:
        print(
            f"platform overhead per turn (last backend token → turn saved and `saved` received):"
            f" p50 {percentile(overheads, 50):.1f} ms, p95 {percentile(overheads, 95):.1f} ms, "
            f"max {max(overheads):.1f} ms  (target p95 ≤ 50 ms)"
        )
    if first_chunk:
        print(
            f"send → first streamed chunk: p50 {percentile(first_chunk, 50):.0f} ms, "
            f"p95 {percentile(first_chunk, 95):.0f} ms"
        )
    print(f"throughput: {saved_replies / elapsed:.1f} turns/s over {elapsed:.1f} s")
    if not args.keep:
        delete_study(study)


if __name__ == "__main__":
    main()
