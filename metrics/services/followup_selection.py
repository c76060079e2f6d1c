"""FED-Selected / FED-Cond-Selected: choose the follow-up items that agree with people (seed 004).

Against a rating job's dialogue-level human scores for one dimension, every rated dialogue is scored
per FED item (the 18 items appended after the whole dialogue, seed 004's dialogue-level setting)
with a local causal LM; the item subset whose mean correlates best is chosen with seed 004's 2-fold
cross-validation (held-out Spearman and Pearson reported, the mean of the two folds as in seed 004
§4.1), and once more on all rated dialogues: those items are what a ``*-selected`` metric run uses
(setting ``followup_items``).

The scorer's inputs (layout, normalisation, max length, model, language) are the selection's own
fields with a metric run's defaults; a run naming the selection (setting ``followup_selection``)
takes them from :func:`selection_run_settings`, so items are never applied to another input than
the one they were chosen on.
"""

from __future__ import annotations

import os
from typing import Any, Literal, cast

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import RatingJob
from annotation.rubric_spec import as_spec
from annotation.selectors.human_scores import human_scores
from core.errors import ServiceError
from core.jobs import (
    Heartbeat,
    JobCancelled,
    job_cancel,
    job_claim,
    job_finish,
    job_progress,
    job_retry,
    job_send_on_commit,
    new_lease_owner,
)
from metrics.models import FollowupSelection, JobStatus
from metrics.scorers import followup
from metrics.scorers.base import MetricUnavailable
from metrics.scorers.models import resolve_model
from metrics.selectors.metric_runs import dialogue_texts

MIN_DIALOGUES = 6  # two folds of at least 3 dialogues each
MIN_MAX_LENGTH = 8  # as the run setting followup_max_length
_CHUNK = 16  # dialogues scored between progress updates


class SelectionError(ServiceError):
    """A selection request that cannot run; the message names the field."""

    location_style = "prefix"

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message, field=field or None)


def _human(job: RatingJob, dimension: str) -> dict[int, float]:
    return {
        score.dialogue_id: score.value
        for score in human_scores(job=job, level="dialogue")
        if score.dimension == dimension
    }


def dimensions(job: RatingJob) -> list[str]:
    """The job rubric's dialogue-level scored questions, and ``overall``."""
    spec = as_spec(job.rubric.spec)
    keys = [q.key for q in spec.questions if q.level == "dialogue" and q.type != "text"]
    return [*keys, "overall"]


