"""The API of review and rating jobs: researchers script jobs, experts rate through it."""

import pytest
from rest_framework.test import APIClient

from annotation.models import Assignment, JobRater, Rating, RatingJob, ReviewPolicy
from chat.models import Dialogue
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts, rubric


def _api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.django_db
def test_a_researcher_scripts_a_job_and_an_expert_rates_through_the_api(researcher):
    campaign = CampaignFactory()
    raters = experts(3)
    dialogues = [dialogue_with_turns(campaign=campaign) for _ in range(2)]
    api = _api(researcher)
    refused = api.post(
        "/api/rating-jobs/",
        {"name": "j", "campaign": campaign.pk, "rubric": rubric("yesno-multi-turn").pk},
        format="json",
    )
    assert refused.status_code == 400
    assert "要求每条至少 5 人评分，当前为 3" in refused.json()["detail"]
    bad_settings = api.post(
        "/api/rating-jobs/",
        {
            "name": "j",
            "campaign": campaign.pk,
            "rubric": rubric("msde").pk,
            "quality_settings": {"gold_rate": 2},
        },
        format="json",
    )
    assert bad_settings.status_code == 400
    assert "quality_settings.gold_rate" in bad_settings.json()["detail"]
    created = api.post(
        "/api/rating-jobs/",
        {
            "name": "MSDE",
            "campaign": campaign.pk,
            "rubric": rubric("msde").pk,
            "raters": [u.username for u in raters],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    job_id = created.json()["id"]
    assert api.post(f"/api/rating-jobs/{job_id}/open/").json()["status"] == "open"
    progress = api.get(f"/api/rating-jobs/{job_id}/progress/").json()
    assert progress["total"] == 6 and progress["done"] == 0 and len(progress["raters"]) == 3

    rater = raters[0]
    expert_api = _api(rater)
    mine = expert_api.get("/api/assignments/").json()["results"]
    assert {a["dialogue"] for a in mine} == {d.pk for d in dialogues}
    item = mine[0]["id"]
    bad = expert_api.post(
        f"/api/assignments/{item}/ratings/", {"question": "coh", "value": 9}, format="json"
    )
    assert bad.status_code == 400
    assert bad.json()["detail"] == "coh: expected a whole number from 0 to 2, got 9"
    for key in ("info", "coh"):
        saved = expert_api.post(
            f"/api/assignments/{item}/ratings/", {"question": key, "value": 1}, format="json"
        )
        assert saved.status_code == 200
    incomplete = expert_api.post(f"/api/assignments/{item}/submit/")
    assert incomplete.status_code == 400 and incomplete.json()["missing"] == ["know"]
    expert_api.post(
        f"/api/assignments/{item}/ratings/", {"question": "know", "value": 2}, format="json"
    )
    assert expert_api.post(f"/api/assignments/{item}/submit/").json()["status"] == "submitted"

    blocked = api.post(
        f"/api/rating-jobs/{job_id}/raters/{raters[1].pk}/block/", {"reason": "spam"}
    )
    assert blocked.status_code == 200 and blocked.json()["returned_to_pool"] == 2
    assert JobRater.objects.get(job_id=job_id, rater=raters[1]).state == "blocked"
    assert api.get(f"/api/rating-jobs/{job_id}/flags/").status_code == 200
    # Experts cannot manage jobs.
    assert expert_api.get("/api/rating-jobs/").status_code == 403
    assert expert_api.post(f"/api/rating-jobs/{job_id}/close/").status_code == 403
    assert RatingJob.objects.get(pk=job_id).status == "open"
    assert Rating.objects.filter(assignment__rater=rater).count() == 3


@pytest.mark.django_db
def test_review_through_the_api_with_a_policy(researcher):
    campaign = CampaignFactory()
    policy = _api(researcher).put(
        f"/api/review/policies/{campaign.pk}/",
        {"reviewers_per_dialogue": 2, "decision_rule": "all"},
        format="json",
    )
    assert policy.status_code == 200
    assert ReviewPolicy.objects.get(campaign=campaign).decision_rule == "all"
    dialogue = dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED)
    first, second = experts(2)
    queue = _api(first).get("/api/review/queue/").json()
    assert [row["id"] for row in queue] == [dialogue.pk]
    one = _api(first).post(
        f"/api/review/dialogues/{dialogue.pk}/decision/", {"decision": "accept"}, format="json"
    )
    assert one.status_code == 201 and one.json()["dialogue_status"] == "submitted"
    two = _api(second).post(
        f"/api/review/dialogues/{dialogue.pk}/decision/",
        {"decision": "reject", "reasons": ["coherent"], "comment": "答非所问"},
        format="json",
    )
    assert two.json()["dialogue_status"] == "rejected"
    dialogue.refresh_from_db()
    assert "前后不连贯" in dialogue.rejection_reason and "答非所问" in dialogue.rejection_reason
    # A researcher without the expert role cannot review.
    denied = _api(researcher).post(
        f"/api/review/dialogues/{dialogue.pk}/decision/", {"decision": "accept"}, format="json"
    )
    assert denied.status_code == 403
    assert not Assignment.objects.exists()
