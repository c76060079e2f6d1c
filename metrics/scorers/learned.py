"""Registry kernels of the reference-free metrics: follow-up likelihood (seed 004) and the learned
response discriminator (seed 003, with RUBER's blend).

They score a response *in its context*: ``contexts[i]`` is the dialogue so far and ``hyps[i]`` the
model turn being scored. At ``unit="response"`` the follow-up metrics use FED's 8 turn-level items
(the history ends with the turn, as FED scores a turn); at ``unit="dialogue"`` the caller passes one
item per dialogue (its last model turn, after the whole history) and the 18 items are appended
after the whole dialogue, seed 004's dialogue-level setting. FULL and FED-Cond-Tag behave the same
at both units except for the items they average (FULL has its own five follow-ups).

The discriminator's query is the last context turn, as it is trained (seed 003 §3.1: post-reply
pairs; :func:`training_pairs`), and its score is P(real). ``ruber`` blends that with the
referenced max-min-pooled embedding cosine (RUBER); the min-max normalisation of the blend is over
the batch, so score one system per call.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from metrics.scorers import followup
from metrics.scorers.base import Batch, Computed, MetricUnavailable
from metrics.scorers.models import MODELS_KEPT, ModelCache, model_label, pick_device

if TYPE_CHECKING:
    import torch

    from metrics.scorers import discriminator

FOLLOWUP_METRICS = tuple(followup.VARIANTS)
DISCRIMINATOR_METRICS = ("discriminator", "ruber")


def _followup_scorer(
    path: Path,
    device: torch.device,
    max_length: int | None,
    batch_size: int,
    layout: followup.Layout,
) -> followup.FollowupScorer:
    return followup.FollowupScorer.load(
        path, device=str(device), max_length=max_length, batch_size=batch_size, layout=layout
    )


_FOLLOWUP_SCORERS = ModelCache(_followup_scorer, setting="followup_model", what="causal LM")


def _dialogues(batch: Batch) -> list[list[str]]:
    contexts = batch.contexts or [[] for _ in batch.hyps]
    return [[*context, hyp] for context, hyp in zip(contexts, batch.hyps, strict=True)]


def followup_metrics(batch: Batch, names: Sequence[str]) -> dict[str, Computed]:
    """FED, FED-Cond, FULL and their variants of the batch's responses in their contexts."""
    s = batch.settings
    if not s.followup_model:
        raise MetricUnavailable("no causal language model configured (setting followup_model)")
    try:
        scorer = _FOLLOWUP_SCORERS.get(
            s.followup_model,
            s.device,
            s.followup_max_length,
            s.batch_size,
            s.followup_layout,
        )
    except ValueError as exc:  # e.g. a layout this tokenizer cannot write
        raise MetricUnavailable(str(exc)) from exc
    level: followup.Level = "all" if batch.unit == "dialogue" else "turn"
    dialogues = _dialogues(batch)
    out: dict[str, Computed] = {}
    for name in names:
        variant = followup.VARIANTS[name]
        items = None
        if variant.requires_items:
            if not s.followup_items:
                raise ValueError(f"{name} needs the chosen items (setting followup_items)")
            items = s.followup_items
        values = followup.followup_scores(
            dialogues,
            scorer,
            s.lang,
            name,
            level if variant.followups != "full" else "all",
            items=items if variant.followups != "full" else None,
            override=s.followup_override,
            normalisation=s.followup_normalisation,  # type: ignore[arg-type]  # validated by check_settings before it gets here
        )
        out[name] = Computed(values, float(np.mean(values)))
    return out


def followup_label(batch: Batch) -> str:
    s = batch.settings
    items = ",".join(s.followup_items) if s.followup_items else "shipped"
    override = "yes" if s.followup_override else "no"
    # The unit is not part of it: a run stores one signature per metric, and the score's level
    # (turn: 8 turn-level items; dialogue: all 18) says which items were appended. ``system:``
    # names the system value's definition: the mean of the dialogue scores (seed 004 §4.4).
    # norm, layout and max_len are the scorer's inputs, which a run takes from its item selection.
    max_length = s.followup_max_length or "model"
    return (
        f"model:{model_label(s.followup_model)}|items:{items}|edited:{override}"
        f"|norm:{s.followup_normalisation}|layout:{s.followup_layout}|max_len:{max_length}"
        "|system:dialogue-mean"
    )


@functools.lru_cache(maxsize=MODELS_KEPT)
def _discriminator(path: str, mtime: float, device: str) -> discriminator.Discriminator:
    from metrics.scorers import discriminator  # torch modules: loaded only to score

    return discriminator.Discriminator.load(path, device=device)


def _load_discriminator(path: str, device: str | None) -> discriminator.Discriminator:
    from metrics.scorers import discriminator

    weights = Path(path) / discriminator.WEIGHTS_FILE
    if not weights.is_file():
        # Let the loader name exactly what is missing.
        return discriminator.Discriminator.load(path, device=device)
    return _discriminator(os.fspath(path), weights.stat().st_mtime, str(pick_device(device)))


def discriminator_metrics(batch: Batch, names: Sequence[str]) -> dict[str, Computed]:
    """P(real) of each response after its last context turn; RUBER's blend with the reference."""
    s = batch.settings
    if not s.discriminator_model:
        raise MetricUnavailable("no trained discriminator chosen (setting discriminator_model)")
    model = _load_discriminator(s.discriminator_model, s.device)
    queries = [context[-1] if context else "" for context in (batch.contexts or [[]] * len(batch))]
    unreferenced = model.score(queries, list(batch.hyps), batch_size=s.batch_size)
    out = {}
    if "discriminator" in names:
        out["discriminator"] = Computed(unreferenced, float(np.mean(unreferenced)))
    if "ruber" in names:
        assert batch.refs is not None
        from metrics.scorers import discriminator

        referenced = model.referenced_scores(list(batch.hyps), [refs[0] for refs in batch.refs])
        # Settings accepts only RUBER_BLENDS, the values of BlendMethod.
        method = cast("discriminator.BlendMethod", s.ruber_blend)
        blended = discriminator.ruber_blend(unreferenced, referenced, method)
        out["ruber"] = Computed(blended, float(np.mean(blended)))
    return out


def discriminator_label(batch: Batch) -> str:
    s = batch.settings
    blend = f"|blend:{s.ruber_blend}" if s.ruber_blend else ""
    path = Path(s.discriminator_model or "")
    # A saved version's directory is named by its id: keep the parent to make the label readable.
    label = f"{path.parent.name}/{path.name}" if path.is_absolute() else model_label(str(path))
    return f"model:{label}|query:last-turn{blend}"


def training_pairs(
    samples: Sequence[tuple[Sequence[str], Sequence[str]]],
) -> tuple[list[str], list[str]]:
    """(query, response) pairs from (context turns, references): the last context turn and the
    first reference, the post-reply pairs seed 003 trains on. Samples without either are left
    out."""
    queries, responses = [], []
    for context, references in samples:
        if context and references and context[-1].strip() and references[0].strip():
            queries.append(context[-1])
            responses.append(references[0])
    return queries, responses
