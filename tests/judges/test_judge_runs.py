"""A judge run end to end through the fake OpenAI server: scores, cache, retries, statuses."""

from __future__ import annotations

import json
import threading
import time
from unittest import mock

import pytest
from django.db import connections
from django.db.models import F

from chat.models import Backend
from core.jobs import job_claim
from judges import services
from judges.models import JudgeAnswer, JudgeRun
from judges.services import chunks as judge_chunks
from judges.services import runs as judge_runs
from metrics.models import JobStatus, MetricRun, MetricRunChunk, MetricScore
from metrics.services import metric_run_scoring
from metrics.services import metric_runs as metric_run_services
from tests.annotation.factories import rubric
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import answer_for, judge_backend
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def run_all(run):
    for chunk_id in run.chunks.values_list("pk", flat=True):
        metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
    metric_run_scoring.metric_run_finish(run_id=run.pk)
    run.refresh_from_db()
    return run


def make_judge(server, key="msde", **fields):
    return services.judge_create(
        name="GPT 裁判", backend=judge_backend(server), rubric=rubric(key), **fields
    )


def test_a_judge_run_scores_every_applicable_question_at_every_level(server, researcher):
    server.set_behaviour(reply_fn=answer_for)
    study = make_study(dialogues_per_cell=2)
    judge = make_judge(server)
    run = run_all(
        services.judge_run_create(judge=judge, campaign=study.campaign, created_by=researcher)
    )
    assert run.status == JobStatus.DONE, run.error
    assert run.progress_done == run.progress_total == run.chunks.count()
    prefix = judge.metric_prefix
    knowledge = [d for d in study.dialogues if d.skill.key == "knowledge"]
    chitchat = [d for d in study.dialogues if d.skill.key == "chitchat"]
    scores = MetricScore.objects.filter(run=run, level="dialogue")
    # MSDE: Know applies to knowledge dialogue, not to chit-chat; Rec to neither.
    assert scores.filter(metric=f"{prefix}:know").count() == len(knowledge)
    assert scores.filter(metric=f"{prefix}:coh").count() == len(study.dialogues)
    assert not scores.filter(metric=f"{prefix}:rec").exists()
    assert {s.value for s in scores.filter(metric=f"{prefix}:overall")} == {2.0}
    system = MetricScore.objects.filter(run=run, level="system", metric=f"{prefix}:info")
    assert {(s.backend.name, s.group) for s in system} == {
        ("系统甲", "knowledge"),
        ("系统甲", "chitchat"),
        ("系统甲", ""),
        ("系统乙", "knowledge"),
        ("系统乙", ""),
    }
    assert len(chitchat) == 2
    # The request carried the rubric's JSON schema (structured output).
    sent = server.requests[-1].json
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["rationale", "scores"]
    answers = JudgeAnswer.objects.filter(run=run)
    assert answers.count() == len(study.dialogues)
    assert set(answers.values_list("status", flat=True)) == {"ok"}
    assert answers.first().rationale.startswith("理由")


def test_a_second_run_is_answered_from_the_cache_with_no_request(server, researcher):
    server.set_behaviour(reply_fn=answer_for)
    study = make_study(dialogues_per_cell=1)
    judge = make_judge(server)
    first = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    sent = len(server.requests)
    assert sent == len(study.dialogues)
    estimate = services.judge_estimate(judge=judge, campaign=study.campaign)
    assert estimate["requests"] == 0 and estimate["cached_requests"] == sent
    second = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert len(server.requests) == sent
    judge_run = JudgeRun.objects.get(pk=second.pk)
    assert judge_run.requests_sent == 0 and judge_run.cache_hits == sent
    values = lambda run: sorted(  # noqa: E731
        MetricScore.objects.filter(run=run).values_list("metric", "level", "dialogue_id", "value")
    )
    assert values(first) == values(second)
    assert JudgeRun.objects.get(pk=first.pk).prompt_tokens > 0


