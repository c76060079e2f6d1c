"""Follow-up likelihood metrics (seed 004) on a tiny GPT-2: scores equal a direct computation from
the model's logits, the KV-cache path equals the plain path, items load and edit per language."""

import json

import numpy as np
import pytest
import torch

from metrics.scorers.base import MetricUnavailable
from metrics.scorers.followup import (
    FollowupScorer,
    followup_item_scores,
    followup_scores,
    load_followups,
)

DIALOGUES = [
    ["Hi!", "Hello, how is your day?", "It's good. I am reading a book. How about you?"],
    ["What is your name?"],
    ["I like cats.", "Me too, they are cute.", "Do you have one?", "No, but I want one."],
]


@pytest.fixture(scope="module")
def scorer(tiny_lm_dir):
    return FollowupScorer.load(tiny_lm_dir)


def layout_ids(scorer, dialogue, followup):
    """History and follow-up ids, built independently of the scorer: for ``fed``, fed.py's text
    ``"<|endoftext|> " + " <|endoftext|> ".join(turns) + " <|endoftext|> " + f`` tokenized whole
    and cut after its last separator; for ``eos``, ``EOS t1 EOS ... tn EOS f`` from pieces."""
    tokenizer, eos = scorer.tokenizer, scorer.tokenizer.eos_token_id
    if scorer.layout == "fed":
        text = tokenizer.eos_token + "".join(f" {t} {tokenizer.eos_token}" for t in dialogue)
        ids = tokenizer(f"{text} {followup}", add_special_tokens=False)["input_ids"]
        cut = len(ids) - ids[::-1].index(eos)
        return ids[:cut], ids[cut:]
    history = [eos]
    for turn in dialogue:
        history += tokenizer(turn, add_special_tokens=False)["input_ids"] + [eos]
    return history, tokenizer(followup, add_special_tokens=False)["input_ids"]


def direct_nll(scorer, dialogue, followup, budget=None, normalisation="mean"):
    """Token NLL (mean, or sum) of the follow-up given the history, and of the whole sequence,
    computed by hand from one forward pass over the scorer's layout."""
    eos = scorer.tokenizer.eos_token_id
    history, followup_ids = layout_ids(scorer, dialogue, followup)
    if budget is not None and len(history) > budget:
        history = [eos] + history[len(history) - budget + 1 :]
    sequence = torch.tensor([history + followup_ids], device=scorer.device)
    with torch.no_grad():
        log_probs = scorer.model(sequence).logits[0].double().log_softmax(-1)
    token_nll = -log_probs[:-1].gather(1, sequence[0, 1:, None])[:, 0]
    if normalisation == "sum":
        return token_nll[len(history) - 1 :].sum().item(), token_nll.sum().item()
    return token_nll[len(history) - 1 :].mean().item(), token_nll.mean().item()


def expected_scores(scorer, dialogue, language, variant, level, normalisation="mean"):
    followups = load_followups(language)
    items = followups.select(level)
    texts = {t for item in items for t in (*item.positive, *item.negative, item.tag)}
    texts |= set(followups.full)
    nll = {t: direct_nll(scorer, dialogue, t, normalisation=normalisation) for t in texts}
    conditional = {t: pair[0] for t, pair in nll.items()}
    joint = {t: pair[1] for t, pair in nll.items()}

    def mean(table, group):
        return float(np.mean([table[t] for t in group])) if group else 0.0

    if variant == "full":
        return mean(conditional, followups.full)
    if variant == "fed-cond-tag":
        return -mean(conditional, [item.tag for item in items])
    if variant == "fed-cond-pos":
        return float(np.mean([-mean(conditional, i.positive) for i in items if i.positive]))
    if variant == "fed-cond-neg":
        return float(np.mean([mean(conditional, i.negative) for i in items]))
    table = joint if variant == "fed" else conditional
    return float(np.mean([mean(table, i.negative) - mean(table, i.positive) for i in items]))


@pytest.mark.parametrize(
    ("variant", "level"),
    [
        ("fed", "all"),
        ("fed-cond", "turn"),
        ("fed-cond", "dialogue"),
        ("full", "all"),
        ("fed-cond-pos", "all"),
        ("fed-cond-neg", "dialogue"),
        ("fed-cond-tag", "turn"),
    ],
)
def test_scores_equal_a_direct_computation_from_the_logits(scorer, variant, level):
    scores = followup_scores(DIALOGUES[:2], scorer, "en", variant, level)

    expected = [expected_scores(scorer, d, "en", variant, level) for d in DIALOGUES[:2]]
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["fed", "eos"])
@pytest.mark.parametrize("normalisation", ["mean", "sum"])
def test_layouts_and_normalisations_equal_a_direct_computation(tiny_lm_dir, layout, normalisation):
    scorer = FollowupScorer.load(tiny_lm_dir, layout=layout)
    for variant, level in (("fed", "all"), ("fed-cond", "turn"), ("full", "all")):
        scores = followup_scores(
            DIALOGUES[:2], scorer, "en", variant, level, normalisation=normalisation
        )
        expected = [
            expected_scores(scorer, d, "en", variant, level, normalisation) for d in DIALOGUES[:2]
        ]
        np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


