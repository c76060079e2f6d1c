"""The plan_ratings and rating_rounds commands."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import JobRater
from tests.annotation.results.factories import expert
from tests.metrics.ppi.factories import sampled_study

pytestmark = pytest.mark.django_db


def test_plan_ratings_prints_the_ratings_needed_and_the_estimates() -> None:
    study = sampled_study()
    out = io.StringIO()
    call_command(
        "plan_ratings",
        "--job",
        str(study.job.pk),
        "--run",
        str(study.run.pk),
        "--predictor",
        "judge:q-v1:overall",
        "--target-width",
        "0.8",
        "--estimates",
        "--json",
        stdout=out,
    )
    body = json.loads(out.getvalue())
    assert [row["rated"] for row in body["plan"]["systems"]] == [10, 10, 10]
    assert all(row["ppi"] < row["human_only"] for row in body["plan"]["systems"])
    assert len(body["estimates"]["systems"]) == 3
    text = io.StringIO()
    call_command(
        "plan_ratings",
        "--job",
        str(study.job.pk),
        "--run",
        str(study.run.pk),
        "--predictor",
        "judge:q-v1:overall",
        "--target-width",
        "0.8",
        stdout=text,
    )
    assert "human_only\twith_predictor" in text.getvalue()
    with pytest.raises(CommandError, match="--predictor: unknown metric 'bleu'"):
        call_command(
            "plan_ratings",
            "--job",
            str(study.job.pk),
            "--run",
            str(study.run.pk),
            "--predictor",
            "bleu",
            "--target-width",
            "0.8",
        )


def test_rating_rounds_sets_a_rule_draws_a_round_and_refuses_a_census_job() -> None:
    study = sampled_study(per_system=20, sample_size=4)
    for name in ("expert-1", "expert-2"):
        JobRater.objects.get_or_create(job=study.job, rater=expert(name))
    out = io.StringIO()
    call_command(
        "rating_rounds",
        "--job",
        str(study.job.pk),
        "--rule",
        "width",
        "--target-width",
        "0.3",
        "--round-size",
        "6",
        "--next",
        stdout=out,
    )
    text = out.getvalue()
    assert "stopping rule set (width)" in text and "round 1: " in text
    assert "rule width: not met" in text
    census = sampled_study(sample_size=None, rate_sample=False, per_system=3, name="全评")
    with pytest.raises(CommandError, match="--kind: the stopping rule is chosen before"):
        call_command(
            "rating_rounds", "--job", str(census.job.pk), "--rule", "width", "--target-width", "1"
        )
