"""BERTScore P/R/F1 (Zhang et al. 2020, "BERTScore: Evaluating Text Generation with BERT"), with
the options and results of the reference implementation ``bert_score`` (``score``, 0.3.13).

Any Hugging Face encoder directory: tokens are the model tokenizer's word pieces with its special
tokens (``bert_score.utils.sent_encode``: text stripped, truncated to the model's limit), their
embeddings are the output of layer ``bertscore_layer`` (default: the last; bert_score's tuned
default for ``bert-base-chinese`` is 8), L2-normalised. Greedy matching: ``P = Σ_i w_i max_j
cos(h_i, r_j) / Σ_i w_i`` over hypothesis tokens, ``R`` the same from the reference side, ``F =
2PR / (P + R)``. Weights ``w``: 1, and 0 for ``[CLS]``/``[SEP]``; with ``bertscore_idf`` the idf
``log((M + 1) / (df + 1))`` over the M references of the call. An empty candidate or reference
(only special tokens) scores P = R = F = 0. Several references: the maximum of each of P, R and F
separately. ``bertscore_baseline``: a bert_score baseline file (``LAYER,P,R,F`` rows), rescaling
``(x - b) / (1 - b)`` with the row of the layer used.

One difference: bert_score takes the maximum over zero-padded positions of its batch, so a token
whose best cosine is negative gets 0 when a longer sentence shares its batch; here the maximum is
over real tokens only. Pre-trained encoders give positive cosines, where both agree.

Speed (the MSDE study scores 14 systems against the same references): sentences are
de-duplicated and encoded in batches sorted by token length, layers above the one used are dropped,
and reference embeddings are cached by the scorer across calls, so every system after the first
only encodes its own hypotheses.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from metrics.scorers.base import Batch, Computed, MetricUnavailable
from metrics.scorers.models import (
    ModelCache,
    load_pretrained,
    model_label,
    position_limit,
)

REFERENCE_CACHE_BYTES = 1 << 30
_PAIR_BATCH = 256


def _layer_list(model: torch.nn.Module) -> tuple[torch.nn.Module, str]:
    """The module holding the transformer layers and the attribute name of their list."""
    for holder_name, attr in (
        ("encoder", "layer"),
        ("encoder", "block"),
        ("transformer", "layer"),
        ("", "layers"),
        ("", "layer"),
    ):
        holder = getattr(model, holder_name) if holder_name else model
        if holder is not None and isinstance(getattr(holder, attr, None), torch.nn.ModuleList):
            return holder, attr
    raise MetricUnavailable(f"cannot find the layers of a {type(model).__name__} to truncate")


class BertScorer:
    """An encoder truncated to one layer, with a cache of reference embeddings."""

    def __init__(
        self, path: Path, device: torch.device, layer: int | None, batch_size: int
    ) -> None:
        self.tokenizer, model = load_pretrained("encoder", path, str(device), "BERTScore model")
        if hasattr(model, "encoder") and hasattr(model, "decoder"):
            model = model.encoder
        holder, attr = _layer_list(model)
        layers = getattr(holder, attr)
        self.layer = len(layers) if layer is None else layer
        if self.layer > len(layers):
            raise MetricUnavailable(
                f"bertscore_layer={self.layer} but the model has {len(layers)} layers"
            )
        setattr(holder, attr, torch.nn.ModuleList(list(layers)[: self.layer]))
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.max_length = position_limit(self.tokenizer, model)
        self.special = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id} - {None}
        self._refs: OrderedDict[str, tuple[torch.Tensor, list[int]]] = OrderedDict()
        self._ref_bytes = 0

    def token_ids(self, sentences: Sequence[str]) -> list[list[int]]:
        encoded = self.tokenizer(
            [s.strip() for s in sentences],
            add_special_tokens=True,
            truncation=True,
            max_length=self.max_length,
        )["input_ids"]
        return [list(ids) for ids in encoded]

    @torch.inference_mode()
    def _embed(self, ids: list[list[int]]) -> list[torch.Tensor]:
        pad = self.tokenizer.pad_token_id or 0
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
        out: list[torch.Tensor] = [torch.empty(0)] * len(ids)
        for at in range(0, len(order), self.batch_size):
            chunk = order[at : at + self.batch_size]
            tensors = [torch.tensor(ids[i], dtype=torch.long) for i in chunk]
            input_ids = pad_sequence(tensors, batch_first=True, padding_value=pad).to(self.device)
            mask = pad_sequence([torch.ones_like(t) for t in tensors], batch_first=True).to(
                self.device
            )
            hidden = self.model(input_ids, attention_mask=mask)[0].float()
            hidden = hidden / hidden.norm(dim=-1, keepdim=True)
            for row, i in enumerate(chunk):
                out[i] = hidden[row, : len(ids[i])]
        return out

    def embeddings(
        self, hyps: Sequence[str], refs: Sequence[str]
    ) -> tuple[dict[str, torch.Tensor], dict[str, list[int]]]:
        """Embeddings and token ids of every distinct sentence; references come from the cache
        when a previous call encoded them."""
        emb: dict[str, torch.Tensor] = {}
        ids: dict[str, list[int]] = {}
        for text in dict.fromkeys(refs):
            cached = self._refs.get(text)
            if cached is not None:
                self._refs.move_to_end(text)
                emb[text], ids[text] = cached
        missing = [t for t in dict.fromkeys([*refs, *hyps]) if t not in emb]
        # Every text may be cached already (a system that answers with other references, e.g.
        # the demo's random replies): a tokenizer given no text raises IndexError.
        missing_ids = self.token_ids(missing) if missing else []
        for text, vec, tokens in zip(missing, self._embed(missing_ids), missing_ids, strict=True):
            emb[text], ids[text] = vec, tokens
        for text in dict.fromkeys(refs):
            if text not in self._refs:
                self._remember(text, emb[text], ids[text])
        return emb, ids

    def _remember(self, text: str, vec: torch.Tensor, tokens: list[int]) -> None:
        self._refs[text] = (vec, tokens)
        self._ref_bytes += vec.numel() * vec.element_size()
        while self._ref_bytes > REFERENCE_CACHE_BYTES and self._refs:
            _, (old, _) = self._refs.popitem(last=False)
            self._ref_bytes -= old.numel() * old.element_size()

    def idf(self, ref_ids: Sequence[list[int]], use_idf: bool) -> dict[int, float] | float:
        """Token weights: a table (idf) or the constant 1; special tokens are 0 in both."""
        if not use_idf:
            return 1.0
        counts: Counter[int] = Counter()
        for tokens in ref_ids:
            counts.update(set(tokens))
        m = len(ref_ids)
        return {t: math.log((m + 1) / (c + 1)) for t, c in counts.items()} | {-1: math.log(m + 1)}

    def _weights(self, tokens: list[int], idf: dict[int, float] | float) -> torch.Tensor:
        if isinstance(idf, float):
            values = [0.0 if t in self.special else idf for t in tokens]
        else:
            values = [0.0 if t in self.special else idf.get(t, idf[-1]) for t in tokens]
        return torch.tensor(values, dtype=torch.float32)

    def _empty(self, tokens: list[int]) -> bool:
        return all(t in self.special for t in tokens)

    @torch.inference_mode()
    def score(
        self, hyps: Sequence[str], refs: Sequence[str], use_idf: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """P, R, F of each (hypothesis, reference) pair."""
        hyps = [h.strip() for h in hyps]
        refs = [r.strip() for r in refs]
        emb, ids = self.embeddings(hyps, refs)
        idf = self.idf([ids[r] for r in refs], use_idf)
        weights: dict[str, torch.Tensor] = {}
        for text in dict.fromkeys([*hyps, *refs]):
            weights[text] = self._weights(ids[text], idf).to(self.device)
        p = np.zeros(len(hyps))
        r = np.zeros(len(hyps))
        order = sorted(range(len(hyps)), key=lambda i: (len(ids[hyps[i]]), len(ids[refs[i]])))
        for at in range(0, len(order), _PAIR_BATCH):
            chunk = order[at : at + _PAIR_BATCH]
            h = pad_sequence([emb[hyps[i]] for i in chunk], batch_first=True)
            g = pad_sequence([emb[refs[i]] for i in chunk], batch_first=True)
            hw = pad_sequence([weights[hyps[i]] for i in chunk], batch_first=True)
            gw = pad_sequence([weights[refs[i]] for i in chunk], batch_first=True)
            h_mask = pad_sequence(
                [torch.ones(len(ids[hyps[i]]), dtype=torch.bool) for i in chunk], batch_first=True
            ).to(self.device)
            g_mask = pad_sequence(
                [torch.ones(len(ids[refs[i]]), dtype=torch.bool) for i in chunk], batch_first=True
            ).to(self.device)
            sim = torch.bmm(h, g.transpose(1, 2))
            sim = sim.masked_fill(~(h_mask[:, :, None] & g_mask[:, None, :]), -2.0)
            prec = (sim.max(dim=2).values * hw).sum(1) / hw.sum(1)
            rec = (sim.max(dim=1).values * gw).sum(1) / gw.sum(1)
            p[chunk] = prec.double().cpu().numpy()
            r[chunk] = rec.double().cpu().numpy()
        empty = np.array(
            [self._empty(ids[h]) or self._empty(ids[g]) for h, g in zip(hyps, refs, strict=True)],
            dtype=bool,
        )
        p = np.where(empty, 0.0, np.nan_to_num(p))
        r = np.where(empty, 0.0, np.nan_to_num(r))
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.nan_to_num(2 * p * r / (p + r))
        return p, r, f


_SCORERS = ModelCache(BertScorer, setting="bertscore_model", what="BERTScore model")


def scorer_for(batch: Batch) -> BertScorer:
    """The cached scorer of the batch's settings (reused across calls, with its reference cache)."""
    s = batch.settings
    return _SCORERS.get(s.bertscore_model, s.device, s.bertscore_layer, s.batch_size)


