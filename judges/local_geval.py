"""G-Eval log-probabilities from a local ``transformers`` judge (no ORM here).

A hosted model returns ``top_logprobs`` for the token that carries each answer value; a local
model returns nothing of the kind, so the judge asks it directly. After the reply is generated
and parsed, for each question whose value was found at a known position, one forward pass reads
the model's next-token distribution after *the prompt + the reply up to that value* (the JSON
prefix ``…"info":``), over the tokens that spell one of the scale's values. Those candidates go
through the same weighting as the OpenAI path (:func:`judges.parsing.geval_expectation`, Liu et
al. 2023, §2.3: Σ p(v)·v renormalised over the valid values).

Candidate tokens: each valid value spelt on its own (``2``, ``yes``) and after the whitespace
that separates it from the prefix (``" 2"``: most BPE vocabularies fold the space into the
value's token, so the prefix is cut before that whitespace). Only spellings that are a single
token count (G-Eval reads one token); a value with no single-token spelling makes the
question's weighted score unavailable, with a note, rather than a score over part of the scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from annotation.rubric_spec import Question
from chat.backends.base import ChatRequest
from chat.backends.transformers_local import load_model, model_input
from judges import parsing

YESNO_SPELLINGS = {1.0: ("yes", "是", "はい"), 0.0: ("no", "否", "いいえ")}


def value_spellings(question: Question) -> dict[float, tuple[str, ...]]:
    """The answer strings of each value G-Eval weighs (those ``_candidate_value`` accepts)."""
    if question.type == "yesno":
        return dict(YESNO_SPELLINGS)
    return {float(v): (str(v),) for v in range(question.minimum, question.maximum + 1)}


def _single_token_ids(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    ids: list[int] = []
    for text in texts:
        encoded = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(encoded) == 1 and encoded[0] != tokenizer.unk_token_id and encoded[0] not in ids:
            ids.append(encoded[0])
    return ids


def value_logprobs(
    model_path: str,
    device: str,
    request: ChatRequest,
    reply: str,
    questions: Sequence[Question],
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Per question key, ``[{"token", "logprob"}, …]`` over the single-token spellings of its
    valid values at the position where the reply's value starts; and notes on what was left
    out. Blocking (a forward pass per question): call it in a worker thread."""
    import torch

    loaded = load_model(model_path, device)
    if loaded.encoder_decoder:
        return {}, ["G-Eval log-probabilities are read from causal models only"]
    tokenizer = loaded.tokenizer
    parsed = parsing.parse_reply(reply, questions, mode="direct")
    prompt = model_input(loaded, request)
    out: dict[str, list[dict[str, Any]]] = {}
    notes: list[str] = []
    for q in questions:
        offset = parsed.offsets.get(q.key)
        if offset is None or q.key not in parsed.values:
            continue
        prefix = reply[:offset]
        stripped = prefix.rstrip()
        gap = prefix[len(stripped) :]
        candidates: list[int] = []
        missing = []
        for spellings in value_spellings(q).values():
            texts = [s for base in spellings for s in (base, f"{gap}{base}", f" {base}")]
            ids = _single_token_ids(tokenizer, texts)
            if not ids:
                missing.append(spellings[0])
            candidates.extend(i for i in ids if i not in candidates)
        if missing:
            notes.append(
                f"G-Eval: {q.key}: the value(s) {', '.join(missing)} are not one token of this "
                "model's vocabulary; no weighted score for this question"
            )
            continue
        # Tokenised as the adapter tokenises its generation input (special tokens included).
        ids = tokenizer(prompt + stripped, return_tensors="pt")
        input_ids = ids["input_ids"]
        if loaded.max_positions:
            input_ids = input_ids[:, -loaded.max_positions :]
        with torch.no_grad():
            logits = loaded.model(input_ids=input_ids.to(loaded.device)).logits[0, -1]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        entries = []
        for token_id in candidates:
            value = float(logprobs[token_id])
            if math.isfinite(value):
                entries.append({"token": tokenizer.decode([token_id]), "logprob": value})
        out[q.key] = entries
    return out, notes
