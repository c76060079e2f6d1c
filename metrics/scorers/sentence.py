"""Sentence-encoder cosine: the stand-in for Skip-Thought in the MSDE metric set (Kiros et al.
2015, "Skip-Thought Vectors"; seed 000 §4.3): the cosine between the sentence embeddings of the
response and the reference, the maximum over references; the corpus value is the mean.

The encoder is a local sentence-transformers directory (``modules.json``: its Transformer module
and the pooling of its ``Pooling`` module, ``cls``, ``max``, ``mean`` or ``mean_sqrt_len``, and
``max_seq_length`` from ``sentence_bert_config.json``), read without the sentence-transformers
package, or any Hugging Face encoder directory with mean pooling over the attention mask (Reimers &
Gurevych 2019, "Sentence-BERT"). A Normalize module does not change a cosine and is not needed.
Reference embeddings are cached across calls, as for BERTScore.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from metrics.scorers.base import Batch, Computed, MetricUnavailable
from metrics.scorers.models import (
    ModelCache,
    load_pretrained,
    model_label,
    position_limit,
)

REFERENCE_CACHE_SIZE = 1_000_000
_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MetricUnavailable(f"cannot read {path}: {exc}") from exc


def sentence_transformers_layout(root: Path) -> tuple[Path, str, int | None]:
    """``(transformer directory, pooling, max_seq_length)`` of an encoder directory."""
    modules_file = root / "modules.json"
    if not modules_file.is_file():
        return root, "mean", None
    modules = _read_json(modules_file)
    transformer = next((m for m in modules if m.get("type", "").endswith("Transformer")), None)
    if transformer is None:
        raise MetricUnavailable(f"{root.name}/modules.json names no Transformer module")
    model_dir = root / transformer.get("path", "")
    pooling = "mean"
    pooling_module = next((m for m in modules if m.get("type", "").endswith("Pooling")), None)
    if pooling_module is not None:
        config = _read_json(root / pooling_module["path"] / "config.json")
        modes = [mode for key, mode in _POOLING_KEYS.items() if config.get(key)]
        others = [
            k
            for k, v in config.items()
            if k.startswith("pooling_mode_") and v and k not in _POOLING_KEYS
        ]
        if len(modes) != 1 or others:
            raise MetricUnavailable(
                f"{root.name}: unsupported pooling "
                f"{sorted(k for k, v in config.items() if v is True)}"
            )
        pooling = modes[0]
    max_len = None
    st_config = model_dir / "sentence_bert_config.json"
    if st_config.is_file():
        max_len = _read_json(st_config).get("max_seq_length")
    return model_dir, pooling, max_len


class SentenceEncoder:
    """A pooled encoder with a cache of reference embeddings."""

    def __init__(self, root: Path, device: torch.device, batch_size: int) -> None:
        model_dir, self.pooling, max_len = sentence_transformers_layout(root)
        self.tokenizer, self.model = load_pretrained(
            "encoder", model_dir, str(device), "sentence encoder"
        )
        limit = position_limit(self.tokenizer, self.model)
        self.max_length = min(limit, max_len) if max_len else limit
        self.device = device
        self.batch_size = batch_size
        self._refs: OrderedDict[str, np.ndarray] = OrderedDict()

    @torch.inference_mode()
    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.model.config.hidden_size))
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        for at in range(0, len(order), self.batch_size):
            chunk = order[at : at + self.batch_size]
            inputs = self.tokenizer(
                [texts[i] for i in chunk],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            hidden = self.model(**inputs)[0].float()
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            if self.pooling == "cls":
                pooled = hidden[:, 0]
            elif self.pooling == "max":
                pooled = hidden.masked_fill(mask == 0, -1e9).max(dim=1).values
            else:
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
                if self.pooling == "mean_sqrt_len":
                    pooled = pooled * mask.sum(1).clamp(min=1).sqrt()
            out[chunk] = pooled.double().cpu().numpy()
        return out

    def encode(self, texts: Sequence[str], remember: bool) -> dict[str, np.ndarray]:
        """Embeddings of distinct texts; with ``remember`` they are cached (references)."""
        found = {t: self._refs[t] for t in dict.fromkeys(texts) if t in self._refs}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(zip(missing, self._encode(missing), strict=True))
        if remember:
            for text in missing:
                self._refs[text] = found[text]
                if len(self._refs) > REFERENCE_CACHE_SIZE:
                    self._refs.popitem(last=False)
        return found


_ENCODERS = ModelCache(SentenceEncoder, setting="sentence_model", what="sentence encoder")


def sentence_label(batch: Batch) -> str:
    return f"model:{model_label(batch.settings.sentence_model)}"


def sentence_cosine(batch: Batch) -> Computed:
    s = batch.settings
    encoder = _ENCODERS.get(s.sentence_model, s.device, s.batch_size)
    refs = [t.strip() for t in batch.ref_texts]
    hyps = [t.strip() for t in batch.hyps]
    ref_vec = encoder.encode(refs, remember=True)
    hyp_vec = encoder.encode(hyps, remember=False)
    a = np.stack([hyp_vec[hyps[i]] for i in batch.owner])
    b = np.stack([ref_vec[t] for t in refs])
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cos = np.where(den > 0, (a * b).sum(1) / np.where(den > 0, den, 1.0), 0.0)
    per = batch.max_over_refs(cos)
    return Computed(per, float(per.mean()) if len(per) else 0.0)
