"""Benchmark: page and htmx response times (p50/p95) and query counts on the demo data.

Issue 11's target: every page and htmx action answers in ≤ 300 ms at p95 on the embedded
defaults. The script builds a fresh embedded database (SQLite in a temporary directory, unless
DATABASE_URL is set), runs `migrate` and `load_demo`, then adds what a first study leaves behind:
collected, reviewed and rated dialogues. It requests each page N times with Django's test
client as the role that uses it (in process: the figures leave out the network and the ASGI
server) and prints p50, p95, max and the number of SQL queries per request, and p95 in units
of the CPU reference (benchmarks/cpu_reference.py, timed in the same run): in process, a page's
time is CPU time.

    .venv/bin/python benchmarks/page_speed.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cpu_reference import cpu_reference_s, reference_line  # noqa: E402  (benchmarks/, the script's folder)

TARGET_MS = 300.0


def _setup_database() -> None:
    from config.embedded import embedded_environment

    # As `make demo` serves it (plain HTTP: no request answered by the HTTPS redirect); a
    # DATABASE_URL (or broker) already set is kept.
    for name, value in embedded_environment("page-speed-").items():
        os.environ.setdefault(name, value)
    import logging

    import django

    logging.getLogger("axes").setLevel(logging.WARNING)  # one login line per client otherwise

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115


def _study() -> dict[str, int]:
    """Two workers' submitted dialogues, reviewed and accepted, in a 3-expert MSDE job."""
    from django.contrib.auth.models import User

    from annotation.models import Rubric
    from annotation.services.rating_jobs import job_create, job_open
    from chat.models import Campaign, Dialogue, Participant, Turn
    from chat.services.participation import participant_join
    from chat.services.scenario_assignment import scenario_assign_next

    campaign = Campaign.objects.get(name="演示·知识对话采集")
    dialogues = []
    for n in range(6):
        user = participant_join(campaign=campaign, external_id=f"bench-{n}", source="bench")
        participant = Participant.objects.get(campaign=campaign, user=user)
        dialogue = scenario_assign_next(participant=participant)
        if dialogue is None:
            break
        for i in range(3):
            Turn.objects.create(dialogue=dialogue, index=2 * i, speaker="user", text=f"问题 {i}")
            Turn.objects.create(dialogue=dialogue, index=2 * i + 1, speaker="system", text="回答")
        dialogues.append(dialogue)
    live = dialogues.pop()  # one stays in progress: the chat page
    Dialogue.objects.filter(pk__in=[d.pk for d in dialogues]).update(status="accepted")
    submitted = dialogues.pop()
    Dialogue.objects.filter(pk=submitted.pk).update(status="submitted")
    experts = list(User.objects.filter(username__in=["expert", "expert2", "expert3"]))
    rubric = Rubric.objects.filter(key="msde").order_by("-version").first()
    job = job_create(
        name="bench MSDE",
        campaign=campaign,
        rubric=rubric,
        created_by=None,
        raters=experts,
        raters_per_dialogue=3,
        allow_below_minimum=True,
    )
    job_open(job=job)
    assignment = job.assignments.filter(rater__username="expert").first()
    return {
        "campaign": campaign.pk,
        "live": live.pk,
        "live_worker": live.worker_id,
        "submitted": submitted.pk,
        "job": job.pk,
        "assignment": assignment.pk if assignment else 0,
    }


