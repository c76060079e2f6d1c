"""F1, BLEU-n and DIST-n of the ``lic`` profile: the definitions of the LIC 2021 / DuConv
evaluation script (``baidu/knowledge-driven-dialogue``, ``generative_pt/tools/eval.py``), which
published LIC 2021 and MSDE numbers come from.

Tokens are ``text.strip().split(" ")`` exactly as given. Like the script:

* an n-gram is keyed by its tokens *joined without a separator* (``get_dict``), so ``("ab", "c")``
  and ``("a", "bc")`` are the same bigram;
* F1 (the published LIC 2021 / MSDE figures, issue 5's profile definition): micro unigram F1 over
  the *tokens as given* -- clipped token counts per pair, hits, hypothesis tokens and reference
  tokens summed over the corpus, then ``P = hits / hyp tokens``, ``R = hits / ref tokens`` and
  ``F1 = 2PR / (P + R)``. Checked on three systems' published LIC 2021 files: this reproduces every
  published F1 to the printed precision, the character F1 below none of them (an unsegmented reply
  is one token, so it scores near 0 here, as published);
* character F1 (:func:`char_f1`, metric ``char-f1``): the DuConv script's ``calc_f1``, which joins
  the tokens back and counts *characters*, ``P = hits / chars(hyp)``, ``R = hits / chars(ref)``
  with clipped character counts, micro over the corpus. It does not depend on segmentation; it is
  kept under its own name because it is *not* what the published F1 columns report;
* BLEU-n (``calc_bleu``): corpus n-gram precisions ``p_k`` (clipped counts summed over the corpus),
  one brevity penalty from the summed token lengths, ``BLEU-n = BP · exp(mean log p_1..p_n)``
  without smoothing, 0 when ``p_n = 0``; the script reports BLEU-1/2, BLEU-3/4 extend it;
* DIST-n (``calc_distinct``): distinct n-grams over all n-grams of all responses.

Per-response values apply the same formulas to one pair (F1 of the pair, BLEU of a one-pair
corpus, DIST within the response). The script takes one reference per line; with several, the
first is used (the signature says ``ref:first``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from metrics.scorers.base import Batch, Computed
from metrics.scorers.ngram_kernels import kernels
from metrics.scorers.ngrams import Encoded, encoded


def _tokens(text: str) -> list[str]:
    return text.strip().split(" ")


def _grams(tokens: Sequence[str], n: int) -> Counter[str]:
    return Counter("".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _f1(hits: float, pred: float, gold: float) -> float:
    if hits == 0 or pred == 0 or gold == 0:
        return 0.0
    p, r = hits / pred, hits / gold
    return 2 * p * r / (p + r)


def _bleu(
    matched: Sequence[float] | np.ndarray, total: Sequence[float] | np.ndarray, c: float, r: float
) -> float:
    if c == 0 or total[-1] == 0 or matched[-1] == 0:
        return 0.0
    precisions = [m / t if t else 0.0 for m, t in zip(matched, total, strict=True)]
    if min(precisions) <= 0:
        return 0.0
    bp = math.exp(1 - r / c) if c < r else 1.0
    return bp * math.exp(sum(math.log(p) for p in precisions) / len(precisions))


def _pairs(batch: Batch) -> list[tuple[list[str], list[str]]]:
    assert batch.refs is not None
    return batch.cached(
        "lic-pairs",
        lambda: [
            (_tokens(h), _tokens(refs[0])) for h, refs in zip(batch.hyps, batch.refs, strict=True)
        ],
    )


def _micro_f1(units: Sequence[tuple[Sequence[str], Sequence[str]]]) -> Computed:
    """Per-pair F1 and the micro F1 of clipped unit counts pooled over the corpus."""
    per = np.zeros(len(units))
    hits_sum = pred_sum = gold_sum = 0
    for i, (pred, gold) in enumerate(units):
        hits = sum((Counter(pred) & Counter(gold)).values())
        per[i] = _f1(hits, len(pred), len(gold))
        hits_sum += hits
        pred_sum += len(pred)
        gold_sum += len(gold)
    return Computed(per, _f1(hits_sum, pred_sum, gold_sum), "micro")


def lic_f1(batch: Batch) -> Computed:
    """The ``lic`` profile's F1: micro unigram F1 over ``text.strip().split(" ")`` tokens."""
    return _micro_f1(_pairs(batch))


