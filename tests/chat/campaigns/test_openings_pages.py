"""The openings option on the campaign form, the API and the detail page."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from chat.models import Campaign
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.factories import participant, scenario_dataset, study
from tests.chat.campaigns.test_campaign_pages import _form_data
from tests.chat.campaigns.test_openings import TOPICS, prompt_dataset
from tests.chat.factories import BackendFactory, DatasetFactory, SampleFactory

pytestmark = pytest.mark.django_db


def test_the_form_creates_a_campaign_with_drawn_openings(researcher_client):
    prompts = prompt_dataset()
    data = _form_data(
        backends=[BackendFactory().pk],
        datasets=[scenario_dataset("knowledge", 2).pk],
        opening_dataset=prompts.pk,
        opening_count="20",
        opening_seed="5",
    )
    response = researcher_client.post(reverse("chat:campaign-create"), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    campaign = Campaign.objects.get()
    assert (campaign.opening_dataset, campaign.opening_count, campaign.opening_seed) == (
        prompts,
        20,
        5,
    )
    assert {o.topic for o in campaign.openings.all()} == set(TOPICS)

    edit = researcher_client.get(reverse("chat:campaign-edit", args=[campaign.pk]))
    assert f'<option value="{prompts.pk}" selected>' in edit.content.decode()


def test_the_form_names_what_is_wrong(researcher_client):
    untagged = DatasetFactory(name="无话题数据集")
    SampleFactory(dataset=untagged)
    base = {"backends": [BackendFactory().pk], "datasets": [scenario_dataset("knowledge", 2).pk]}
    response = researcher_client.post(
        reverse("chat:campaign-create"), _form_data(**base, opening_dataset=untagged.pk)
    )
    assert response.status_code == 400
    assert "「无话题数据集」没有可用作起始话语的样本" in response.content.decode()
    response = researcher_client.post(
        reverse("chat:campaign-create"),
        _form_data(**base, opening_dataset=prompt_dataset().pk, opening_count="8"),
    )
    assert response.status_code == 400
    assert "有 16 个话题，8 条起始话语无法覆盖全部话题" in response.content.decode()
    assert not Campaign.objects.exists()


def test_the_detail_page_lists_the_openings_with_topics_and_use(researcher_client):
    campaign = study(backends=1, opening_dataset=prompt_dataset(), opening_count=16)
    dialogue = scenario_assign_next(participant=participant(campaign))
    body = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk])).content
    body = body.decode()
    assert 'id="openings"' in body and "16 条，随机种子 0" in body
    assert all(topic in body for topic in TOPICS)
    assert dialogue.opening.text in body


def test_the_detail_page_says_the_worker_opens_without_the_option(researcher_client):
    campaign = study()
    body = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk])).content
    assert "由工作者自己开场" in body.decode() and 'id="openings"' not in body.decode()


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _payload(**overrides) -> dict:
    return {
        "name": "API 起始话语",
        "mode": "interactive",
        "skills": ["knowledge"],
        "backends": [{"id": BackendFactory().pk}],
        "datasets": [scenario_dataset("knowledge", 2).pk],
        **overrides,
    }


def test_the_api_draws_and_shows_the_openings_with_their_use(researcher):
    client = _api(researcher)
    prompts = prompt_dataset()
    response = client.post(
        reverse("api-campaign-list"),
        _payload(opening_dataset=prompts.pk, opening_count=18, opening_seed=9),
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["opening_dataset"], body["opening_count"], body["opening_seed"]) == (
        prompts.pk,
        18,
        9,
    )
    assert len(body["openings"]) == 18
    assert {o["topic"] for o in body["openings"]} == set(TOPICS)
    assert all(o["used"] == 0 for o in body["openings"])
    assert {"position", "sample_id", "sample_external_id", "text"} <= set(body["openings"][0])

    campaign = Campaign.objects.get(pk=body["id"])
    client.post(reverse("api-campaign-activate", args=[campaign.pk]))
    scenario_assign_next(participant=participant(campaign))
    body = client.get(reverse("api-campaign-detail", args=[campaign.pk])).json()
    assert sum(o["used"] for o in body["openings"]) == 1
    listed = client.get(reverse("api-campaign-list")).json()["results"][0]
    assert listed["opening_dataset"] == prompts.pk and "openings" not in listed


def test_the_api_refuses_with_the_field_named(researcher):
    client = _api(researcher)
    response = client.post(
        reverse("api-campaign-list"),
        _payload(opening_dataset=prompt_dataset(n=17).pk, opening_count=20),
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert "opening_count" in body["errors"] and "17" in body["errors"]["opening_count"]
    assert not Campaign.objects.exists()
