"""The learned response discriminator of seed 003 and RUBER's blend."""

import numpy as np
import pytest
import torch

from metrics.scorers.base import MetricUnavailable
from metrics.scorers.discriminator import (
    TABLE2_MODELS,
    ClassificationReport,
    Discriminator,
    DiscriminatorConfig,
    format_table2,
    ruber_blend,
    tokenize,
    train_discriminator,
    train_table2,
)

SMALL = {
    "embedding_dim": 16,
    "hidden_size": 16,
    "mlp_hidden": 32,
    "dropout": 0.0,
    "l2": 0.0,
    "learning_rate": 0.01,
    "batch_size": 32,
    "max_epochs": 12,
    "patience": 3,
}


def topical_corpus(pairs, topics=20, words_per_topic=3, seed=0):
    """Separable toy corpus: a context and its real response draw words from the same topic, so a
    random response is (but for same-topic draws, 1 in ``topics``) off-topic."""
    rng = np.random.default_rng(seed)
    vocab = [[f"t{t}w{w}" for w in range(words_per_topic)] for t in range(topics)]
    contexts, responses = [], []
    for index in range(pairs):
        words = vocab[index % topics]
        contexts.append(" ".join(rng.choice(words, 4)))
        responses.append(" ".join(rng.choice(words, 3)))
    return contexts, responses


@pytest.fixture(scope="module")
def trained():
    contexts, responses = topical_corpus(1600)
    config = DiscriminatorConfig.preset("AB-LSTM-bi-MLP", **{**SMALL, "batch_size": 64})
    return train_discriminator(contexts, responses, config, seed=0)


def test_it_learns_a_separable_corpus(trained):
    assert trained.test.accuracy >= 0.9
    assert trained.test.examples == 160
    assert trained.sizes == {"train": 2736, "validation": 304, "test": 160}
    assert 1 <= trained.best_epoch <= len(trained.history)
    real = trained.model.score(["t3w0 t3w1 t3w2 t3w0"], ["t3w2 t3w1 t3w0"])
    fake = trained.model.score(["t3w0 t3w1 t3w2 t3w0"], ["t9w2 t9w1 t9w0"])
    assert real[0] > 0.5 > fake[0]


def test_splits_are_5_percent_test_then_90_10_with_one_negative_per_pair():
    contexts, responses = topical_corpus(400)
    config = DiscriminatorConfig.preset("AB-LSTM-bi-SLP", **{**SMALL, "max_epochs": 1})

    result = train_discriminator(contexts, responses, config, seed=1)

    # 400 real pairs: 20 test, 38 validation, 342 train; each doubled by its negatives.
    assert result.sizes == {"train": 684, "validation": 76, "test": 40}


@pytest.mark.parametrize("name", list(TABLE2_MODELS))
def test_every_table2_configuration_trains_and_scores(name):
    contexts, responses = topical_corpus(120)
    config = DiscriminatorConfig.preset(name, **{**SMALL, "max_epochs": 2})

    result = train_discriminator(contexts, responses, config, seed=0)
    scores = result.model.score(contexts[:5], responses[:5])

    assert scores.shape == (5,)
    assert np.all((scores >= 0) & (scores <= 1))
    for value in (result.test.accuracy, result.test.precision, result.test.recall, result.test.f1):
        assert 0.0 <= value <= 1.0


def test_presets_follow_table2():
    assert DiscriminatorConfig.preset("GRU-uni-MLP").encoder == "gru"
    assert DiscriminatorConfig.preset("LSTM-uni").classifier == "none"
    assert DiscriminatorConfig.preset("AB-LSTM-MLP").matching == "none"
    assert DiscriminatorConfig.preset("Bi-LSTM-bi-MLP").attention is False
    main = DiscriminatorConfig.preset("AB-LSTM-bi-MLP")
    assert (main.hidden_size, main.mlp_hidden, main.dropout, main.l2) == (300, 1024, 0.5, 0.001)
    assert (main.learning_rate, main.batch_size) == (0.0001, 128)
    with pytest.raises(ValueError, match="need matching"):
        DiscriminatorConfig(matching="none", classifier="none")


def test_a_saved_version_reloads_and_gives_the_same_scores(trained, tmp_path):
    contexts, responses = topical_corpus(30, seed=9)
    before = trained.model.score(contexts, responses)

    trained.model.save(tmp_path / "v1")
    reloaded = Discriminator.load(tmp_path / "v1")

    np.testing.assert_allclose(reloaded.score(contexts, responses), before, rtol=1e-6)
    assert reloaded.config == trained.model.config
    assert reloaded.report["test"]["accuracy"] == trained.test.accuracy


def test_missing_or_incomplete_directory_is_unavailable(trained, tmp_path):
    with pytest.raises(MetricUnavailable, match=r"^unavailable: discriminator directory"):
        Discriminator.load(tmp_path / "absent")
    trained.model.save(tmp_path / "partial")
    (tmp_path / "partial" / "weights.pt").unlink()
    with pytest.raises(MetricUnavailable, match="lacks weights.pt"):
        Discriminator.load(tmp_path / "partial")


