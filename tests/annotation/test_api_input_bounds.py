"""The annotation API's inputs are bounded field by field (issue 23, item 10): a value past
its field's bound is a 400 naming that field, and nothing is saved."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import RatingJob, Review, Rubric
from chat.models import Campaign, Dialogue
from core.api import LIST_MAX_ITEMS, TEXT_MAX_LENGTH
from workspace.demo import RATED_STUDY, demo_load

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(researcher) -> Campaign:
    demo_load()
    return Campaign.objects.get(name=RATED_STUDY)


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _refused(response, field: str) -> None:
    assert response.status_code == 400, response.content[:300]
    assert set(response.json()) == {field}, response.json()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"seed": 2**31}, "seed"),  # past the IntegerField column: was a database error
        ({"deadline_hours": 2**31}, "deadline_hours"),
        ({"raters_per_dialogue": 40_000}, "raters_per_dialogue"),
        ({"raters": ["expert"] * (LIST_MAX_ITEMS + 1)}, "raters"),
        ({"raters": ["u" * 151]}, "raters"),
        ({"quality_settings": {"gold": list(range(1000))}}, "quality_settings"),
        ({"quality_settings": [1]}, "quality_settings"),  # an object, not a list
        ({"name": "n" * 161}, "name"),
    ],
)
def test_rating_job_inputs_are_bounded(researcher, rated, change, field) -> None:
    rubric = rated.rating_jobs.first().rubric
    body = {"name": "界", "campaign": rated.pk, "rubric": rubric.pk, **change}
    _refused(_client(researcher).post("/api/rating-jobs/", body, format="json"), field)
    assert not RatingJob.objects.filter(name="界").exists()


def test_a_rater_block_reason_is_bounded(researcher, rated) -> None:
    job = rated.rating_jobs.first()
    url = f"/api/rating-jobs/{job.pk}/raters/{researcher.pk}/block/"
    response = _client(researcher).post(url, {"reason": "r" * (TEXT_MAX_LENGTH + 1)})
    _refused(response, "reason")


def test_a_review_comment_is_bounded(expert, rated) -> None:
    dialogue = Dialogue.objects.filter(campaign=rated).first()
    response = _client(expert).post(
        f"/api/review/dialogues/{dialogue.pk}/decision/",
        {"decision": "reject", "comment": "c" * (TEXT_MAX_LENGTH + 1)},
        format="json",
    )
    _refused(response, "comment")
    assert not Review.objects.filter(dialogue=dialogue, reviewer=expert).exists()


def test_a_rubric_spec_is_bounded(researcher) -> None:
    before = Rubric.objects.count()
    spec = {"key": "big", "questions": list(range(10_001))}
    response = _client(researcher).post("/api/rubrics/", {"spec": spec}, format="json")
    _refused(response, "spec")
    assert Rubric.objects.count() == before


def test_a_rating_import_names_its_campaign_within_bounds(researcher) -> None:
    response = _client(researcher).post(
        "/api/ratings/import/",
        {
            "file": SimpleUploadedFile("r.csv", b"dialogue,rater\n"),
            "campaign": "c" * 161,
            "rubric": "seed001",
        },
    )
    _refused(response, "campaign")
