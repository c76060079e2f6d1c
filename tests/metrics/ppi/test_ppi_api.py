"""The API of a rating job's estimates, planning and rounds."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import RatingJob
from tests.metrics.ppi.factories import sampled_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher) -> APIClient:
    client = APIClient()
    client.force_authenticate(researcher)
    return client


def test_estimates_and_plan(api) -> None:
    study = sampled_study()
    body = {"runs": [study.run.pk], "predictor": ["judge:q-v1:overall"], "bootstrap": 50}
    response = api.post(f"/api/rating-jobs/{study.job.pk}/ppi/estimates/", body, format="json")
    assert response.status_code == 200, response.content[:300]
    rows = response.json()["systems"]
    assert len(rows) == 3 and all(row["ppi"]["low"] < row["ppi"]["high"] for row in rows)
    plan = api.post(
        f"/api/rating-jobs/{study.job.pk}/ppi/plan/", {**body, "target_width": 0.8}, format="json"
    )
    assert plan.status_code == 200 and len(plan.json()["systems"]) == 3


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"predictor": ["bleu"]}, "predictor"),
        ({"predictor": ["x"] * 11}, "predictor"),
        ({"alpha": 0.9}, "alpha"),
        ({"bootstrap": 10**6}, "bootstrap"),
        ({"question": "nope"}, "question"),
    ],
)
def test_bad_options_are_a_400_naming_the_field(api, change, field) -> None:
    study = sampled_study(rate_sample=False, per_system=3, sample_size=2)
    body = {"runs": [study.run.pk], "predictor": ["length"], **change}
    response = api.post(f"/api/rating-jobs/{study.job.pk}/ppi/estimates/", body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert payload.get("field") == field or field in payload, payload


def test_stopping_rule_and_rounds(api) -> None:
    study = sampled_study(sample_size=None, rate_sample=False, per_system=5)
    url = f"/api/rating-jobs/{study.job.pk}"
    refused = api.post(
        f"{url}/stopping-rule/",
        {"kind": "width", "target_width": 1.0, "round_size": 5, "first_round": 2},
        format="json",
    )
    assert refused.status_code == 400 and "before the job opens" in refused.json()["detail"]
    RatingJob.objects.filter(pk=study.job.pk).update(status=RatingJob.Status.DRAFT)
    rule = {"kind": "separated", "round_size": 5, "first_round": 2}
    response = api.post(f"{url}/stopping-rule/", rule, format="json")
    assert response.status_code == 200
    assert response.json()["stopping_rule"]["kind"] == "separated"
    status = api.get(f"{url}/rounds/")
    assert status.status_code == 200
    assert status.json()["blocked"] == "the first round is drawn when the job opens"
    assert api.post(f"{url}/rounds/").status_code == 400
