"""The researcher home's next steps follow the study's state, naming the object of each step."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from annotation.models import Assignment, RatingJob
from chat.models import Campaign, StaticRun
from core.models import JobStatus
from metrics.models import MetricRun, Report
from tests.annotation.factories import dialogue_with_turns, experts, rubric
from tests.chat.factories import BackendFactory, CampaignFactory, DatasetFactory
from workspace.selectors import study_next_steps

pytestmark = pytest.mark.django_db


def _urls() -> list[str]:
    return [url for _label, url in study_next_steps()]


def _labels() -> str:
    return " | ".join(label for label, _url in study_next_steps())


def test_the_steps_walk_the_study_from_an_empty_platform_to_a_report() -> None:
    # Nothing yet: import data and register a system.
    assert _urls() == [reverse("chat:dataset-upload"), reverse("chat:backend-create")]

    # Data and a system, no static run: run one.
    dataset, _backend = DatasetFactory(), BackendFactory()
    assert _urls() == [reverse("chat:static-run-create")]

    # A static run still running: nothing to do for it yet.
    campaign = CampaignFactory(mode=Campaign.Mode.STATIC)
    run = StaticRun.objects.create(name="静态一", campaign=campaign, dataset=dataset)
    assert _urls() == []

    # It finished: compute metrics on exactly that run.
    run.status = JobStatus.DONE
    run.save()
    metric_form = reverse("metrics:metric-run-create")
    assert _urls() == [f"{metric_form}?static_run={run.pk}"]
    assert "静态一" in _labels()

    # Scored: the step goes away.
    MetricRun.objects.create(name="指标一", campaign=campaign, static_run=run, status="done")
    assert _urls() == []

    # A campaign with accepted dialogues and no rating job: rate them.
    live = CampaignFactory(name="知识采集")
    dialogue = dialogue_with_turns(campaign=live)
    job_form = reverse("annotation:job-create")
    assert _urls() == [f"{job_form}?campaign={live.pk}"]
    assert "知识采集" in _labels()

    # A rating job with work outstanding, and a finished metric run on the campaign: no report
    # yet (the ratings are not in).
    (rater,) = experts(1)
    job = RatingJob.objects.create(
        name="评分一", campaign=live, rubric=rubric(), status=RatingJob.Status.OPEN
    )
    assignment = Assignment.objects.create(job=job, dialogue=dialogue, rater=rater)
    scores = MetricRun.objects.create(name="指标二", campaign=live, status="done")
    assert _urls() == []

    # Every assignment submitted: correlate that metric run with that job.
    assignment.status = Assignment.Status.SUBMITTED
    assignment.save()
    query = urlencode({"metric_runs": scores.pk, "rating_jobs": job.pk})
    assert _urls() == [f"{reverse('metrics:report-create')}?{query}"]
    assert "指标二" in _labels() and "评分一" in _labels()

    # A report over them: the study is done, no step left.
    Report.objects.create(name="报告", config={"metric_runs": [scores.pk], "rating_jobs": [job.pk]})
    assert _urls() == []


def test_a_closed_job_counts_as_done_and_a_live_job_does_not_count_as_rating() -> None:
    DatasetFactory(), BackendFactory()
    campaign = CampaignFactory(name="闭合")
    dialogue_with_turns(campaign=campaign)
    RatingJob.objects.create(name="实时", campaign=campaign, rubric=rubric(), is_live=True)
    assert f"{reverse('annotation:job-create')}?campaign={campaign.pk}" in _urls()
    job = RatingJob.objects.create(
        name="已结束", campaign=campaign, rubric=rubric(), status=RatingJob.Status.CLOSED
    )
    run = MetricRun.objects.create(name="指标", campaign=campaign, status="running")
    assert not any("report" in url for url in _urls())
    run.status = "done"
    run.save()
    query = urlencode({"metric_runs": run.pk, "rating_jobs": job.pk})
    assert f"{reverse('metrics:report-create')}?{query}" in _urls()


def test_the_home_page_shows_the_steps_and_the_report_form_takes_both_choices(
    researcher_client,
) -> None:
    page = researcher_client.get(reverse("home")).content.decode()
    assert reverse("chat:dataset-upload") in page
    campaign = CampaignFactory(name="报告活动")
    dialogue_with_turns(campaign=campaign)
    job = RatingJob.objects.create(
        name="评分", campaign=campaign, rubric=rubric(), status=RatingJob.Status.CLOSED
    )
    run = MetricRun.objects.create(name="指标", campaign=campaign, status="done", metrics=["f1"])
    form = researcher_client.get(
        reverse("metrics:report-create"), {"metric_runs": run.pk, "rating_jobs": job.pk}
    )
    assert form.status_code == 200
    assert form.context["form"].initial == {
        "metric_runs": [str(run.pk)],
        "rating_jobs": [str(job.pk)],
    }
