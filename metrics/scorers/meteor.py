"""METEOR as ``nltk.translate.meteor_score`` computes it (Lavie & Agarwal 2007, "METEOR: An
Automatic Metric for MT Evaluation with High Levels of Correlation with Human Judgments"), with
nltk's parameters α = 0.9, β = 3, γ = 0.5, on the profile's tokens lower-cased (nltk's
``preprocess=str.lower``).

Alignment, in nltk's stages: exact matches, then Porter-stem matches of the words left (English
only: the other languages have no stems), then WordNet synonyms of the words left (English, when
the WordNet corpus is installed; it cannot be downloaded on these machines, so ``auto`` turns the
stage off when it is absent and the signature says ``syn:none``; as in nltk, after the stem stage
the words left are looked up by their stems). In a stage, nltk scans the
hypothesis from its last word and takes the last unmatched reference word that matches; for exact
and stem matches that pairs the k-th last occurrence of a word in the hypothesis with its k-th last
occurrence in the reference, which is computed here for all pairs in one compiled pass per stage
(each word's unmatched reference occurrences chained from the last).

Score: ``P = m / |hyp|``, ``R = m / |ref|``, ``Fmean = PR / (αP + (1 - α)R)``, ``penalty =
γ (chunks / m)^β`` with ``chunks`` the runs of matches adjacent in both sentences (matches sorted
by hypothesis position), ``score = (1 - penalty) Fmean``; 0 without matches. The maximum over
references; the corpus value is the mean.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
from nltk.stem.porter import PorterStemmer

from metrics.scorers.base import Batch, Computed, MetricUnavailable
from metrics.scorers.ngrams import encoded

ALPHA = 0.9
BETA = 3.0
GAMMA = 0.5
_STEM_LANGUAGES = ("en",)


@functools.cache
def _wordnet_synonyms() -> Callable[[str], frozenset[str]] | None:
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
    except LookupError:
        return None

    @functools.lru_cache(maxsize=1 << 16)
    def synonyms(word: str) -> frozenset[str]:
        return frozenset(
            lemma.name()
            for synset in wordnet.synsets(word)
            for lemma in synset.lemmas()
            if "_" not in lemma.name()
        ) | {word}

    return synonyms


def synonym_source(lang: str, setting: str) -> Callable[[str], frozenset[str]] | None:
    """The synonym function METEOR uses, or None (stage off). ``wordnet`` demands the corpus."""
    if setting == "none" or lang != "en":
        return None
    found = _wordnet_synonyms()
    if found is None and setting == "wordnet":
        raise MetricUnavailable(
            "meteor_synonyms=wordnet but the nltk WordNet corpus is not installed"
        )
    return found


def meteor_label(lang: str, setting: str) -> str:
    """Signature text: parameters, stemmer, synonyms (``wordnet`` only when actually used)."""
    stems = "porter" if lang in _STEM_LANGUAGES else "none"
    used = setting != "none" and lang == "en" and _wordnet_synonyms() is not None
    return f"a:{ALPHA}|b:{BETA:g}|g:{GAMMA}|stem:{stems}|syn:{'wordnet' if used else 'none'}"


_PORTER = PorterStemmer()


@functools.lru_cache(maxsize=1 << 18)
def _stem(word: str) -> str:
    return _PORTER.stem(word)


@functools.cache
def _kernels() -> Any:
    """nltk's alignment stages and chunk count, compiled (numba, cached on disk)."""
    import numba

    jit = numba.njit(cache=True, nogil=True)

    @jit
    def stage(word, starts, lens, n_hyps, owner, h_off, n_words, h_match, r_match):  # type: ignore[no-untyped-def]  # numba types it
        """One stage of nltk's ``_match_enums`` for every unit: the unmatched hypothesis words
        from the last, each taking the last unmatched reference word equal to it. ``word`` holds
        the stage's word ids (lower-cased words, or their stems); ``h_match[h_off[u] + i]`` is
        the reference position matched to hypothesis position ``i`` in unit ``u`` (-1: none),
        ``r_match`` the hypothesis position of each reference token."""
        head = np.full(n_words, -1, dtype=np.int64)
        longest = 1
        for s in range(len(lens)):
            longest = max(longest, lens[s])
        before = np.empty(longest, dtype=np.int64)
        for u in range(len(owner)):
            h0, hl = starts[owner[u]], lens[owner[u]]
            r0, rl = starts[n_hyps + u], lens[n_hyps + u]
            for j in range(rl):  # unmatched occurrences of each word, chained from the last
                if r_match[r0 + j] == -1:
                    w = word[r0 + j]
                    before[j] = head[w]
                    head[w] = j
            for i in range(hl - 1, -1, -1):
                if h_match[h_off[u] + i] == -1:
                    w = word[h0 + i]
                    j = head[w]
                    if j != -1:
                        h_match[h_off[u] + i] = j
                        r_match[r0 + j] = i
                        head[w] = before[j]
            for j in range(rl):
                head[word[r0 + j]] = -1

    @jit
    def chunks(h_match, h_off, hyp_len):  # type: ignore[no-untyped-def]  # numba types it
        """Per unit, the matches and nltk's ``_count_chunks`` (matches sorted by hypothesis
        position; a chunk continues while both positions advance by one)."""
        matches = np.zeros(len(hyp_len), dtype=np.float64)
        runs = np.zeros(len(hyp_len), dtype=np.float64)
        for u in range(len(hyp_len)):
            previous = -2  # ref position of the match at the previous hypothesis position
            for i in range(hyp_len[u]):
                j = h_match[h_off[u] + i]
                if j != -1:
                    matches[u] += 1
                    if j != previous + 1:
                        runs[u] += 1
                previous = j if j != -1 else -2
        return matches, runs

    return SimpleNamespace(stage=stage, chunks=chunks)


