"""Integer-encoded token sequences and n-gram statistics by hash-based counting.

Hypotheses and reference units are encoded once into one flat ``int64`` array (sequence ``s`` is
``ids[starts[s]:starts[s] + lens[s]]``; hypotheses are sequences ``0..N-1``, reference unit ``u``
is sequence ``N + u``). An n-gram gets a dense integer id from the packed ``int64`` key
``(id of its (n-1)-gram prefix) * vocabulary size + last token`` through an open-addressing hash
table, and every statistic (clipped overlaps, BLEU's clipped matches, distinct n-grams, CIDEr-D's
document frequencies and tf-idf vectors) is counted pair by pair in scratch arrays indexed by those
ids: linear in the number of tokens, no sorting. The loops are compiled by numba (``cache=True``:
compiled once per machine, kept next to this module); every metric of a call shares the ids.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np

from metrics.scorers.base import Batch

_T = TypeVar("_T")


def _memo(method: Callable[[Encoded, int], _T]) -> Callable[[Encoded, int], _T]:
    """Cache a method per instance and argument (``functools.cache`` would keep every instance
    alive in a module-level table)."""

    @functools.wraps(method)
    def wrapper(self: Encoded, n: int) -> _T:
        key = (method.__name__, n)
        if key not in self._memo:
            self._memo[key] = method(self, n)
        return self._memo[key]

    return wrapper


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


class Encoded:
    """Token ids of a batch's hypotheses and reference units, with cached n-gram statistics.

    ``ids`` are dense (``0 .. len(vocab) - 1``) and ``vocab[i]`` is the token of id ``i``;
    ``owner[u]`` is the pair of reference unit ``u`` (units of a pair are contiguous).
    """

    def __init__(
        self,
        ids: np.ndarray,
        lens: np.ndarray,
        vocab: list[str],
        n_hyps: int,
        owner: np.ndarray,
    ) -> None:
        self.ids = ids
        self.lens = lens
        self.vocab = vocab
        self.n_hyps = n_hyps
        self.owner = owner
        self.starts = np.zeros(len(lens), dtype=np.int64)
        np.cumsum(lens[:-1], out=self.starts[1:])
        # units of pair i: unit_start[i]:unit_start[i + 1]
        self.unit_start = np.searchsorted(owner, np.arange(n_hyps + 1, dtype=np.int64)).astype(
            np.int64
        )
        self._memo: dict[tuple[str, int], Any] = {}

    @classmethod
    def from_tokens(
        cls,
        hyp_tokens: Sequence[Sequence[str]],
        ref_tokens: Sequence[Sequence[str]],
        owner: np.ndarray,
    ) -> Encoded:
        """Encode token lists (ids in order of first appearance, one C-level pass)."""
        seqs = [*hyp_tokens, *ref_tokens]
        lens = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        vocab: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        ids = np.fromiter(
            map(vocab.__getitem__, itertools.chain.from_iterable(seqs)),
            np.int64,
            count=int(lens.sum()),
        )
        return cls(ids, lens, list(vocab), len(hyp_tokens), owner)

    @property
    def n_units(self) -> int:
        return len(self.lens) - self.n_hyps

    @property
    def hyp_lens(self) -> np.ndarray:
        return self.lens[: self.n_hyps]

    @property
    def ref_lens(self) -> np.ndarray:
        return self.lens[self.n_hyps :]

    @functools.cached_property
    def seq_of_token(self) -> np.ndarray:
        """Per token, the index of its sequence."""
        return np.repeat(np.arange(len(self.lens), dtype=np.int64), self.lens)

    @functools.cached_property
    def pos_in_seq(self) -> np.ndarray:
        """Per token, its position in its sequence."""
        return np.arange(len(self.ids), dtype=np.int64) - np.repeat(self.starts, self.lens)

    def totals(self, n: int) -> np.ndarray:
        """Number of n-grams of every sequence."""
        return np.maximum(self.lens - n + 1, 0)

    @_memo
    def grams(self, n: int) -> tuple[np.ndarray, int]:
        """Per token position, the dense id of the n-gram starting there (-1 where none fits),
        and the number of distinct n-grams."""
        if n == 1:
            return self.ids, len(self.vocab)
        prev, _ = self.grams(n - 1)
        k = kernels()
        keys = k.gram_keys(self.ids, self.starts, self.lens, prev, max(len(self.vocab), 1), n)
        # nearly every n-gram of order 2 and up is new: size the table for all of them
        gram, size = k.densify(keys, len(keys) - int(np.count_nonzero(keys < 0)))
        return gram, int(size)

    @property
    def _bits(self) -> int:
        return max(int(len(self.vocab) - 1).bit_length(), 1)

    def _packable(self, n: int) -> bool:
        """Whether ``n`` token ids fit one non-negative int64 key."""
        return n * self._bits <= 62

    @_memo
    def _stats(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._packable(n):  # no global n-gram ids needed
            found: tuple[np.ndarray, np.ndarray, np.ndarray] = kernels().local_stats(
                self.ids, self.starts, self.lens, self.n_hyps, self.unit_start, n, self._bits
            )
            return found
        gram, size = self.grams(n)
        overlap, clipped, distinct, _ = kernels().overlap_stats(
            gram, size, self.starts, self.lens, self.n_hyps, self.unit_start, n
        )
        return overlap, clipped, distinct

    def unit_overlap(self, n: int) -> np.ndarray:
        """Per reference unit, the clipped n-gram overlap with its hypothesis."""
        return self._stats(n)[0].astype(np.float64)

    def clipped_matches(self, n: int) -> np.ndarray:
        """Per hypothesis, BLEU's clipped n-gram matches: counts clipped to the maximum count of
        the n-gram in any one reference of the pair."""
        return self._stats(n)[1].astype(np.float64)

    def distinct(self, n: int) -> np.ndarray:
        """Per hypothesis, the number of distinct n-grams."""
        return self._stats(n)[2]

    def distinct_over_hyps(self, n: int) -> int:
        """Distinct n-grams over all hypotheses together."""
        k = kernels()
        if self._packable(n):
            keys = k.packed_keys(self.ids, self.starts, self.hyp_lens, n, self._bits)
        else:
            keys = self.grams(n)[0][: int(self.hyp_lens.sum())]
        _, size = k.densify(keys, 0 if n == 1 else len(keys))
        return int(size)

    def cider_similarity(self, n: int, log_n: float) -> np.ndarray:
        """Per unit, CIDEr-D's order-``n`` tf-idf similarity (see :func:`kernels`)."""
        gram, size = self.grams(n)
        result: np.ndarray = kernels().cider_order(
            gram, size, self.starts, self.lens, self.n_hyps, self.unit_start, n, log_n
        )
        return result


def encoded(batch: Batch) -> Encoded:
    """The batch's shared encoding (built on first use)."""
    return batch.cached("encoded", lambda: _encode(batch))


def _encode(batch: Batch) -> Encoded:
    """Hypotheses and references through one vocabulary: token lists when the batch already
    holds them, else the profile's :meth:`~metrics.scorers.text.TextProfile.encode_all` straight
    from the texts."""
    owner = batch.owner if batch.has_refs else np.zeros(0, dtype=np.int64)
    if "hyp_tokens" in vars(batch):
        refs = batch.ref_tokens if batch.has_refs else []
        return Encoded.from_tokens(batch.hyp_tokens, refs, owner)
    texts = [*batch.hyps, *(batch.ref_texts if batch.has_refs else [])]
    found = batch.profile.encode_all(texts)
    return Encoded(found.ids, found.lens, found.vocab, len(batch), owner)
