"""Reports on platform data: joins from DB rows, configuration checks, provenance and re-runs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.models import JobStatus, MetricScore, Report
from metrics.selectors.reports import report_figures, report_file, report_study
from metrics.services.reports import (
    ReportConfigError,
    report_compute,
    report_config_check,
    report_create,
    report_rerun,
)
from tests.annotation.results.factories import dialogue_with_turns, rate
from tests.metrics.reports.factories import (
    QUALITY,
    SYSTEMS,
    dialogue_score,
    finished_run,
    likert_answers,
    msde_study,
    turn_scores,
)

pytestmark = pytest.mark.django_db


def computed(name: str = "报告", **config: object) -> Report:
    report = report_create(name=name, config=config)
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE, report.error
    return report


def test_dialogue_level_joins_db_rows_and_counts_units_on_one_side_only() -> None:
    study = msde_study(dialogues_per_system=2)
    run = finished_run(study.interactive, "交互打分", metrics=["bleu-1"])
    values = {}
    for i, dialogue in enumerate(study.rated[1:]):  # the first rated dialogue has no score
        values[dialogue.pk] = 0.1 * QUALITY[dialogue.backend.name] + 0.01 * (i % 3)
        dialogue_score(run, dialogue, "bleu-1", values[dialogue.pk])
    unrated = dialogue_with_turns(study.interactive, study.backends["系统甲"])
    dialogue_score(run, unrated, "bleu-1", 0.5)

    report = computed(
        metric_runs=[run.pk],
        rating_jobs=[study.job.pk],
        level="dialogue",
        dimensions=["naturalness"],
        bootstrap=0,
    )

    result = report_study(report)
    assert result is not None
    (coverage,) = result.coverage
    assert coverage.group == "knowledge"
    assert coverage.matched == len(study.rated) - 1
    assert coverage.metric_only == (str(unrated.pk),)
    assert coverage.human_only == (str(study.rated[0].pk),)
    assert any("no human score" in w for w in result.warnings)
    # The human score of a dialogue is the mean over its two raters (levels L and L - 1).
    human = []
    for dialogue in study.rated[1:]:
        k = study.rated.index(dialogue) % 2
        level = min(5, max(1, QUALITY[dialogue.backend.name] - k))
        human.append((level + max(1, level - 1)) / 2)
    expected = stats.pearsonr(list(values.values()), human)
    cell = result.cell("knowledge", "naturalness", "bleu-1", "pearson")
    assert cell is not None and cell.n == len(values)
    assert cell.value == pytest.approx(expected.statistic)
    assert cell.p_value == pytest.approx(expected.pvalue)


def test_system_level_joins_a_static_run_with_interactive_ratings_by_system_name() -> None:
    study = msde_study(dialogues_per_system=2)
    run = finished_run(study.static, "静态打分", metrics=["f1", "dist-1"])
    for dialogue in study.answers:
        q = QUALITY[dialogue.backend.name]
        dialogue_score(run, dialogue, "f1", q / 10)
        turn_scores(run, dialogue, "dist-1", [1.0 - q / 10])
    # A system answered in the static run but never rated: a metric-only system.
    extra = dialogue_with_turns(study.static, skill_key="knowledge")
    dialogue_score(run, extra, "f1", 0.9)

    report = computed(
        metric_runs=[run.pk], rating_jobs=[study.job.pk], level="system", bootstrap=200
    )

    result = report_study(report)
    assert result is not None
    (coverage,) = result.coverage
    assert coverage.matched == len(SYSTEMS)
    assert coverage.metric_only == (extra.backend.name,)
    (systems,) = result.systems
    assert set(systems.systems) == set(SYSTEMS)
    # Each system's metric score is the mean over its static answers.
    f1 = systems.metrics.index("f1")
    for name, row in zip(systems.systems, systems.metric, strict=True):
        assert row[f1] == pytest.approx(QUALITY[name] / 10)
    assert systems.metric_items == (2,) * len(SYSTEMS)
    assert systems.human_items == (2,) * len(SYSTEMS)
    rho = result.cell("knowledge", "overall", "f1", "spearman")
    assert rho is not None and rho.value == pytest.approx(1.0) and rho.n == len(SYSTEMS)
    assert rho.ci_low is not None and rho.ci_high is not None
    dist = result.cell("knowledge", "overall", "dist-1", "spearman")
    assert dist is not None and dist.value == pytest.approx(-1.0)
    assert not any("can reach p < 0.05" in w for w in result.warnings)


def test_fewer_than_five_systems_carry_the_warning() -> None:
    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, metrics=["f1"])
    for dialogue in study.answers[:4]:
        dialogue_score(run, dialogue, "f1", QUALITY[dialogue.backend.name] / 10)
    report = computed(metric_runs=[run.pk], rating_jobs=[study.job.pk], bootstrap=0)
    result = report_study(report)
    assert result is not None
    assert any("can reach p < 0.05" in w for w in result.warnings)
    assert all(c.warning for c in result.cells)


def test_corpus_level_scores_are_used_as_given_per_system_and_group() -> None:
    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, metrics=["bleu-4"])
    for name, backend in study.backends.items():
        MetricScore.objects.create(
            run=run,
            metric="bleu-4",
            level="system",
            backend=backend,
            group="knowledge",
            value=QUALITY[name] / 100,
        )
    report = computed(
        metric_runs=[run.pk],
        rating_jobs=[study.job.pk],
        system_scores="corpus",
        bootstrap=0,
        methods=["kendall"],
    )
    result = report_study(report)
    assert result is not None
    cell = result.cell("knowledge", "overall", "bleu-4", "kendall")
    assert cell is not None and cell.n == len(SYSTEMS) and cell.value == pytest.approx(1.0)


def test_grouping_by_skill_dataset_or_none() -> None:
    study = msde_study(dialogues_per_system=1, skills=("knowledge", "chitchat"))
    run = finished_run(study.interactive, metrics=["f1"])
    rng = np.random.default_rng(0)
    for dialogue in study.rated:
        dialogue_score(run, dialogue, "f1", float(rng.random()))
    base = {"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "level": "dialogue"}
    by_skill = report_study(computed(**base, bootstrap=0))
    ungrouped = report_study(computed(**base, bootstrap=0, grouping="none"))
    by_dataset = report_study(computed(**base, bootstrap=0, grouping="dataset"))
    assert by_skill and ungrouped and by_dataset
    assert set(by_skill.groups) == {"knowledge", "chitchat"}
    assert ungrouped.groups == ("",)
    # Dialogues without a scenario fall back to their campaign's name.
    assert by_dataset.groups == ("交互采集",)


def test_the_same_unit_scored_by_two_runs_fails_the_report_with_the_reason() -> None:
    study = msde_study(dialogues_per_system=1)
    first = finished_run(study.interactive, "第一次", metrics=["f1"])
    second = finished_run(study.interactive, "第二次", metrics=["f1"])
    for dialogue in study.rated:
        dialogue_score(first, dialogue, "f1", 0.1)
    dialogue_score(second, study.rated[0], "f1", 0.2)
    report = report_create(
        name="冲突",
        config={"metric_runs": [first.pk, second.pk], "rating_jobs": [study.job.pk]},
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.FAILED
    assert "'第一次'" in report.error and "'第二次'" in report.error and "f1" in report.error


@pytest.fixture
def scored():
    study = msde_study(dialogues_per_system=1)
    run = finished_run(study.static, "静态", metrics=["f1"])
    for dialogue in study.answers:
        dialogue_score(run, dialogue, "f1", QUALITY[dialogue.backend.name] / 10)
    return study, run


def test_defaults_are_filled_in_and_empty_lists_resolved(scored) -> None:
    study, run = scored
    config = report_config_check({"metric_runs": [run.pk], "rating_jobs": [study.job.pk]})
    assert config == {
        "metric_runs": [run.pk],
        "rating_jobs": [study.job.pk],
        "metrics": ["f1"],
        "dimensions": ["naturalness", "topic_following", "topic_providing", "overall"],
        "level": "system",
        "grouping": "skill",
        "system_scores": "mean",
        "methods": ["pearson", "spearman"],
        "bootstrap": 1000,
        "seed": 0,
        "pairwise": None,
        "ppi": None,
    }


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"metric_runs": []}, "metric_runs", "choose at least one metric run"),
        ({"metric_runs": [999999]}, "metric_runs", "metric run 999999 does not exist"),
        ({"rating_jobs": ["x"]}, "rating_jobs", "choose at least one rating job"),
        ({"metrics": ["bleu-9"]}, "metrics", "unknown metric 'bleu-9' (the selected runs have: f1"),
        ({"dimensions": ["info"]}, "dimensions", "unknown dimension 'info'"),
        ({"level": "corpus"}, "level", "must be one of turn, dialogue, system"),
        ({"grouping": "rater"}, "grouping", "must be one of skill, dataset, none"),
        ({"methods": ["pearson", "tau"]}, "methods", "unknown method 'tau'"),
        ({"methods": []}, "methods", "choose at least one of pearson, spearman, kendall"),
        ({"bootstrap": -1}, "bootstrap", "from 0 (none) to 10000"),
        ({"bootstrap": 1.5}, "bootstrap", "whole number"),
        ({"seed": True}, "seed", "whole number"),
        ({"level": "dialogue", "system_scores": "corpus"}, "system_scores", "system level"),
        ({"system_scores": "corpus"}, "system_scores", "no system-level (corpus) scores"),
        ({"level": "turn"}, "level", "no turn-level scores"),
        ({"colour": "red"}, "colour", "unknown field"),
    ],
)
def test_bad_configurations_name_the_field(scored, change, field, message) -> None:
    study, run = scored
    config = {"metric_runs": [run.pk], "rating_jobs": [study.job.pk], **change}
    with pytest.raises(ReportConfigError) as caught:
        report_config_check(config)
    assert message in caught.value.errors[field]


def test_a_dialogue_level_report_needs_ratings_and_scores_of_the_same_campaign(scored) -> None:
    study, run = scored  # run scores the static campaign, the job rates the interactive one
    with pytest.raises(ReportConfigError) as caught:
        report_config_check(
            {"metric_runs": [run.pk], "rating_jobs": [study.job.pk], "level": "dialogue"}
        )
    assert "choose the system level" in caught.value.errors["level"]


def test_an_unfinished_run_and_a_missing_name_are_refused(scored) -> None:
    study, run = scored
    running = finished_run(study.static, "进行中", metrics=["f1"])
    running.status = JobStatus.RUNNING
    running.save()
    with pytest.raises(ReportConfigError) as caught:
        report_create(name=" ", config={"metric_runs": [running.pk], "rating_jobs": [study.job.pk]})
    assert caught.value.errors["name"] == "a report name is required"
    assert "is not finished (status: running)" in caught.value.errors["metric_runs"]
    assert not Report.objects.exists()


def test_a_computed_report_records_provenance_and_writes_every_file(scored) -> None:
    study, run = scored
    run.signatures = {"f1": "f1|tok:char|v:scorers-1"}
    run.save()
    report = computed(metric_runs=[run.pk], rating_jobs=[study.job.pk], bootstrap=100)
    from metrics.scorers.registry import SCORERS_VERSION

    assert report.provenance["scorers_version"] == SCORERS_VERSION
    assert report.provenance["rubrics"] == [
        {
            "job": study.job.pk,
            "job_name": "李克特评分",
            "campaign": "交互采集",
            "rubric": "likert",
            "version": 1,
            "min_raters": 1,
            "rater_shortfalls": [],
        }
    ]
    assert report.provenance["metric_runs"][0]["signatures"] == {"f1": "f1|tok:char|v:scorers-1"}
    assert report.progress_done == report.progress_total == 100
    for fmt in ("json", "csv", "xlsx", "latex", "zip"):
        path = report_file(report, fmt)
        assert path is not None and path.stat().st_size > 0
    figures = report_figures(report)
    assert "heatmap_pearson.png" in figures and "heatmap_pearson.svg" in figures
    assert any(name.startswith("systems_knowledge_") for name in figures)


def test_rerun_reproduces_the_results_and_reports_what_changed(scored) -> None:
    study, run = scored
    run.signatures = {"f1": "f1|v1"}
    run.save()
    original = computed(metric_runs=[run.pk], rating_jobs=[study.job.pk], bootstrap=300, seed=7)

    again = report_rerun(report=original)
    report_compute(report_id=again.pk)
    again.refresh_from_db()
    assert again.pk != original.pk and again.config == original.config
    assert again.results == original.results
    assert again.provenance["rerun_of"] == original.pk
    assert again.provenance["changes"] == []

    run.signatures = {"f1": "f1|v2"}
    run.save()
    third = report_rerun(report=original)
    report_compute(report_id=third.pk)
    third.refresh_from_db()
    assert third.provenance["changes"] == ["metric run 静态: f1 signature changed"]


def test_computing_twice_does_nothing_the_second_time(scored) -> None:
    study, run = scored
    report = computed(metric_runs=[run.pk], rating_jobs=[study.job.pk], bootstrap=0)
    finished_at = report.finished_at
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE and report.finished_at == finished_at


def test_a_rater_added_later_changes_the_human_side(scored) -> None:
    """The human side is read from ratings when the report is computed, not cached."""
    study, run = scored
    first = report_study(computed(metric_runs=[run.pk], rating_jobs=[study.job.pk], bootstrap=0))
    rate(study.job, study.rated[0], "expert-3", likert_answers(5))
    second = report_study(computed(metric_runs=[run.pk], rating_jobs=[study.job.pk], bootstrap=0))
    assert first and second
    before = dict(zip(first.systems[0].systems, first.systems[0].human, strict=True))
    after = dict(zip(second.systems[0].systems, second.systems[0].human, strict=True))
    changed = {name for name in SYSTEMS if before[name] != after[name]}
    assert changed == {study.rated[0].backend.name}


def test_a_report_names_the_systems_rated_by_fewer_raters_than_the_rubric_asks(scored) -> None:
    """Seed 001: ≥ 3 raters single-turn; the likert study's two raters are enough for likert
    (min_raters 1), but a seed 001 rubric on the same job flags every system."""
    study, run = scored
    from annotation.models import Rubric

    spec = dict(study.job.rubric.spec, min_raters=3)
    study.job.rubric = Rubric.objects.create(key="likert-3", version=1, spec=spec)
    study.job.save(update_fields=["rubric"])
    report = computed(metric_runs=[run.pk], rating_jobs=[study.job.pk], bootstrap=100)
    (rubric,) = report.provenance["rubrics"]
    assert rubric["min_raters"] == 3
    shortfalls = rubric["rater_shortfalls"]
    assert [s["backend"] for s in shortfalls] == sorted(SYSTEMS)
    for s in shortfalls:  # every rated dialogue has 2 raters, fewer than 3 (per item)
        assert s["per_item"] and s["n_raters"] == 2 and s["min_raters"] == 3
        assert s["items_short"] == s["items"] > 0
