"""A rating job in rounds under a stopping rule (metrics.services.ppi_rounds)."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, JobRater, RatingJob
from annotation.selectors.sampling import job_design
from annotation.services.rating_jobs import job_open
from metrics.services.ppi import PPIError
from metrics.services.ppi_rounds import round_draw, rounds_status, stopping_rule_set
from tests.annotation.results.factories import expert
from tests.metrics.ppi.factories import rate_dialogue, sampled_study

pytestmark = pytest.mark.django_db


def _draft_study(**rule: object):
    study = sampled_study(sample_size=None, rate_sample=False, per_system=40)
    study.job.status = RatingJob.Status.DRAFT
    study.job.save()
    if rule.pop("judge", False):
        rule.update(run_ids=[study.run.pk], predictor=["judge:q-v1:overall"])
    stopping_rule_set(job=study.job, **rule)
    for name in ("expert-1", "expert-2"):
        JobRater.objects.create(job=study.job, rater=expert(name))
    job_open(job=study.job)
    study.job.refresh_from_db()
    return study


def _rate_drawn(study) -> None:
    study.job.refresh_from_db()
    rated = set(
        Assignment.objects.filter(job=study.job, status=Assignment.Status.SUBMITTED).values_list(
            "dialogue_id", flat=True
        )
    )
    for pk in study.job.sample:
        if pk not in rated:
            Assignment.objects.filter(job=study.job, dialogue_id=pk).delete()
            rate_dialogue(study, pk)


def test_rounds_draw_where_the_intervals_are_widest_until_the_rule_is_met() -> None:
    study = _draft_study(
        kind="width",
        target_width=0.9,
        round_size=12,
        first_round=4,
        run_ids=[],
        predictor=[],
    )
    job = study.job
    assert len(job.sample) == 12  # 4 per system, drawn at random per system
    assert set(job_design(job).inclusion.values()) == {4 / 40}
    assert Assignment.objects.filter(job=job, dialogue_id__in=job.sample).count() == 24
    with pytest.raises(PPIError, match="still being rated"):
        round_draw(job=job)
    _rate_drawn(study)
    before = rounds_status(job=job)
    assert not before["met"] and before["still_needed"] > 0
    first = round_draw(job=job)
    job.refresh_from_db()
    # Only what the projection says is still needed, at most the round's size, and only to
    # systems whose interval is still too wide.
    assert first.number == 1 and 0 < sum(first.counts.values()) <= 12
    assert len(job.sample) == 12 + sum(first.counts.values())
    too_wide = {s["system"] for s in before["systems"] if s["width"] > 0.9}
    assert {system for system, m in first.counts.items() if m} <= too_wide
    for system, drawn in first.counts.items():
        assert first.inclusion[system] == pytest.approx((4 + drawn) / 40)
    # The new dialogues got their assignments from the usual machinery.
    assert set(first.dialogues) <= set(
        Assignment.objects.filter(job=job).values_list("dialogue_id", flat=True)
    )
    design = job_design(job)
    assert design.kind == "rounds"
    for _ in range(20):
        _rate_drawn(study)
        status = rounds_status(job=job)
        if status["met"]:
            break
        round_draw(job=job)
        job.refresh_from_db()
    assert status["met"] and status["progress"] == 1.0
    assert all(s["width"] <= 0.9 for s in status["systems"])
    with pytest.raises(PPIError, match="stopping rule is met"):
        round_draw(job=job)


def test_a_budget_rule_stops_at_the_budget_and_the_predictor_is_used() -> None:
    study = _draft_study(
        kind="budget",
        budget=20,
        round_size=50,
        first_round=3,
        judge=True,
    )
    _rate_drawn(study)
    status = rounds_status(job=study.job)
    assert status["rule"]["predictor"] == ["judge:q-v1:overall"]
    assert [row["n"] for row in status["systems"]] == [3, 3, 3]
    again = round_draw(job=study.job)
    assert sum(again.counts.values()) == 20 - 9
    _rate_drawn(study)
    status = rounds_status(job=study.job)
    assert status["met"] and status["still_needed"] == 0
    with pytest.raises(PPIError, match="stopping rule is met"):
        round_draw(job=study.job)


def test_a_rated_random_sample_goes_on_in_rounds_until_the_target() -> None:
    """The issue's "done when": a random sample rated, a judge on every dialogue; the
    researcher sets a target width and the job assigns only what is still needed."""
    study = sampled_study(per_system=40, sample_size=8)
    job = study.job
    for name in ("expert-1", "expert-2"):
        JobRater.objects.get_or_create(job=job, rater=expert(name))
    stopping_rule_set(
        job=job,
        kind="width",
        target_width=0.5,
        round_size=30,
        first_round=2,
        run_ids=[study.run.pk],
        predictor=["judge:q-v1:overall"],
    )
    job.refresh_from_db()
    assert job.sample_size == 8 and len(job.sample) == 24  # the sample is the first round
    status = rounds_status(job=job)
    assert status["blocked"] == "" and not status["met"]
    drawn = round_draw(job=job)
    assert 0 < len(drawn.dialogues) <= 30
    with pytest.raises(PPIError, match="already runs in rounds"):
        stopping_rule_set(job=job, kind="budget", budget=5, round_size=5, first_round=2)


def test_the_rule_is_chosen_while_the_job_is_a_draft() -> None:
    study = sampled_study(sample_size=None, rate_sample=False, per_system=3)
    with pytest.raises(PPIError, match="census"):
        stopping_rule_set(
            job=study.job, kind="width", target_width=1.0, round_size=5, first_round=2
        )
    study.job.status = RatingJob.Status.DRAFT
    with pytest.raises(PPIError, match="target_width"):
        stopping_rule_set(job=study.job, kind="width", round_size=5, first_round=2)
    with pytest.raises(PPIError, match="unknown metric"):
        stopping_rule_set(
            job=study.job,
            kind="separated",
            round_size=5,
            first_round=2,
            run_ids=[study.run.pk],
            predictor=["bleu"],
        )