def test_the_fed_layout_puts_spaces_around_turns_as_fed_py_does(tiny_lm_dir):
    scorer = FollowupScorer.load(tiny_lm_dir)
    space = scorer.tokenizer.convert_tokens_to_ids(" ")
    assert scorer.layout == "fed"
    assert scorer.turn_ids("Hi") == [space, *scorer.encode("Hi"), space]
    assert scorer.followup_ids("Wow") == [space, *scorer.encode("Wow")]
    eos_scorer = FollowupScorer.load(tiny_lm_dir, layout="eos")
    assert eos_scorer.turn_ids("Hi") == scorer.encode("Hi")


def test_sum_normalisation_reaches_the_magnitude_of_seed_004s_selected_scores(scorer):
    mean = followup_scores(DIALOGUES[:1], scorer, "en", "fed-cond", "all")
    summed = followup_scores(DIALOGUES[:1], scorer, "en", "fed-cond", "all", normalisation="sum")
    # a sum over the follow-up's tokens is several times the per-token mean
    assert abs(summed[0]) > 3 * abs(mean[0])


def test_kv_cache_path_equals_plain_path(scorer):
    texts = [t for item in load_followups("en").items for t in (*item.positive, *item.negative)]
    scorer.batch_size = 7  # several chunks, each with its own copy of the cache
    try:
        cached = scorer.likelihoods(DIALOGUES + [[]], texts, use_cache=True)
        plain = scorer.likelihoods(DIALOGUES + [[]], texts, use_cache=False)
    finally:
        scorer.batch_size = 64

    np.testing.assert_allclose(cached.followup_nll, plain.followup_nll, rtol=1e-5)
    np.testing.assert_allclose(cached.history_nll, plain.history_nll, rtol=1e-5, atol=1e-5)
    for conditional in (True, False):
        np.testing.assert_allclose(
            cached.mean_nll(conditional=conditional),
            plain.mean_nll(conditional=conditional),
            rtol=1e-5,
        )


def test_kv_cache_path_equals_plain_path_for_a_rotary_model(tiny_llama_dir):
    scorer = FollowupScorer.load(tiny_llama_dir)
    texts = [t for item in load_followups("en").items for t in (*item.positive, *item.negative)]

    cached = scorer.likelihoods(DIALOGUES, texts, use_cache=True)
    plain = scorer.likelihoods(DIALOGUES, texts, use_cache=False)

    np.testing.assert_allclose(cached.followup_nll, plain.followup_nll, rtol=1e-5)
    np.testing.assert_allclose(cached.history_nll, plain.history_nll, rtol=1e-5)
    expected = direct_nll(scorer, DIALOGUES[0], texts[0])[0]
    assert cached.mean_nll(conditional=True)[0, 0] == pytest.approx(expected, rel=1e-5)


def test_long_history_keeps_its_last_tokens_within_the_model_limit(short_lm_dir):
    scorer = FollowupScorer.load(short_lm_dir)
    long_dialogue = [f"Turn number {n} talks about cats and dogs." for n in range(12)]
    texts = ["Tell me more!", "I'm really interested in learning more about this."]
    budget = scorer.max_length - max(len(scorer.followup_ids(t)) for t in texts)

    cached = scorer.likelihoods([long_dialogue], texts, use_cache=True)
    plain = scorer.likelihoods([long_dialogue], texts, use_cache=False)

    assert cached.history_tokens[0] == budget - 1
    np.testing.assert_allclose(cached.followup_nll, plain.followup_nll, rtol=1e-5)
    expected = [direct_nll(scorer, long_dialogue, t, budget)[0] for t in texts]
    np.testing.assert_allclose(cached.mean_nll(conditional=True)[0], expected, rtol=1e-5)


