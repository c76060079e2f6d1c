"""F1, DIST, length and the ``lic`` profile on hand-computed cases; text profiles."""

from __future__ import annotations

import math

import pytest

from metrics.scorers import Settings, score
from metrics.scorers.text import normalise, text_profile


def test_f1_is_unigram_overlap_f1_best_reference() -> None:
    # 我 爱 北 京 vs 我 爱 上 海: overlap 2, P = R = 2/4; vs 我 爱 北 京 天 安 门: P = 1, R = 4/7
    result = score(["f1"], ["我 爱 北京", "好"], [["我爱上海", "我爱北京天安门"], ["不"]])["f1"]
    assert result.per_response.tolist() == pytest.approx([2 * (4 / 7) / (1 + 4 / 7), 0.0])
    assert result.corpus == pytest.approx((2 * (4 / 7) / (1 + 4 / 7)) / 2)


def test_dist_reports_intra_per_response_and_inter_for_the_corpus() -> None:
    results = score(["dist-1", "dist-2", "length"], ["哈哈哈", "哈哈呀"])
    # unigrams 哈哈哈 / 哈哈呀: 1 of 3, 2 of 3 distinct; over both: {哈, 呀} of 6
    assert results["dist-1"].per_response.tolist() == pytest.approx([1 / 3, 2 / 3])
    assert results["dist-1"].corpus == pytest.approx(2 / 6)
    # bigrams 哈哈 哈哈 / 哈哈 哈呀: 1 of 2, 2 of 2; over both: {哈哈, 哈呀} of 4
    assert results["dist-2"].per_response.tolist() == pytest.approx([1 / 2, 1.0])
    assert results["dist-2"].corpus == pytest.approx(2 / 4)
    assert results["dist-2"].corpus_kind == "inter"
    assert results["length"].per_response.tolist() == [3.0, 3.0]


# The lic case, by hand from generative_pt/tools/eval.py (tokens: split on single spaces):
#   1. "我 喜欢 猫"    vs "我 也 喜欢 猫"     tokens 3 vs 4
#   2. "今天天气很好"  vs "今天 天气 很 好"   one unsegmented token vs 4
#   3. "好 好 好"      vs "好"                3 vs 1
LIC_HYPS = ["我 喜欢 猫", "今天天气很好", "好 好 好"]
LIC_REFS = [["我 也 喜欢 猫"], ["今天 天气 很 好"], ["好"]]


def test_lic_profile_follows_the_competition_script() -> None:
    names = ["f1", "char-f1", "bleu-1", "bleu-2", "dist-1", "dist-2"]
    r = score(names, LIC_HYPS, LIC_REFS, settings=Settings(profile="lic"))
    # F1 on the tokens as given (the published LIC 2021 / MSDE F1): hits 3/0/1 of hypothesis
    # tokens 3/1/3 and reference tokens 4/4/1 -> 6/7, 0 (one unsegmented token), 1/2
    assert r["f1"].per_response.tolist() == pytest.approx([6 / 7, 0.0, 1 / 2])
    # micro: P = 4/7, R = 4/9 -> F1 = 2 * 4 / (7 + 9)
    assert r["f1"].corpus == pytest.approx(8 / 16)
    # DuConv calc_f1 on characters: hits 4/6/1, predicted chars 4/6/3, gold chars 5/6/1
    assert r["char-f1"].per_response.tolist() == pytest.approx([8 / 9, 1.0, 2 / 4])
    assert r["char-f1"].corpus == pytest.approx(2 * 11 / (13 + 12))  # micro
    # corpus BLEU: c = 3 + 1 + 3 = 7 tokens, r = 4 + 4 + 1 = 9, BP = exp(1 - 9/7)
    # unigrams matched 3 + 0 + 1 of 7; bigrams (keys joined: 我喜欢, 喜欢猫 | - | 好好 x2)
    # matched 1 (喜欢猫) of 4
    bp = math.exp(1 - 9 / 7)
    assert r["bleu-1"].corpus == pytest.approx(bp * 4 / 7)
    assert r["bleu-2"].corpus == pytest.approx(bp * math.sqrt(4 / 7 * 1 / 4))
    assert r["bleu-1"].per_response.tolist() == pytest.approx([math.exp(1 - 4 / 3), 0.0, 1 / 3])
    # DIST over all responses: unigram keys 我 喜欢 猫 今天天气很好 好 好 好 -> 5 of 7;
    # bigram keys 我喜欢 喜欢猫 好好 好好 -> 3 of 4
    assert r["dist-1"].corpus == pytest.approx(5 / 7)
    assert r["dist-2"].corpus == pytest.approx(3 / 4)
    assert r["f1"].signature.startswith("f1|nrefs:1|lang:zh|prof:lic|tok:split-space|")
    assert "|unit:token|avg:micro|ref:first|" in r["f1"].signature
    assert "|unit:char|avg:micro|ref:first|def:duconv-calc_f1|" in r["char-f1"].signature
    assert r["char-f1"].corpus_kind == "micro"
    assert r["bleu-2"].corpus_kind == "corpus-bleu" and r["f1"].corpus_kind == "micro"


