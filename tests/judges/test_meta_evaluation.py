"""A judge measured against people: agreement (checked with the `krippendorff` package), biases,
win rates, and the report that ranks the judge next to other metrics."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from annotation.selectors.human_scores import job_answers
from judges import analysis, services
from judges.models import JudgeAnswer
from judges.selectors import meta_evaluation
from metrics.models import JobStatus
from metrics.services.reports import report_compute, report_create
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import judge_backend
from tests.judges.test_judge_runs import run_all
from tests.metrics.reports.factories import dialogue_score, finished_run, msde_study

pytestmark = pytest.mark.django_db

ANSWERS = tuple(
    json.dumps(
        {
            "rationale": f"第{i}个",
            "scores": {"naturalness": n, "topic_following": f, "topic_providing": p},
        }
    )
    for i, (n, f, p) in enumerate([(5, 4, 5), (2, 1, 2), (4, 4, 3), (1, 1, 1), (3, 2, 3)])
)


@pytest.fixture
def judged():
    with FakeOpenAI(replies=ANSWERS) as server:
        study = msde_study(dialogues_per_system=2)
        judge = services.judge_create(
            name="李克特裁判", backend=judge_backend(server), rubric=study.job.rubric
        )
        run = run_all(services.judge_run_create(judge=judge, campaign=study.interactive))
        assert run.status == JobStatus.DONE, run.error
        yield study, judge, run


def test_judge_expert_alpha_equals_the_krippendorff_package(judged):
    study, judge, run = judged
    result = meta_evaluation(run=run, job=study.job)
    rows = {row["question"]: row for row in result["agreement"]}
    assert set(rows) == {"naturalness", "topic_following", "topic_providing"}
    judge_values = {
        a.dialogue_id: a.values["naturalness"] for a in JudgeAnswer.objects.filter(run=run)
    }
    data = job_answers(job=study.job)
    for expert in ("expert-1", "expert-2"):
        theirs = {
            a.unit: a.value
            for a in data.answers
            if a.question == "naturalness" and a.rater == _user_id(expert)
        }
        items = sorted(set(theirs) & set(judge_values))
        matrix = np.array([[judge_values[i] for i in items], [theirs[i] for i in items]])
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
        got = rows["naturalness"]["judge_vs_expert"][expert]
        assert got["n"] == len(items) == 10
        assert got["alpha"] == pytest.approx(expected)
    # The experts among themselves, as the package computes it.
    experts = np.array(
        [
            [
                v
                for _, v in sorted(
                    (a.unit, a.value)
                    for a in data.answers
                    if a.question == "naturalness" and a.rater == _user_id(e)
                )
            ]
            for e in ("expert-1", "expert-2")
        ]
    )
    assert rows["naturalness"]["experts_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=experts, level_of_measurement="ordinal")
    )


def _user_id(username: str) -> int:
    from django.contrib.auth.models import User

    return User.objects.get(username=username).pk


def test_free_marginal_kappa_against_the_majority_and_distributions(judged):
    study, _judge, run = judged
    result = meta_evaluation(run=run, job=study.job)
    row = next(r for r in result["agreement"] if r["question"] == "topic_providing")
    majority = row["judge_vs_majority"]
    assert majority["kappa"] is not None and -1.0 <= majority["kappa"] <= 1.0
    dist = next(d for d in result["distributions"] if d["question"] == "naturalness")
    assert dist["values"] == ["1", "2", "3", "4", "5"]
    assert sum(dist["judge"].values()) == pytest.approx(1.0)
    assert dist["n_human"] == 20 and dist["n_judge"] == 10
    assert {r["dimension"] for r in result["length_bias"]} >= {"naturalness", "overall"}


def test_a_report_ranks_the_judge_next_to_other_metrics_with_agreement_and_bias_files(judged):
    study, judge, run = judged
    lexical = finished_run(study.interactive, name="词汇指标", metrics=["dist-1"])
    for k, dialogue in enumerate(study.rated):
        dialogue_score(lexical, dialogue, "dist-1", 0.1 * k)
    report = report_create(
        name="裁判与人工",
        config={
            "metric_runs": [run.pk, lexical.pk],
            "rating_jobs": [study.job.pk],
            "level": "dialogue",
        },
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == JobStatus.DONE, report.error
    assert f"{judge.metric_prefix}:overall" in report.results["metrics"]
    assert "dist-1" in report.results["metrics"]
    section = report.results["extensions"]["judges"]
    assert section["evaluations"][0]["judge"] == str(judge)
    files = Path(report.files_dir)
    for name in ("judges.json", "judges_agreement.csv", "judges_bias.csv"):
        assert (files / name).exists()
    agreement = (files / "judges_agreement.csv").read_text(encoding="utf-8-sig")
    assert "expert-1" in agreement and "majority" in agreement


def test_partial_correlation_removes_what_people_also_reward():
    human = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=float)
    length = human * 10 + np.array([0, 1, 0, 1, 0, 1, 0, 1])
    # Follows people, with noise unrelated to length: no length bias beyond theirs.
    judge = human + 0.3 * np.array([1, 1, -1, -1, 1, 1, -1, -1])
    result = analysis.length_bias(
        dict(enumerate(judge)), dict(enumerate(human)), dict(enumerate(length))
    )
    assert result["judge_length_r"] > 0.99
    assert abs(result["judge_length_partial_r"]) < 0.3
    biased = human + 0.5 * np.array([0, 1, 0, 1, 0, 1, 0, 1])  # rewards the longer replies
    result = analysis.length_bias(
        dict(enumerate(biased)), dict(enumerate(human)), dict(enumerate(length))
    )
    assert result["judge_length_partial_r"] > 0.9


def test_position_bias_win_rates_and_self_preference():
    bias = analysis.position_bias([("A", "B"), ("A", "A"), ("A", "A"), ("B", "A")])
    assert bias == {
        "n": 4,
        "flip_rate": 0.5,
        "first_position_rate": 1.0,
        "second_position_rate": 0.0,
    }
    rows = analysis.win_rates([("甲", "乙", "1"), ("乙", "甲", "1"), ("甲", "乙", "tie")])
    assert rows == [
        {
            "system_1": "乙",
            "system_2": "甲",
            "wins": 1,
            "losses": 1,
            "ties": 1,
            "n": 3,
            "win_rate": 0.5,
        }
    ]
    judge = {"a": 3.0, "b": 2.0, "c": 1.0}
    human = {"a": 1.0, "b": 2.0, "c": 3.0}
    found = analysis.self_preference(judge, human, "a")
    assert found["self_preference"] > 0
    assert analysis.self_preference(judge, human, "zzz") is None
