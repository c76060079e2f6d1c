"""The compiled n-gram loops (numba), shared by the tokenizers (`text.py`: dense token ids), the
n-gram statistics (`ngrams.py`) and LIC (`lic.py`).

A module of its own so that it depends on no scorer module: `base` imports `text`, `text` needs
these loops and `ngrams` needs `base`'s `Batch`, so the loops living in `ngrams` made an import
loop. numba's cache (``cache=True``) keeps the compiled code next to this module: compiled once per
machine.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import numpy as np


@functools.cache
def kernels() -> Any:
    """The compiled loops (numba is imported on first use: web processes never score)."""
    import numba

    jit = numba.njit(cache=True, nogil=True)
    golden = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing (Knuth, TAOCP 6.4)

    @jit
    def densify(keys, expected):  # type: ignore[no-untyped-def]  # numba types it
        """Dense ids (0, 1, ... in order of first appearance) of the non-negative ``keys``; -1
        stays -1. Returns the ids and how many there are. Linear probing in one table of
        (key, id) rows (one cache line per probe), sized for ``expected`` distinct keys and
        doubled when more than half full, so a small vocabulary stays in cache."""
        bits = 10
        while (1 << bits) < 1.5 * expected:
            bits += 1
        table = np.full((1 << bits, 2), -1, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        size = 0
        for i in range(len(keys)):
            key = keys[i]
            if key < 0:
                out[i] = -1
                continue
            mask = (1 << bits) - 1
            slot = np.int64((np.uint64(key) * golden) >> np.uint64(64 - bits))
            while True:
                found = table[slot, 0]
                if found == key:
                    out[i] = table[slot, 1]
                    break
                if found == -1:
                    table[slot, 0] = key
                    table[slot, 1] = size
                    out[i] = size
                    size += 1
                    break
                slot = (slot + 1) & mask
            if 2 * size > (1 << bits):
                bits += 1
                mask = (1 << bits) - 1
                grown = np.full((1 << bits, 2), -1, dtype=np.int64)
                for old in range(len(table)):
                    k = table[old, 0]
                    if k >= 0:
                        slot = np.int64((np.uint64(k) * golden) >> np.uint64(64 - bits))
                        while grown[slot, 0] != -1:
                            slot = (slot + 1) & mask
                        grown[slot, 0] = k
                        grown[slot, 1] = table[old, 1]
                table = grown
        return out, size

    @jit
    def gram_keys(ids, starts, lens, prev, width, n):  # type: ignore[no-untyped-def]  # numba types it
        """Packed key ``prefix id * width + last token`` of the n-gram at each position."""
        out = np.full(len(ids), -1, dtype=np.int64)
        for s in range(len(lens)):
            first = starts[s]
            for p in range(first, first + lens[s] - n + 1):
                out[p] = prev[p] * width + ids[p + n - 1]
        return out

    @jit
    def overlap_stats(gram, size, starts, lens, n_hyps, unit_start, n):  # type: ignore[no-untyped-def]  # numba types it
        """Per unit the clipped overlap with its hypothesis; per hypothesis BLEU's clipped matches
        (clipped to the largest count in any one reference) and its distinct n-grams; the
        distinct n-grams of all hypotheses together."""
        n_units = len(lens) - n_hyps
        overlap = np.zeros(n_units, dtype=np.int64)
        clipped = np.zeros(n_hyps, dtype=np.int64)
        distinct = np.zeros(n_hyps, dtype=np.int64)
        hyp_count = np.zeros(size, dtype=np.int64)
        ref_count = np.zeros(size, dtype=np.int64)
        ref_max = np.zeros(size, dtype=np.int64)
        seen = np.zeros(size, dtype=np.bool_)
        corpus = 0
        for i in range(n_hyps):
            h0, h1 = starts[i], starts[i] + lens[i] - n + 1
            for p in range(h0, h1):
                g = gram[p]
                if hyp_count[g] == 0:
                    distinct[i] += 1
                    if not seen[g]:
                        seen[g] = True
                        corpus += 1
                hyp_count[g] += 1
            for u in range(unit_start[i], unit_start[i + 1]):
                r0 = starts[n_hyps + u]
                r1 = r0 + lens[n_hyps + u] - n + 1
                for p in range(r0, r1):
                    ref_count[gram[p]] += 1
                total = 0
                for p in range(r0, r1):
                    g = gram[p]
                    c = ref_count[g]
                    if c > 0:  # first occurrence of g in this unit
                        total += min(c, hyp_count[g])
                        ref_max[g] = max(ref_max[g], c)
                        ref_count[g] = 0
                overlap[u] = total
            total = 0
            for p in range(h0, h1):
                g = gram[p]
                c = hyp_count[g]
                if c > 0:
                    total += min(c, ref_max[g])
                    hyp_count[g] = 0
            clipped[i] = total
            for u in range(unit_start[i], unit_start[i + 1]):
                r0 = starts[n_hyps + u]
                for p in range(r0, r0 + lens[n_hyps + u] - n + 1):
                    ref_max[gram[p]] = 0
        return overlap, clipped, distinct, corpus

    @jit
    def packed_keys(ids, starts, lens, n, bits):  # type: ignore[no-untyped-def]  # numba types it
        """The n token ids of the n-gram at each position packed into one key (-1: none fits)."""
        out = np.full(starts[len(lens) - 1] + lens[len(lens) - 1] if len(lens) else 0, -1, np.int64)
        for s in range(len(lens)):
            for p in range(starts[s], starts[s] + lens[s] - n + 1):
                key = np.int64(0)
                for j in range(n):
                    key = (key << bits) | ids[p + j]
                out[p] = key
        return out

    @jit
    def local_stats(ids, starts, lens, n_hyps, unit_start, n, bits):  # type: ignore[no-untyped-def]  # numba types it
        """``overlap_stats`` without global n-gram ids: the n-grams of one pair (hypothesis and
        its references) are counted in a small hash table of packed keys, which stays in
        cache."""
        n_units = len(lens) - n_hyps
        overlap = np.zeros(n_units, dtype=np.int64)
        clipped = np.zeros(n_hyps, dtype=np.int64)
        distinct = np.zeros(n_hyps, dtype=np.int64)
        most = 0
        for i in range(n_hyps):
            m = max(lens[i] - n + 1, 0)
            for u in range(unit_start[i], unit_start[i + 1]):
                m += max(lens[n_hyps + u] - n + 1, 0)
            most = max(most, m)
        cap_bits = 4
        while (1 << cap_bits) < 2 * most:
            cap_bits += 1
        table = np.full(1 << cap_bits, -1, dtype=np.int64)
        hyp_count = np.zeros(1 << cap_bits, dtype=np.int64)
        ref_count = np.zeros(1 << cap_bits, dtype=np.int64)
        ref_max = np.zeros(1 << cap_bits, dtype=np.int64)
        slots = np.empty(max(most, 1), dtype=np.int64)
        for i in range(n_hyps):
            m = max(lens[i] - n + 1, 0)
            for u in range(unit_start[i], unit_start[i + 1]):
                m += max(lens[n_hyps + u] - n + 1, 0)
            b = 4
            while (1 << b) < 2 * m:
                b += 1
            mask = (1 << b) - 1
            shift = np.uint64(64 - b)
            table[: 1 << b] = -1
            hyp_count[: 1 << b] = 0
            ref_count[: 1 << b] = 0
            ref_max[: 1 << b] = 0
            h0 = starts[i]
            hn = max(lens[i] - n + 1, 0)
            for p in range(h0, h0 + hn):
                key = np.int64(0)
                for j in range(n):
                    key = (key << bits) | ids[p + j]
                slot = np.int64((np.uint64(key) * golden) >> shift)
                while table[slot] != -1 and table[slot] != key:
                    slot = (slot + 1) & mask
                if table[slot] == -1:
                    table[slot] = key
                    distinct[i] += 1
                hyp_count[slot] += 1
                slots[p - h0] = slot
            for u in range(unit_start[i], unit_start[i + 1]):
                r0 = starts[n_hyps + u]
                rn = max(lens[n_hyps + u] - n + 1, 0)
                for p in range(r0, r0 + rn):
                    key = np.int64(0)
                    for j in range(n):
                        key = (key << bits) | ids[p + j]
                    slot = np.int64((np.uint64(key) * golden) >> shift)
                    while table[slot] != -1 and table[slot] != key:
                        slot = (slot + 1) & mask
                    table[slot] = key
                    ref_count[slot] += 1
                    slots[hn + p - r0] = slot
                total = 0
                for q in range(hn, hn + rn):
                    slot = slots[q]
                    c = ref_count[slot]
                    if c > 0:  # first occurrence in this unit
                        total += min(c, hyp_count[slot])
                        ref_max[slot] = max(ref_max[slot], c)
                        ref_count[slot] = 0
                overlap[u] = total
            total = 0
            for q in range(hn):
                slot = slots[q]
                c = hyp_count[slot]
                if c > 0:
                    total += min(c, ref_max[slot])
                    hyp_count[slot] = 0
            clipped[i] = total
        return overlap, clipped, distinct

    @jit
    def cider_order(gram, size, starts, lens, n_hyps, unit_start, n, log_n):  # type: ignore[no-untyped-def]  # numba types it
        """pycocoevalcap ``CiderScorer.compute_cider`` for one order: per unit, the similarity
        ``Σ min(h, r) · r / (|h| |r|)`` of tf-idf vectors (before the length penalty), with
        ``idf = log N - log max(1, df)`` and ``df`` the number of pairs whose references contain
        the n-gram."""
        n_units = len(lens) - n_hyps
        df = np.zeros(size, dtype=np.int64)
        stamp = np.full(size, -1, dtype=np.int64)
        for i in range(n_hyps):
            for u in range(unit_start[i], unit_start[i + 1]):
                r0 = starts[n_hyps + u]
                for p in range(r0, r0 + lens[n_hyps + u] - n + 1):
                    g = gram[p]
                    if stamp[g] != i:
                        stamp[g] = i
                        df[g] += 1
        idf = np.empty(size, dtype=np.float64)
        for g in range(size):
            idf[g] = log_n - np.log(max(1.0, float(df[g])))
        hyp_count = np.zeros(size, dtype=np.int64)
        ref_count = np.zeros(size, dtype=np.int64)
        value = np.zeros(n_units, dtype=np.float64)
        for i in range(n_hyps):
            h0, h1 = starts[i], starts[i] + lens[i] - n + 1
            for p in range(h0, h1):
                hyp_count[gram[p]] += 1
            hyp_norm = 0.0
            for p in range(h0, h1):
                g = gram[p]
                if stamp[g] != -2 - i:
                    stamp[g] = -2 - i
                    v = hyp_count[g] * idf[g]
                    hyp_norm += v * v
            hyp_norm = np.sqrt(hyp_norm)
            for u in range(unit_start[i], unit_start[i + 1]):
                r0 = starts[n_hyps + u]
                r1 = r0 + lens[n_hyps + u] - n + 1
                for p in range(r0, r1):
                    ref_count[gram[p]] += 1
                ref_norm = 0.0
                dot = 0.0
                for p in range(r0, r1):
                    g = gram[p]
                    c = ref_count[g]
                    if c > 0:
                        r = c * idf[g]
                        ref_norm += r * r
                        dot += min(hyp_count[g] * idf[g], r) * r
                        ref_count[g] = 0
                ref_norm = np.sqrt(ref_norm)
                if hyp_norm != 0 and ref_norm != 0:
                    dot /= hyp_norm * ref_norm
                value[u] = dot
            for p in range(h0, h1):
                hyp_count[gram[p]] = 0
        return value

    return SimpleNamespace(
        densify=densify,
        gram_keys=gram_keys,
        overlap_stats=overlap_stats,
        packed_keys=packed_keys,
        local_stats=local_stats,
        cider_order=cider_order,
    )
