"""A finished object offers the study's next step: static run → metrics, metric run →
correlation report, campaign with accepted dialogues → rating job; each form arrives filled."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from chat.models import Campaign, Dialogue, StaticRun
from core.models import JobStatus
from metrics.models import MetricRun
from tests.annotation.factories import dialogue_with_turns
from tests.chat.factories import DatasetFactory
from tests.metrics.reports.factories import finished_run

pytestmark = pytest.mark.django_db


def test_a_finished_static_run_offers_to_compute_metrics(researcher_client) -> None:
    campaign = Campaign.objects.create(name="静态", mode=Campaign.Mode.STATIC)
    run = StaticRun.objects.create(
        name="答题", campaign=campaign, dataset=DatasetFactory(), status=JobStatus.DONE
    )
    html = researcher_client.get(reverse("chat:static-run-detail", args=[run.pk])).content.decode()
    link = f"{reverse('metrics:metric-run-create')}?static_run={run.pk}&amp;campaign={campaign.pk}"
    assert link in html
    form = researcher_client.get(link.replace("&amp;", "&")).content.decode()
    assert f'value="{run.pk}" selected' in form
    assert (
        'value="static_run" checked'
        in form.replace('" id="id_target_1"', "").replace(' id="id_target_1"', "")
        or 'name="target" value="static_run"' in form
    )


def test_a_finished_metric_run_offers_a_correlation_report_with_the_run_chosen(
    researcher_client,
) -> None:
    campaign = Campaign.objects.create(name="静态2", mode=Campaign.Mode.STATIC)
    run = finished_run(campaign, "指标", metrics=["f1"])
    assert run.status == "done" and isinstance(run, MetricRun)
    html = researcher_client.get(
        reverse("metrics:metric-run-detail", args=[run.pk])
    ).content.decode()
    link = f"{reverse('metrics:report-create')}?metric_runs={run.pk}"
    assert link in html
    form = researcher_client.get(link).content.decode()
    assert re.search(rf'name="metric_runs" value="{run.pk}"[^>]*checked', form)


def test_a_campaign_with_accepted_dialogues_offers_a_rating_job(researcher_client) -> None:
    dialogue = dialogue_with_turns(status=Dialogue.Status.ACCEPTED)
    campaign = dialogue.campaign
    html = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk])).content
    link = f"{reverse('annotation:job-create')}?campaign={campaign.pk}"
    assert link in html.decode()
    form = researcher_client.get(link).content.decode()
    assert f'<option value="{campaign.pk}" selected>' in form
