"""Partly rated chats and items count, with unanswered questions as 0 (seed 001's fixed
denominator), and the results page, API and exports say how many were incomplete."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Assignment
from annotation.selectors.human_scores import job_scores, normalised_system_scores
from chat.models import Dialogue
from tests.annotation.results.factories import (
    MULTI_KEYS,
    dialogue_with_turns,
    expert,
    job_for,
    multi,
    rate,
)
from tests.chat.factories import BackendFactory
from tests.downloads import streamed_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def live_job():
    """A live multi-turn job: tester A rated both replies of a finished 2-reply chat (16 yes);
    tester B finished a 3-reply chat but rated only reply 1 (5 of 8 yes, 3 unanswered), so the
    live assignment is still in progress; tester C is still chatting (not counted)."""
    job = job_for("yesno-multi-turn", name="多轮现场")
    job.is_live = True
    job.save(update_fields=["is_live"])
    bot = BackendFactory(name="ChatBot")
    done_a = dialogue_with_turns(job.campaign, bot, model_turns=2, worker=expert("A"))
    done_b = dialogue_with_turns(job.campaign, bot, model_turns=3, worker=expert("B"))
    chatting = dialogue_with_turns(job.campaign, bot, model_turns=1, worker=expert("C"))
    Dialogue.objects.filter(pk__in=[done_b.pk, chatting.pk]).update(
        status=Dialogue.Status.SUBMITTED
    )
    Dialogue.objects.filter(pk=chatting.pk).update(status=Dialogue.Status.IN_PROGRESS)
    rate(job, done_a, "A", multi([8, 8]))
    partial = {(key, 0): 1 for key in MULTI_KEYS[:5]}
    rate(job, done_b, "B", partial, status=Assignment.Status.IN_PROGRESS)
    rate(job, chatting, "C", multi([8]), status=Assignment.Status.IN_PROGRESS)
    return job


def test_a_finished_but_partly_rated_chat_counts_with_its_unanswered_slots_as_zero(live_job):
    scores = job_scores(job=live_job)
    assert len(scores.unit_scores) == 2 and not scores.skipped
    (pooled,) = [s for s in normalised_system_scores(job=live_job) if s.skill is None]
    # (16 + 5) / (2 testers × 8 indicators × 5 turns) × 100
    assert pooled.score == pytest.approx(26.25)
    # B: 3 unanswered on reply 1, 8 on each of replies 2 and 3
    assert scores.completeness() == {
        "n_units": 2,
        "n_incomplete_units": 1,
        "n_unanswered": 3 + 8 + 8,
        "n_skipped_units": 0,
        "unanswered_count_as_zero": True,
    }


def test_the_results_page_and_api_show_how_many_ratings_were_incomplete(
    researcher_client, live_job
):
    url = reverse("annotation:job-results", args=[live_job.pk])
    html = researcher_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    shown = html[html.index('id="completeness"') :]
    assert "1 / 2 份未答完，共 19 个答案未回答" in shown[:300]
    api = researcher_client.get(f"/api/rating-jobs/{live_job.pk}/results/").json()
    assert api["completeness"]["n_incomplete_units"] == 1
    assert api["completeness"]["n_unanswered"] == 19


def test_the_system_and_dialogue_exports_carry_the_incomplete_counts(researcher_client, live_job):
    url = reverse("annotation:job-export", args=[live_job.pk, "system", "csv"])
    text = streamed_bytes(researcher_client.get(url)).decode()
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["dimension"] == "overall"]
    assert [(r["unit"], r["n_incomplete"], r["n_unanswered"]) for r in rows] == [
        ("ChatBot", "1", "19")
    ]
    url = reverse("annotation:job-export", args=[live_job.pk, "dialogue", "csv"])
    text = streamed_bytes(researcher_client.get(url)).decode()
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["dimension"] == "overall"]
    assert sorted((r["mean"], r["n_incomplete"]) for r in rows) == [("12.5", "1"), ("40.0", "0")]


def test_a_mean_based_rubric_still_skips_incomplete_ratings_and_says_so(researcher_client):
    job = job_for("msde", name="MSDE 不完整")
    item = dialogue_with_turns(job.campaign, BackendFactory(name="M"))
    rate(job, item, "r1", {"info": 2, "coh": 1, "know": 2})
    rate(job, item, "r2", {"info": 2})
    scores = job_scores(job=job)
    assert len(scores.unit_scores) == 1 and len(scores.skipped) == 1
    assert scores.completeness()["unanswered_count_as_zero"] is False
    html = researcher_client.get(
        reverse("annotation:job-results", args=[job.pk]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'id="completeness"' not in html and "未计入" in html
