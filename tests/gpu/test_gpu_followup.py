"""FED and FULL (follow-up likelihoods, seed 004) on CUDA equal the CPU's.

Tolerance: 2e-4 nats on each per-token mean NLL and score, 1e-4 relative (plus 1e-3 nats) on the
summed NLLs. Both devices compute in float32 (TF32 off, see conftest); cuBLAS sums in another
order than the CPU, so each logit differs by ~1e-6 relative and a token's log-probability by
~1e-5 nats through this model's 2 layers — the tolerance leaves an order of magnitude on top,
and is 100× below the differences between follow-ups that the metrics rank by.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest

from metrics.scorers.followup import FollowupScorer, followup_scores, load_followups
from tests.gpu.accelerator import ACCELERATOR, gpu, timed
from tests.metrics.reference_free.conftest import build_tiny_causal_lm

pytestmark = gpu

DIALOGUES = [
    ["Hi!", "Hello, how is your day?", "It's good. I am reading a book. How about you?"],
    ["What is your name?"],
    ["I like cats.", "Me too, they are cute.", "Do you have one?", "No, but I want one."],
    ["你好", "你好今天天气不错。"],
]


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU tests' tiny GPT-2 builder, twice as wide (a timing says a little more)."""
    return build_tiny_causal_lm(tmp_path_factory.mktemp("gpu-gpt2"), n_embd=64)


def test_followup_likelihoods_and_scores_on_cuda_equal_the_cpu(lm_dir: Path) -> None:
    followups = load_followups("en")
    texts = sorted(
        {t for item in followups.select("all") for t in (*item.positive, *item.negative)}
        | set(followups.full)
    )
    results = {}
    for device in ("cpu", ACCELERATOR):
        scorer = FollowupScorer.load(lm_dir, device=device)
        assert scorer.device.type == device.split(":")[0]
        likelihoods = timed(
            "FED/FULL follow-up likelihoods",
            device,
            partial(scorer.likelihoods, DIALOGUES, texts),
        )
        scores = {
            variant: followup_scores(DIALOGUES, scorer, "en", variant, "all")
            for variant in ("fed", "full")
        }
        results[device] = likelihoods, scores
    (cpu, cpu_scores), (accelerated, accelerated_scores) = results["cpu"], results[ACCELERATOR]
    np.testing.assert_allclose(accelerated.followup_nll, cpu.followup_nll, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(accelerated.history_nll, cpu.history_nll, rtol=1e-4, atol=1e-3)
    for conditional in (True, False):
        np.testing.assert_allclose(
            accelerated.mean_nll(conditional=conditional),
            cpu.mean_nll(conditional=conditional),
            atol=2e-4,
        )
    for variant, expected in cpu_scores.items():
        np.testing.assert_allclose(accelerated_scores[variant], expected, atol=2e-4)
