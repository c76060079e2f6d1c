"""vLLM guided decoding: the judge's JSON schema sent as ``guided_json``."""

from __future__ import annotations

import pytest

from chat.backends.config import BackendConfigError, validate_config
from judges import services
from judges.models import Judge, JudgeAnswer, JudgeRun
from metrics.models import JobStatus
from tests.annotation.factories import rubric
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import answer_for, judge_backend
from tests.judges.test_judge_runs import run_all
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        fake.set_behaviour(reply_fn=answer_for)
        yield fake


def chitchat_campaign():
    return make_study(dialogues_per_cell=1, skills=("chitchat",)).campaign


def test_a_vllm_backend_gets_the_schema_as_guided_json_instead_of_response_format(server):
    judge = services.judge_create(
        name="vLLM 裁判", backend=judge_backend(server, engine="vllm"), rubric=rubric("msde")
    )
    assert services.judge_config(judge).params.response_format == "guided_json"
    run = run_all(services.judge_run_create(judge=judge, campaign=chitchat_campaign()))
    assert run.status == JobStatus.DONE, run.error
    assert server.requests
    for request in server.requests:
        sent = request.json
        assert "response_format" not in sent
        schema = sent["guided_json"]
        assert schema["required"] == ["rationale", "scores"]
        assert set(schema["properties"]["scores"]["properties"]) == {"info", "coh"}
        assert schema["properties"]["scores"]["properties"]["info"]["enum"] == [0, 1, 2]
    assert set(JudgeAnswer.objects.filter(run=run).values_list("status", flat=True)) == {"ok"}


def test_the_judge_option_asks_for_guided_json_on_any_openai_backend(server):
    judge = services.judge_create(
        name="引导解码",
        backend=judge_backend(server),
        rubric=rubric("msde"),
        structured=Judge.Structured.GUIDED_JSON,
        sampling={"n": 2, "temperature": 0.5},
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=chitchat_campaign()))
    assert run.status == JobStatus.DONE, run.error
    sent = server.requests[-1].json
    assert "guided_json" in sent and "response_format" not in sent
    assert sent["n"] == 2 and sent["temperature"] == 0.5


def test_a_generic_backend_keeps_response_format(server):
    judge = services.judge_create(
        name="通用", backend=judge_backend(server, engine="generic"), rubric=rubric("msde")
    )
    run_all(services.judge_run_create(judge=judge, campaign=chitchat_campaign()))
    sent = server.requests[-1].json
    assert sent["response_format"]["type"] == "json_schema" and "guided_json" not in sent


def test_a_server_refusing_guided_json_is_asked_again_without_it(server):
    server.set_behaviour(reply_fn=answer_for, reject_guided_json=True)
    judge = services.judge_create(
        name="旧 vLLM", backend=judge_backend(server, engine="vllm"), rubric=rubric("msde")
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=chitchat_campaign()))
    assert run.status == JobStatus.DONE, run.error
    # Each unit: refused with guided_json, answered without it.
    flags = [("guided_json" in r.json) for r in server.requests]
    units = JudgeAnswer.objects.filter(run=run, status="ok").count()
    assert units and flags.count(True) == flags.count(False) == units
    assert any("guided_json" in note for note in JudgeRun.objects.get(pk=run.pk).notes)


def test_guided_json_is_part_of_the_cache_key(server):
    backend = judge_backend(server, engine="vllm")
    guided = services.judge_create(name="甲", backend=backend, rubric=rubric("msde"))
    plain = services.judge_create(
        name="乙", backend=backend, rubric=rubric("msde"), structured=Judge.Structured.JSON_SCHEMA
    )
    campaign = chitchat_campaign()
    run_all(services.judge_run_create(judge=guided, campaign=campaign))
    first = len(server.requests)
    run_all(services.judge_run_create(judge=plain, campaign=campaign))
    # Same prompts, another structured mode: asked again, not answered from the cache.
    assert first and len(server.requests) == 2 * first
    assert all("guided_json" in r.json for r in server.requests[:first])
    assert not any("guided_json" in r.json for r in server.requests[first:])


def test_the_backend_engine_is_checked():
    config = {"base_url": "http://127.0.0.1:8000/v1", "model": "m", "engine": "vllm"}
    assert validate_config("openai", config) is config
    with pytest.raises(BackendConfigError) as caught:
        validate_config("openai", {**config, "engine": "sglang"})
    assert caught.value.field == "engine"
