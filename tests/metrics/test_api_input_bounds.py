"""The metrics API's inputs are bounded field by field (issue 23, item 10): a value past its
field's bound is a 400 naming that field, and nothing is saved."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from metrics.models import Report, TrainedDiscriminator
from tests.chat.factories import DatasetFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher) -> APIClient:
    client = APIClient()
    client.force_authenticate(researcher)
    return client


def _refused(response, field: str) -> None:
    assert response.status_code == 400, response.content[:300]
    assert set(response.json()) == {field}, response.json()


def test_a_million_item_report_config_is_refused(api) -> None:
    config = {"metric_runs": list(range(1_000_000)), "rating_jobs": [1]}
    response = api.post("/api/reports/", {"name": "大", "config": config}, format="json")
    _refused(response, "config")
    assert not Report.objects.exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"config": {"epochs": list(range(1000))}}, "config"),
        ({"config": [1, 2]}, "config"),  # an object, not a list
        ({"seed": -1}, "seed"),  # NumPy's generator takes none
        ({"seed": 2**31}, "seed"),
        ({"vectors": "/v" * 151}, "vectors"),
        ({"name": "n" * 161}, "name"),
    ],
)
def test_discriminator_inputs_are_bounded(api, change, field) -> None:
    body = {"name": "界", "dataset": DatasetFactory().name, **change}
    _refused(api.post("/api/discriminators/", body, format="json"), field)
    assert not TrainedDiscriminator.objects.exists()


def test_metric_run_settings_are_bounded(api) -> None:
    body = {"metrics": ["f1"], "settings": {"lang": "a" * 100_001}}
    _refused(api.post("/api/metric-runs/preflight/", body, format="json"), "settings")