def test_word_vectors_file_initialises_known_words(tmp_path):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("2 4\nt0w0 1 2 3 4\nt0w1 -1 0 0.5 2\n", encoding="utf-8")
    contexts, responses = topical_corpus(60)
    config = DiscriminatorConfig.preset("AB-LSTM-bi-MLP", **{**SMALL, "max_epochs": 1})

    model = train_discriminator(contexts, responses, config, vectors=vectors).model

    assert model.config.embedding_dim == 4
    assert model.net.embedding.weight.shape == (len(model.vocab), 4)
    # One epoch moves the vectors a little from the file's values (seed 003 tunes them).
    first = model.net.embedding.weight[model.vocab["t0w0"]].detach().cpu()
    assert torch.allclose(first, torch.tensor([1.0, 2.0, 3.0, 4.0]), atol=0.2)


def test_tokenization_is_per_character_for_chinese_and_japanese():
    assert tokenize("你好 吗", "zh") == ["你", "好", "吗"]
    assert tokenize("元気？", "ja") == ["元", "気", "？"]
    assert tokenize("Don't stop, OK?", "en") == ["don", "'", "t", "stop", ",", "ok", "?"]


def test_referenced_score_is_cosine_of_max_min_pooled_embeddings(trained):
    model = trained.model
    table = model.net.embedding.weight.detach().cpu().numpy()

    def pooled(text):
        rows = table[[model.vocab[w] for w in text.split()]]
        return np.concatenate([rows.max(axis=0), rows.min(axis=0)])

    a, b = pooled("t1w0 t1w1"), pooled("t2w0 t1w2 t2w1")
    expected = a @ b / np.linalg.norm(a) / np.linalg.norm(b)

    scores = model.referenced_scores(["t1w0 t1w1", "t4w0"], ["t2w0 t1w2 t2w1", "t4w0"])

    assert scores[0] == pytest.approx(expected, rel=1e-5)
    assert scores[1] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("min", [0.0, 0.5, 0.0]),
        ("max", [1.0, 0.5, 1.0]),
        ("arithmetic", [0.5, 0.5, 0.5]),
        ("geometric", [0.0, 0.5, 0.0]),
    ],
)
def test_ruber_blend_normalises_then_combines(method, expected):
    unreferenced = [0.2, 0.5, 0.8]  # → 0, 0.5, 1
    referenced = [0.9, 0.6, 0.3]  # → 1, 0.5, 0

    np.testing.assert_allclose(ruber_blend(unreferenced, referenced, method), expected)


def test_ruber_scores_blend_the_model_scores(trained):
    contexts, responses = topical_corpus(6, seed=4)
    references = responses[::-1]

    blended = trained.model.ruber_scores(contexts, responses, references, "geometric")

    expected = ruber_blend(
        trained.model.score(contexts, responses),
        trained.model.referenced_scores(responses, references),
        "geometric",
    )
    np.testing.assert_allclose(blended, expected)


def test_table2_rows_come_in_the_papers_order():
    contexts, responses = topical_corpus(60)

    results = train_table2(
        contexts, responses, ["LSTM-uni", "AB-LSTM-bi-MLP"], **{**SMALL, "max_epochs": 1}
    )
    table = format_table2({name: result.test for name, result in results.items()}, "toy")

    assert list(results) == ["LSTM-uni", "AB-LSTM-bi-MLP"]
    assert [line.split()[-5] for line in table.splitlines()[1:]] == list(results)
    with pytest.raises(ValueError, match="at least 40 pairs"):
        train_discriminator(contexts[:39], responses[:39])


def test_table2_layout():
    report = ClassificationReport.from_predictions(
        np.array([1, 1, 0, 0]), np.array([True, False, True, False])
    )

    table = format_table2({"AB-LSTM-bi-MLP": report}, "Reddit")

    assert (report.accuracy, report.precision, report.recall, report.f1) == (0.5, 0.5, 0.5, 0.5)
    assert table.splitlines()[1].split() == ["AB-LSTM-bi-MLP"] + ["0.5000"] * 4


def test_an_empty_context_is_the_empty_sentence_and_never_nan(trained):
    """A model turn that opens the dialogue has no query: attention over the one zero-embedding
    padding step, not over nothing (which gave NaN and, through RUBER's min-max, NaN for all)."""
    model = trained.model
    assert model.config.attention
    contexts = ["", "t3w0 t3w1 t3w2", ""]
    replies = ["t3w2 t3w1 t3w0", "t3w2 t3w1", ""]
    scores = model.score(contexts, replies)
    assert np.isfinite(scores).all()
    # batching does not change a row: each equals its score alone
    for index in range(3):
        alone = model.score([contexts[index]], [replies[index]])
        np.testing.assert_allclose(scores[index], alone[0], rtol=1e-5)
    blended = model.ruber_scores(contexts, replies, ["t3w1 t3w0", "t3w1", "t3w1"])
    assert np.isfinite(blended).all()
