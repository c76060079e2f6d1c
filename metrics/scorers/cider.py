"""CIDEr-D (Vedantam et al. 2015, "CIDEr: Consensus-based Image Description Evaluation"), as
``pycocoevalcap.cider`` computes it (its ``Cider`` class is the CIDEr-D variant: clipped n-gram
weights and a Gaussian length penalty), with n = 1..4 and σ = 6.

For each order n, hypothesis and reference become tf-idf vectors: term frequency times
``log(N) - log(max(1, df))``, where ``df`` is the number of *pairs* whose references contain the
n-gram and ``N`` the number of pairs, so the idf comes from the reference set of the batch and a
response's score depends on the whole batch (score one system's outputs together). The similarity
of order n is ``Σ min(h, r) · r / (|h| |r|)`` times ``exp(-δ² / 2σ²)``; a pair scores
``10 · mean over n, mean over its references``. The corpus value is the mean over pairs.

The tf-idf vectors and their products are counted pair by pair in compiled code
(:meth:`metrics.scorers.ngrams.Encoded.cider_similarity`).

pycocoevalcap measures the length difference δ in *bigrams* (its ``counts2vec`` sums term
frequencies where the 0-based order index is 1); that is reproduced here, so δ equals the token
length difference except when a sentence has fewer than two tokens.
"""

from __future__ import annotations

import numpy as np

from metrics.scorers.base import Batch, Computed
from metrics.scorers.ngrams import encoded

ORDERS = 4
SIGMA = 6.0


def cider_d(batch: Batch) -> Computed:
    enc = encoded(batch)
    owner = batch.owner
    n_pairs = len(batch)
    log_n = float(np.log(float(n_pairs))) if n_pairs else 0.0
    bigrams = enc.totals(2).astype(np.float64)
    delta = bigrams[: enc.n_hyps][owner] - bigrams[enc.n_hyps :]
    penalty = np.exp(-(delta**2) / (2 * SIGMA**2))
    unit_score = np.zeros(enc.n_units)
    for n in range(1, ORDERS + 1):
        unit_score += enc.cider_similarity(n, log_n) * penalty
    unit_score /= ORDERS
    per = np.bincount(owner, weights=unit_score, minlength=n_pairs) / batch.ref_counts * 10.0
    return Computed(per, float(per.mean()) if n_pairs else 0.0)
