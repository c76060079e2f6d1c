"""TF-IDF and BM25 over short texts, with numpy/scipy sparse matrices (no Django here).

TF-IDF follows scikit-learn's defaults (smooth idf `ln((1+n)/(1+df)) + 1`, raw term counts,
L2-normalised rows, cosine similarity). BM25 is Okapi BM25 with the non-negative idf
`ln(1 + (n - df + 0.5)/(df + 0.5))` (Lucene's), parameters `k1` and `b`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")

Analyzer = Callable[[str], list[str]]


def char_ngrams(low: int, high: int) -> Analyzer:
    """Character n-grams with whitespace removed (word-segmented corpora keep their spaces)."""

    def analyze(text: str) -> list[str]:
        chars = _SPACE.sub("", text.lower())
        return [chars[i : i + n] for n in range(low, high + 1) for i in range(len(chars) - n + 1)]

    return analyze


def word_ngrams(low: int, high: int, *, language: str) -> Analyzer:
    """Word n-grams: jieba for Chinese, `\\w+` tokens otherwise."""

    def words(text: str) -> list[str]:
        if language == "zh":
            import jieba

            return [w for w in jieba.lcut(text.lower()) if _WORD.search(w)]
        return _WORD.findall(text.lower())

    def analyze(text: str) -> list[str]:
        tokens = words(text)
        return [
            " ".join(tokens[i : i + n])
            for n in range(low, high + 1)
            for i in range(len(tokens) - n + 1)
        ]

    return analyze


@dataclass
class TextIndex:
    """Scores queries against a fixed list of documents; `best` returns the top document."""

    analyze: Analyzer
    vocabulary: dict[str, int]
    weights: sparse.csr_matrix  # documents × terms
    method: str
    idf: np.ndarray

    @classmethod
    def build(
        cls,
        documents: Sequence[str],
        *,
        analyze: Analyzer,
        method: str = "tfidf",
        k1: float = 1.2,
        b: float = 0.75,
    ) -> TextIndex:
        vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for row, document in enumerate(documents):
            for term in analyze(document):
                cols.append(vocabulary.setdefault(term, len(vocabulary)))
                rows.append(row)
        counts = sparse.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(documents), max(len(vocabulary), 1))
        )
        counts.sum_duplicates()
        n = counts.shape[0]
        df = np.bincount(counts.indices, minlength=counts.shape[1])
        if method == "tfidf":
            idf = np.log((1 + n) / (1 + df)) + 1
            weights = counts.multiply(idf).tocsr()
            norms = np.sqrt(np.asarray(weights.multiply(weights).sum(axis=1)).ravel())
            weights = sparse.diags(1 / np.where(norms == 0, 1, norms)) @ weights
        elif method == "bm25":
            idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
            lengths = np.asarray(counts.sum(axis=1)).ravel()
            avg = lengths.mean() if n and lengths.mean() > 0 else 1.0
            weights = counts.tocoo()
            tf = weights.data
            norm = k1 * (1 - b + b * lengths[weights.row] / avg)
            data = idf[weights.col] * tf * (k1 + 1) / (tf + norm)
            weights = sparse.csr_matrix((data, (weights.row, weights.col)), shape=counts.shape)
        else:
            raise ValueError(f"unknown method '{method}'")
        return cls(
            analyze=analyze,
            vocabulary=vocabulary,
            weights=sparse.csr_matrix(weights),
            method=method,
            idf=idf,
        )

    def scores(self, query: str) -> np.ndarray:
        terms = [self.vocabulary[t] for t in self.analyze(query) if t in self.vocabulary]
        if not terms:
            return np.zeros(self.weights.shape[0])
        q = np.bincount(terms, minlength=self.weights.shape[1]).astype(float)
        if self.method == "bm25":
            # Okapi BM25 sums over the query's distinct terms (query term frequency ignored).
            q = (q > 0).astype(float)
        else:
            q *= self.idf  # cosine of the tf-idf vectors (the query's norm does not rank)
        return np.asarray(self.weights @ q).ravel()

    def best(self, query: str) -> tuple[int, float]:
        """Index and score of the best document; ties go to the earliest one."""
        scores = self.scores(query)
        index = int(np.argmax(scores))
        return index, float(scores[index])