def _measure(client, method: str, url: str, repeat: int, **kwargs) -> tuple[list[float], int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    queries = 0
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = getattr(client, method)(url, **kwargs)
            times.append((time.perf_counter() - start) * 1000)
        if response.status_code >= 300:  # a redirect or an error would time the wrong thing
            raise SystemExit(f"{method.upper()} {url} answered {response.status_code}")
        queries = len(captured)
    return times, queries


def _htmx_actions(ids: dict[str, int], worker, expert, repeat: int) -> list:
    """The actions a person waits on, as the browser sends them (HX-Request): a crowdworker
    ticks a grounding item; an expert's answer autosaves; an expert submits an item and the next
    one loads (submit → redirect → next item, the whole wait). Returns (name, times, queries)."""
    import re

    from django.urls import reverse

    from annotation.models import Assignment

    htmx = {"HTTP_HX_REQUEST": "true"}
    results = []
    chat_page = worker.get(reverse("chat:live-dialogue", args=[ids["live"]])).content.decode()
    items = re.findall(r'name="used" value="([^"]+)"', chat_page)
    tick_url = reverse("chat:live-grounding", args=[ids["live"]])
    ticks: list[float] = []
    queries = 0
    for n in range(repeat):
        used = {"used": items[: 1 + n % max(len(items), 1)]} if items else {}
        times, queries = _measure(worker, "post", tick_url, 1, data=used, **htmx)
        ticks += times
    results.append(("grounding tick (htmx)", ticks, queries))

    if not ids["assignment"]:
        return results
    pk = ids["assignment"]
    page = expert.get(reverse("annotation:annotate-item", args=[pk])).content.decode()
    answers = []
    for form in page.split("<form")[1:]:
        question = re.search(r'name="question" value="([^"]+)"', form)
        value = re.search(r'type="radio" name="value" value="([^"]+)"', form)
        if question and value:
            answers.append({"question": question.group(1), "value": value.group(1)})
    answer_url = reverse("annotation:annotate-answer", args=[pk])
    saves: list[float] = []
    for n in range(repeat):
        answer = answers[n % len(answers)]
        times, queries = _measure(expert, "post", answer_url, 1, data=answer, **htmx)
        saves += times
    results.append(("rating answer autosave (htmx)", saves, queries))

    for answer in answers:  # every question answered: the item can be submitted
        expert.post(answer_url, answer, **htmx)
    submit_url = reverse("annotation:annotate-submit", args=[pk])
    submits: list[float] = []
    for _ in range(repeat):
        times, queries = _measure(expert, "post", submit_url, 1, follow=True)
        submits += times
        # Untimed: the same item back in progress, for the next round.
        Assignment.objects.filter(pk=pk).update(status=Assignment.Status.IN_PROGRESS)
    results.append(("rating submit → next item", submits, queries))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    _setup_database()
    ids = _study()

    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    def client_for(username: str | None = None, pk: int | None = None) -> Client:
        client = Client()
        user = User.objects.get(pk=pk) if pk else User.objects.get(username=username)
        client.force_login(user)
        return client

    researcher, expert = client_for("researcher"), client_for("expert")
    worker = client_for(pk=ids["live_worker"])
    htmx = {"HTTP_HX_REQUEST": "true"}
    cases = [
        ("researcher home", researcher, "get", reverse("home"), {}),
        ("campaign list", researcher, "get", reverse("chat:campaign-list"), {}),
        (
            "campaign page",
            researcher,
            "get",
            reverse("chat:campaign-detail", args=[ids["campaign"]]),
            {},
        ),
        (
            "campaign progress (htmx)",
            researcher,
            "get",
            reverse("chat:campaign-detail", args=[ids["campaign"]]),
            htmx,
        ),
        ("rating job list", researcher, "get", reverse("annotation:job-list"), {}),
        (
            "rating job page",
            researcher,
            "get",
            reverse("annotation:job-detail", args=[ids["job"]]),
            {},
        ),
        ("report form", researcher, "get", reverse("metrics:report-create"), {}),
        ("worker home", worker, "get", reverse("home"), {}),
        ("chat page", worker, "get", reverse("chat:live-dialogue", args=[ids["live"]]), {}),
        ("expert home", expert, "get", reverse("home"), {}),
        (
            "review page",
            expert,
            "get",
            reverse("annotation:review-dialogue", args=[ids["submitted"]]),
            {},
        ),
    ]
    if ids["assignment"]:
        cases.append(
            (
                "rating page",
                expert,
                "get",
                reverse("annotation:annotate-item", args=[ids["assignment"]]),
                {},
            )
        )
    actions = _htmx_actions(ids, worker, expert, args.repeat)
    ref = cpu_reference_s()
    print(reference_line(ref))
    header = f"{'page':<28} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'queries':>8} {'p95 ref':>8}"
    print(f"{header}  target p95 ≤ {TARGET_MS:g} ms")
    slow = []
    measured = [
        (name, *_measure(client, method, url, args.repeat, **extra))
        for name, client, method, url, extra in cases
    ] + actions
    for name, times, queries in measured:
        times.sort()
        p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
        print(
            f"{name:<28} {statistics.median(times):8.1f} {p95:8.1f} {times[-1]:8.1f} {queries:8d} "
            f"{p95 / 1000 / ref:8.3f}" + ("  SLOW" if p95 > TARGET_MS else "")
        )
        if p95 > TARGET_MS:
            slow.append(name)
    print(
        f"{len(measured) - len(slow)} of {len(measured)} within the target"
        + (f"; slow: {', '.join(slow)}" if slow else "")
    )


if __name__ == "__main__":
    main()
