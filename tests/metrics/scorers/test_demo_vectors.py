"""The demo-quality vectors: PPMI+SVD learned on a corpus, saved as an encoder directory that the
neural metrics load through their usual code, and picked by default where no packaged model is."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.scorers.demo_vectors import save_encoder, train_ppmi_svd
from metrics.scorers.models import default_models, local_models
from metrics.scorers.registry import score

# 猫 and 狗 occur in the same contexts, 书 in others.
CORPUS = [
    list(s) for s in ["我家猫很乖", "我家狗很乖", "猫爱吃鱼", "狗爱吃肉", "我读书", "他读书"]
] * 4


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_words_in_the_same_contexts_get_close_vectors_and_training_is_deterministic() -> None:
    vocab, vectors = train_ppmi_svd(CORPUS, dim=6)
    row = {token: vectors[i] for i, token in enumerate(vocab)}
    assert _cosine(row["猫"], row["狗"]) > _cosine(row["猫"], row["书"]) + 0.3
    again_vocab, again = train_ppmi_svd(CORPUS, dim=6)
    assert again_vocab == vocab and np.array_equal(again, vectors)


def test_the_ppmi_matrix_follows_levy_et_al_before_the_svd() -> None:
    """With every singular direction kept and p = 1, u·s·vᵀ is the PPMI matrix itself; check the
    reconstruction of `vectors @ vectorsᵀ` against a direct dense PPMI where PPMI is symmetric."""
    sentences = [list("abcab"), list("bcd"), list("dab")]
    vocab, vectors = train_ppmi_svd(sentences, dim=10, window=1, alpha=1.0, eig_p=0.5)
    n = len(vocab)
    index = {t: i for i, t in enumerate(vocab)}
    counts = np.zeros((n, n))
    for s in sentences:
        for left, right in zip(s, s[1:], strict=False):
            counts[index[left], index[right]] += 1
            counts[index[right], index[left]] += 1
    with np.errstate(divide="ignore"):
        pmi = np.log(counts * counts.sum() / np.outer(counts.sum(1), counts.sum(0)))
    ppmi = np.where(counts > 0, np.maximum(pmi, 0), 0)
    # dim is capped at n - 2 singular directions: compare on the top ones only.
    u, s, _vt = np.linalg.svd(ppmi)
    k = vectors.shape[1]
    expected = (u[:, :k] * s[:k] ** 0.5) @ (u[:, :k] * s[:k] ** 0.5).T
    assert vectors @ vectors.T == pytest.approx(expected, abs=1e-4)


def test_the_saved_directory_serves_every_neural_msde_metric_except_bleurt(tmp_path) -> None:
    vocab, vectors = train_ppmi_svd(CORPUS, dim=6)
    directory = save_encoder(
        tmp_path / "demo-quality-zh-ppmi-svd", vocab, vectors, languages=["zh"], description="t"
    )
    settings = {"lang": "zh", **default_models("zh", tmp_path)}
    assert settings == {
        "lang": "zh",
        "sentence_model": str(directory),
        "bertscore_model": str(directory),
        "word_vectors": str(directory),
    }
    names = ["sentence-cosine", "embedding-average", "greedy-matching", "bertscore-f1", "bleurt"]
    hyps = ["我家狗很乖", "他读书"]
    results = score(names, hyps, [["我家猫很乖"], ["我家猫很乖"]], None, settings)
    assert results["bleurt"].status.startswith("unavailable")
    for name in names[:-1]:
        values = results[name].per_response
        assert results[name].status == "ok", (name, results[name].status)
        # The paraphrase scores higher than the unrelated sentence.
        assert values[0] > values[1], name
        assert f"{directory.name}" in results[name].signature


def test_a_packaged_model_wins_and_other_languages_get_no_local_model(tmp_path) -> None:
    vocab, vectors = train_ppmi_svd(CORPUS, dim=4)
    save_encoder(tmp_path / "demo-quality-zh", vocab, vectors, languages=["zh"], description="t")
    (tmp_path / "not-a-model").mkdir()
    assert [name for name, _path, _langs in local_models(tmp_path)] == ["demo-quality-zh"]
    assert default_models("ja", tmp_path) == {}
    english = default_models("en", tmp_path)
    assert english["sentence_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "word_vectors" not in english
