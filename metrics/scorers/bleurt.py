"""BLEURT (Sellam et al. 2020, "BLEURT: Learning Robust Metrics for Text Generation") from a local
PyTorch checkpoint directory.

The PyTorch ports of the BLEURT checkpoints (e.g. ``Elron/bleurt-base-128``) are BERT regression
models: a ``BertForSequenceClassification``-style checkpoint with one output (``num_labels = 1``),
read by ``AutoModelForSequenceClassification``. As in the original, the input is the pair
``[CLS] reference [SEP] candidate [SEP]`` (segment 0 the reference, 1 the candidate), truncated to
the checkpoint's length (``longest_first``), and the score is the regression output. Several
references: the maximum; the corpus value is the mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from metrics.scorers.base import Batch, Computed, MetricUnavailable
from metrics.scorers.models import (
    ModelCache,
    load_pretrained,
    model_label,
    position_limit,
)


class BleurtScorer:
    def __init__(self, path: Path, device: torch.device, batch_size: int) -> None:
        self.tokenizer, self.model = load_pretrained(
            "sequence-classification", path, str(device), "BLEURT checkpoint"
        )
        if getattr(self.model.config, "num_labels", None) != 1:
            raise MetricUnavailable(
                f"{path.name} is not a BLEURT regression checkpoint (num_labels must be 1)"
            )
        self.max_length = position_limit(self.tokenizer, self.model)
        self.device = device
        self.batch_size = batch_size

    @torch.inference_mode()
    def score(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(candidates))
        order = sorted(
            range(len(candidates)),
            key=lambda i: len(candidates[i]) + len(references[i]),
            reverse=True,
        )
        for at in range(0, len(order), self.batch_size):
            chunk = order[at : at + self.batch_size]
            inputs = self.tokenizer(
                [references[i] for i in chunk],
                [candidates[i] for i in chunk],
                padding=True,
                truncation="longest_first",
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            out[chunk] = self.model(**inputs).logits[:, 0].double().cpu().numpy()
        return out


_SCORERS = ModelCache(BleurtScorer, setting="bleurt_model", what="BLEURT checkpoint")


def bleurt_label(batch: Batch) -> str:
    return f"model:{model_label(batch.settings.bleurt_model)}"


def bleurt(batch: Batch) -> Computed:
    s = batch.settings
    scorer = _SCORERS.get(s.bleurt_model, s.device, s.batch_size)
    candidates = [batch.hyps[i].strip() for i in batch.owner]
    per = batch.max_over_refs(scorer.score(candidates, [r.strip() for r in batch.ref_texts]))
    return Computed(per, float(per.mean()) if len(per) else 0.0)