def test_running_a_chunk_again_keeps_one_answer_and_one_score_per_unit(server):
    server.set_behaviour(reply_fn=answer_for)
    study = make_study(dialogues_per_cell=1)
    run = run_all(services.judge_run_create(judge=make_judge(server), campaign=study.campaign))
    before = MetricScore.objects.filter(run=run).count()
    # As if the worker had died after writing but before the task was acknowledged, with the
    # chunk's status lost: the redelivered task replaces the rows instead of adding to them.
    chunk = run.chunks.first()
    chunk.status = JobStatus.RUNNING
    chunk.save()
    MetricRun.objects.filter(pk=run.pk).update(
        status=JobStatus.RUNNING, progress_done=F("progress_done") - 1
    )
    assert metric_run_scoring.metric_run_score_chunk(chunk_id=chunk.pk) == "done"
    run.refresh_from_db()
    assert run.progress_done == run.progress_total
    assert MetricScore.objects.filter(run=run).count() == before
    assert JudgeAnswer.objects.filter(run=run).count() == len(study.dialogues)


def test_malformed_answers_are_retried_then_stored_unscored(server):
    server.set_behaviour(replies=("这个回复很好，我给高分。",))
    study = make_study(dialogues_per_cell=1, skills=("chitchat",))
    judge = make_judge(server, max_attempts=2)
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert len(server.requests) == 2 * len(study.dialogues)
    answers = JudgeAnswer.objects.filter(run=run)
    assert set(answers.values_list("status", flat=True)) == {"unparseable"}
    assert answers.first().raw == "这个回复很好，我给高分。"
    assert answers.first().attempts == 2
    assert not MetricScore.objects.filter(run=run).exists()
    assert "not fully parsed" in run.unavailable[f"{judge.metric_prefix}:info"]


def test_a_retry_that_parses_is_kept(server):
    good = json.dumps({"rationale": "ok", "scores": {"info": 1, "coh": 2}})
    server.set_behaviour(replies=('{"rationale": "ok", "scores": {"info": 1, "coh": ', good))
    study = make_study(dialogues_per_cell=1, skills=("chitchat",))
    study.dialogues = study.dialogues[:1]
    judge = make_judge(server)
    run = services.judge_run_create(judge=judge, campaign=study.campaign)
    run = run_all(run)
    answer = JudgeAnswer.objects.filter(run=run).first()
    assert answer.status == "ok" and answer.attempts == 2
    prefix = judge.metric_prefix
    dialogue_scores = dict(
        MetricScore.objects.filter(run=run, level="dialogue", dialogue=answer.dialogue).values_list(
            "metric", "value"
        )
    )
    assert dialogue_scores[f"{prefix}:info"] == 1.0
    assert dialogue_scores[f"{prefix}:overall"] == 1.5


@pytest.mark.parametrize(
    ("behaviour", "status"),
    [
        ({"refusal": "I can't help with that."}, "refused"),
        ({"replies": ('{"rationale": "the reply is',), "finish_reason": "length"}, "truncated"),
        ({"replies": ('{"rationale": "x", "scores": {"info": 7, "coh": 2}}',)}, "incomplete"),
    ],
)
def test_refused_truncated_and_out_of_range_answers_are_never_scored(server, behaviour, status):
    server.set_behaviour(**behaviour)
    study = make_study(dialogues_per_cell=1, skills=("chitchat",))
    judge = make_judge(server, max_attempts=1)
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert set(JudgeAnswer.objects.filter(run=run).values_list("status", flat=True)) == {status}
    info = MetricScore.objects.filter(run=run, metric=f"{judge.metric_prefix}:info")
    assert not info.exists()  # 7 is out of 0–2: refused, not clipped
    if status == "incomplete":
        assert MetricScore.objects.filter(run=run, metric=f"{judge.metric_prefix}:coh").exists()


def test_a_server_refusing_response_format_is_asked_again_without_it(server):
    server.set_behaviour(reply_fn=answer_for, reject_response_format=True)
    study = make_study(dialogues_per_cell=1, skills=("chitchat",))
    run = run_all(services.judge_run_create(judge=make_judge(server), campaign=study.campaign))
    assert run.status == JobStatus.DONE
    assert "response_format" not in server.requests[-1].json
    assert any("response_format" in note for note in JudgeRun.objects.get(pk=run.pk).notes)


def test_cancel_stops_the_remaining_chunks(server):
    server.set_behaviour(reply_fn=answer_for)
    study = make_study(dialogues_per_cell=1)
    run = services.judge_run_create(judge=make_judge(server), campaign=study.campaign)
    metric_run_services.metric_run_cancel(run=run)
    for chunk_id in run.chunks.values_list("pk", flat=True):
        assert metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id) == "cancelled"
    assert not server.requests
    assert metric_run_services.metric_run_resume(run=run) == run.chunks.count()
    run = run_all(run)
    assert run.status == JobStatus.DONE