def _synonym_matches(
    synonyms: Callable[[str], frozenset[str]],
    words: list[str],
    h_unit: np.ndarray,
    h_word: np.ndarray,
    h_pos: np.ndarray,
    r_unit: np.ndarray,
    r_word: np.ndarray,
    r_pos: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """nltk's ``_enum_wordnetsyn_match`` over the words left, unit by unit."""
    hyp_by_unit: dict[int, list[int]] = defaultdict(list)
    for i in np.argsort(h_pos, kind="stable")[::-1]:
        hyp_by_unit[int(h_unit[i])].append(int(i))
    ref_by_unit: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j in np.argsort(r_pos, kind="stable"):
        ref_by_unit[int(r_unit[j])][words[r_word[j]]].append(int(j))
    hits_h, hits_r = [], []
    for unit, hyp_indices in hyp_by_unit.items():
        positions = ref_by_unit.get(unit)
        if not positions:
            continue
        for i in hyp_indices:
            best, best_word = -1, None
            for syn in synonyms(words[h_word[i]]):
                found = positions.get(syn)
                if found and r_pos[found[-1]] > best:
                    best, best_word = int(r_pos[found[-1]]), syn
            if best_word is not None:
                hits_h.append(i)
                hits_r.append(positions[best_word].pop())
    return np.array(hits_h, dtype=np.int64), np.array(hits_r, dtype=np.int64)


def meteor(batch: Batch) -> Computed:
    enc = encoded(batch)
    settings = batch.settings
    synonyms = synonym_source(settings.lang, settings.meteor_synonyms)
    lowered = [w.lower() for w in enc.vocab]
    lower_vocab = {w: i for i, w in enumerate(dict.fromkeys(lowered))}
    lower_id = np.fromiter(map(lower_vocab.__getitem__, lowered), np.int64, len(lowered))
    word = lower_id[enc.ids]
    owner = batch.owner
    hyp_len = enc.hyp_lens[owner]
    h_off = np.cumsum(hyp_len) - hyp_len
    h_match = np.full(int(hyp_len.sum()), -1, dtype=np.int64)
    r_match = np.full(len(enc.ids), -1, dtype=np.int64)
    k = _kernels()
    args = (enc.starts, enc.lens, enc.n_hyps, owner, h_off)
    k.stage(word, *args, max(len(lower_vocab), 1), h_match, r_match)
    words = list(lower_vocab)
    if settings.lang in _STEM_LANGUAGES:
        stems = [_stem(w) for w in lower_vocab]
        stem_vocab = {s: i for i, s in enumerate(dict.fromkeys(stems))}
        stem_id = np.fromiter(map(stem_vocab.__getitem__, stems), np.int64, len(stems))
        word = stem_id[word]
        words = list(stem_vocab)
        k.stage(word, *args, max(len(stem_vocab), 1), h_match, r_match)
    if synonyms is not None:
        h_unit = np.repeat(np.arange(enc.n_units, dtype=np.int64), hyp_len)
        h_pos = np.arange(len(h_unit), dtype=np.int64) - np.repeat(h_off, hyp_len)
        h_word = word[enc.starts[owner][h_unit] + h_pos]
        ref_at = slice(int(enc.starts[enc.n_hyps]) if enc.n_units else 0, len(enc.ids))
        r_unit = enc.seq_of_token[ref_at] - enc.n_hyps
        r_pos = enc.pos_in_seq[ref_at]
        hi = np.flatnonzero(h_match == -1)
        ri = np.flatnonzero(r_match[ref_at] == -1)
        a, b = _synonym_matches(
            synonyms,
            words,
            h_unit[hi],
            h_word[hi],
            h_pos[hi],
            r_unit[ri],
            word[ref_at][ri],
            r_pos[ri],
        )
        h_match[hi[a]] = r_pos[ri[b]]
    matches, chunks = k.chunks(h_match, h_off, hyp_len)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = matches / hyp_len
        r = matches / enc.ref_lens
        fmean = p * r / (ALPHA * p + (1 - ALPHA) * r)
        penalty = GAMMA * (chunks / matches) ** BETA
        score = (1 - penalty) * fmean
    score = np.where((matches > 0) & (hyp_len > 0) & (enc.ref_lens > 0), score, 0.0)
    per = batch.max_over_refs(score)
    return Computed(per, float(per.mean()) if len(per) else 0.0)
