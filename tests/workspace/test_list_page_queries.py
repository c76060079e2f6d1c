"""Every list page answers in a number of queries that does not grow with its rows.

Each page is served once with a few rows to count its queries, then again with many more rows
under ``django_assert_max_num_queries`` of that count: one query per row (an N+1) fails.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import RatingJob, Rubric
from chat.models import StaticRun
from judges.models import Judge, JudgeRun
from metrics.models import FollowupSelection, MetricRun, Report, TrainedDiscriminator
from tests.chat.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DatasetFactory,
    DialogueFactory,
    SampleFactory,
    skill,
)

pytestmark = pytest.mark.django_db
_names = itertools.count()


def _campaign() -> None:
    link = CampaignBackendFactory()
    campaign = link.campaign
    dataset = DatasetFactory()
    SampleFactory(dataset=dataset)
    campaign.datasets.add(dataset)
    campaign.skills.add(skill())
    DialogueFactory(campaign=campaign, backend=link.backend)


def _static_run() -> None:
    run = StaticRun.objects.create(
        name=f"run-{next(_names)}", campaign=CampaignFactory(), dataset=DatasetFactory()
    )
    run.backends.add(BackendFactory())


def _job() -> RatingJob:
    return RatingJob.objects.create(
        name=f"job-{next(_names)}", campaign=CampaignFactory(), rubric=Rubric.objects.first()
    )


def _metric_run() -> None:
    MetricRun.objects.create(name=f"m-{next(_names)}", campaign=CampaignFactory(), metrics=["f1"])


def _report() -> None:
    Report.objects.create(name=f"r-{next(_names)}")


def _discriminator() -> None:
    TrainedDiscriminator.objects.create(name=f"d-{next(_names)}", dataset=DatasetFactory())


def _selection() -> None:
    FollowupSelection.objects.create(
        name=f"s-{next(_names)}", job=_job(), dimension="overall", model_path="x", language="en"
    )


def _judge_and_run() -> None:
    """A judge and a run of it: the judges page lists both (the latest runs below the judges)."""
    name = f"j-{next(_names)}"
    judge = Judge.objects.create(
        key=name, name=name, backend=BackendFactory(), rubric=Rubric.objects.first()
    )
    run = MetricRun.objects.create(name=name, campaign=CampaignFactory(), metrics=["judge"])
    JudgeRun.objects.create(metric_run=run, judge=judge)


LIST_PAGES: dict[str, Callable[[], object]] = {
    "chat:dataset-list": DatasetFactory,
    "chat:backend-list": BackendFactory,
    "chat:campaign-list": _campaign,
    "chat:static-run-list": _static_run,
    "annotation:rubric-list": lambda: None,  # the presets are the rows
    "annotation:job-list": _job,
    "metrics:metric-run-list": _metric_run,
    "metrics:report-list": _report,
    "metrics:discriminator-list": _discriminator,
    "metrics:followup-list": _selection,
    "judges:judge-list": _judge_and_run,
}


@pytest.mark.parametrize("url_name", LIST_PAGES)
def test_a_list_page_makes_the_same_number_of_queries_for_more_rows(
    url_name: str, researcher_client, django_assert_max_num_queries
) -> None:
    make_row = LIST_PAGES[url_name]
    url = reverse(url_name)
    for _ in range(2):
        make_row()
    with CaptureQueriesContext(connection) as few:
        assert researcher_client.get(url).status_code == 200
    for _ in range(8):
        make_row()
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert researcher_client.get(url).status_code == 200
