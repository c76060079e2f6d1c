"""Perplexity of each response under a local causal language model (seed 002 eq. 2.36-2.37;
Serban et al. 2016 report it per word): ``exp(mean negative log-likelihood of the response's
tokens)``. The corpus value pools all tokens: ``exp(Σ NLL / Σ tokens)``. Lower is better.

Sequence: ``S response`` where ``S`` is the tokenizer's end-of-sequence token (else its BOS, SEP or
CLS token), so the first response token is predicted too, as GPT-2 does after ``<|endoftext|>``;
with ``perplexity_context`` the context turns come first, each after an ``S`` (DialoGPT's layout,
``S t1 S t2 … S response``), and only the response tokens are counted. Texts are tokenized without
special tokens. Over the model's length limit the context loses its oldest tokens and a response
longer than the limit is cut to it. A response without tokens has no perplexity (NaN, left out of
the corpus value).
"""

from __future__ import annotations

import math
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


class LanguageModel:
    def __init__(self, path: Path, device: torch.device, batch_size: int) -> None:
        self.tokenizer, self.model = load_pretrained(
            "causal-lm", path, str(device), "causal language model"
        )
        t = self.tokenizer
        separator = next(
            (
                i
                for i in (t.eos_token_id, t.bos_token_id, t.sep_token_id, t.cls_token_id)
                if i is not None
            ),
            None,
        )
        if separator is None:
            raise MetricUnavailable(f"the tokenizer of {path.name} has no EOS/BOS/SEP/CLS token")
        self.separator: int = separator
        self.pad = t.pad_token_id if t.pad_token_id is not None else separator
        self.max_length = position_limit(t, self.model)
        self.device = device
        self.batch_size = batch_size

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def sequence(self, response: str, context: Sequence[str]) -> tuple[list[int], int]:
        """Token ids and the number of response tokens at their end."""
        target = self._ids(response)[: self.max_length - 1]
        prefix: list[int] = []
        for turn in context:
            prefix += [self.separator, *self._ids(turn)]
        prefix.append(self.separator)
        prefix = prefix[-(self.max_length - len(target)) :]
        return prefix + target, len(target)

    @torch.inference_mode()
    def nll(self, sequences: Sequence[tuple[list[int], int]]) -> tuple[np.ndarray, np.ndarray]:
        """Summed negative log-likelihood and token count of each sequence's response part."""
        sums = np.zeros(len(sequences))
        counts = np.array([n for _, n in sequences], dtype=np.int64)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i][0]), reverse=True)
        for at in range(0, len(order), self.batch_size):
            chunk = [i for i in order[at : at + self.batch_size] if counts[i] > 0]
            if not chunk:
                continue
            width = max(len(sequences[i][0]) for i in chunk)
            ids = torch.full((len(chunk), width), self.pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            targets = torch.full((len(chunk), width), -100, dtype=torch.long)
            for row, i in enumerate(chunk):
                tokens, n = sequences[i]
                ids[row, : len(tokens)] = torch.tensor(tokens)
                mask[row, : len(tokens)] = 1
                targets[row, len(tokens) - n : len(tokens)] = torch.tensor(tokens[-n:])
            logits = self.model(
                input_ids=ids.to(self.device), attention_mask=mask.to(self.device)
            ).logits.float()
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].transpose(1, 2),
                targets[:, 1:].to(self.device),
                ignore_index=-100,
                reduction="none",
            )
            sums[chunk] = loss.sum(dim=1).double().cpu().numpy()
        return sums, counts


_MODELS = ModelCache(LanguageModel, setting="perplexity_model", what="causal language model")


def perplexity_label(batch: Batch) -> str:
    s = batch.settings
    return f"model:{model_label(s.perplexity_model)}|ctx:{'yes' if s.perplexity_context else 'no'}"


def perplexity(batch: Batch) -> Computed:
    s = batch.settings
    lm = _MODELS.get(s.perplexity_model, s.device, s.batch_size)
    contexts = batch.contexts if (s.perplexity_context and batch.contexts is not None) else None
    sequences = [lm.sequence(h, contexts[i] if contexts else ()) for i, h in enumerate(batch.hyps)]
    sums, counts = lm.nll(sequences)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(counts > 0, np.exp(sums / np.maximum(counts, 1)), np.nan)
    total = int(counts.sum())
    corpus = math.exp(sums.sum() / total) if total else math.nan
    return Computed(per, corpus, "token-weighted")
