"""Item and dialogue scores of the named variants (FED, FED-Cond, FULL, ...) from likelihoods."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from metrics.scorers.followup.items import FollowupItem, Level, load_followups
from metrics.scorers.followup.likelihood import FollowupLikelihoods, FollowupScorer, Normalisation

Polarity = Literal["both", "positive", "negative"]


@dataclass(frozen=True)
class Variant:
    """How a named follow-up metric is computed (seed 004 §4.2)."""

    conditional: bool
    followups: Literal["items", "tag", "full"]
    polarity: Polarity = "both"
    requires_items: bool = False


VARIANTS: dict[str, Variant] = {
    "fed": Variant(conditional=False, followups="items"),
    "fed-cond": Variant(conditional=True, followups="items"),
    "fed-cond-pos": Variant(conditional=True, followups="items", polarity="positive"),
    "fed-cond-neg": Variant(conditional=True, followups="items", polarity="negative"),
    "fed-cond-tag": Variant(conditional=True, followups="tag"),
    "full": Variant(conditional=True, followups="full"),
    "fed-selected": Variant(conditional=False, followups="items", requires_items=True),
    "fed-cond-selected": Variant(conditional=True, followups="items", requires_items=True),
}


@dataclass(frozen=True)
class ItemScores:
    """Per-item scores ``values[dialogue, item]`` under FED's sign (higher is better)."""

    names: tuple[str, ...]
    values: np.ndarray


def item_scores(
    likelihoods: FollowupLikelihoods,
    items: Sequence[FollowupItem],
    *,
    conditional: bool,
    polarity: Polarity = "both",
    normalisation: Normalisation = "mean",
) -> ItemScores:
    """FED's item score from follow-up likelihoods.

    ``both``: ``mean NLL(negatives) - mean NLL(positives)``, a missing side counting 0
    (``shikib/fed``); ``positive``: ``-mean NLL(positives)``; ``negative``: ``mean NLL(negatives)``.
    Items without follow-ups of the requested polarity are left out.
    """
    nll = likelihoods.nll(conditional=conditional, normalisation=normalisation)
    column = {text: index for index, text in enumerate(likelihoods.followups)}

    def side(texts: tuple[str, ...]) -> np.ndarray:
        if not texts:
            return np.zeros(nll.shape[0])
        return nll[:, [column[text] for text in texts]].mean(axis=1)

    names, columns = [], []
    for item in items:
        if polarity == "positive" and not item.positive:
            continue
        if polarity == "negative" and not item.negative:
            continue
        positive = side(item.positive) if polarity != "negative" else 0.0
        negative = side(item.negative) if polarity != "positive" else 0.0
        names.append(item.name)
        columns.append(negative - positive)
    if not columns:
        raise ValueError(f"no item has {polarity} follow-ups")
    return ItemScores(names=tuple(names), values=np.stack(columns, axis=1))


def _followups_for(
    variant: Variant, items: Sequence[FollowupItem], full: Sequence[str]
) -> list[str]:
    if variant.followups == "full":
        return list(full)
    if variant.followups == "tag":
        return [item.tag for item in items]
    texts: list[str] = []
    for item in items:
        if variant.polarity != "negative":
            texts.extend(item.positive)
        if variant.polarity != "positive":
            texts.extend(item.negative)
    return texts


def _scorer(
    model_dir: str | os.PathLike[str] | FollowupScorer,
    device: str | None,
    max_length: int | None,
) -> FollowupScorer:
    if isinstance(model_dir, FollowupScorer):
        return model_dir
    return FollowupScorer.load(model_dir, device=device, max_length=max_length)


def followup_item_scores(
    dialogues: Sequence[Sequence[str]],
    model_dir: str | os.PathLike[str] | FollowupScorer,
    language: str,
    *,
    conditional: bool = True,
    level: Level = "all",
    items: Iterable[str] | None = None,
    polarity: Polarity = "both",
    override: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    use_cache: bool = True,
    device: str | None = None,
    max_length: int | None = None,
    normalisation: Normalisation = "mean",
) -> ItemScores:
    """Per-item FED (``conditional=False``) or FED-Cond scores of each dialogue: the input of
    :func:`select_items`. ``model_dir`` may be an already loaded :class:`FollowupScorer` (its
    layout and ``max_length`` then hold); :func:`followup_scores` of a ``*-selected`` variant
    under the same inputs is the mean of the chosen items' columns."""
    scorer = _scorer(model_dir, device, max_length)
    chosen = load_followups(language, override).select(level, items)
    variant = Variant(conditional=conditional, followups="items", polarity=polarity)
    likelihoods = scorer.likelihoods(
        dialogues, _followups_for(variant, chosen, ()), use_cache=use_cache
    )
    return item_scores(
        likelihoods,
        chosen,
        conditional=conditional,
        polarity=polarity,
        normalisation=normalisation,
    )


def followup_scores(
    dialogues: Sequence[Sequence[str]],
    model_dir: str | os.PathLike[str] | FollowupScorer,
    language: str,
    variant: str = "fed-cond",
    level: Level = "all",
    *,
    items: Iterable[str] | None = None,
    override: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    use_cache: bool = True,
    device: str | None = None,
    max_length: int | None = None,
    normalisation: Normalisation = "mean",
) -> np.ndarray:
    """One score per dialogue for a named variant of :data:`VARIANTS` (higher is better).

    Item variants average their item scores over the items of ``level`` (or over ``items``, which
    the ``*-selected`` variants require: the subset :func:`select_items` chose). ``"full"`` is the
    mean conditional NLL of FULL's five negative follow-ups; ``level`` and ``items`` do not apply.
    For turn-level scores, each dialogue is the history ending with the turn to evaluate.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {sorted(VARIANTS)}")
    spec = VARIANTS[variant]
    if spec.requires_items and items is None:
        raise ValueError(f"{variant} needs the chosen items (see select_items)")
    if spec.followups == "full" and items is not None:
        raise ValueError("full uses its own five follow-ups; items do not apply")
    scorer = _scorer(model_dir, device, max_length)
    followup_set = load_followups(language, override)
    chosen = () if spec.followups == "full" else followup_set.select(level, items)
    texts = _followups_for(spec, chosen, followup_set.full)
    likelihoods = scorer.likelihoods(dialogues, texts, use_cache=use_cache)
    nll = likelihoods.nll(conditional=spec.conditional, normalisation=normalisation)
    column = {text: index for index, text in enumerate(likelihoods.followups)}
    if spec.followups == "full":
        return nll[:, [column[text] for text in followup_set.full]].mean(axis=1)
    if spec.followups == "tag":
        return -nll[:, [column[item.tag] for item in chosen]].mean(axis=1)
    scores = item_scores(
        likelihoods,
        chosen,
        conditional=spec.conditional,
        polarity=spec.polarity,
        normalisation=normalisation,
    )
    return scores.values.mean(axis=1)
