"""Follow-up likelihood metrics: FED, FED-Cond, FULL and the variants of seed 004.

Seed 004 (Kawamoto et al., "フォローアップ発話を用いた日本語対話の自動評価") scores a dialogue by
how likely a causal language model finds *follow-up* utterances appended after it:

* **FED** (Mehri & Eskenazi 2020, "Unsupervised Evaluation of Interactive Dialog with DialoGPT"):
  18 quality items (8 turn-level, 10 dialogue-level), each with positive and negative follow-ups.
  The likelihood is that of the whole sequence *history + follow-up* (the mean token loss of
  ``shikib/fed``'s ``score``), and an item scores ``mean NLL(negatives) - mean NLL(positives)``,
  a side without follow-ups counting 0 (``scores[metric] = low_score - high_score`` there). Higher
  is better: the positive follow-ups are likely and the negative ones unlikely.
* **FED-Cond** (seed 004 §4.2): the same items, with the *conditional* log-likelihood of the
  follow-up given the history, FULL's change (1) in seed 004 §2.
* **FULL** (De Bruyn et al. 2022, "Open-Domain Dialog Evaluation using Follow-Ups Likelihood"):
  only five negative follow-ups, conditional; the score is their mean conditional NLL (higher is
  better). The reference implementation (``maximedb/full``) averages ``exp(loss)``, i.e.
  perplexities; we average the log-scale loss, whose magnitude matches seed 004 Table 3 (team means
  3.38-3.94 for FULL). The ranking of one follow-up is the same, the mean over five can differ.
* **FED-Cond-Pos / FED-Cond-Neg** (seed 004 §4.2): only the positive (``-mean NLL(positives)``) or
  only the negative (``mean NLL(negatives)``) follow-ups; items lacking that side are left out.
* **FED-Cond-Tag** (seed 004 §4.2): the item names themselves as follow-ups, ``-NLL(name)``.
* **FED-Selected / FED-Cond-Selected** (seed 004 §3, §4.5): only the items chosen on a validation
  split, see :func:`select_items`.

A dialogue's score is the mean of its item scores (seed 004 Table 3 reports FED team means of
1.09-1.55, which is the scale of a mean over the 18 items). ``level`` picks the items: ``"turn"``
(the 8 turn-level items; pass the history ending with the turn to evaluate), ``"dialogue"`` (the
10 dialogue-level items) or ``"all"`` (the 18 items appended after the whole dialogue, seed 004's
dialogue-level setting, where its selected subsets mix both levels).

Sequence layout, named in the signature (``layout:``):

* ``fed`` (default): the text ``shikib/fed``'s ``fed.py`` builds for DialoGPT,
  ``"<|endoftext|> " + " <|endoftext|> ".join(turns) + " <|endoftext|> " + followup``, with
  ``<|endoftext|>`` the tokenizer's end-of-sequence (or separator) token: each turn is tokenized
  as it stands between two separators (``" t "``, so GPT-2's BPE sees the spaces as ``fed.py``
  does) and the follow-up as it stands after the last one (``" f"``);
* ``eos``: ``SEP t1 SEP t2 ... SEP tn SEP f`` with each turn and the follow-up tokenized alone,
  no spaces (this module's layout before the ``fed`` one; for tokenizers that ignore spaces, such
  as BERT-style Chinese ones, both give the same ids).

Either way the history's tokens never depend on the follow-up. The conditional likelihood counts
the follow-up tokens ``f``; the joint likelihood (FED) counts every token after the first.

Normalisation, named in the signature (``norm:``): ``mean`` (default) is the per-token mean NLL,
what ``fed.py`` scores (the LM loss) and what FULL uses; ``sum`` is the token sum of the NLL, the
scale of seed 004's FED-Cond-Selected magnitudes (7-10), which a per-token mean cannot reach.

Truncation: a sequence may hold at most ``max_length`` tokens (default: the model's position limit).
The history keeps its last ``max_length - longest follow-up`` tokens and its first kept token is a
``SEP``, as FED's ``score_batch`` keeps the tail and puts ``<|endoftext|>`` first. The longest
follow-up is taken over the follow-ups scored together (one variant), so all follow-ups of one
dialogue see the same history.

Speed: the history is encoded once per dialogue and its key/value cache is shared by a batch of all
the follow-ups (``use_cache=True``); ``use_cache=False`` re-encodes history + follow-up per row, the
plain path kept to verify the cached one (``benchmarks/followup_kv_cache.py`` measures the gain).

The package follows those seams: ``items`` (the shipped items and their override), ``likelihood``
(the LM, layouts and the KV-cached kernel), ``scores`` (item and dialogue scores of the variants)
and ``selection`` (the cross-validated item subsets). Callers import from the package.
"""

from metrics.scorers.followup.items import (
    ITEMS_PATH,
    LANGUAGES,
    FollowupItem,
    FollowupSet,
    Level,
    load_followups,
)
from metrics.scorers.followup.likelihood import (
    LAYOUTS,
    NORMALISATIONS,
    FollowupLikelihoods,
    FollowupScorer,
    Layout,
    Normalisation,
)
from metrics.scorers.followup.scores import (
    VARIANTS,
    ItemScores,
    Polarity,
    Variant,
    followup_item_scores,
    followup_scores,
    item_scores,
)
from metrics.scorers.followup.selection import (
    MAX_EXHAUSTIVE_ITEMS,
    Criterion,
    FoldSelection,
    ItemSelection,
    best_item_subset,
    select_items,
)

__all__ = [
    "ITEMS_PATH",
    "LANGUAGES",
    "LAYOUTS",
    "MAX_EXHAUSTIVE_ITEMS",
    "NORMALISATIONS",
    "VARIANTS",
    "Criterion",
    "FoldSelection",
    "FollowupItem",
    "FollowupLikelihoods",
    "FollowupScorer",
    "FollowupSet",
    "ItemScores",
    "ItemSelection",
    "Layout",
    "Level",
    "Normalisation",
    "Polarity",
    "Variant",
    "best_item_subset",
    "followup_item_scores",
    "followup_scores",
    "item_scores",
    "load_followups",
    "select_items",
]
