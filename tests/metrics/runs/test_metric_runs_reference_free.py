"""Reference-free metrics as metric runs call them: one definition of the dialogue, `*-selected`
items checked when the run is configured, no silent NaN, no dropped row, one failing metric never
failing another."""

from __future__ import annotations

import re

import numpy as np
import pytest

from chat.models import Turn
from metrics.models import JobStatus
from metrics.scorers import registry
from metrics.scorers.base import Computed
from metrics.scorers.registry import score
from metrics.services import followup_selection
from metrics.services import metric_runs as services
from tests.chat.factories import TurnFactory
from tests.metrics.reference_free.conftest import build_tiny_causal_lm
from tests.metrics.runs.factories import make_study
from tests.metrics.runs.test_metric_runs_scoring import run_all_chunks

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("lm"))


def test_dialogue_level_followups_come_after_the_whole_dialogue_trailing_user_turns_included(
    researcher, lm_dir
):
    study = make_study(dialogues_per_cell=2, skills=("knowledge",))
    ending_with_user = study.dialogues[0]
    TurnFactory(dialogue=ending_with_user, index=4, text="好吧，那我们下次再聊。")
    settings = {"followup_model": str(lm_dir)}
    run = services.metric_run_create(
        name="fed",
        campaign=study.campaign,
        metrics=["fed"],
        settings=settings,
        created_by=researcher,
    )
    run_all_chunks(run)
    assert run.status == JobStatus.DONE and run.unavailable == {}, run.unavailable
    # the item-selection job's input for the same dialogue
    [whole] = followup_selection._dialogue_texts([ending_with_user.pk])
    assert whole[-1] == "好吧，那我们下次再聊。" and len(whole) == 5
    expected = score(["fed"], [whole[-1]], None, [whole[:-1]], settings, unit="dialogue")["fed"]
    stored = run.scores.get(level="dialogue", dialogue=ending_with_user)
    assert stored.value == pytest.approx(float(expected.per_response[0]))
    # the dialogue's turn-level scores are still one per model turn
    assert run.scores.filter(level="turn", dialogue=ending_with_user).count() == 2


@pytest.mark.parametrize(
    ("metric_settings", "message"),
    [
        ({}, "fed-cond-selected need the chosen follow-up items (setting followup_items"),
        ({"followup_items": ["no-such-item"]}, "followup_items: unknown all-level item(s)"),
    ],
)
def test_selected_metrics_without_known_items_are_refused_when_configured(
    researcher, lm_dir, metric_settings, message
):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    with pytest.raises(services.MetricRunError, match=re.escape(message)):
        services.metric_run_create(
            name="sel",
            campaign=study.campaign,
            metrics=["fed-cond-selected", "f1"],
            settings={"followup_model": str(lm_dir), **metric_settings},
            created_by=researcher,
        )


def test_selected_items_of_the_dialogue_level_are_scored_per_dialogue_and_other_metrics_go_on(
    researcher, lm_dir
):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    settings = {"followup_model": str(lm_dir), "followup_items": ["fluent", "coherent"]}
    run = services.metric_run_create(
        name="sel",
        campaign=study.campaign,
        metrics=["fed-cond-selected", "fed-cond", "f1"],
        settings=settings,
        created_by=researcher,
    )
    run_all_chunks(run)
    assert run.status == JobStatus.DONE
    selected = run.scores.filter(metric="fed-cond-selected")
    assert not selected.filter(level="turn").exists()
    assert selected.filter(level="dialogue").count() == len(study.dialogues)
    assert "scored per dialogue only" in run.unavailable["fed-cond-selected"]
    assert run.scores.filter(metric="fed-cond", level="turn").count() == 2 * len(study.dialogues)
    assert run.scores.filter(metric="f1", level="turn").count() == 2 * len(study.dialogues)
    assert "fed-cond" not in run.unavailable and "f1" not in run.unavailable


def test_a_failing_kernel_is_recorded_and_the_other_metrics_are_stored(researcher, monkeypatch):
    def broken(batch, names):
        raise RuntimeError("kernel exploded")

    monkeypatch.setitem(registry._KERNELS, "dist", broken)
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    run = services.metric_run_create(
        name="x", campaign=study.campaign, metrics=["dist-1", "f1"], created_by=researcher
    )
    run_all_chunks(run)
    assert run.status == JobStatus.DONE
    assert "failed: RuntimeError: kernel exploded" in run.unavailable["dist-1"]
    assert not run.scores.filter(metric="dist-1").exists()
    assert run.scores.filter(metric="f1", level="turn").count() == 2 * len(study.dialogues)


def test_non_finite_values_are_never_dropped_silently(researcher, monkeypatch):
    def half_nan(batch, names):
        values = np.arange(len(batch), dtype=float)
        values[0] = np.nan
        return {"length": Computed(values, float(np.nanmean(values)))}

    monkeypatch.setitem(registry._KERNELS, "length", half_nan)
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    run = services.metric_run_create(
        name="x", campaign=study.campaign, metrics=["length"], created_by=researcher
    )
    run_all_chunks(run)
    turns = Turn.objects.filter(dialogue__in=study.dialogues, speaker="system").count()
    stored = run.scores.filter(metric="length", level="turn").count()
    assert stored < turns
    reason = run.unavailable["length"]
    assert reason.startswith("partly unavailable:")
    assert "1 of 2 turn values not finite (NaN or infinite" in reason
    rows = {r["name"]: r for r in services.selectors.run_metric_status(run=run)}
    assert rows["length"]["partial"] and "not finite" in rows["length"]["status"]


def test_a_followup_system_score_is_the_mean_of_its_dialogue_scores_for_every_variant(
    researcher, lm_dir
):
    # Seed 004 §4.4: a team's score is the mean of its dialogues' scores, not of turn scores;
    # *-selected with dialogue-level items used to be the only variant to follow it.
    study = make_study(dialogues_per_cell=2, skills=("knowledge",))
    settings = {"followup_model": str(lm_dir), "followup_items": ["fluent", "coherent"]}
    run = services.metric_run_create(
        name="sys",
        campaign=study.campaign,
        metrics=["fed-cond", "fed-cond-selected"],
        settings=settings,
        created_by=researcher,
    )
    run_all_chunks(run)
    assert run.status == JobStatus.DONE
    for metric in ("fed-cond", "fed-cond-selected"):
        assert "|system:dialogue-mean" in run.signatures[metric]
        systems = run.scores.filter(metric=metric, level="system", group="knowledge")
        assert systems.exists()
        for system in systems:
            dialogues = run.scores.filter(metric=metric, level="dialogue", backend=system.backend)
            values = list(dialogues.values_list("value", flat=True))
            assert len(values) == 2
            assert system.value == pytest.approx(np.mean(values))
    turns = run.scores.filter(metric="fed-cond", level="turn", backend=systems[0].backend)
    turn_mean = np.mean(list(turns.values_list("value", flat=True)))
    system = run.scores.get(
        metric="fed-cond", level="system", group="knowledge", backend=systems[0].backend
    )
    assert system.value != pytest.approx(turn_mean)
