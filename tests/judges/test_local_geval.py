"""G-Eval on a local transformers judge: the weighted score read from the model's own logits."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from transformers import GPT2LMHeadModel

from annotation.rubric_spec import validate_spec
from chat.backends.base import ChatRequest
from chat.models import Backend
from judges import local_geval, services
from judges.models import JudgeAnswer, JudgeCacheEntry
from metrics.models import JobStatus, MetricScore
from tests.annotation.factories import rubric
from tests.chat.factories import BackendFactory
from tests.judges.test_judge_runs import run_all
from tests.judges.tiny_models import char_tokenizer, tiny_gpt2
from tests.metrics.runs.factories import make_study

pytestmark = pytest.mark.django_db

ANSWER = '{"rationale": "好", "scores": {"info": 2, "coh": 1}}'
VOCAB = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2, "[BOS]": 3, ANSWER: 4}
for _text in ("0", "1", "2", " ", ":", "："):
    VOCAB[_text] = len(VOCAB)


@pytest.fixture(scope="module")
def geval_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 whose next-token distribution depends only on the last input token.

    Attention and MLP output projections and the position embeddings are zero, so the final
    hidden state is ``ln_f(wte[last token])`` and the logits ``lm_head · ln_f(wte[last])``. The
    generation prompt ends with the transcript's "机器人：", where the whole JSON answer (one
    token) is the likeliest; the JSON prefix before each value ends with ":", where the digits
    have the random head's logits. The tokenizer splits every character; digits are tokens."""
    path = tmp_path_factory.mktemp("geval-judge")
    tokenizer = char_tokenizer(VOCAB)
    model = tiny_gpt2(len(VOCAB), seed=7)
    with torch.no_grad():
        block = model.transformer.h[0]
        for layer in (block.attn.c_proj, block.mlp.c_proj):
            layer.weight.zero_()
            layer.bias.zero_()
        model.transformer.wpe.weight.zero_()
        model.lm_head.weight.normal_(0.0, 0.5)
        generation_end = model.transformer.ln_f(model.transformer.wte.weight[VOCAB["："]])
        model.lm_head.weight[4] = 3.0 * generation_end
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def hand_expectation(path: Path) -> float:
    """Σ p(v)·v over 0, 1, 2 after ":", from the saved weights (softmax over the three)."""
    model = GPT2LMHeadModel.from_pretrained(path)
    with torch.no_grad():
        hidden = torch.nn.functional.layer_norm(
            model.transformer.wte.weight[VOCAB[":"]],
            (16,),
            model.transformer.ln_f.weight,
            model.transformer.ln_f.bias,
            eps=model.config.layer_norm_epsilon,
        )
        logits = model.lm_head.weight @ hidden
    weights = [math.exp(float(logits[VOCAB[str(v)]])) for v in (0, 1, 2)]
    return sum(v * w for v, w in zip((0, 1, 2), weights, strict=True)) / sum(weights)


def test_local_judge_geval_is_weighted_by_the_models_logits_at_the_value(geval_model_dir):
    backend = BackendFactory(
        name="本地 G-Eval 裁判",
        adapter=Backend.Adapter.TRANSFORMERS,
        config={"model_path": str(geval_model_dir), "max_new_tokens": 1, "device": "cpu"},
        timeout_s=60,
    )
    study = make_study(dialogues_per_cell=1, skills=("chitchat",))
    judge = services.judge_create(
        name="本地 G-Eval", backend=backend, rubric=rubric("msde"), sampling={"geval": True}
    )
    assert services.judge_config(judge).geval
    run = run_all(services.judge_run_create(judge=judge, campaign=study.campaign))
    assert run.status == JobStatus.DONE, run.error

    expected = hand_expectation(geval_model_dir)
    assert expected not in (1.0, 2.0)  # a weighted score, not the discrete answer
    answers = list(JudgeAnswer.objects.filter(run=run))
    assert answers and all(a.raw == ANSWER for a in answers)
    for answer in answers:
        assert answer.values == {"info": 2.0, "coh": 1.0}
        assert answer.geval == pytest.approx({"info": expected, "coh": expected}, abs=1e-5)
    for question in ("info", "coh"):
        values = MetricScore.objects.filter(
            run=run, metric=f"{judge.metric_prefix}:{question}", level="dialogue"
        ).values_list("value", flat=True)
        assert list(values) and all(v == pytest.approx(expected, abs=1e-5) for v in values)
    # The candidates are cached with the reply: a re-run needs no forward pass.
    cached = JudgeCacheEntry.objects.filter(backend=backend).first()
    assert set(cached.response["choices"][0]["value_logprobs"]) == {"info", "coh"}


def test_a_value_with_no_single_token_gets_no_weighted_score_and_a_note(geval_model_dir):
    spec = validate_spec(
        {
            "key": "three",
            "version": 1,
            "title": {"en": "three"},
            "questions": [
                {
                    "key": "q",
                    "type": "scale",
                    "level": "dialogue",
                    "label": {"en": "Q"},
                    "min": 0,
                    "max": 3,
                },
                {
                    "key": "r",
                    "type": "scale",
                    "level": "dialogue",
                    "label": {"en": "R"},
                    "min": 0,
                    "max": 2,
                },
            ],
        }
    )
    request = ChatRequest(
        skill="chitchat", language="en", grounding={}, history=[("user", "x")], prompt="judge"
    )
    found, notes = local_geval.value_logprobs(
        str(geval_model_dir), "cpu", request, '{"scores": {"q": 2, "r": 1}}', spec.questions
    )
    assert "q" not in found and any("q: the value(s) 3" in note for note in notes)
    assert sorted(entry["token"] for entry in found["r"]) == ["0", "1", "2"]
    probabilities = [math.exp(entry["logprob"]) for entry in found["r"]]
    assert 0 < sum(probabilities) < 1  # log-softmax over the whole vocabulary
