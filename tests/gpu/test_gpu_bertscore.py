"""BERTScore on CUDA equals the CPU's, with and without idf weighting.

Tolerance: 1e-5 on each precision, recall and F1 (cosines in [-1, 1]) and on their corpus means.
Both devices compute in float32 (TF32 off, see conftest): the embeddings differ by the order of
float32 sums only (~1e-6 relative through this encoder's layers), and a cosine of normalised
vectors carries that error, not more. 1e-5 is also below the 4 decimals a report prints.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch

from metrics.scorers import Settings, score
from tests.gpu.accelerator import ACCELERATOR, gpu, timed
from tests.metrics.scorers.conftest import EN_CORPUS, ZH_CORPUS, write_wordpiece_vocab

pytestmark = gpu

NAMES = ["bertscore-p", "bertscore-r", "bertscore-f1"]
PAIRS = ZH_CORPUS + EN_CORPUS


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU tests' tiny BERT (tests/metrics/scorers/conftest.py), twice as wide."""
    from transformers import BertConfig, BertModel

    texts = [t for h, refs in PAIRS for t in (h, *refs)]
    directory = write_wordpiece_vocab(tmp_path_factory.mktemp("gpu-bert"), texts, 128)
    vocab_size = len((directory / "vocab.txt").read_text(encoding="utf-8").splitlines())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
    )
    model = BertModel(config)
    with torch.no_grad():  # positive cosines, as with pre-trained encoders (see that conftest)
        for name, param in model.named_parameters():
            if name.endswith("LayerNorm.bias"):
                param.fill_(1.0)
    model.save_pretrained(directory)
    return directory


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_on_cuda_equals_the_cpu(bert_dir: Path, idf: bool) -> None:
    hyps = [h for h, _ in PAIRS]
    refs = [r for _, r in PAIRS]
    results = {}
    for device in ("cpu", ACCELERATOR):
        settings = Settings(
            bertscore_model=str(bert_dir),
            bertscore_layer=2,
            bertscore_idf=idf,
            device=device,
            batch_size=32,
        )
        # Timed warm: the second call is a second system's, its references' embeddings cached.
        results[device] = timed(
            f"BERTScore (idf {idf})",
            device,
            partial(score, NAMES, hyps, refs, settings=settings),
        )
    for name in NAMES:
        cpu, accelerated = results["cpu"][name], results[ACCELERATOR][name]
        assert cpu.per_response is not None and accelerated.per_response is not None
        np.testing.assert_allclose(accelerated.per_response, cpu.per_response, atol=1e-5)
        assert accelerated.corpus == pytest.approx(cpu.corpus, abs=1e-5)
