"""The chat API's inputs are bounded field by field (issue 23, item 10): a value past its
field's bound is a 400 naming that field, and nothing is saved. Before, a 9 MB backend
description was stored, and a seed past the column's range was a database error (a 500)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from chat.models import Backend, Campaign, Dataset, StaticRun
from core.api import LIST_MAX_ITEMS
from tests.chat.dataset_samples import GENERIC_LINES, jsonl
from workspace.demo import demo_load

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher) -> APIClient:
    client = APIClient()
    client.force_authenticate(researcher)
    return client


def _refused(response, field: str) -> None:
    assert response.status_code == 400, response.content[:300]
    assert field in response.json(), response.json()


def test_a_9_mb_backend_description_is_refused(api) -> None:
    body = {"name": "长描述", "adapter": "retrieval", "config": {"dataset": "*"}}
    response = api.post("/api/backends/", {**body, "description": "a" * 9_000_000}, format="json")
    _refused(response, "description")
    assert set(response.json()) == {"description"}  # the only thing wrong
    assert not Backend.objects.filter(name="长描述").exists()


def test_a_5_mb_dataset_description_is_refused(api) -> None:
    upload = SimpleUploadedFile("d.jsonl", jsonl(GENERIC_LINES[0]))
    response = api.post(
        "/api/datasets/import/",
        {
            "file": upload,
            "source_format": "jsonl",
            "name": "长描述",
            "language": "zh",
            "description": "a" * 5_000_000,
        },
    )
    _refused(response, "description")
    assert set(response.json()) == {"description"}
    assert not Dataset.objects.filter(name="长描述").exists()


CAMPAIGN = {"name": "界", "mode": "static", "skills": ["chitchat"], "backends": [], "datasets": []}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"skills": ["chitchat"] * (LIST_MAX_ITEMS + 1)}, "skills"),
        ({"skills": ["k" * 41]}, "skills"),  # Skill.key is 40 characters at most
        ({"opening_seed": 2**31}, "opening_seed"),  # past the IntegerField column: was a 500
        ({"max_turns": 40_000}, "max_turns"),  # a PositiveSmallIntegerField
        ({"instructions": {"zh-hans": "a" * 100_001}}, "instructions"),
        ({"acceptability": {"rules": list(range(10_001))}}, "acceptability"),
        ({"completion_url": "https://example.org/" + "a" * 200}, "completion_url"),
        ({"datasets": [2**63]}, "datasets"),  # past any id: does not exist
        ({"backends": [{"id": 1}] * (LIST_MAX_ITEMS + 1)}, "backends"),
    ],
)
def test_campaign_inputs_are_bounded(api, change, field) -> None:
    response = api.post("/api/campaigns/", {**CAMPAIGN, **change}, format="json")
    _refused(response, field)
    assert set(response.json()) == {field}
    assert not Campaign.objects.filter(name="界").exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"seed": 2**31}, "seed"),  # was a database error, a 500
        ({"sample_size": 2**31}, "sample_size"),
        ({"campaign_name": "c" * 161}, "campaign_name"),
        ({"backends": ["检索-TFIDF"] * (LIST_MAX_ITEMS + 1)}, "backends"),
    ],
)
def test_static_run_inputs_are_bounded(api, change, field) -> None:
    demo_load()
    dataset = Dataset.objects.order_by("pk").first()
    body = {"name": "界", "dataset": dataset.name, "backends": ["检索-TFIDF"], **change}
    response = api.post("/api/static-runs/", body, format="json")
    _refused(response, field)
    assert set(response.json()) == {field}
    assert not StaticRun.objects.filter(name="界").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"username": "u" * 151, "password": "pw"}, "username"),
        ({"username": "someone", "password": "p" * 4097}, "password"),
    ],
)
def test_the_token_login_bounds_its_inputs(body, field) -> None:
    response = APIClient().post("/api/token/", body, format="json")
    _refused(response, field)
