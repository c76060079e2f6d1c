"""BLEU-1..4 against sacrebleu (same tokens, same smoothing) and nltk, sentence and corpus level."""

from __future__ import annotations

import numpy as np
import pytest
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
from sacrebleu.metrics import BLEU

from metrics.scorers import Settings, score
from metrics.scorers.text import text_profile

ORDERS = (1, 2, 3, 4)


def _joined(lang: str, hyps: list[str], refs: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    profile = text_profile(lang)
    return (
        [" ".join(profile.tokenize(h)) for h in hyps],
        [[" ".join(profile.tokenize(r)) for r in group] for group in refs],
    )


@pytest.mark.parametrize("smoothing", ["none", "floor", "add-k", "exp"])
def test_it_matches_sacrebleu_sentence_and_corpus(corpus, smoothing: str) -> None:
    lang, hyps, refs = corpus
    names = [f"bleu-{n}" for n in ORDERS]
    ours = score(names, hyps, refs, settings=Settings(lang=lang, bleu_smoothing=smoothing))
    tok_hyps, tok_refs = _joined(lang, hyps, refs)
    width = max(len(g) for g in tok_refs)
    streams = [[g[k] if k < len(g) else None for g in tok_refs] for k in range(width)]
    for n in ORDERS:
        sentence = BLEU(
            max_ngram_order=n, smooth_method=smoothing, tokenize="none", effective_order=True
        )
        expected = [
            sentence.sentence_score(h, g).score / 100
            for h, g in zip(tok_hyps, tok_refs, strict=True)
        ]
        np.testing.assert_allclose(ours[f"bleu-{n}"].per_response, expected, rtol=1e-9, atol=1e-12)
        corpus_metric = BLEU(max_ngram_order=n, smooth_method=smoothing, tokenize="none")
        expected_corpus = corpus_metric.corpus_score(tok_hyps, streams).score / 100
        assert ours[f"bleu-{n}"].corpus == pytest.approx(expected_corpus, rel=1e-9, abs=1e-12)
        assert ours[f"bleu-{n}"].corpus_kind == "corpus-bleu"


@pytest.mark.parametrize("method", ["nltk-method1", "nltk-method2"])
def test_it_matches_nltk_sentence_and_corpus(corpus, method: str) -> None:
    lang, hyps, refs = corpus
    names = [f"bleu-{n}" for n in ORDERS]
    ours = score(names, hyps, refs, settings=Settings(lang=lang, bleu_smoothing=method))
    profile = text_profile(lang)
    tok_hyps = [profile.tokenize(h) for h in hyps]
    tok_refs = [[profile.tokenize(r) for r in group] for group in refs]
    smoothing = getattr(SmoothingFunction(), method.removeprefix("nltk-"))
    for n in ORDERS:
        weights = (1 / n,) * n
        expected = [
            sentence_bleu(g, h, weights, smoothing_function=smoothing)
            for h, g in zip(tok_hyps, tok_refs, strict=True)
        ]
        np.testing.assert_allclose(ours[f"bleu-{n}"].per_response, expected, rtol=1e-9, atol=1e-12)
        expected_corpus = corpus_bleu(tok_refs, tok_hyps, weights, smoothing_function=smoothing)
        assert ours[f"bleu-{n}"].corpus == pytest.approx(expected_corpus, rel=1e-9)


def test_the_signature_names_tokenizer_and_smoothing() -> None:
    result = score(["bleu-2"], ["你 好"], [["你好", "您好"]])["bleu-2"]
    assert result.signature.startswith("bleu-2|nrefs:2|lang:zh|prof:default.v2|tok:zh-char|")
    assert "smooth:exp" in result.signature


def test_segmented_and_unsegmented_outputs_score_alike() -> None:
    refs = [["我 也 喜欢 看 电影 。"]]
    joined = score(["bleu-4", "f1"], ["我喜欢看电影。"], refs)
    spaced = score(["bleu-4", "f1"], ["我 喜欢 看 电影 。"], refs)
    for name in ("bleu-4", "f1"):
        assert joined[name].per_response[0] == spaced[name].per_response[0]
