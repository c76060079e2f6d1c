"""The rating job's human + judge page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import JobRater, RatingJob
from tests.annotation.results.factories import expert
from tests.metrics.ppi.factories import sampled_study

pytestmark = pytest.mark.django_db


def test_the_page_shows_estimates_and_the_plan(researcher_client, expert_client) -> None:
    study = sampled_study()
    url = reverse("metrics:job-ppi", args=[study.job.pk])
    assert expert_client.get(url).status_code == 403
    detail = researcher_client.get(reverse("annotation:job-detail", args=[study.job.pk]))
    assert url in detail.content.decode()
    page = researcher_client.get(
        url,
        {
            "runs": [study.run.pk],
            "predictor": ["judge:q-v1:overall"],
            "question": "overall",
            "alpha": "0.1",
            "target_width": "0.8",
        },
    )
    assert page.status_code == 200
    text = page.content.decode()
    assert "每个系统的估计" in text and "所需的人工评分数" in text
    assert text.count("<strong>") >= 3  # a human + predictor estimate per system


def test_a_draft_job_sets_its_rule_and_draws_rounds_from_the_page(researcher_client) -> None:
    study = sampled_study(sample_size=None, rate_sample=False, per_system=6)
    RatingJob.objects.filter(pk=study.job.pk).update(status=RatingJob.Status.DRAFT)
    url = reverse("metrics:job-ppi-stopping-rule", args=[study.job.pk])
    bad = researcher_client.post(
        url, {"kind": "width", "first_round": 2, "round_size": 4, "question": "overall"}
    )
    assert bad.status_code == 422 and "target_width" in bad.content.decode()
    ok = researcher_client.post(
        url,
        {
            "kind": "width",
            "target_width": "0.5",
            "first_round": 2,
            "round_size": 4,
            "question": "overall",
        },
    )
    assert ok.status_code == 302
    job = RatingJob.objects.get(pk=study.job.pk)
    assert job.stopping_rule["kind"] == "width" and job.sample_size == 2
    JobRater.objects.create(job=job, rater=expert("expert-1"))
    researcher_client.post(reverse("annotation:job-open", args=[job.pk]))
    page = researcher_client.get(reverse("metrics:job-ppi", args=[job.pk]))
    assert "still being rated" in page.content.decode()
    # The job page's panel: progress toward the rule and what blocks the next round.
    detail = researcher_client.get(reverse("annotation:job-detail", args=[job.pk])).content
    assert 'id="job-panel-rounds"' in detail.decode() and "still being rated" in detail.decode()
    refused = researcher_client.post(reverse("metrics:job-ppi-round", args=[job.pk]), follow=True)
    assert "still being rated" in refused.content.decode()


@pytest.mark.parametrize(
    ("language", "expected"),
    [("en", "Estimates per system"), ("ja", "システムごとの推定")],
)
def test_the_page_reads_in_the_readers_language(researcher_client, language, expected) -> None:
    study = sampled_study(per_system=12, sample_size=4)
    researcher_client.post(reverse("set_language"), {"language": language, "next": "/"})
    url = reverse("metrics:job-ppi", args=[study.job.pk])
    query = {"runs": [study.run.pk], "predictor": ["length"], "question": "overall", "alpha": 0.1}
    text = researcher_client.get(url, query).content.decode()
    assert expected in text and "每个系统的估计" not in text
