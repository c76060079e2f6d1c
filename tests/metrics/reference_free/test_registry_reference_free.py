"""The follow-up and discriminator metrics through the one registry, as metric runs call them."""

import numpy as np
import pytest

from metrics.scorers import followup
from metrics.scorers.discriminator import DiscriminatorConfig, train_discriminator
from metrics.scorers.learned import training_pairs
from metrics.scorers.registry import METRICS, score
from tests.metrics.reference_free.test_response_discriminator import SMALL, topical_corpus

CONTEXTS = [["你好，最近怎么样？", "还不错，你呢？"], ["周末去哪儿玩了？"], []]
HYPS = ["我也挺好的，谢谢。", "去爬山了，风景很美。", "大家好。"]


def test_reference_free_metrics_are_registered_with_their_levels():
    for name in (*followup.VARIANTS, "discriminator", "ruber"):
        assert name in METRICS
    assert "dialogue" in METRICS["fed-cond"].levels
    assert METRICS["fed-cond"].needs_context and not METRICS["fed-cond"].needs_reference
    assert METRICS["ruber"].needs_reference and METRICS["ruber"].batch_dependent
    assert "dialogue" not in METRICS["bleu-1"].levels


@pytest.mark.parametrize(("unit", "level"), [("response", "turn"), ("dialogue", "all")])
def test_followup_scores_equal_the_kernel_at_each_unit(tiny_lm_dir, unit, level):
    settings = {"lang": "zh", "followup_model": str(tiny_lm_dir)}
    results = score(
        ["fed", "fed-cond", "full"], HYPS, contexts=CONTEXTS, settings=settings, unit=unit
    )
    dialogues = [[*c, h] for c, h in zip(CONTEXTS, HYPS, strict=True)]
    for name in ("fed", "fed-cond"):
        expected = followup.followup_scores(dialogues, tiny_lm_dir, "zh", name, level)
        np.testing.assert_allclose(results[name].per_response, expected, rtol=1e-6)
        assert results[name].corpus == pytest.approx(expected.mean())
        assert "items:shipped" in results[name].signature
        assert "|norm:mean|layout:fed|" in results[name].signature
    full = followup.followup_scores(dialogues, tiny_lm_dir, "zh", "full")
    np.testing.assert_allclose(results["full"].per_response, full, rtol=1e-6)


def test_selected_variant_uses_the_chosen_items(tiny_lm_dir):
    chosen = ["interesting", "fluent"]
    settings = {"lang": "en", "followup_model": str(tiny_lm_dir), "followup_items": chosen}
    hyps, contexts = ["That sounds fun!"], [["I went hiking."]]
    result = score(["fed-cond-selected"], hyps, contexts=contexts, settings=settings)
    expected = followup.followup_scores(
        [["I went hiking.", "That sounds fun!"]],
        tiny_lm_dir,
        "en",
        "fed-cond-selected",
        "turn",
        items=chosen,
    )
    np.testing.assert_allclose(result["fed-cond-selected"].per_response, expected, rtol=1e-6)
    assert "items:interesting,fluent" in result["fed-cond-selected"].signature


def test_the_token_sum_setting_is_named_in_the_signature(tiny_lm_dir):
    settings = {
        "lang": "zh",
        "followup_model": str(tiny_lm_dir),
        "followup_normalisation": "sum",
        "followup_layout": "eos",
    }
    result = score(["fed-cond"], HYPS, contexts=CONTEXTS, settings=settings)["fed-cond"]
    dialogues = [[*c, h] for c, h in zip(CONTEXTS, HYPS, strict=True)]
    scorer = followup.FollowupScorer.load(tiny_lm_dir, layout="eos")
    expected = followup.followup_scores(
        dialogues, scorer, "zh", "fed-cond", "turn", normalisation="sum"
    )
    np.testing.assert_allclose(result.per_response, expected, rtol=1e-6)
    assert "|norm:sum|layout:eos|" in result.signature


def test_missing_models_are_unavailable_not_numbers(tmp_path):
    results = score(
        ["fed-cond", "discriminator"],
        HYPS,
        contexts=CONTEXTS,
        settings={"followup_model": str(tmp_path / "none"), "discriminator_model": str(tmp_path)},
    )
    for result in results.values():
        assert not result.available and result.per_response is None
    assert "lacks" in results["discriminator"].unavailable


@pytest.fixture(scope="module")
def saved_discriminator(tmp_path_factory):
    contexts, responses = topical_corpus(400)
    config = DiscriminatorConfig.preset("GRU-uni-MLP", **{**SMALL, "max_epochs": 4})
    trained = train_discriminator(contexts, responses, config, seed=0)
    return trained.model, trained.model.save(tmp_path_factory.mktemp("disc") / "v1")


def test_discriminator_through_the_registry_equals_the_saved_model(saved_discriminator):
    model, path = saved_discriminator
    contexts = [["hello there", "t3w0 t3w1 t3w2 t3w0"], ["t5w0 t5w1"]]
    hyps = ["t3w2 t3w1 t3w0", "t9w2 t9w1"]
    refs = [["t3w1 t3w0"], ["t5w1 t5w2"]]
    results = score(
        ["discriminator", "ruber"],
        hyps,
        refs=refs,
        contexts=contexts,
        settings={"discriminator_model": str(path)},
    )
    expected = model.score(["t3w0 t3w1 t3w2 t3w0", "t5w0 t5w1"], hyps)
    np.testing.assert_allclose(results["discriminator"].per_response, expected, rtol=1e-6)
    blended = model.ruber_scores(["t3w0 t3w1 t3w2 t3w0", "t5w0 t5w1"], hyps, [r[0] for r in refs])
    np.testing.assert_allclose(results["ruber"].per_response, blended, rtol=1e-6)
    assert "query:last-turn" in results["discriminator"].signature


def test_training_pairs_take_the_last_context_turn_and_first_reference():
    samples = [(["a", "b"], ["r1", "r2"]), ([], ["x"]), (["c"], []), (["d"], ["  "])]
    assert training_pairs(samples) == (["b"], ["r1"])
