"""A pairwise (ACUTE-style) rating job's page: the ranking and agreement panel metrics adds."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.services.pairwise_answers import pairwise_submit
from annotation.services.rating_assignments import assignment_next
from annotation.services.rating_jobs import job_open
from chat.models import Vote
from core.access import Role
from metrics.services.pairwise import job_pairwise_summary
from tests.annotation.pairwise.builders import acute_job, study
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

QUESTIONS = ("engaging", "interesting", "humanlike", "knowledgeable")


def _rated_job():
    s = study(n_scenarios=3, n_systems=3, n_raters=4)
    job = acute_job(s, per_pair=2)
    job_open(job=job)
    for rater in s.raters:
        while (assignment := assignment_next(job=job, rater=rater)) is not None:
            # Every rater prefers the left dialogue: a consistent (if biased) set of votes.
            pairwise_submit(
                assignment=assignment,
                user=rater,
                answers=dict.fromkeys(QUESTIONS, ("left", "左边更好")),
            )
    return s, job


def test_the_panel_ranks_each_question_and_reports_the_raters_agreement(client):
    s, job = _rated_job()
    votes = Vote.objects.filter(source=job.vote_source)
    assert votes.exists()
    summary = job_pairwise_summary(campaign_id=job.campaign_id, source_id=job.vote_source_id)
    assert [board["question"] for board in summary["leaderboards"]] == sorted(QUESTIONS)
    assert summary["votes"] == votes.count()
    assert all(row["value"] is not None for row in summary["agreement"] if row["with_ties"])
    client.force_login(make_user("res-panel", Role.RESEARCHER))
    html = client.get(reverse("annotation:job-detail", args=[job.pk])).content.decode()
    assert 'id="job-panel-pairwise"' in html and "engaging" in html
    assert s.systems[0].name in html  # researchers see the systems (raters never do)


def test_votes_of_excluded_raters_are_left_out_unless_included():
    s, job = _rated_job()
    votes = Vote.objects.filter(source=job.vote_source)
    first = votes.first().voter
    votes.filter(voter=first).update(excluded_reason="failed onboarding")
    excluded = votes.filter(voter=first).count()
    out = job_pairwise_summary(campaign_id=job.campaign_id, source_id=job.vote_source_id)
    into = job_pairwise_summary(
        campaign_id=job.campaign_id, source_id=job.vote_source_id, include_excluded=True
    )
    assert out["left_out"]["excluded"] == excluded
    assert into["votes"] == out["votes"] + excluded