def test_lic_token_f1_clips_repeated_tokens_and_pools_counts_over_the_corpus() -> None:
    # "a a b" vs "a c": clipped hits 1 (a), P = 1/3, R = 1/2 -> F1 = 2/5;
    # "x y" vs "x y z w": hits 2, P = 1, R = 1/2 -> F1 = 2/3.
    # Pooled: hits 3, hyp tokens 5, ref tokens 6 -> F1 = 6/11 (not the mean of 2/5 and 2/3).
    r = score(
        ["f1"],
        ["a a b", "x y"],
        [["a c"], ["x y z w"]],
        settings=Settings(profile="lic", lang="en"),
    )["f1"]
    assert r.per_response.tolist() == pytest.approx([2 / 5, 2 / 3])
    assert r.corpus == pytest.approx(6 / 11)


def test_char_f1_under_the_default_profile_counts_normalised_characters_first_reference() -> None:
    # default profile: NFKC and CJK-internal spaces removed, then characters of the joined tokens.
    # 今天天气很好 vs 今天 天气 很 好 (first reference): all 6 characters hit; the second,
    # better-matching reference is ignored as in the DuConv script (one reference per line).
    r = score(["char-f1"], ["今天天气很好", "好好"], [["今天 天气 很 好", "x"], ["坏", "好好"]])
    assert r["char-f1"].per_response.tolist() == pytest.approx([1.0, 0.0])
    # pooled: hits 6, predicted 8, gold 7
    assert r["char-f1"].corpus == pytest.approx(2 * 6 / (8 + 7))
    assert "|prof:default.v" in r["char-f1"].signature


def test_lic_joins_ngram_keys_without_a_separator_as_the_script_does() -> None:
    # bigram ("ab", "c") of the hypothesis equals ("a", "bc") of the reference once joined
    r = score(["bleu-2"], ["ab c"], [["a bc"]], settings=Settings(profile="lic", lang="en"))
    assert r["bleu-2"].corpus == pytest.approx(math.sqrt(0 / 2 * 1)) == 0.0
    r = score(["dist-2"], ["ab c", "a bc"], settings=Settings(profile="lic", lang="en"))
    assert r["dist-2"].corpus == pytest.approx(1 / 2)


def test_the_default_profile_does_not_punish_unsegmented_output() -> None:
    default = score(["bleu-2", "f1"], LIC_HYPS[1:2], LIC_REFS[1:2])
    lic = score(["bleu-2", "f1"], LIC_HYPS[1:2], LIC_REFS[1:2], settings=Settings(profile="lic"))
    assert default["bleu-2"].per_response[0] == pytest.approx(1.0)
    assert lic["bleu-2"].per_response[0] == 0.0


def test_normalisation_is_nfkc_and_drops_spaces_between_cjk() -> None:
    assert normalise("ＡＢＣ１２３，你 好  吗 ?") == "ABC123,你好吗 ?"
    zh = text_profile("zh")
    assert zh.tokenize("我用iPhone 12拍了3张照片!") == [
        "我",
        "用",
        "iPhone",
        "12",
        "拍",
        "了",
        "3",
        "张",
        "照",
        "片",
        "!",
    ]
    assert (
        zh.tokenize("你 好 ， 世界") == zh.tokenize("你好，世界") == ["你", "好", ",", "世", "界"]
    )


def test_word_tokenizers() -> None:
    assert text_profile("zh", tokenizer="zh-jieba").tokenize("我 喜欢 看 电影") == text_profile(
        "zh", tokenizer="zh-jieba"
    ).tokenize("我喜欢看电影")
    assert text_profile("ja", tokenizer="ja-sudachi").tokenize("東京都に 住んでいます。") == [
        "東京",
        "都",
        "に",
        "住ん",
        "で",
        "い",
        "ます",
        "。",
    ]
    assert text_profile("ja").tokenize("すもも 3個") == ["す", "も", "も", "3", "個"]
    assert text_profile("en").tokenize("It costs $3.50, isn't it?") == [
        "It",
        "costs",
        "$",
        "3.50",
        ",",
        "isn't",
        "it",
        "?",
    ]
    assert text_profile("en", lowercase=True).tokenize("Hello World") == ["hello", "world"]
    assert text_profile("zh", profile="lic").tokenize(" 今天  天气 ") == ["今天", "", "天气"]


def test_profiles_are_named_in_signatures() -> None:
    assert text_profile("zh").signature == "prof:default.v2|tok:zh-char|case:mixed"
    assert text_profile("zh", tokenizer="zh-jieba").signature.startswith(
        "prof:default.v2|tok:zh-jieba-0.42"
    )
    assert "ja-sudachi-A-" in text_profile("ja", tokenizer="ja-sudachi").signature
    assert text_profile("en", profile="lic").signature == "prof:lic|tok:split-space|case:mixed"