@pytest.mark.parametrize("language", ["ja", "zh"])
def test_japanese_and_chinese_follow_ups_score(scorer, language):
    dialogue = ["こんにちは、元気ですか？"] if language == "ja" else ["你好", "今天天气不错。"]

    scores = followup_scores([dialogue], scorer, language, "fed-cond", "all")

    assert scores == pytest.approx([expected_scores(scorer, dialogue, language, "fed-cond", "all")])


def test_item_scores_feed_the_selected_variants(scorer):
    per_item = followup_item_scores(DIALOGUES, scorer, "en", conditional=True, level="turn")
    chosen = ["specific", "relevant", "fluent"]

    selected = followup_scores(DIALOGUES, scorer, "en", "fed-cond-selected", "turn", items=chosen)

    assert per_item.names[:3] == ("interesting", "engaging", "specific")
    assert per_item.values.shape == (3, 8)
    columns = [per_item.names.index(name) for name in chosen]
    np.testing.assert_allclose(selected, per_item.values[:, columns].mean(axis=1))
    with pytest.raises(ValueError, match="needs the chosen items"):
        followup_scores(DIALOGUES, scorer, "en", "fed-cond-selected")


def test_it_rejects_unknown_variant_and_item(scorer):
    with pytest.raises(ValueError, match="unknown variant"):
        followup_scores(DIALOGUES, scorer, "en", "fed-magic")
    with pytest.raises(ValueError, match="unknown turn-level item"):
        followup_scores(DIALOGUES, scorer, "en", "fed-cond", "turn", items=["likeable"])


def test_missing_model_dir_is_unavailable_with_the_reason(tmp_path):
    with pytest.raises(MetricUnavailable, match=r"^unavailable: causal LM directory .*nowhere"):
        followup_scores(DIALOGUES, tmp_path / "nowhere", "en", "fed-cond")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MetricUnavailable, match=r"^unavailable: cannot load the causal LM"):
        FollowupScorer.load(tmp_path / "empty")


def test_shipped_items_cover_three_languages_alike():
    english = load_followups("en")
    for language in ("en", "ja", "zh"):
        followups = load_followups(language)
        assert [i.name for i in followups.items] == [i.name for i in english.items]
        assert [i.level for i in followups.items].count("turn") == 8
        assert [i.level for i in followups.items].count("dialogue") == 10
        assert [(len(i.positive), len(i.negative)) for i in followups.items] == [
            (len(i.positive), len(i.negative)) for i in english.items
        ]
        assert len(followups.full) == 5
    assert english.full[1] == "You're really confusing."


@pytest.mark.parametrize("language", ["ja", "zh"])
def test_a_sentence_translates_the_same_wherever_it_recurs(language):
    translated = load_followups(language)
    english = load_followups("en")
    seen = {}
    for source, target in zip(english.items, translated.items, strict=True):
        for side in ("positive", "negative"):
            for text, translation in zip(getattr(source, side), getattr(target, side), strict=True):
                assert seen.setdefault(text, translation) == translation, text
    for text, translation in zip(english.full, translated.full, strict=True):
        assert seen[text] == translation, text


def test_override_edits_an_item_adds_one_and_replaces_full(tmp_path):
    override = {
        "items": [
            {"name": "interesting", "negative": ["つまらない。"]},
            {
                "name": "situation",
                "level": "dialogue",
                "tag": "状況に合っている",
                "positive": ["状況にぴったりですね。"],
                "negative": [],
            },
        ],
        "full": ["意味が分かりません！"],
    }
    path = tmp_path / "ja.json"
    path.write_text(json.dumps(override, ensure_ascii=False), encoding="utf-8")

    followups = load_followups("ja", path)

    interesting = followups.select("turn", ["interesting"])[0]
    assert interesting.negative == ("つまらない。",)
    assert interesting.positive == load_followups("ja").items[0].positive
    assert followups.select("dialogue", ["situation"])[0].tag == "状況に合っている"
    assert len(followups.items) == 19
    assert followups.full == ("意味が分かりません！",)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"items": [{"name": "new", "level": "turn", "tag": "x"}]}, r"items\[0\]: missing field"),
        ({"items": [{"name": "fluent", "level": "utterance"}]}, r"items\[0\]\.level"),
        ({"items": [{"name": "fluent", "positive": ["ok", ""]}]}, r"items\[0\]\.positive\[1\]"),
        ({"full": []}, r"override\.full: expected at least one"),
        ({"extra": 1}, r"unknown key"),
    ],
)
def test_override_errors_name_the_field(override, message):
    with pytest.raises(ValueError, match=message):
        load_followups("en", override)


def test_override_file_that_is_not_json_is_an_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")

    with pytest.raises(ValueError, match="broken.json"):
        load_followups("en", path)
