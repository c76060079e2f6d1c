"""A turn-level report of a `*-selected` metric whose items include dialogue-level ones is
refused when it is configured (issue 22.8): the run scored it per dialogue only. One service check
(`report_config_check`) answers the service, the form, the API and the command alike."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from metrics.models import Report
from metrics.services import reports as services
from tests.metrics.reports.factories import dialogue_score, finished_run, msde_study, turn_scores

pytestmark = pytest.mark.django_db

REFUSED = (
    "fed-cond-selected has no turn-level scores: run {pk} ('选择') took dialogue-level "
    "follow-up items (fluent, coherent)"
)


def selected_run(items: list[str], **settings: str):
    """A finished run over the rated dialogues: fed-cond-selected (per dialogue, plus per turn
    when every item is a turn-level one, as the scorer writes them) and f1 per turn."""
    study = msde_study()
    run = finished_run(
        study.interactive,
        name="选择",
        metrics=["fed-cond-selected", "f1"],
        metric_settings={"lang": "zh", "followup_items": items, **settings},
    )
    for k, dialogue in enumerate(study.rated):
        dialogue_score(run, dialogue, "fed-cond-selected", k / 10)
        turn_scores(run, dialogue, "f1", [k / 20])
        if set(items) <= {"fluent", "interesting"}:
            turn_scores(run, dialogue, "fed-cond-selected", [k / 10])
    return study, run


def config(study, run, **fields):
    return {"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "level": "turn", **fields}


def test_the_service_refuses_the_metric_at_turn_level_and_names_the_run_and_items():
    study, run = selected_run(["fluent", "coherent"])
    with pytest.raises(services.ReportConfigError) as caught:
        services.report_config_check(config(study, run, metrics=["fed-cond-selected", "f1"]))
    assert caught.value.errors["level"].startswith(REFUSED.format(pk=run.pk))
    assert "choose the dialogue or system level" in caught.value.errors["level"]
    # the dialogue and system levels have its scores
    for level in ("dialogue", "system"):
        resolved = services.report_config_check(config(study, run, level=level))
        assert resolved["metrics"] == ["fed-cond-selected", "f1"]


def test_every_metric_of_the_runs_at_turn_level_leaves_out_those_without_turn_scores():
    study, run = selected_run(["fluent", "coherent"])
    assert services.report_config_check(config(study, run))["metrics"] == ["f1"]


def test_turn_level_items_have_turn_scores_and_are_accepted():
    study, run = selected_run(["fluent", "interesting"])
    resolved = services.report_config_check(config(study, run, metrics=["fed-cond-selected"]))
    assert resolved["metrics"] == ["fed-cond-selected"]


def test_the_form_shows_the_refusal_at_the_level_field(researcher_client):
    study, run = selected_run(["fluent", "coherent"])
    response = researcher_client.post(
        reverse("metrics:report-create"),
        {
            "name": "轮次级",
            "metric_runs": [run.pk],
            "rating_jobs": [study.job.pk],
            "metrics": "fed-cond-selected",
            "level": "turn",
            "grouping": "skill",
            "system_scores": "mean",
            "methods": ["pearson"],
            "bootstrap": 0,
            "seed": 0,
        },
    )
    assert response.status_code == 400
    assert response.context["form"].errors["level"][0].startswith(REFUSED.format(pk=run.pk))
    assert not Report.objects.exists()


def test_the_api_answers_400_naming_the_level(researcher_client):
    study, run = selected_run(["fluent", "coherent"])
    response = researcher_client.post(
        reverse("api-report-list"),
        {"name": "x", "config": config(study, run, metrics=["fed-cond-selected"])},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["errors"]["level"].startswith(REFUSED.format(pk=run.pk))
    assert not Report.objects.exists()


def test_the_command_refuses_it():
    study, run = selected_run(["fluent", "coherent"])
    with pytest.raises(CommandError, match=r"level: fed-cond-selected has no turn-level scores"):
        call_command(
            "create_report",
            "--name=x",
            f"--metric-runs={run.pk}",
            f"--rating-jobs={study.job.pk}",
            "--metrics=fed-cond-selected",
            "--level=turn",
        )
    assert not Report.objects.exists()


def test_a_run_whose_follow_up_override_is_gone_is_left_to_the_study():
    study, run = selected_run(["fluent", "coherent"], followup_override="/gone/edited.json")
    resolved = services.report_config_check(config(study, run, metrics=["f1"]))
    assert resolved["metrics"] == ["f1"]
