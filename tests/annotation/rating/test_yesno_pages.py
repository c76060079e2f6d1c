"""The yes/no rubrics' pages (seed 001): the single-answer item says which reply is judged, a
failed gate says the second level is skipped and scores 0, the live job is listed, and the chat
page tells the worker what they will rate."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, RatingJob
from annotation.selectors.rating import model_turns
from annotation.services.live import live_rating_save
from annotation.services.ratings import rating_save
from chat.models import Campaign, Dialogue
from core.access import Role
from tests.annotation.factories import (
    CampaignFactory,
    dialogue_with_turns,
    experts,
    single_rater_job,
)
from tests.conftest import make_user


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def _single_turn_item(mode=Campaign.Mode.STATIC):
    campaign = CampaignFactory(mode=mode)
    (rater,) = experts(1, prefix=f"yn{campaign.pk}-")
    dialogue = dialogue_with_turns(campaign=campaign, alias="模型甲", skill_key="chitchat")
    job = single_rater_job(
        name=f"yn-{campaign.pk}", campaign=campaign, rubric_key="yesno-single-turn", rater=rater
    )
    return Assignment.objects.get(job=job), dialogue, rater


@pytest.mark.django_db
def test_a_static_items_context_turns_are_context_and_only_the_last_reply_is_judged():
    assignment, dialogue, rater = _single_turn_item()
    url = reverse("annotation:annotate-item", args=[assignment.pk])
    html = _client(rater).get(url).content.decode()
    # The dataset's earlier system turn is context, not the judged model's.
    assert html.count('<div class="who">模型甲') == 1
    assert "上文 · 对话方（非被评模型）" in html and "上文 · 用户" in html
    assert "被评价的回复" in html and 'class="turn turn-system turn-judged"' in html
    assert "整段对话的评价" not in html
    assert "对被评价回复（模型甲，最后一条）的评价" in html


@pytest.mark.django_db
def test_an_interactive_dialogue_keeps_the_model_label_on_every_reply():
    assignment, _dialogue, rater = _single_turn_item(mode=Campaign.Mode.INTERACTIVE)
    url = reverse("annotation:annotate-item", args=[assignment.pk])
    html = _client(rater).get(url).content.decode()
    assert html.count('<div class="who">模型甲</div>') == 2
    assert "上文 ·" not in html and "整段对话的评价" in html


@pytest.mark.django_db
def test_after_a_failed_gate_the_second_level_says_it_is_skipped_and_scores_zero():
    assignment, _dialogue, rater = _single_turn_item()
    url = reverse("annotation:annotate-item", args=[assignment.pk])
    client = _client(rater)
    note = "已跳过：第一级问题未通过，此题不用回答，记 0 分。"

    before = client.get(url).content.decode()
    # Every second-level question (10 for chitchat) has the note, hidden until a gate fails;
    # the page's script shows it as answers change.
    assert before.count(note) == 10 and before.count(f"hidden>{note}") == 10

    rating_save(assignment=assignment, user=rater, question="grammatical", value=0)
    after = client.get(url).content.decode()
    assert after.count(f'role="note">{note}') == 10
    assert after.count(f"hidden>{note}") == 0
    block = after.split('id="q-relevance_content"')[1].split("</form>")[0]
    assert "<fieldset disabled>" in block
    assert 'class="q q-yesno q-skipped"' in after


@pytest.mark.django_db
def test_the_live_job_is_in_the_job_list_and_on_the_campaign_page(researcher_client):
    worker = make_user("w-yn-live", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True, name="边聊边评")
    dialogue = dialogue_with_turns(
        campaign=campaign, worker=worker, status=Dialogue.Status.IN_PROGRESS
    )
    before = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk]))
    assert 'id="live-job-results"' not in before.content.decode()

    live_rating_save(turn=model_turns(dialogue)[0], user=worker, answers={"relevance_topic": 1})
    job = RatingJob.objects.get(campaign=campaign, is_live=True)

    jobs = researcher_client.get(reverse("annotation:job-list")).content.decode()
    results_url = reverse("annotation:job-results", args=[job.pk])
    assert job.name in jobs and f'href="{results_url}"' in jobs and "聊天时逐轮评分" in jobs
    page = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk]))
    assert f'href="{results_url}" id="live-job-results"' in page.content.decode()
    assert researcher_client.get(results_url).status_code == 200


@pytest.mark.django_db
def test_the_chat_page_shows_the_live_rubrics_instructions_and_categories():
    worker = make_user("w-yn-guide", Role.CROWDWORKER)
    campaign = CampaignFactory(rate_while_chatting=True)
    dialogue = dialogue_with_turns(
        campaign=campaign, worker=worker, status=Dialogue.Status.IN_PROGRESS
    )
    client = _client(worker)
    page = client.get(reverse("chat:live-dialogue", args=[dialogue.pk])).content.decode()
    guide_url = reverse("annotation:live-guide", args=[dialogue.pk])
    assert f'hx-get="{guide_url}" hx-trigger="load"' in page
    other = make_user("w-yn-other", Role.CROWDWORKER)
    assert _client(other).get(guide_url).status_code == 403
    html = client.get(guide_url).content.decode()
    assert 'id="rating-guide"' in html
    assert "系统每回复一次，就对该回复回答下面 8 道是非题" in html
    assert "<dt>关联度</dt>" in html and "<dt>发散性</dt>" in html
    assert "前 5 条回复" in html

    form_url = reverse("annotation:live-turn-rating", args=[model_turns(dialogue)[0].pk])
    form = client.get(form_url).content.decode()
    assert '<span class="tag live-category">关联度</span>' in form
    assert '<span class="tag live-category">发散性</span>' in form


@pytest.mark.django_db
def test_a_campaign_without_live_rating_shows_no_rating_guide():
    worker = make_user("w-yn-plain", Role.CROWDWORKER)
    dialogue = dialogue_with_turns(
        campaign=CampaignFactory(), worker=worker, status=Dialogue.Status.IN_PROGRESS
    )
    client = _client(worker)
    html = client.get(reverse("chat:live-dialogue", args=[dialogue.pk])).content.decode()
    assert "rating-guide" not in html
    guide = client.get(reverse("annotation:live-guide", args=[dialogue.pk])).content.decode()
    assert 'id="rating-guide"' not in guide
