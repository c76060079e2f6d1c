"""The annotation, review, job and live-rating pages: access, rendering, autosave, submit."""

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import translation

from annotation.models import Assignment, JobRater, Rating, RatingJob, Review
from annotation.selectors.rating import model_turns
from annotation.services.rating_jobs import job_create, job_open
from chat.models import Dialogue
from core.access import Role
from tests.annotation.factories import (
    CampaignFactory,
    dialogue_with_turns,
    experts,
    rubric,
)
from tests.conftest import make_user


@pytest.fixture(autouse=True)
def _default_language_after_each_test():
    """A request in English leaves English active in this thread; later tests (messages are
    matched in the default zh-hans) must not inherit it."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def _open_job(rubric_key="msde", k=1, n_raters=1, **dialogue_kwargs):
    campaign = CampaignFactory()
    raters = experts(n_raters, prefix=f"p{campaign.pk}-")
    dialogue = dialogue_with_turns(campaign=campaign, alias="模型甲", **dialogue_kwargs)
    job = job_create(
        name=f"job-{campaign.pk}",
        campaign=campaign,
        rubric=rubric(rubric_key),
        created_by=None,
        raters=raters,
        raters_per_dialogue=k,
        allow_below_minimum=True,
    )
    job_open(job=job)
    return job, dialogue, raters


@pytest.mark.django_db
def test_a_crowdworker_gets_403_on_expert_and_researcher_pages(crowdworker_client):
    job, dialogue, _ = _open_job()
    assignment = Assignment.objects.get(job=job)
    for url in [
        reverse("annotation:review-queue"),
        reverse("annotation:review-dialogue", args=[dialogue.pk]),
        reverse("annotation:annotate-item", args=[assignment.pk]),
        reverse("annotation:annotate-next", args=[job.pk]),
        reverse("annotation:job-list"),
        reverse("annotation:job-detail", args=[job.pk]),
        reverse("api-review-queue"),
        reverse("api-my-assignments"),
        reverse("api-job-list"),
    ]:
        assert crowdworker_client.get(url).status_code == 403, url
    response = crowdworker_client.post(
        reverse("annotation:annotate-answer", args=[assignment.pk]),
        {"question": "info", "value": 1},
    )
    assert response.status_code == 403
    assert not Rating.objects.exists()


@pytest.mark.django_db
def test_an_expert_cannot_open_another_experts_assignment():
    job, _, (owner,) = _open_job()
    (intruder,) = experts(1, prefix="intruder")
    assignment = Assignment.objects.get(job=job)
    client = _client(intruder)
    assert client.get(reverse("annotation:annotate-item", args=[assignment.pk])).status_code == 403
    response = client.post(
        reverse("annotation:annotate-answer", args=[assignment.pk]),
        {"question": "info", "value": "1"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 403
    api = client.post(
        reverse("api-rating-save", args=[assignment.pk]), {"question": "info", "value": 1}
    )
    assert api.status_code == 403
    assert not Rating.objects.exists()


@pytest.mark.django_db
def test_the_annotation_page_is_blind_and_shows_only_the_skills_questions():
    job, dialogue, (rater,) = _open_job(skill_key="chitchat")
    assignment = Assignment.objects.get(job=job)
    response = _client(rater).get(reverse("annotation:annotate-item", args=[assignment.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "模型甲" in html and dialogue.backend.name not in html
    assert 'data-key="info"' in html and 'data-key="coh"' in html
    assert 'data-key="know"' not in html and 'data-key="rec"' not in html
    assert "第 1 / 1 条" in html
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS and assignment.started_at


@pytest.mark.django_db
def test_autosave_validates_and_submit_names_missing_answers_then_moves_on():
    job, _, (rater,) = _open_job()
    assignment = Assignment.objects.get(job=job)
    client = _client(rater)
    answer_url = reverse("annotation:annotate-answer", args=[assignment.pk])
    bad = client.post(answer_url, {"question": "info", "value": "7"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 422
    assert "info: expected a whole number from 0 to 2, got &#x27;7&#x27;" in bad.content.decode()
    ok = client.post(answer_url, {"question": "info", "value": "2"}, HTTP_HX_REQUEST="true")
    assert ok.status_code == 200 and "已保存" in ok.content.decode()
    submit = client.post(reverse("annotation:annotate-submit", args=[assignment.pk]))
    assert submit.status_code == 400
    assert "coh" in submit.content.decode() and "know" in submit.content.decode()
    for key in ("coh", "know"):
        client.post(answer_url, {"question": key, "value": "1"}, HTTP_HX_REQUEST="true")
    done = client.post(reverse("annotation:annotate-submit", args=[assignment.pk]))
    assert done.status_code == 302
    assert done.url == reverse("annotation:annotate-next", args=[job.pk])
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert client.get(done.url).status_code == 200


@pytest.mark.django_db
def test_review_page_accepts_with_a_decision_and_refuses_a_bare_rejection(expert_client, expert):
    dialogue = dialogue_with_turns(status=Dialogue.Status.SUBMITTED, alias="模型乙")
    url = reverse("annotation:review-dialogue", args=[dialogue.pk])
    page = expert_client.get(url)
    assert page.status_code == 200 and "模型乙" in page.content.decode()
    assert dialogue.backend.name not in page.content.decode()
    refused = expert_client.post(url, {"decision": "reject"})
    assert refused.status_code == 400
    assert "退回时至少要选一个理由或写一段说明" in refused.content.decode()
    accepted = expert_client.post(url, {"decision": "accept"})
    assert accepted.status_code == 302
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.ACCEPTED
    assert Review.objects.get().reviewer == expert


@pytest.mark.django_db
def test_a_researcher_creates_opens_and_blocks_through_the_pages(researcher_client):
    campaign = CampaignFactory()
    pool = experts(3)
    for _ in range(3):
        dialogue_with_turns(campaign=campaign)
    form = {
        "name": "MSDE 评分",
        "campaign": campaign.pk,
        "rubric": rubric("yesno-single-turn").pk,
        "raters_per_dialogue": 2,
        "deadline_hours": 48,
        "seed": 1,
        "gold_rate": "0",
        "duplicate_rate": "0",
        "onboarding_threshold": "0.8",
    }
    refused = researcher_client.post(reverse("annotation:job-create"), form)
    assert refused.status_code == 400
    assert "要求每条至少 3 人评分，当前为 2" in refused.content.decode()
    assert not RatingJob.objects.exists()
    form["raters_per_dialogue"] = 3
    created = researcher_client.post(reverse("annotation:job-create"), form)
    job = RatingJob.objects.get(name="MSDE 评分")
    assert created.status_code == 302
    researcher_client.post(reverse("annotation:job-open", args=[job.pk]))
    assert Assignment.objects.filter(job=job).count() == 9
    detail = researcher_client.get(reverse("annotation:job-detail", args=[job.pk]))
    assert detail.status_code == 200 and "ex0" in detail.content.decode()
    researcher_client.post(
        reverse("annotation:job-rater-block", args=[job.pk, pool[0].pk]), {"reason": "太快"}
    )
    assert JobRater.objects.get(job=job, rater=pool[0]).state == JobRater.State.BLOCKED
    partial = researcher_client.get(
        reverse("annotation:job-detail", args=[job.pk]), HTTP_HX_REQUEST="true"
    )
    assert "太快" in partial.content.decode() and "<html" not in partial.content.decode()


@pytest.mark.django_db
def test_expert_home_shows_review_queue_and_jobs():
    job, _, (rater,) = _open_job()
    dialogue_with_turns(status=Dialogue.Status.SUBMITTED)
    html = _client(rater).get(reverse("home")).content.decode()
    assert job.name in html
    assert reverse("annotation:annotate-next", args=[job.pk]) in html
    assert reverse("annotation:review-next") in html


@pytest.mark.django_db
def test_live_rating_only_by_the_dialogues_worker():
    worker = make_user("w-live", Role.CROWDWORKER)
    other = make_user("w-other", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True)
    dialogue = dialogue_with_turns(
        campaign=campaign, worker=worker, status=Dialogue.Status.IN_PROGRESS
    )
    first_reply = model_turns(dialogue)[0]
    url = reverse("annotation:live-turn-rating", args=[first_reply.pk])
    assert _client(other).get(url).status_code == 403
    assert _client(other).post(url, {"relevance_topic": "1"}).status_code == 403
    client = _client(worker)
    form = client.get(url)
    assert form.status_code == 200 and 'name="relevance_topic"' in form.content.decode()
    saved = client.post(url, {"relevance_topic": "1", "divergence_new": "0"})
    assert saved.status_code == 200 and "已保存" in saved.content.decode()
    bad = client.post(url, {"relevance_topic": "maybe"})
    assert bad.status_code == 422 and "expected yes or no" in bad.content.decode()
    job = RatingJob.objects.get(campaign=campaign, is_live=True)
    assert job.rubric.key == "yesno-multi-turn"
    ratings = Rating.objects.filter(assignment__job=job, turn=first_reply)
    assert {r.question: r.value for r in ratings} == {"relevance_topic": 1.0, "divergence_new": 0.0}
    user_turn = dialogue.turns.get(index=0)
    user_url = reverse("annotation:live-turn-rating", args=[user_turn.pk])
    assert client.post(user_url, {"relevance_topic": "1"}).status_code == 422


@pytest.mark.django_db
def test_the_annotation_page_shows_the_rubric_in_english_for_english_readers():
    job, _, (rater,) = _open_job()
    assignment = Assignment.objects.get(job=job)
    client = _client(rater)
    client.cookies["django_language"] = "en"
    html = client.get(reverse("annotation:annotate-item", args=[assignment.pk])).content.decode()
    assert "Information richness" in html and "Poor: no knowledge is mentioned." in html
    assert "丰富度" not in html


@pytest.mark.django_db
def test_submitting_with_unanswered_questions_warns_then_a_seed_001_item_may_be_confirmed():
    job, dialogue, (rater,) = _open_job("yesno-single-turn")
    assignment = Assignment.objects.get(job=job)
    client = _client(rater)
    answer_url = reverse("annotation:annotate-answer", args=[assignment.pk])
    turn = model_turns(dialogue)[0].pk
    client.post(answer_url, {"question": "grammatical", "value": "1", "turn": turn})
    submit_url = reverse("annotation:annotate-submit", args=[assignment.pk])
    warned = client.post(submit_url)
    assert warned.status_code == 400
    html = warned.content.decode()
    assert 'id="unanswered-warning"' in html and "未回答的问题计 0 分" in html
    assert 'name="confirm_unanswered"' in html
    assignment.refresh_from_db()
    assert assignment.status != Assignment.Status.SUBMITTED
    confirmed = client.post(submit_url, {"confirm_unanswered": "1"})
    assert confirmed.status_code == 302
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED


@pytest.mark.django_db
def test_a_mean_based_rubric_cannot_be_submitted_with_unanswered_questions_even_confirmed():
    job, _, (rater,) = _open_job()
    assignment = Assignment.objects.get(job=job)
    client = _client(rater)
    submit_url = reverse("annotation:annotate-submit", args=[assignment.pk])
    refused = client.post(submit_url, {"confirm_unanswered": "1"})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "本评分表要求回答全部问题后才能提交" in html and 'name="confirm_unanswered"' not in html
    assignment.refresh_from_db()
    assert assignment.status != Assignment.Status.SUBMITTED


@pytest.mark.django_db
def test_the_job_page_counts_the_reviews_of_its_own_campaign_only(researcher_client):
    job, _, _ = _open_job()
    elsewhere = CampaignFactory()
    for _ in range(3):
        dialogue_with_turns(campaign=elsewhere, status=Dialogue.Status.ACCEPTED)
    dialogue_with_turns(campaign=elsewhere, status=Dialogue.Status.REJECTED)
    dialogue_with_turns(campaign=job.campaign, status=Dialogue.Status.SUBMITTED)

    page = researcher_client.get(reverse("annotation:job-detail", args=[job.pk])).content.decode()
    assert "待审核 1 · 已通过 1 · 已退回 0" in page
    overall = researcher_client.get(reverse("annotation:job-list")).content.decode()
    assert "待审核 1 · 已通过 4 · 已退回 1" in overall
