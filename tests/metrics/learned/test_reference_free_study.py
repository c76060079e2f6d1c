"""Issue 7 end to end: rated dialogues scored with FED-Cond and a trained discriminator in a metric
run, then correlated with the human scores in a report, next to a referenced-free lexical metric."""

import pytest
from django.test import override_settings

from chat.models import Turn
from metrics.models import JobStatus, Report
from metrics.services import discriminators, metric_run_scoring, metric_runs, reports
from tests.metrics.learned.test_discriminator_training import TINY, toy_dataset
from tests.metrics.reference_free.conftest import build_tiny_causal_lm
from tests.metrics.reports.factories import msde_study

REPLIES = ["你好", "今天天气不错。", "不错", "你好，今天天气不错。", "天气", "今天你好"]


@pytest.mark.django_db
def test_fed_cond_and_a_trained_discriminator_join_a_dialogue_level_report(
    researcher, tmp_path, monkeypatch, sent_jobs
):
    study = msde_study(dialogues_per_system=2)
    for position, dialogue in enumerate(study.rated):
        for turn in dialogue.turns.filter(speaker=Turn.Speaker.SYSTEM):
            turn.text = REPLIES[position % len(REPLIES)] * (1 + position % 3)
            turn.save(update_fields=["text"])

    with override_settings(VAR_DIR=tmp_path):
        version = discriminators.discriminator_create(
            name="toy", dataset=toy_dataset(pairs=200), overrides=TINY, enqueue=False
        )
        version = discriminators.discriminator_train(version.pk)
    assert version.status == JobStatus.DONE

    settings = {
        "followup_model": str(build_tiny_causal_lm(tmp_path / "lm")),
        "discriminator_model": version.path,
    }
    run = metric_runs.metric_run_create(
        name="reference-free",
        campaign=study.interactive,
        metrics=["fed-cond", "discriminator", "length"],
        settings=settings,
        created_by=researcher,
    )
    for chunk_id in run.chunks.values_list("pk", flat=True):
        metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
    metric_run_scoring.metric_run_finish(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.DONE and run.unavailable == {}, run.unavailable
    per_dialogue = run.scores.filter(level="dialogue")
    for metric in ("fed-cond", "discriminator", "length"):
        assert per_dialogue.filter(metric=metric).count() == len(study.rated)
    assert "model:discriminators/" in run.signatures["discriminator"]

    report = reports.report_create(
        name="FED-Cond 与判别器",
        config={
            "metric_runs": [run.pk],
            "rating_jobs": [study.job.pk],
            "level": "dialogue",
            "methods": ["spearman"],
            "bootstrap": 0,
        },
        created_by=researcher,
    )
    with override_settings(VAR_DIR=tmp_path):
        reports.report_compute(report_id=report.pk)
    report = Report.objects.get(pk=report.pk)
    assert report.status == JobStatus.DONE, report.error
    text = str(report.results)
    for metric in ("fed-cond", "discriminator", "length"):
        assert metric in text
    assert "naturalness" in text
