"""BERTScore against bert_score with the same tiny model, and its reference cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bert_score import score as bert_score

from metrics.scorers import Settings, score
from metrics.scorers import bertscore as bertscore_module

NAMES = ["bertscore-p", "bertscore-r", "bertscore-f1"]


def _settings(model: Path, **extra: object) -> Settings:
    return Settings(bertscore_model=str(model), device="cpu", batch_size=8, **extra)


def _non_empty(hyps: list[str], refs: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """bert_score 0.3.13 fails on empty sentences under transformers 5 (its ``sent_encode`` calls
    the removed ``build_inputs_with_special_tokens``); empty ones are tested on their own."""
    keep = [i for i, h in enumerate(hyps) if h.strip() and all(r.strip() for r in refs[i])]
    return [hyps[i] for i in keep], [refs[i] for i in keep]


@pytest.mark.parametrize(("layer", "idf"), [(2, False), (3, True)])
def test_it_matches_bert_score(corpus, tiny_bert: Path, layer: int, idf: bool) -> None:
    hyps, refs = _non_empty(corpus[1], corpus[2])
    ours = score(
        NAMES, hyps, refs, settings=_settings(tiny_bert, bertscore_layer=layer, bertscore_idf=idf)
    )
    p, r, f = bert_score(
        hyps,
        refs,
        model_type=str(tiny_bert),
        num_layers=layer,
        idf=idf,
        device="cpu",
        batch_size=8,
        nthreads=0,
    )
    for name, want in zip(NAMES, (p, r, f), strict=True):
        np.testing.assert_allclose(ours[name].per_response, want.numpy(), atol=1e-5)
        assert ours[name].corpus == pytest.approx(float(want.mean()), abs=1e-5)


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_baseline_rescaling_matches_bert_score(zh_corpus, tiny_bert: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n1,0.5,0.4,0.45\n2,0.6,0.65,0.62\n")
    hyps, refs = _non_empty([h for h, _ in zh_corpus], [g for _, g in zh_corpus])
    ours = score(
        NAMES,
        hyps,
        refs,
        settings=_settings(tiny_bert, bertscore_layer=2, bertscore_baseline=str(baseline)),
    )
    p, r, f = bert_score(
        hyps,
        refs,
        model_type=str(tiny_bert),
        num_layers=2,
        lang="zh",
        rescale_with_baseline=True,
        baseline_path=str(baseline),
        device="cpu",
        nthreads=0,
    )
    for name, want in zip(NAMES, (p, r, f), strict=True):
        np.testing.assert_allclose(ours[name].per_response, want.numpy(), atol=1e-5)
    assert "rescale:baseline.tsv" in ours["bertscore-f1"].signature


def test_reference_embeddings_are_reused_across_systems(
    zh_corpus, tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = [g for _, g in zh_corpus]
    settings = _settings(tiny_bert, bertscore_layer=1)
    first = score(NAMES, [h for h, _ in zh_corpus], refs, settings=settings)
    encoded: list[str] = []
    original = bertscore_module.BertScorer.token_ids

    def spy(self, sentences):
        encoded.extend(sentences)
        return original(self, sentences)

    monkeypatch.setattr(bertscore_module.BertScorer, "token_ids", spy)
    system_b = [h + "呢" for h, _ in zh_corpus]
    second = score(NAMES, system_b, refs, settings=settings)
    assert set(encoded) == {h.strip() for h in system_b}
    again = score(NAMES, [h for h, _ in zh_corpus], refs, settings=settings)
    np.testing.assert_allclose(
        again["bertscore-f1"].per_response, first["bertscore-f1"].per_response, atol=1e-6
    )
    assert not np.allclose(second["bertscore-f1"].per_response, first["bertscore-f1"].per_response)


def test_a_system_that_answers_only_with_cached_references_is_scored(
    zh_corpus, tiny_bert: Path
) -> None:
    """Every text already embedded (a system replying with other samples' references, as the
    demo's random system does): nothing is left to encode, and the batch still scores."""
    refs = [[g] if isinstance(g, str) else g for _, g in zh_corpus]
    settings = _settings(tiny_bert, bertscore_layer=1)
    score(NAMES, [h for h, _ in zh_corpus], refs, settings=settings)
    flat = [r[0] for r in refs]
    shifted = flat[1:] + flat[:1]  # each reply is another sample's (cached) reference
    result = score(NAMES, shifted, refs, settings=settings)
    assert result["bertscore-f1"].status == "ok"
    assert len(result["bertscore-f1"].per_response) == len(shifted)


def test_an_empty_candidate_or_reference_scores_zero(tiny_bert: Path) -> None:
    results = score(
        NAMES, ["", "你好", "  "], [["您好"], [""], ["好"]], settings=_settings(tiny_bert)
    )
    for name in NAMES:
        assert results[name].per_response.tolist() == [0.0, 0.0, 0.0]


def test_a_missing_model_is_reported_unavailable(tmp_path: Path) -> None:
    results = score(
        NAMES, ["你好"], [["您好"]], settings=Settings(bertscore_model=str(tmp_path / "absent"))
    )
    for name in NAMES:
        assert results[name].per_response is None and results[name].corpus is None
        assert results[name].status == (
            f"unavailable: BERTScore model directory '{tmp_path / 'absent'}' does not exist"
        )


def test_a_layer_beyond_the_model_is_unavailable(tiny_bert: Path) -> None:
    result = score(
        ["bertscore-f1"], ["你好"], [["您好"]], settings=_settings(tiny_bert, bertscore_layer=9)
    )["bertscore-f1"]
    assert result.status == "unavailable: bertscore_layer=9 but the model has 3 layers"
