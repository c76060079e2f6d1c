"""The judges API's inputs are bounded field by field (issue 23, item 10): a value past its
field's bound is a 400 naming that field, and nothing is saved."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Rubric
from chat.models import Backend
from core.api import TEXT_MAX_LENGTH
from judges.api import PRICE_MAX
from judges.models import Judge
from workspace.demo import demo_load

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"description": "d" * (TEXT_MAX_LENGTH + 1)}, "description"),
        ({"prompt_templates": {"direct": "t" * (TEXT_MAX_LENGTH + 1)}}, "prompt_templates"),
        ({"sampling": {"stop": list(range(1000))}}, "sampling"),
        ({"price_input": PRICE_MAX * 10}, "price_input"),
        ({"max_attempts": 40_000}, "max_attempts"),
        ({"name": "n" * 161}, "name"),
    ],
)
def test_judge_inputs_are_bounded(researcher, change, field) -> None:
    demo_load()
    client = APIClient()
    client.force_authenticate(researcher)
    body = {
        "name": "界",
        "backend": Backend.objects.order_by("pk").first().name,
        "rubric": Rubric.objects.order_by("pk").first().pk,
        **change,
    }
    response = client.post("/api/judges/", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert set(response.json()) == {field}, response.json()
    assert not Judge.objects.filter(name="界").exists()
