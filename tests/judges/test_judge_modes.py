"""Samples, G-Eval, pairwise and reference-guided judging, and a local transformers judge."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from chat.models import Backend, Campaign, Dialogue, Turn
from judges import services
from judges.models import JudgeAnswer
from metrics.models import JobStatus, MetricScore
from tests.annotation.factories import rubric
from tests.chat.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DialogueFactory,
    SampleFactory,
    TurnFactory,
    skill,
)
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import judge_backend
from tests.judges.test_judge_runs import run_all
from tests.judges.tiny_models import char_tokenizer, tiny_gpt2
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def chitchat_study(n: int = 2):
    return make_study(dialogues_per_cell=n, skills=("chitchat",))


def scores(run, metric, level="dialogue"):
    return dict(
        MetricScore.objects.filter(run=run, metric=metric, level=level).values_list(
            "dialogue_id", "value"
        )
    )


def test_n_samples_are_averaged_per_question(server):
    server.set_behaviour(
        replies=(
            '{"rationale": "a", "scores": {"info": 2, "coh": 2}}',
            '{"rationale": "b", "scores": {"info": 1, "coh": 2}}',
            '{"rationale": "c", "scores": {"info": 1, "coh": 0}}',
        )
    )
    study = chitchat_study(1)
    study_ids = [d.pk for d in study.dialogues]
    judge = services.judge_create(
        name="三次采样",
        backend=judge_backend(server),
        rubric=rubric("msde"),
        sampling={"n": 3, "temperature": 0.7, "aggregate": "mean"},
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert server.requests[0].json["n"] == 3 and server.requests[0].json["temperature"] == 0.7
    info = scores(run, f"{judge.metric_prefix}:info")
    assert set(info) == set(study_ids)
    # Every request gets the same three choices (the fake cycles replies within a request).
    assert list(info.values()) == pytest.approx([4 / 3] * len(study_ids))
    assert JudgeAnswer.objects.filter(run=run).count() == 3 * len(study_ids)


def test_majority_of_samples(server):
    server.set_behaviour(
        replies=(
            '{"scores": {"info": 2, "coh": 2}}',
            '{"scores": {"info": 1, "coh": 2}}',
            '{"scores": {"info": 1, "coh": 0}}',
        )
    )
    study = chitchat_study(1)
    judge = services.judge_create(
        name="多数投票",
        backend=judge_backend(server),
        rubric=rubric("msde"),
        sampling={"n": 3, "aggregate": "majority"},
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert set(scores(run, f"{judge.metric_prefix}:info").values()) == {1.0}
    assert set(scores(run, f"{judge.metric_prefix}:coh").values()) == {2.0}
    assert set(scores(run, f"{judge.metric_prefix}:overall").values()) == {1.5}


def test_geval_scores_are_probability_weighted(server):
    server.set_behaviour(
        replies=('{"rationale": "ok", "scores": {"info": 2, "coh": 1}}',),
        logprobs={
            "2, ": [("2", math.log(0.5)), ("1", math.log(0.25)), ("0", math.log(0.25))],
            "1}}": [("1", math.log(0.8)), ("2", math.log(0.2))],
        },
    )
    study = chitchat_study(1)
    judge = services.judge_create(
        name="G-Eval",
        backend=judge_backend(server),
        rubric=rubric("msde"),
        sampling={"geval": True, "top_logprobs": 5},
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    sent = server.requests[0].json
    assert sent["logprobs"] is True and sent["top_logprobs"] == 5
    info = list(scores(run, f"{judge.metric_prefix}:info").values())
    coh = list(scores(run, f"{judge.metric_prefix}:coh").values())
    assert info == pytest.approx([1.25] * 2) and coh == pytest.approx([1.2] * 2)
    # The overall follows the rubric from the discrete answers (mean of 2 and 1).
    assert set(scores(run, f"{judge.metric_prefix}:overall").values()) == {1.5}


def _paired_campaign(n_scenarios: int = 2):
    campaign = CampaignFactory(mode=Campaign.Mode.STATIC)
    backends = [BackendFactory(name="系统一"), BackendFactory(name="系统二")]
    for backend in backends:
        CampaignBackendFactory(campaign=campaign, backend=backend)
    dialogues = {}
    for s in range(n_scenarios):
        sample = SampleFactory(skill=skill("chitchat"))
        for b, backend in enumerate(backends):
            dialogue = DialogueFactory(
                campaign=campaign,
                backend=backend,
                skill=skill("chitchat"),
                scenario=sample,
                status=Dialogue.Status.ACCEPTED,
            )
            TurnFactory(dialogue=dialogue, index=0, text="你好，最近在看什么电影？")
            TurnFactory(
                dialogue=dialogue,
                index=1,
                speaker=Turn.Speaker.SYSTEM,
                text="在看《流浪地球》。" if b == 0 else "嗯。",
                references=["在看《流浪地球》，你看过吗？"],
            )
            dialogues[(s, b)] = dialogue
    return campaign, backends, dialogues


def test_pairwise_asks_both_orders_and_cancels_position_bias(server):
    def prefer_the_longer(payload):
        user = payload["messages"][-1]["content"]
        a = user.split("## 对话 A\n", 1)[1].split("\n\n", 1)[0]
        b = user.split("## 对话 B\n", 1)[1].split("\n\n", 1)[0]
        info = "A" if len(a) > len(b) else "B"
        # coh: always the first shown, a position-biased judge.
        return json.dumps({"rationale": "比较", "winners": {"info": info, "coh": "A"}})

    server.set_behaviour(reply_fn=prefer_the_longer)
    campaign, backends, dialogues = _paired_campaign()
    judge = services.judge_create(
        name="成对裁判", backend=judge_backend(server), rubric=rubric("msde"), mode="pairwise"
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=campaign))
    assert run.status == JobStatus.DONE, run.error
    assert len(server.requests) == 4  # 2 scenarios × 2 orders
    orders = set(JudgeAnswer.objects.filter(run=run).values_list("order", flat=True))
    assert orders == {"ab", "ba"}
    info = scores(run, f"{judge.metric_prefix}:info")
    coh = scores(run, f"{judge.metric_prefix}:coh")
    for s in range(2):
        assert info[dialogues[(s, 0)].pk] == 1.0 and info[dialogues[(s, 1)].pk] == 0.0
        assert coh[dialogues[(s, 0)].pk] == coh[dialogues[(s, 1)].pk] == 0.5
    system = dict(
        MetricScore.objects.filter(
            run=run, metric=f"{judge.metric_prefix}:info", level="system", group=""
        ).values_list("backend__name", "value")
    )
    assert system == {"系统一": 1.0, "系统二": 0.0}


def test_reference_guided_prompts_carry_the_reference(server):
    replies = []

    def answer(payload):
        replies.append(payload["messages"][-1]["content"])
        return '{"scores": {"info": 1, "coh": 1}}'

    server.set_behaviour(reply_fn=answer)
    campaign, _backends, _dialogues = _paired_campaign(1)
    judge = services.judge_create(
        name="参考裁判", backend=judge_backend(server), rubric=rubric("msde"), mode="reference"
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=campaign))
    assert run.status == JobStatus.DONE
    assert all("## 参考回复\n在看《流浪地球》，你看过吗？" in text for text in replies)


def test_reference_guided_without_references_scores_nothing_and_says_why(server):
    server.set_behaviour(replies=('{"scores": {"info": 1, "coh": 1}}',))
    study = make_study(dialogues_per_cell=1, skills=("chitchat",), with_references=False)
    judge = services.judge_create(
        name="参考裁判", backend=judge_backend(server), rubric=rubric("msde"), mode="reference"
    )
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert not server.requests
    assert "no reference" in run.unavailable[f"{judge.metric_prefix}:info"]


ANSWER = '{"rationale": "好", "scores": {"info": 2, "coh": 1}}'


@pytest.fixture(scope="module")
def tiny_judge_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 whose only likely next token is a whole JSON answer (nothing downloaded)."""
    path = tmp_path_factory.mktemp("tiny-judge")
    vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2, "[BOS]": 3, ANSWER: 4}
    tokenizer = char_tokenizer(vocab)
    model = tiny_gpt2(len(vocab), seed=0)
    with torch.no_grad():
        # A constant final hidden state: the logits are the same at every position.
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.copy_(torch.ones(16))
        model.lm_head.weight.zero_()
        model.lm_head.weight[4] = 1.0
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_a_local_transformers_model_judges_end_to_end(tiny_judge_dir):
    backend = BackendFactory(
        name="本地裁判",
        adapter=Backend.Adapter.TRANSFORMERS,
        config={"model_path": str(tiny_judge_dir), "max_new_tokens": 1, "device": "cpu"},
        timeout_s=60,
    )
    study = chitchat_study(1)
    judge = services.judge_create(name="本地", backend=backend, rubric=rubric("msde"))
    assert services.judge_config(judge).params.response_format == "none"
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert run.status == JobStatus.DONE, run.error
    assert set(scores(run, f"{judge.metric_prefix}:info").values()) == {2.0}
    assert set(scores(run, f"{judge.metric_prefix}:overall").values()) == {1.5}
    answer = JudgeAnswer.objects.filter(run=run).first()
    assert answer.raw == ANSWER and answer.rationale == "好"
