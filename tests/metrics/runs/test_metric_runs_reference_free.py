"""Reference-free metrics as metric runs call them: one definition of the dialogue, `*-selected`
items checked when the run is configured, no silent NaN, no dropped row, one failing metric never
failing another."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from chat.models import Turn
from metrics.models import FollowupSelection, JobStatus, MetricRun
from metrics.scorers import registry
from metrics.scorers.base import Computed
from metrics.scorers.registry import score
from metrics.services import followup_selection
from metrics.services import metric_runs as services
from tests.annotation.results.factories import job_for
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


def done_selection(campaign, lm_dir, **fields):
    """A finished FED-Cond-Selected item selection under the eos layout and token sums."""
    values = {
        "name": "eos 选择",
        "job": job_for(
            "likert", campaign=campaign, name=f"评分 {FollowupSelection.objects.count()}"
        ),
        "dimension": "overall",
        "model_path": str(lm_dir),
        "language": "zh",
        "conditional": True,
        "layout": "eos",
        "normalisation": "sum",
        "max_length": 80,
        "status": JobStatus.DONE,
        "results": {"items": ["fluent", "coherent"], "variant": "fed-cond-selected"},
        **fields,
    }
    return FollowupSelection.objects.create(**values)


def test_a_run_naming_a_selection_scores_with_its_items_and_scorer_inputs(researcher, lm_dir):
    """Issue 22.6: the run's follow-up settings are the selection's, and the signature says so."""
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    selection = done_selection(study.campaign, lm_dir)
    run = services.metric_run_create(
        name="sel",
        campaign=study.campaign,
        metrics=["fed-cond-selected"],
        settings={"followup_selection": selection.pk},
        created_by=researcher,
    )
    taken = {
        "lang": "zh",
        "followup_model": str(lm_dir),
        "followup_items": ["fluent", "coherent"],
        "followup_layout": "eos",
        "followup_normalisation": "sum",
        "followup_max_length": 80,
    }
    assert run.metric_settings == {"followup_selection": selection.pk, **taken}
    run_all_chunks(run)
    assert run.status == JobStatus.DONE
    assert "|norm:sum|layout:eos|max_len:80|" in run.signatures["fed-cond-selected"]
    dialogue = study.dialogues[0]
    [whole] = followup_selection._dialogue_texts([dialogue.pk])
    scored = {}
    for name, settings in (("eos", taken), ("default", {**taken, "followup_layout": "fed"})):
        result = score(
            ["fed-cond-selected"], [whole[-1]], None, [whole[:-1]], settings, unit="dialogue"
        )
        scored[name] = float(result["fed-cond-selected"].per_response[0])
    stored = run.scores.get(metric="fed-cond-selected", level="dialogue", dialogue=dialogue)
    assert stored.value == pytest.approx(scored["eos"])
    assert scored["eos"] != pytest.approx(scored["default"])


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"followup_layout": "fed"}, "setting followup_layout='fed' differs from item selection"),
        ({"followup_normalisation": "mean"}, "setting followup_normalisation='mean' differs"),
        ({"followup_max_length": 96}, "setting followup_max_length=96 differs"),
        ({"followup_items": ["fluent"]}, "setting followup_items=['fluent'] differs"),
        ({"lang": "en"}, "setting lang='en' differs"),
        ({"followup_override": "/tmp/edited.json"}, "setting followup_override='/tmp/edited"),
    ],
)
def test_settings_that_differ_from_the_selection_are_refused_naming_both(
    researcher, lm_dir, given, message
):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    selection = done_selection(study.campaign, lm_dir)
    with pytest.raises(services.MetricRunError, match=re.escape(message)) as caught:
        services.metric_run_create(
            name="sel",
            campaign=study.campaign,
            metrics=["fed-cond-selected"],
            settings={"followup_selection": selection.pk, **given},
            created_by=researcher,
        )
    key = next(iter(given))
    chosen = {
        "followup_layout": "'eos'",
        "followup_normalisation": "'sum'",
        "followup_max_length": "80",
        "followup_items": "['fluent', 'coherent']",
        "lang": "'zh'",
        "followup_override": "None",
    }[key]
    assert f"({selection.name!r}), which chose its items with {key}={chosen}" in str(caught.value)
    assert not MetricRun.objects.exists()


def test_a_selection_of_the_other_likelihood_or_not_done_is_refused(researcher, lm_dir):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    cond = done_selection(study.campaign, lm_dir)
    running = done_selection(study.campaign, lm_dir, status=JobStatus.RUNNING, results={})
    cases = [
        (cond, ["fed-selected"], "fed-selected: item selection {pk} ('eos 选择') chose its items "
         "for fed-cond-selected"),
        (running, ["fed-cond-selected"], "item selection {pk} ('eos 选择') has not chosen its "
         "items yet (status: running)"),
    ]  # fmt: skip
    for selection, metrics, message in cases:
        with pytest.raises(
            services.MetricRunError, match=re.escape(message.format(pk=selection.pk))
        ):
            services.metric_run_create(
                name="sel",
                campaign=study.campaign,
                metrics=metrics,
                settings={"followup_selection": selection.pk},
                created_by=researcher,
            )
    with pytest.raises(services.MetricRunError, match="there is no item selection 9999"):
        services.check_settings({"followup_selection": 9999})


def test_the_api_refuses_a_run_whose_settings_differ_from_its_selection(researcher, lm_dir):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    selection = done_selection(study.campaign, lm_dir)
    api = APIClient()
    api.force_authenticate(researcher)
    body = {
        "name": "api",
        "metrics": ["fed-cond-selected"],
        "campaign": study.campaign.pk,
        "settings": {"followup_selection": selection.pk, "followup_layout": "fed"},
    }
    refused = api.post("/api/metric-runs/", body, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "settings"
    assert "followup_layout='fed' differs from item selection" in refused.json()["detail"]
    del body["settings"]["followup_layout"]
    created = api.post("/api/metric-runs/", body, format="json")
    assert created.status_code == 201, created.json()
    assert MetricRun.objects.get().metric_settings["followup_layout"] == "eos"


def test_the_run_form_offers_finished_selections(researcher_client, lm_dir):
    study = make_study(dialogues_per_cell=1, skills=("knowledge",))
    selection = done_selection(study.campaign, lm_dir)
    done_selection(study.campaign, lm_dir, name="未完成", status=JobStatus.RUNNING)
    html = researcher_client.get(reverse("metrics:metric-run-create")).content.decode()
    assert f'<option value="{selection.pk}">eos 选择 · fed-cond-selected · layout:eos' in html
    assert "未完成" not in html
