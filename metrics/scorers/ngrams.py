"""Integer-encoded token sequences and n-gram statistics by hash-based counting.

Hypotheses and reference units are encoded once into one flat ``int64`` array (sequence ``s`` is
``ids[starts[s]:starts[s] + lens[s]]``; hypotheses are sequences ``0..N-1``, reference unit ``u``
is sequence ``N + u``). An n-gram gets a dense integer id from the packed ``int64`` key
``(id of its (n-1)-gram prefix) * vocabulary size + last token`` through an open-addressing hash
table, and every statistic (clipped overlaps, BLEU's clipped matches, distinct n-grams, CIDEr-D's
document frequencies and tf-idf vectors) is counted pair by pair in scratch arrays indexed by those
ids: linear in the number of tokens, no sorting. The loops are compiled by numba
(`metrics.scorers.ngram_kernels`); every metric of a call shares the ids.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from metrics.scorers.base import Batch
from metrics.scorers.ngram_kernels import kernels

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