def test_judges_named_without_latin_letters_get_distinct_keys(server):
    first = make_judge(server)
    second = services.judge_create(name="GPT 裁判", backend=first.backend, rubric=rubric("msde"))
    assert first.key == "gpt" and second.key == "gpt-2"
    third = services.judge_create(name="裁判", backend=first.backend, rubric=rubric("msde"))
    assert third.key == "judge"
    with pytest.raises(services.JudgeError, match="key"):
        services.judge_create(name="x", key="gpt", backend=first.backend, rubric=rubric("msde"))


def test_a_failing_judge_chunk_that_lost_its_lease_leaves_the_new_owners_chunk_alone(server):
    # The first execution's lease ran out and another worker claimed the chunk; the first one's
    # backend then fails: it must not end the chunk the second worker is judging.
    server.set_behaviour(fail_times=1000, fail_status=500)
    study = make_study(dialogues_per_cell=1)
    run = services.judge_run_create(judge=make_judge(server), campaign=study.campaign)
    chunk = run.chunks.order_by("pk").first()
    assert job_claim(MetricRunChunk, chunk.pk, owner="second-worker")

    assert judge_chunks.judge_chunk_score(chunk.pk, "first-worker") == "failed"
    chunk.refresh_from_db()
    assert (chunk.status, chunk.lease_owner, chunk.error) == (
        JobStatus.RUNNING,
        "second-worker",
        "",
    )

    # The owner's own failure does end it, with the reason.
    assert judge_chunks.judge_chunk_score(chunk.pk, "second-worker") == "failed"
    chunk.refresh_from_db()
    assert chunk.status == JobStatus.FAILED and "HTTP 500" in chunk.error
    assert chunk.lease_owner == ""


def test_creating_a_judge_run_plans_its_parts_once(server):
    # The estimate stored with the run reads the parts the run is made of, not a second plan.
    study = make_study(dialogues_per_cell=2)
    judge = make_judge(server)
    with (
        mock.patch.object(judge_runs, "plan_parts", wraps=judge_runs.plan_parts) as planned,
        mock.patch.object(judge_runs, "load_dialogues", wraps=judge_runs.load_dialogues) as loaded,
    ):
        run = services.judge_run_create(judge=judge, campaign=study.campaign)
    chunks = run.chunks.count()
    assert planned.call_count == 1
    assert loaded.call_count == chunks
    estimate = JudgeRun.objects.get(metric_run=run).estimate
    assert estimate["chunks"] == chunks
    assert estimate == services.judge_estimate(judge=judge, campaign=study.campaign)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_cancel_abandons_a_chunk_whose_judge_hangs_and_frees_its_worker(server, settings):
    """Issue 23 item 7 for judges: a judge model that hangs (up to 600 s) must not keep a
    cancelled run's chunk, and its Celery slot, busy: the chunk is cancelled with its run, its
    heartbeat sees that within JOB_CANCEL_CHECK_SECONDS, and the part's requests are abandoned."""
    settings.JOB_CANCEL_CHECK_SECONDS = 0.2
    server.set_behaviour(reply_fn=answer_for, latency=600)
    study = make_study(dialogues_per_cell=1, skills=("chitchat",))
    judge = make_judge(server)
    Backend.objects.filter(pk=judge.backend_id).update(timeout_s=600)
    run = services.judge_run_create(judge=judge, campaign=study.campaign)
    chunk_id = run.chunks.values_list("pk", flat=True).first()
    outcome: list[str] = []

    def work() -> None:
        try:
            outcome.append(metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id))
        finally:
            connections.close_all()  # this thread's connection

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    deadline = time.monotonic() + 30
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the judge was never asked"

    assert metric_run_services.metric_run_cancel(run=MetricRun.objects.get(pk=run.pk))
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED
    assert not run.chunks.exclude(status=JobStatus.CANCELLED).exists()

    worker.join(timeout=10)
    assert not worker.is_alive(), "the chunk still waits on the hung judge"
    assert outcome == ["cancelled"]
    assert not JudgeAnswer.objects.filter(run=run).exists()
    assert not MetricScore.objects.filter(run=run).exists()