def char_f1(batch: Batch) -> Computed:
    """DuConv's ``calc_f1``: characters of the joined tokens (of the batch's text profile), first
    reference, per pair and micro over the corpus."""
    assert batch.refs is not None
    if batch.settings.profile == "lic":
        return _micro_f1([("".join(hyp), "".join(ref)) for hyp, ref in _pairs(batch)])
    chars = _characters(encoded(batch), batch.ref_start[:-1])
    hits = chars.unit_overlap(1)
    pred, gold = chars.hyp_lens.astype(np.float64), chars.ref_lens.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p, r = hits / pred, hits / gold
        per = np.where((hits > 0) & (pred > 0) & (gold > 0), 2 * p * r / (p + r), 0.0)
    return Computed(per, _f1(float(hits.sum()), float(pred.sum()), float(gold.sum())), "micro")


def _characters(enc: Encoded, first_units: np.ndarray) -> Encoded:
    """The characters of each hypothesis's and its first reference's joined tokens, encoded
    (character ids; the reference of hypothesis ``i`` is unit ``i``)."""
    owner = np.arange(enc.n_hyps, dtype=np.int64)
    if enc.n_units == enc.n_hyps:  # one reference per pair: every sequence, as encoded
        lens, tokens = enc.lens, enc.ids
    else:
        seqs = np.concatenate([owner, enc.n_hyps + first_units])
        lens = enc.lens[seqs]
        at = np.repeat(enc.starts[seqs] - (np.cumsum(lens) - lens), lens)
        tokens = enc.ids[at + np.arange(len(at))]
    vocab_lens = np.fromiter(map(len, enc.vocab), dtype=np.int64, count=len(enc.vocab))
    if (vocab_lens == 1).all():  # character tokens: the characters are the tokens
        return Encoded(tokens, lens, enc.vocab, enc.n_hyps, owner)
    vocab_chars = np.frombuffer("".join(enc.vocab).encode("utf-32-le"), dtype=np.uint32)
    char_ids, size = kernels().densify(vocab_chars.astype(np.int64), 0)
    first = np.flatnonzero(np.r_[True, char_ids[1:] > np.maximum.accumulate(char_ids)[:-1]])
    vocab = [chr(c) for c in vocab_chars[first[: int(size)]].tolist()]
    token_lens = vocab_lens[tokens]
    ends = np.cumsum(token_lens)
    where = np.repeat(np.cumsum(vocab_lens)[tokens] - ends, token_lens)
    ids = char_ids[where + np.arange(len(where))]
    bounds = np.concatenate([[0], ends])[np.concatenate([[0], np.cumsum(lens)])]
    return Encoded(ids, np.diff(bounds), vocab, enc.n_hyps, owner)


def lic_bleu(batch: Batch, orders: list[int]) -> dict[int, Computed]:
    top = max(orders)
    pairs = _pairs(batch)
    matched = np.zeros((len(pairs), top))
    total = np.zeros((len(pairs), top))
    c = np.array([len(h) for h, _ in pairs], dtype=np.float64)
    r = np.array([len(g) for _, g in pairs], dtype=np.float64)
    for i, (hyp, ref) in enumerate(pairs):
        for k in range(1, top + 1):
            h, g = _grams(hyp, k), _grams(ref, k)
            matched[i, k - 1] = sum(min(f, g[key]) for key, f in h.items() if key in g)
            total[i, k - 1] = sum(h.values())
    out = {}
    for n in orders:
        per = np.array([_bleu(matched[i, :n], total[i, :n], c[i], r[i]) for i in range(len(pairs))])
        corpus = _bleu(matched[:, :n].sum(0), total[:, :n].sum(0), c.sum(), r.sum())
        out[n] = Computed(per, corpus, "corpus-bleu")
    return out


def lic_distinct(batch: Batch, n: int) -> Computed:
    per = np.zeros(len(batch))
    corpus: Counter[str] = Counter()
    for i, hyp in enumerate(batch.hyps):
        grams = _grams(_tokens(hyp), n)
        per[i] = len(grams) / sum(grams.values()) if grams else 0.0
        corpus.update(grams)
    total = sum(corpus.values())
    return Computed(per, len(corpus) / total if total else 0.0, "inter")
