"""Discriminator (RUBER's unreferenced metric, seed 003) training and scoring on CUDA agree with
the CPU.

Tolerances: the same weights score within 1e-5 on both devices (probabilities and cosines in
float32, TF32 off, see conftest: only the order of sums differs). Training from the same seed —
the weights are initialised on the CPU and moved, dropout is 0, so both devices take the same
batches from the same start — gives each epoch's training and validation loss within 5e-3 and
the trained model's scores within 2e-2: cuDNN's LSTM sums in another order than the CPU's, and
Adam divides each gradient by its running magnitude, which lets those ~1e-7 differences grow over
a few hundred steps; a broken device path (wrong masks, lengths, dropout left on) moves the
losses by tenths.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest

from metrics.scorers.discriminator import (
    Discriminator,
    DiscriminatorConfig,
    TrainingResult,
    train_discriminator,
)
from tests.gpu.accelerator import ACCELERATOR, gpu, timed
from tests.metrics.reference_free.test_response_discriminator import SMALL, topical_corpus

pytestmark = gpu

CONFIG = DiscriminatorConfig.preset("AB-LSTM-bi-MLP", **{**SMALL, "max_epochs": 3})
CONTEXTS, RESPONSES = topical_corpus(400)
# Real pairs and shuffled (mostly off-topic) ones.
PROBE = (CONTEXTS[:50] * 2, RESPONSES[:50] + RESPONSES[1:51])


@pytest.fixture(scope="module")
def trained() -> dict[str, TrainingResult]:
    """The same training on each device, timed after a one-epoch warm-up on 40 pairs."""
    warm = DiscriminatorConfig.preset("AB-LSTM-bi-MLP", **{**SMALL, "max_epochs": 1})
    return {
        device: timed(
            "discriminator training",
            device,
            partial(train_discriminator, CONTEXTS, RESPONSES, CONFIG, seed=0, device=device),
            warm_up=partial(
                train_discriminator, CONTEXTS[:40], RESPONSES[:40], warm, device=device
            ),
        )
        for device in ("cpu", ACCELERATOR)
    }


def test_training_on_cuda_agrees_with_the_cpu(trained: dict[str, TrainingResult]) -> None:
    cpu, accelerated = trained["cpu"], trained[ACCELERATOR]
    assert accelerated.model.device.type == ACCELERATOR.split(":")[0]
    assert len(accelerated.history) == len(cpu.history)
    for ours, theirs in zip(accelerated.history, cpu.history, strict=True):
        for key in ("train_loss", "validation_loss"):
            assert abs(ours[key] - theirs[key]) <= 5e-3, (key, ours, theirs)
    np.testing.assert_allclose(accelerated.model.score(*PROBE), cpu.model.score(*PROBE), atol=2e-2)


def test_the_same_weights_score_the_same_on_cuda(
    trained: dict[str, TrainingResult], tmp_path: Path
) -> None:
    trained["cpu"].model.save(tmp_path / "model")
    scores = {}
    for device in ("cpu", ACCELERATOR):
        model = Discriminator.load(tmp_path / "model", device=device)

        def both(model: Discriminator = model) -> tuple[np.ndarray, np.ndarray]:
            return model.score(*PROBE), model.referenced_scores(PROBE[1], PROBE[1][::-1])

        scores[device] = timed("discriminator scoring", device, both)
    for accelerated, cpu in zip(scores[ACCELERATOR], scores["cpu"], strict=True):
        np.testing.assert_allclose(accelerated, cpu, atol=1e-5)