def _baseline(path: str, layer: int) -> np.ndarray:
    file = Path(path).expanduser()
    if not file.is_file():
        raise MetricUnavailable(f"BERTScore baseline file {path!r} does not exist")
    with file.open(newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    if layer >= len(rows):
        raise MetricUnavailable(f"BERTScore baseline {file.name} has no row for layer {layer}")
    return np.array([float(v) for v in rows[layer][1:4]])


def bertscore_label(batch: Batch) -> str:
    s = batch.settings
    layer = "last" if s.bertscore_layer is None else str(s.bertscore_layer)
    rescale = model_label(s.bertscore_baseline) if s.bertscore_baseline else "no"
    return (
        f"model:{model_label(s.bertscore_model)}|L:{layer}|idf:{'yes' if s.bertscore_idf else 'no'}"
        f"|rescale:{rescale}"
    )


def bertscore(batch: Batch) -> dict[str, Computed]:
    """``bertscore-p``, ``bertscore-r``, ``bertscore-f1``; the corpus values are means."""
    scorer = scorer_for(batch)
    hyps = [batch.hyps[i] for i in batch.owner]
    p, r, f = scorer.score(hyps, batch.ref_texts, batch.settings.bertscore_idf)
    values = np.stack([batch.max_over_refs(v) for v in (p, r, f)], axis=1)
    if batch.settings.bertscore_baseline:
        base = _baseline(batch.settings.bertscore_baseline, scorer.layer)
        values = (values - base) / (1 - base)
    out = {}
    for column, name in enumerate(("bertscore-p", "bertscore-r", "bertscore-f1")):
        per = values[:, column]
        out[name] = Computed(per, float(per.mean()) if len(per) else 0.0)
    return out
