"""ROUGE-1..4, ROUGE-L and ROUGE-W (Lin 2004, "ROUGE: A Package for Automatic Evaluation of
Summaries"), sentence level, on the text profile's tokens.

* ROUGE-N: clipped n-gram overlap; ``P = overlap / hypothesis n-grams``, ``R = overlap /
  reference n-grams`` (``rouge_score.rouge_scorer._score_ngrams``).
* ROUGE-L: ``P = LCS / |hypothesis|``, ``R = LCS / |reference|`` (``_score_lcs``).
* ROUGE-W: weighted LCS with ``f(k) = k^1.2`` (Lin 2004 §3.2, ROUGE-1.5.5's default weight 1.2):
  ``R = f⁻¹(WLCS / f(|reference|))``, ``P = f⁻¹(WLCS / f(|hypothesis|))``. rouge-score has no
  ROUGE-W; this follows the paper's dynamic program.

Each reports ``F = (1 + β²)PR / (R + β²P)`` (β = ``rouge_beta``, 1 gives rouge-score's F1), the
maximum over references (rouge-score's ``score_multi`` keeps the reference with the best F), and
the corpus value is the mean over responses.

The LCS and WLCS tables are Lin's dynamic program as printed, for all pairs in one compiled loop
(numba, ``cache=True``: compiled once per machine, kept next to this module); the profile showed
the earlier numpy formulation (one vector operation per hypothesis position over chunks of pairs)
as the slowest lexical kernel.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from metrics.scorers.base import Batch, Computed
from metrics.scorers.ngrams import Encoded, encoded

WLCS_WEIGHT = 1.2


def f_beta(p: np.ndarray, r: np.ndarray, beta: float) -> np.ndarray:
    """``(1 + β²)PR / (R + β²P)``, 0 where both are 0."""
    den = r + beta * beta * p
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (1 + beta * beta) * p * r / np.where(den > 0, den, 1), 0.0)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return num / np.maximum(den, 1)


def rouge_n(batch: Batch, n: int) -> Computed:
    enc = encoded(batch)
    overlap = enc.unit_overlap(n)
    totals = enc.totals(n)
    p = _ratio(overlap, totals[: enc.n_hyps][batch.owner])
    r = _ratio(overlap, totals[enc.n_hyps :])
    per = batch.max_over_refs(f_beta(p, r, batch.settings.rouge_beta))
    return Computed(per, float(per.mean()) if len(per) else 0.0)


@functools.cache
def _lcs_kernel() -> Any:
    """Lin 2004 §3.2's dynamic program for every (reference, hypothesis) pair, compiled once by
    numba (cached on disk next to this module). Rows run over the reference, columns over the
    hypothesis, two rows kept; ``weighted``: WLCS with ``weights[k] = k^1.2``, else LCS."""
    import numba

    @numba.njit(cache=True, nogil=True)
    def kernel(ids, starts, lens, ref_seq, hyp_seq, weighted, weights):  # type: ignore[no-untyped-def]  # numba types it
        out = np.zeros(len(ref_seq), dtype=np.float64)
        width = 1
        for u in range(len(hyp_seq)):
            width = max(width, lens[hyp_seq[u]] + 1)
        c_prev = np.zeros(width, dtype=np.float64)
        c_row = np.zeros(width, dtype=np.float64)
        w_prev = np.zeros(width, dtype=np.int64)
        w_row = np.zeros(width, dtype=np.int64)
        for u in range(len(ref_seq)):
            x0, m = starts[ref_seq[u]], lens[ref_seq[u]]
            y0, n = starts[hyp_seq[u]], lens[hyp_seq[u]]
            if m == 0 or n == 0:
                continue
            for j in range(n + 1):
                c_prev[j] = 0.0
                w_prev[j] = 0
            for i in range(1, m + 1):
                x = ids[x0 + i - 1]
                c_row[0] = 0.0
                w_row[0] = 0
                for j in range(1, n + 1):
                    if x == ids[y0 + j - 1]:
                        k = w_prev[j - 1]
                        if weighted:
                            c_row[j] = c_prev[j - 1] + weights[k + 1] - weights[k]
                        else:
                            c_row[j] = c_prev[j - 1] + 1.0
                        w_row[j] = k + 1
                    else:
                        c_row[j] = c_prev[j] if c_prev[j] > c_row[j - 1] else c_row[j - 1]
                        w_row[j] = 0
                c_prev, c_row = c_row, c_prev
                w_prev, w_row = w_row, w_prev
            out[u] = c_prev[n]
        return out

    return kernel


def _tables(enc: Encoded, owner: np.ndarray, weighted: bool) -> np.ndarray:
    """Per reference unit, LCS (or WLCS) length against its hypothesis."""
    if enc.n_units == 0:
        return np.zeros(0, dtype=np.float64)
    longest = int(max(enc.lens.max(), 1))
    weights = np.arange(longest + 2, dtype=np.float64) ** WLCS_WEIGHT
    return _lcs_kernel()(
        enc.ids,
        enc.starts,
        enc.lens,
        np.arange(enc.n_hyps, enc.n_hyps + enc.n_units, dtype=np.int64),
        owner.astype(np.int64),
        weighted,
        weights,
    )


def lcs_lengths(batch: Batch) -> np.ndarray:
    """Per reference unit, the LCS length with its hypothesis."""
    return batch.cached("lcs", lambda: _tables(encoded(batch), batch.owner, weighted=False))


def rouge_l(batch: Batch) -> Computed:
    enc = encoded(batch)
    lcs = lcs_lengths(batch)
    p = _ratio(lcs, enc.hyp_lens[batch.owner])
    r = _ratio(lcs, enc.ref_lens)
    per = batch.max_over_refs(f_beta(p, r, batch.settings.rouge_beta))
    return Computed(per, float(per.mean()) if len(per) else 0.0)


def rouge_w(batch: Batch) -> Computed:
    enc = encoded(batch)
    wlcs = _tables(enc, batch.owner, weighted=True)
    inverse = 1.0 / WLCS_WEIGHT
    hyp_f = np.maximum(enc.hyp_lens[batch.owner], 1).astype(np.float64) ** WLCS_WEIGHT
    ref_f = np.maximum(enc.ref_lens, 1).astype(np.float64) ** WLCS_WEIGHT
    p = (wlcs / hyp_f) ** inverse
    r = (wlcs / ref_f) ** inverse
    per = batch.max_over_refs(f_beta(p, r, batch.settings.rouge_beta))
    return Computed(per, float(per.mean()) if len(per) else 0.0)
