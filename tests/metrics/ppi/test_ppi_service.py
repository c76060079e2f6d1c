"""Prediction-powered estimates of a rating job (metrics.services.ppi), on platform data."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from annotation.selectors.rating import draw_sample
from annotation.selectors.sampling import job_design, sample_inclusion
from metrics.analysis.ppi import ppi_mean
from metrics.selectors.ppi import PredictorDataError, job_question_scores, predictor_values
from metrics.services.ppi import (
    PPIError,
    ppi_estimates,
    predictor_check,
    ratings_plan,
)
from tests.metrics.ppi.factories import SYSTEMS, rate_dialogue, sampled_study
from tests.metrics.reports.factories import dialogue_score, finished_run

pytestmark = pytest.mark.django_db


def test_sample_inclusion_closed_forms() -> None:
    # Without scenarios: a simple random sample per system.
    rows = [(i, "a", None) for i in range(10)] + [(10 + i, "b", None) for i in range(4)]
    pi = sample_inclusion(rows, size=5)
    assert pi[0] == 0.5 and pi[10] == 1.0
    # Paired: scenario 1 and 2 shared by both systems, 3 only by a: a's 3 is drawn last.
    rows = [(1, "a", 1), (2, "a", 2), (3, "a", 3), (4, "b", 1), (5, "b", 2)]
    pi = sample_inclusion(rows, size=1)
    assert pi[1] == pi[2] == 0.5 and pi[3] == 0.0 and pi[4] == 0.5
    # Two dialogues on one scenario: no closed form.
    assert sample_inclusion([(1, "a", 1), (2, "a", 1), (3, "a", 2)], size=1)[1] is None


def test_sample_inclusion_matches_the_draws_frequencies() -> None:
    """Over many seeds, how often the paired draw picks each dialogue is its π."""
    rows = [(10 * k + s, system, s) for k, system in enumerate("abc") for s in range(1, 7)]
    rows = [r for r in rows if not (r[1] == "c" and r[2] > 4)]  # c lacks scenarios 5 and 6
    pi = sample_inclusion(rows, size=3)
    seeds = 3000
    counts = Counter(pk for seed in range(seeds) for pk in draw_sample(rows, size=3, seed=seed))
    for pk, probability in pi.items():
        assert counts[pk] / seeds == pytest.approx(probability, abs=0.035), pk
    assert pi[5] == 0.0 and pi[21] == 0.75  # a's scenario 5 never; c draws 3 of its 4


def test_the_draw_records_its_design() -> None:
    study = sampled_study(rate_sample=False)
    design = job_design(study.job)
    assert design.kind == "random" and design.seed == 3
    assert len(design.population) == 90
    assert set(design.inclusion.values()) == {10 / 30}


def test_estimates_equal_the_kernel_on_the_jobs_data() -> None:
    study = sampled_study()
    predictor = predictor_check(run_ids=[study.run.pk], metrics="judge:q-v1:overall")
    section = ppi_estimates(
        job=study.job, question="overall", predictor=predictor, bootstrap=200, seed=1
    )
    assert section["refused"] == "" and section["design"]["kind"] == "random"
    assert [row["system"] for row in section["systems"]] == sorted(SYSTEMS)
    human = job_question_scores(job=study.job, question="overall")
    judge = predictor_values(
        run_ids=[study.run.pk], metrics=["judge:q-v1:overall"], dialogue_ids=study.latent
    )
    for row in section["systems"]:
        pks = sorted(d.pk for d in study.dialogues[row["system"]])
        rated = [pk for pk in pks if pk in human]
        unrated = [pk for pk in pks if pk not in human]
        expected = ppi_mean(
            [human[pk] for pk in rated],
            [judge[pk] for pk in rated],
            [judge[pk] for pk in unrated],
            bootstrap_samples=200,
            seed=1,
        )
        assert row["n"] == 10 and row["n_units"] == 30
        assert row["ppi"]["estimate"] == pytest.approx(expected.ppi.estimate)
        assert row["ppi"]["low"] == pytest.approx(expected.ppi.low)
        assert row["human"]["estimate"] == pytest.approx(np.mean([human[pk] for pk in rated]))
        assert row["ppi"]["bootstrap_low"] == pytest.approx(expected.bootstrap_low)
        # A good judge: narrower than human-only, effective n above the 10 ratings.
        assert row["ppi"]["high"] - row["ppi"]["low"] < row["human"]["high"] - row["human"]["low"]
        assert row["effective_n"] > 10 and row["pearson"] > 0.5
        assert len(row["curve"]["m"]) == len(row["curve"]["ppi"]) > 5


def test_a_combination_is_the_mean_of_z_scores() -> None:
    study = sampled_study(rate_sample=False)
    values = predictor_values(
        run_ids=[study.run.pk], metrics=["judge:q-v1:overall", "length"], dialogue_ids=study.latent
    )
    assert len(values) == 90
    assert np.mean(list(values.values())) == pytest.approx(0.0, abs=1e-9)


def test_a_job_rating_everything_is_refused_until_all_are_rated_then_a_census() -> None:
    study = sampled_study(sample_size=None, rate_sample=False, per_system=4)
    predictor = predictor_check(run_ids=[study.run.pk], metrics="judge:q-v1:overall")
    first = [ds[0].pk for ds in study.dialogues.values()] + [
        ds[1].pk for ds in study.dialogues.values()
    ]
    for pk in first:
        rate_dialogue(study, pk)
    section = ppi_estimates(job=study.job, question="overall", predictor=predictor, bootstrap=0)
    assert "not a random sample" in section["refused"]
    assert "only unbiased when the rated units were drawn at random" in section["refused"]
    assert section["systems"] == []
    for pk in study.latent:
        if pk not in first:
            rate_dialogue(study, pk)
    section = ppi_estimates(job=study.job, question="overall", predictor=predictor, bootstrap=0)
    assert section["census"] and section["refused"] == ""
    assert all(row["ppi"] is None and row["n"] == 4 for row in section["systems"])


def test_unknown_predictor_and_question_are_refused() -> None:
    study = sampled_study(rate_sample=False, per_system=3, sample_size=2)
    with pytest.raises(PPIError, match="unknown metric 'bleu'"):
        predictor_check(run_ids=[study.run.pk], metrics="bleu")
    with pytest.raises(PPIError, match="does not exist"):
        predictor_check(run_ids=[study.run.pk + 99], metrics="length")


def test_planning_uses_the_ratings_as_a_pilot() -> None:
    study = sampled_study()
    predictor = predictor_check(run_ids=[study.run.pk], metrics="judge:q-v1:overall")
    plan = ratings_plan(job=study.job, question="overall", predictor=predictor, target_width=0.8)
    assert plan["caveat"] == ""
    for row in plan["systems"]:
        assert row["rated"] == 10
        assert row["ppi"] is not None and row["ppi"] < row["human_only"]
        assert row["still_needed_ppi"] == max(0, row["ppi"] - 10)
    with pytest.raises(PPIError, match="positive"):
        ratings_plan(job=study.job, question="overall", predictor=predictor, target_width=-1)


def test_a_predictor_of_another_campaigns_dialogues_is_refused() -> None:
    study = sampled_study(per_system=4, sample_size=2)
    other = sampled_study(per_system=4, sample_size=2, rate_sample=False, name="另一项评测")
    predictor = predictor_check(run_ids=[other.run.pk], metrics="length")
    section = ppi_estimates(job=study.job, question="overall", predictor=predictor, bootstrap=0)
    assert "scored none of the job's 12 dialogues" in section["refused"]


def test_a_dialogue_scored_by_two_runs_is_refused() -> None:
    study = sampled_study(per_system=3, sample_size=2, rate_sample=False)
    again = finished_run(study.campaign, "again", metrics=["length"])
    dialogue = study.dialogues[SYSTEMS[0]][0]
    dialogue_score(again, dialogue, "length", 1.0)
    with pytest.raises(PredictorDataError, match="in two runs"):
        predictor_values(
            run_ids=[study.run.pk, again.pk], metrics=["length"], dialogue_ids=study.latent
        )
