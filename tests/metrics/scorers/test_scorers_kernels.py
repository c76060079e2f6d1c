"""The compiled counting paths agree with each other: n-gram statistics from per-pair tables of
packed keys (small vocabularies) equal those from global n-gram ids (the path large vocabularies
take), and token ids from the compiled tokenizer equal those of the token lists."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.scorers import Settings, score
from metrics.scorers.ngrams import Encoded
from metrics.scorers.text import TokenIds, text_profile

COUNTED = ["f1", "bleu-1", "bleu-2", "bleu-3", "bleu-4", "rouge-1", "rouge-2", "rouge-3"]
COUNTED += ["rouge-4", "dist-1", "dist-2", "cider"]


def test_global_ngram_ids_give_the_same_scores_as_packed_keys(
    corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    lang, hyps, refs = corpus
    packed = score(COUNTED, hyps, refs, settings=Settings(lang=lang))
    monkeypatch.setattr(Encoded, "_packable", lambda self, n: False)
    global_ids = score(COUNTED, hyps, refs, settings=Settings(lang=lang))
    for name in COUNTED:
        np.testing.assert_array_equal(global_ids[name].per_response, packed[name].per_response)
        assert global_ids[name].corpus == packed[name].corpus


@pytest.mark.parametrize("lang", ["zh", "ja", "en"])
def test_compiled_token_ids_equal_the_token_lists(corpus, lang: str) -> None:
    _, hyps, refs = corpus
    texts = [*hyps, *(r for group in refs for r in group), "", "  ", "a" * 40]
    profile = text_profile(lang)
    ids = profile.encode_all(texts)
    lists = TokenIds.from_tokens(profile._tokenize_unique(texts))
    assert ids.tokens() == lists.tokens()
    assert ids.lens.tolist() == lists.lens.tolist()
    # same tokens, same ids: both number tokens in order of first appearance
    assert ids.vocab == lists.vocab
    np.testing.assert_array_equal(ids.ids, lists.ids)
