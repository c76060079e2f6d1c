"""The default tokenizers equal sacrebleu's on every string (after the profile's normalisation),
and per-response BLEU/ROUGE equal sacrebleu/rouge-score run with sacrebleu's own tokenizer."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

from metrics.scorers import Settings, score
from metrics.scorers.text import _ZH_CHINESE, normalise, normalise_all, text_profile

ZH = TokenizerZh()
THIRTEEN_A = Tokenizer13a()

# Characters that real LLM replies mix: Han, kana, CJK and general punctuation (U+2000-U+206F:
# dashes, curly quotes, ellipsis), full-width forms, ASCII letters/digits/punctuation (the rules'
# triggers . , - & ;), emoji, supplementary Han, Latin with diacritics, odd spaces.
ALPHABET = st.one_of(
    st.sampled_from(list("你好世界的一是不了人我在有他这中大")),
    st.sampled_from(list("すもものうちカタカナ")),
    st.sampled_from(list("，。、！？：；「」『』（）《》【】～")),
    st.characters(min_codepoint=0x2000, max_codepoint=0x206F),
    st.sampled_from(list("“”‘’…—–·•€™→")),
    st.characters(min_codepoint=0xFF00, max_codepoint=0xFFEF),
    st.sampled_from(list("abcXYZ0123456789")),
    st.sampled_from(list(".,-&;:!?'\"()[]{}/<>@#$%^*_=+|~`")),
    st.sampled_from(["&amp;", "&quot;", "&lt;", "<skipped>", "3.5", "1,000", "2-3", "Do"]),
    st.sampled_from(list("😀🎉👍🏻\U00020000\U0002a6d6éüßİ")),
    st.sampled_from([" ", "  ", "\t", "\n", "\u3000", "\u00a0"]),
)
TEXTS = st.lists(ALPHABET, max_size=30).map("".join)


def _sacrebleu_zh(text: str) -> list[str]:
    return ZH(normalise(text)).split()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXTS, min_size=1, max_size=8))
def test_zh_char_equals_sacrebleus_zh_tokenizer_on_generated_mixed_script_text(
    texts: list[str],
) -> None:
    profile = text_profile("zh")
    # the batch path (all texts in one pass) and the one-text path
    assert profile.tokenize_all(texts) == [_sacrebleu_zh(t) for t in texts]
    assert [profile.tokenize(t) for t in texts] == [_sacrebleu_zh(t) for t in texts]


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=8))
def test_en_13a_equals_sacrebleus_13a_tokenizer(texts: list[str]) -> None:
    profile = text_profile("en")
    assert profile.tokenize_all(texts) == [THIRTEEN_A(normalise(t)).split() for t in texts]


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, max_size=8), st.booleans())
def test_batch_normalisation_equals_one_by_one(texts: list[str], lowercase: bool) -> None:
    assert normalise_all(texts, lowercase=lowercase) == [
        normalise(t, lowercase=lowercase) for t in texts
    ]


def test_texts_containing_nul_are_normalised_one_by_one() -> None:
    assert normalise_all(["a\x00b", " c "]) == ["a\x00b", "c"]


def test_the_chinese_character_class_is_sacrebleus_on_every_code_point() -> None:
    ours = re.compile(f"[{_ZH_CHINESE}]")
    is_chinese = TokenizerZh._is_chinese_char
    differ = [
        hex(cp)
        for cp in range(0x110000)
        if cp < 0xD800 or cp > 0xDFFF
        if bool(ours.fullmatch(chr(cp))) != is_chinese(chr(cp))
    ]
    assert differ == []


def test_the_two_strings_of_the_issue_tokenize_as_sacrebleu() -> None:
    profile = text_profile("zh")
    assert profile.tokenize("他说——好") == ["他", "说", "—", "—", "好"]
    assert profile.tokenize("“Do it”") == ["“", "Do", "it", "”"]
    assert (
        profile.tokenize(".5元, 3.5.") == _sacrebleu_zh(".5元, 3.5.") == [".5", "元", ",", "3.5."]
    )


# A corpus with the characters where the tokenizers used to differ.
PARITY_HYPS = [
    "他说——这不是“Do or die”的问题…",
    "价格是3.5元, 大约1,000人来了。",
    "好的！😀 我们2-3点见",
    "“Do”——",
    "A&amp;B 公司，full-width ＡＢＣ１２３",
    "すもも 3個",
]
PARITY_REFS = [
    ["他说——这是“Do or die”的问题。", "这不是问题"],
    ["价格3.5元,大约1000人。"],
    ["好的 😀 两点到三点见"],
    ["“Don't”——"],
    ["A&B公司，ABC123"],
    ["すもも3個"],
]


def test_per_response_bleu_equals_sacrebleu_with_its_zh_tokenizer() -> None:
    names = [f"bleu-{n}" for n in (1, 2, 3, 4)]
    ours = score(names, PARITY_HYPS, PARITY_REFS, settings=Settings(lang="zh"))
    for n in (1, 2, 3, 4):
        bleu = BLEU(max_ngram_order=n, smooth_method="exp", tokenize="zh", effective_order=True)
        want = [
            bleu.sentence_score(normalise(h), [normalise(r) for r in g]).score / 100
            for h, g in zip(PARITY_HYPS, PARITY_REFS, strict=True)
        ]
        np.testing.assert_allclose(ours[f"bleu-{n}"].per_response, want, rtol=0, atol=1e-9)


class _SacrebleuZh:
    def tokenize(self, text: str) -> list[str]:
        return _sacrebleu_zh(text)


def test_per_response_rouge_equals_rouge_score_with_sacrebleus_zh_tokenizer() -> None:
    names, kinds = ["rouge-1", "rouge-2", "rouge-l"], ["rouge1", "rouge2", "rougeL"]
    ours = score(names, PARITY_HYPS, PARITY_REFS, settings=Settings(lang="zh"))
    scorer = rouge_scorer.RougeScorer(kinds, tokenizer=_SacrebleuZh())
    expected = [scorer.score_multi(g, h) for h, g in zip(PARITY_HYPS, PARITY_REFS, strict=True)]
    for name, kind in zip(names, kinds, strict=True):
        want = [e[kind].fmeasure for e in expected]
        np.testing.assert_allclose(ours[name].per_response, want, rtol=0, atol=1e-9)