def selection_create(
    *,
    name: str,
    job: RatingJob,
    dimension: str,
    model_path: str,
    language: str,
    conditional: bool = True,
    criterion: str = "spearman",
    max_items: int | None = None,
    seed: int = 0,
    layout: str = "fed",
    normalisation: str = "mean",
    max_length: int | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> FollowupSelection:
    if not name.strip():
        raise SelectionError("a name is required", field="name")
    known = dimensions(job)
    if dimension not in known:
        raise SelectionError(
            f"{dimension!r} is not a dialogue-level dimension of {job.rubric}; "
            f"choose from {', '.join(known)}",
            field="dimension",
        )
    if language not in followup.LANGUAGES:
        raise SelectionError(
            f"follow-ups exist for {', '.join(followup.LANGUAGES)}, not {language!r}",
            field="language",
        )
    if criterion not in ("spearman", "pearson"):
        raise SelectionError("criterion must be spearman or pearson", field="criterion")
    if max_items is not None and max_items < 1:
        raise SelectionError("max_items must be at least 1", field="max_items")
    if layout not in followup.LAYOUTS:
        raise SelectionError(
            f"layout must be one of {', '.join(followup.LAYOUTS)}, not {layout!r}", field="layout"
        )
    if normalisation not in followup.NORMALISATIONS:
        raise SelectionError(
            f"normalisation must be one of {', '.join(followup.NORMALISATIONS)}, "
            f"not {normalisation!r}",
            field="normalisation",
        )
    if max_length is not None and max_length < MIN_MAX_LENGTH:
        raise SelectionError(
            f"max_length must be at least {MIN_MAX_LENGTH} tokens (empty: the model's limit)",
            field="max_length",
        )
    try:
        resolve_model(model_path, "model_path", "causal LM")
    except MetricUnavailable as exc:
        raise SelectionError(exc.reason, field="model_path") from exc
    rated = len(_human(job, dimension))
    if rated < MIN_DIALOGUES:
        raise SelectionError(
            f"the job has {rated} dialogue(s) scored on {dimension!r}; "
            f"2-fold selection needs at least {MIN_DIALOGUES}",
            field="job",
        )
    with transaction.atomic():
        selection = FollowupSelection.objects.create(
            name=name.strip(),
            job=job,
            dimension=dimension,
            model_path=os.fspath(model_path),
            language=language,
            conditional=conditional,
            criterion=criterion,
            max_items=max_items,
            seed=seed,
            layout=layout,
            normalisation=normalisation,
            max_length=max_length,
            progress_total=rated,
            created_by=created_by,
        )
        if enqueue:
            job_send_on_commit("followup_selection", selection.pk)
    return selection


def selection_cancel(selection: FollowupSelection) -> bool:
    """Stop a pending or running selection (a running one after its current batch)."""
    return job_cancel(job=selection)


def selection_retry(selection: FollowupSelection) -> FollowupSelection:
    """Run again a selection that is not done and that no worker holds."""
    job_retry(
        job=selection,
        refused=SelectionError,
        done="this selection is done already",
        kind="followup_selection",
    )
    return selection


def _dialogue_texts(dialogue_ids: list[int]) -> list[list[str]]:
    # the one definition of "the dialogue" that metric runs' dialogue-level scores use too
    texts = dialogue_texts(dialogue_ids=dialogue_ids)
    return [texts[pk] for pk in dialogue_ids]


def _fold_json(fold: followup.FoldSelection) -> dict[str, Any]:
    return {
        "items": list(fold.items),
        "validation_correlation": fold.validation_correlation,
        "test_spearman": fold.test_spearman,
        "test_spearman_p": fold.test_spearman_p,
        "test_pearson": fold.test_pearson,
        "test_pearson_p": fold.test_pearson_p,
        "validation_size": int(len(fold.validation_indices)),
        "test_size": int(len(fold.test_indices)),
    }


def _correlation(values: np.ndarray, target: np.ndarray, criterion: str) -> float | None:
    """One item's correlation with the human scores; None when undefined (a constant side)."""
    from scipy import stats  # on the worker only: web processes never correlate

    if np.ptp(values) == 0 or np.ptp(target) == 0:
        return None
    method = stats.spearmanr if criterion == "spearman" else stats.pearsonr
    return float(method(values, target).statistic)


def selection_execute(selection_id: int) -> FollowupSelection:
    """Score every rated dialogue per item, then select (idempotent: a finished selection and
    one a live worker holds are left alone; one whose worker died runs again). A cancel stops
    it after the current batch of dialogues."""
    selection = FollowupSelection.objects.select_related("job__rubric").get(pk=selection_id)
    owner = new_lease_owner()
    if not job_claim(FollowupSelection, selection.pk, owner=owner):
        selection.refresh_from_db()
        return selection
    FollowupSelection.objects.filter(pk=selection.pk).update(progress_done=0, error="")
    with Heartbeat(FollowupSelection, selection.pk, owner=owner) as beat:
        _execute(selection, owner, beat)
    selection.refresh_from_db()
    return selection


def _execute(selection: FollowupSelection, owner: str, beat: Heartbeat) -> None:
    try:
        human = _human(selection.job, selection.dimension)
        dialogue_ids = sorted(human)
        scorer = followup.FollowupScorer.load(
            selection.model_path,
            max_length=selection.max_length,
            layout=selection.layout,  # type: ignore[arg-type]  # checked by selection_create
        )
        dialogues = _dialogue_texts(dialogue_ids)
        chunks = []
        for start in range(0, len(dialogues), _CHUNK):
            chunks.append(
                followup.followup_item_scores(
                    dialogues[start : start + _CHUNK],
                    scorer,
                    selection.language,
                    conditional=selection.conditional,
                    level="all",
                    normalisation=selection.normalisation,  # type: ignore[arg-type]  # checked by selection_create
                )
            )
            job_progress(
                FollowupSelection, selection.pk, add=len(dialogues[start : start + _CHUNK])
            )
            beat.check()  # the cancel checkpoint
        names = chunks[0].names
        values = np.concatenate([chunk.values for chunk in chunks])
        target = np.array([human[pk] for pk in dialogue_ids])
        search: Literal["exhaustive", "greedy"] = (
            "exhaustive" if len(names) <= followup.MAX_EXHAUSTIVE_ITEMS else "greedy"
        )
        # selection_create admits only these two (and the kernel checks again)
        criterion = cast(followup.Criterion, selection.criterion)
        chosen = followup.select_items(
            values,
            target,
            names,
            criterion=criterion,
            seed=selection.seed,
            search=search,
            max_items=selection.max_items,
        )
        items_all, correlation_all = followup.best_item_subset(
            values,
            target,
            names,
            criterion=criterion,
            search=search,
            max_items=selection.max_items,
        )
        per_item = [_correlation(column, target, selection.criterion) for column in values.T]
    except JobCancelled:
        job_finish(FollowupSelection, selection.pk, status=JobStatus.CANCELLED, owner=owner)
        return
    except Exception as exc:  # recorded for the researcher, then re-raised for Celery
        job_finish(
            FollowupSelection,
            selection.pk,
            status=JobStatus.FAILED,
            owner=owner,
            error=f"{type(exc).__name__}: {exc}",
        )
        raise
    job_finish(
        FollowupSelection,
        selection.pk,
        status=JobStatus.DONE,
        owner=owner,
        results={
            "variant": "fed-cond-selected" if selection.conditional else "fed-selected",
            "n_dialogues": len(dialogue_ids),
            "items": list(items_all),
            "correlation_all": correlation_all,
            "spearman": chosen.spearman,
            "pearson": chosen.pearson,
            "folds": [_fold_json(fold) for fold in chosen.folds],
            "per_item": [
                {"item": name, "correlation": r} for name, r in zip(names, per_item, strict=True)
            ],
        },
    )


def selection_run_settings(selection: FollowupSelection) -> dict[str, Any]:
    """The metric-run settings under which ``selection`` chose its items: the one definition a
    run naming it (setting ``followup_selection``) takes its follow-up settings from. ``None``
    values are the run defaults (the model's position limit, the shipped follow-ups)."""
    return {
        "lang": selection.language,
        "followup_model": selection.model_path,
        "followup_items": list(selection.results.get("items", ())),
        "followup_layout": selection.layout,
        "followup_normalisation": selection.normalisation,
        "followup_max_length": selection.max_length,
        "followup_override": None,
    }
