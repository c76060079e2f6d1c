"""Item selection (FED-Selected / FED-Cond-Selected): seed 004's cross-validated subset search."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from metrics.scorers.followup.scores import ItemScores

Criterion = Literal["spearman", "pearson"]

# Exhaustive subset search enumerates 2**k - 1 subsets; 2**20 is about a million rows of scores.
MAX_EXHAUSTIVE_ITEMS = 20
_SUBSET_CHUNK = 16384


@dataclass(frozen=True)
class FoldSelection:
    """One fold: items chosen on its validation half, correlations on the held-out half."""

    items: tuple[str, ...]
    validation_correlation: float
    test_spearman: float
    test_spearman_p: float
    test_pearson: float
    test_pearson_p: float
    validation_indices: np.ndarray
    test_indices: np.ndarray


@dataclass(frozen=True)
class ItemSelection:
    """Seed 004's 2-fold cross-validated item selection.

    ``spearman`` / ``pearson`` are the means of the held-out correlations of the folds (seed 004
    §4.1: "2分割交差検証を行い2つの相関係数の平均を最終的な結果とする"); ``heldout_scores`` gives
    every dialogue the mean of the items chosen on the *other* fold, the cross-fitted score seed 004
    §4.4 averages per system to rank them.
    """

    folds: tuple[FoldSelection, ...]
    spearman: float
    pearson: float
    heldout_scores: np.ndarray


def best_item_subset(
    item_values: np.ndarray,
    human: np.ndarray,
    names: Sequence[str],
    *,
    criterion: Criterion = "spearman",
    search: Literal["exhaustive", "greedy"] = "exhaustive",
    max_items: int | None = None,
) -> tuple[tuple[str, ...], float]:
    """The item subset whose mean score correlates best with ``human`` (seed 004 §3: "検証データで
    最も高かった評価項目の組み合わせ").

    ``exhaustive`` tries every subset of at most ``max_items`` items, smallest first, so a tie goes
    to the smaller subset; ``greedy`` adds, one at a time, the item that raises the correlation most
    and stops when none does (for more than :data:`MAX_EXHAUSTIVE_ITEMS` items).
    """
    values = np.asarray(item_values, dtype=float)
    target = np.asarray(human, dtype=float)
    if values.ndim != 2 or values.shape[1] != len(names) or values.shape[0] != target.shape[0]:
        raise ValueError("item_values must be [dialogues, items] matching human and names")
    if values.shape[0] < 3:
        raise ValueError("need at least 3 dialogues to correlate")
    k = values.shape[1]
    limit = k if max_items is None else min(max_items, k)
    if limit < 1:
        raise ValueError("max_items must be at least 1")
    if search == "exhaustive":
        if k > MAX_EXHAUSTIVE_ITEMS:
            raise ValueError(
                f"{k} items are too many for an exhaustive search (at most "
                f"{MAX_EXHAUSTIVE_ITEMS}); use search='greedy'"
            )
        best_mask, best = None, -np.inf
        for masks in _subset_masks(k, limit):
            correlations = _row_correlations(
                masks @ values.T / masks.sum(1, keepdims=True), target, criterion
            )
            index = int(np.argmax(correlations))
            if correlations[index] > best:
                best_mask, best = masks[index], float(correlations[index])
        if best_mask is None:
            raise ValueError("no item subset has a defined correlation (constant scores?)")
        return tuple(name for name, keep in zip(names, best_mask, strict=True) if keep), best
    if search != "greedy":
        raise ValueError(f"search must be 'exhaustive' or 'greedy', not {search!r}")
    chosen: list[int] = []
    best = -np.inf
    while len(chosen) < limit:
        candidates = [index for index in range(k) if index not in chosen]
        masks = np.zeros((len(candidates), k))
        masks[:, chosen] = 1.0
        masks[np.arange(len(candidates)), candidates] = 1.0
        correlations = _row_correlations(
            masks @ values.T / masks.sum(1, keepdims=True), target, criterion
        )
        index = int(np.argmax(correlations))
        if not correlations[index] > best:
            break
        chosen.append(candidates[index])
        best = float(correlations[index])
    if not chosen:
        raise ValueError("no item subset has a defined correlation (constant scores?)")
    return tuple(names[index] for index in sorted(chosen)), best


def select_items(
    item_values: ItemScores | np.ndarray,
    human: Sequence[float] | np.ndarray,
    names: Sequence[str] | None = None,
    *,
    criterion: Criterion = "spearman",
    seed: int = 0,
    search: Literal["exhaustive", "greedy"] = "exhaustive",
    max_items: int | None = None,
) -> ItemSelection:
    """FED-Selected / FED-Cond-Selected with seed 004's 2-fold cross-validation.

    The dialogues are shuffled (``seed``) into two halves; on each half the best subset is chosen
    with :func:`best_item_subset` (the validation split) and its Spearman and Pearson correlations
    (scipy, with p-values) are measured on the other half.
    """
    from scipy import stats  # here, not at the top: importing the scorers stays light

    if isinstance(item_values, ItemScores):
        names = item_values.names if names is None else names
        item_values = item_values.values
    if names is None:
        raise ValueError("names are required with a plain array of item scores")
    values = np.asarray(item_values, dtype=float)
    target = np.asarray(human, dtype=float)
    halves = np.array_split(np.random.default_rng(seed).permutation(len(target)), 2)
    column = {name: index for index, name in enumerate(names)}
    heldout = np.zeros(len(target))
    results = []
    for validation, test in (halves, halves[::-1]):
        chosen, validation_correlation = best_item_subset(
            values[validation],
            target[validation],
            names,
            criterion=criterion,
            search=search,
            max_items=max_items,
        )
        scores = values[test][:, [column[name] for name in chosen]].mean(axis=1)
        heldout[test] = scores
        spearman = stats.spearmanr(scores, target[test])
        pearson = stats.pearsonr(scores, target[test])
        results.append(
            FoldSelection(
                items=chosen,
                validation_correlation=validation_correlation,
                test_spearman=float(spearman.statistic),
                test_spearman_p=float(spearman.pvalue),
                test_pearson=float(pearson.statistic),
                test_pearson_p=float(pearson.pvalue),
                validation_indices=np.sort(validation),
                test_indices=np.sort(test),
            )
        )
    return ItemSelection(
        folds=tuple(results),
        spearman=float(np.mean([fold.test_spearman for fold in results])),
        pearson=float(np.mean([fold.test_pearson for fold in results])),
        heldout_scores=heldout,
    )


def _subset_masks(k: int, limit: int) -> Iterable[np.ndarray]:
    """All non-empty subsets of ``k`` items with at most ``limit`` members, smallest first, in
    chunks of 0/1 rows."""
    combos = itertools.chain.from_iterable(
        itertools.combinations(range(k), size) for size in range(1, limit + 1)
    )
    while True:
        chunk = list(itertools.islice(combos, _SUBSET_CHUNK))
        if not chunk:
            return
        masks = np.zeros((len(chunk), k))
        for row, combo in enumerate(chunk):
            masks[row, list(combo)] = 1.0
        yield masks


def _row_correlations(rows: np.ndarray, target: np.ndarray, criterion: Criterion) -> np.ndarray:
    """Correlation of each row with ``target``; undefined ones (a constant row) are -inf.

    Spearman is Pearson on average ranks, which is how scipy.stats.spearmanr defines it.
    """
    from scipy import stats

    if criterion == "spearman":
        rows = stats.rankdata(rows, axis=1)
        target = stats.rankdata(target)
    elif criterion != "pearson":
        raise ValueError(f"criterion must be 'spearman' or 'pearson', not {criterion!r}")
    rows = rows - rows.mean(axis=1, keepdims=True)
    target = target - target.mean()
    norms = np.sqrt((rows**2).sum(axis=1) * (target**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        correlations = rows @ target / norms
    return np.where(np.isfinite(correlations) & (norms > 1e-12), correlations, -np.inf)
