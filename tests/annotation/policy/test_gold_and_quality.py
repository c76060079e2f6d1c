"""Gold / onboarding items and quality settings on the rating-job page."""

import pytest
from django.urls import reverse

from annotation.models import GoldItem, RatingJob
from annotation.services.rating_jobs import gold_item_set, job_create, job_open
from chat.models import Dialogue
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts, rubric

HTMX = {"HTTP_HX_REQUEST": "true"}


def _job(rubric_key="msde", **quality):
    campaign = CampaignFactory()
    job = job_create(
        name=f"gold-{campaign.pk}",
        campaign=campaign,
        rubric=rubric(rubric_key),
        created_by=None,
        raters=experts(1, prefix=f"g{campaign.pk}-"),
        raters_per_dialogue=1,
        allow_below_minimum=True,
        quality_settings=quality or None,
    )
    return job


def _gold_url(job):
    return reverse("annotation:job-gold", args=[job.pk])


@pytest.mark.django_db
def test_the_answer_fields_follow_the_rubric_and_the_dialogue(researcher_client):
    job = _job("yesno-multi-turn")
    dialogue = dialogue_with_turns(campaign=job.campaign, skill_key="chitchat")
    dialogue.external_id = "lccc-42"
    dialogue.save()
    url = reverse("annotation:job-gold-answers", args=[job.pk])
    html = researcher_client.get(url, {"dialogue": "lccc-42"}, **HTMX).content.decode()
    assert "<html" not in html
    # Two model turns × eight turn-level yes/no questions, named per turn index.
    assert 'name="a-relevance_topic-t0"' in html and 'name="a-divergence_continue-t1"' in html
    assert 'name="a-relevance_topic-t2"' not in html
    assert "在看《流浪地球》" in html  # the model reply the answers are for
    by_id = researcher_client.get(url, {"dialogue": str(dialogue.pk)}).content.decode()
    assert 'name="a-relevance_topic-t0"' in by_id
    missing = researcher_client.get(url, {"dialogue": "nope"}).content.decode()
    assert "没有 ID 或外部 ID 为「nope」的对话" in missing
    other = dialogue_with_turns()  # another campaign
    assert (
        "没有 ID 或外部 ID" in researcher_client.get(url, {"dialogue": other.pk}).content.decode()
    )


@pytest.mark.django_db
def test_skill_specific_questions_are_offered_only_where_they_apply(researcher_client):
    job = _job("msde")
    chitchat = dialogue_with_turns(campaign=job.campaign, skill_key="chitchat")
    url = reverse("annotation:job-gold-answers", args=[job.pk])
    html = researcher_client.get(url, {"dialogue": chitchat.pk}).content.decode()
    assert 'name="a-coh"' in html and 'name="a-know"' not in html


@pytest.mark.django_db
def test_adding_a_gold_item_through_the_page_stores_the_known_answers(researcher_client):
    job = _job("yesno-multi-turn")
    dialogue = dialogue_with_turns(campaign=job.campaign, skill_key="chitchat")
    response = researcher_client.post(
        _gold_url(job),
        {
            "dialogue": str(dialogue.pk),
            "purpose": "onboarding",
            "a-relevance_topic-t0": "1",
            "a-divergence_new-t1": "0",
            "a-relevance_logic-t1": "",
        },
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html and 'id="gold"' in html
    item = GoldItem.objects.get(job=job)
    assert item.purpose == "onboarding" and item.dialogue == dialogue
    assert item.answers == [
        {"question": "relevance_topic", "turn": 0, "value": 1.0},
        {"question": "divergence_new", "turn": 1, "value": 0.0},
    ]
    assert f'id="gold-{item.pk}"' in html and "入门筛选题" in html
    # Without htmx: a redirect back to the section.
    plain = researcher_client.post(
        _gold_url(job),
        {"dialogue": str(dialogue.pk), "purpose": "gold", "a-relevance_topic-t0": "0"},
    )
    assert plain.status_code == 302 and plain.url.endswith("#gold")
    item.refresh_from_db()
    assert item.purpose == "gold" and item.answers[0]["value"] == 0.0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("post", "field", "message"),
    [
        (
            {"a-coh": "9"},
            "a-coh",
            "「连贯性（coh）」：answers[0]：评分量表不接受这个答案：coh: expected a whole number "
            "from 0 to 2, got &#x27;9&#x27;",
        ),
        ({"a-info": "1", "a-know": "x"}, "a-know", "answers[1]：评分量表不接受这个答案：know:"),
        ({}, None, "answers：至少需要一个已知答案"),
    ],
)
def test_a_bad_answer_is_named_and_nothing_is_saved(researcher_client, post, field, message):
    job = _job("msde")
    dialogue = dialogue_with_turns(campaign=job.campaign, skill_key="knowledge")
    response = researcher_client.post(
        _gold_url(job), {"dialogue": str(dialogue.pk), "purpose": "gold", **post}, **HTMX
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert message in html.split('id="gold-error"')[1].split("</div>")[0]
    if field:
        select = html.split(f'name="{field}"')[1].split("</div>")[0]
        assert 'class="errorlist"' in select
    assert not GoldItem.objects.exists()


@pytest.mark.django_db
def test_an_unknown_dialogue_or_purpose_is_named(researcher_client):
    job = _job("msde")
    dialogue = dialogue_with_turns(campaign=job.campaign)
    unknown = researcher_client.post(_gold_url(job), {"dialogue": "x-1", "purpose": "gold"}, **HTMX)
    assert unknown.status_code == 422
    assert "没有 ID 或外部 ID 为「x-1」的对话" in unknown.content.decode()
    bad_purpose = researcher_client.post(
        _gold_url(job), {"dialogue": dialogue.pk, "purpose": "trap", "a-coh": "1"}, **HTMX
    )
    assert bad_purpose.status_code == 422
    assert "trap" in bad_purpose.content.decode()
    assert not GoldItem.objects.exists()


@pytest.mark.django_db
def test_a_dialogue_already_assigned_as_real_work_is_refused(researcher_client):
    job = _job("msde")
    dialogue = dialogue_with_turns(campaign=job.campaign)
    job_open(job=job)
    response = researcher_client.post(
        _gold_url(job), {"dialogue": dialogue.pk, "purpose": "gold", "a-coh": "1"}, **HTMX
    )
    assert response.status_code == 422
    assert "已作为正式条目分配给评分专家" in response.content.decode()


@pytest.mark.django_db
def test_deleting_an_item_and_refusing_once_it_was_given_to_a_rater(researcher_client):
    job = _job("msde")
    gold_dialogue = dialogue_with_turns(campaign=job.campaign, status=Dialogue.Status.SUBMITTED)
    item = gold_item_set(
        job=job,
        dialogue=gold_dialogue,
        purpose="onboarding",
        answers=[{"question": "coh", "turn": None, "value": 2}],
    )
    url = reverse("annotation:job-gold-delete", args=[job.pk, item.pk])
    response = researcher_client.post(url, **HTMX)
    assert response.status_code == 200 and not GoldItem.objects.exists()
    assert "已删除对话" in response.content.decode()

    item = gold_item_set(
        job=job,
        dialogue=gold_dialogue,
        purpose="onboarding",
        answers=[{"question": "coh", "turn": None, "value": 2}],
    )
    dialogue_with_turns(campaign=job.campaign)
    job_open(job=job)  # the onboarding item is now given to the rater
    refused = researcher_client.post(
        reverse("annotation:job-gold-delete", args=[job.pk, item.pk]), **HTMX
    )
    assert refused.status_code == 422
    assert "已分配给评分专家" in refused.content.decode()
    assert GoldItem.objects.filter(pk=item.pk).exists()
    other = _job("msde")
    assert (
        researcher_client.post(
            reverse("annotation:job-gold-delete", args=[other.pk, item.pk])
        ).status_code
        == 404
    )


@pytest.mark.django_db
def test_the_job_page_shows_the_quality_form_with_explanations_while_draft(researcher_client):
    job = _job("msde", gold_rate=0.1)
    html = researcher_client.get(reverse("annotation:job-detail", args=[job.pk])).content.decode()
    assert 'id="quality-form"' in html and 'name="gold_rate" value="0.1"' in html
    assert "混入每位评分专家工作中的金标题" in html and "标准差" in html
    assert 'id="gold-form"' in html
    dialogue_with_turns(campaign=job.campaign)
    job_open(job=job)
    html = researcher_client.get(reverse("annotation:job-detail", args=[job.pk])).content.decode()
    assert 'id="quality-form"' not in html and "质量设置不能再改" in html


@pytest.mark.django_db
def test_quality_settings_are_saved_and_bad_ones_named(researcher_client):
    job = _job("msde")
    url = reverse("annotation:job-quality", args=[job.pk])
    form = {
        "gold_rate": "0.05",
        "duplicate_rate": "0.1",
        "onboarding_threshold": "0.9",
        "gold_min_accuracy": "0.7",
        "consistency_min": "0.7",
        "min_seconds": "20",
        "n_sd": "2.5",
        "pattern_min_items": "10",
        "tolerance": "0",
    }
    saved = researcher_client.post(url, form, **HTMX)
    assert saved.status_code == 200 and "<html" not in saved.content.decode()
    job.refresh_from_db()
    assert job.quality_settings["gold_rate"] == 0.05
    assert job.quality_settings["min_seconds"] == 20.0 and job.quality_settings["n_sd"] == 2.5

    bad = researcher_client.post(
        url, {**form, "gold_rate": "0.9", "n_sd": "abc", "pattern_min_items": "2"}, **HTMX
    )
    assert bad.status_code == 422
    html = bad.content.decode()
    assert "金标题比例（0–0.5）：gold_rate：必须在 0 到 0.5 之间" in html
    assert "n_sd：必须是数字" in html
    assert "pattern_min_items：必须是 ≥ 3 的整数" in html
    job.refresh_from_db()
    assert job.quality_settings["gold_rate"] == 0.05  # nothing half-saved

    cleared = researcher_client.post(url, {**form, "min_seconds": ""})
    assert cleared.status_code == 302
    job.refresh_from_db()
    assert job.quality_settings["min_seconds"] is None


@pytest.mark.django_db
def test_quality_settings_of_an_opened_job_are_refused(researcher_client):
    job = _job("msde")
    dialogue_with_turns(campaign=job.campaign)
    job_open(job=job)
    response = researcher_client.post(
        reverse("annotation:job-quality", args=[job.pk]),
        {
            "gold_rate": "0.2",
            "duplicate_rate": "0",
            "onboarding_threshold": "0.8",
            "gold_min_accuracy": "0.7",
            "consistency_min": "0.7",
            "n_sd": "2",
            "pattern_min_items": "10",
            "tolerance": "0",
        },
    )
    assert response.status_code == 422
    assert "只有草稿状态的任务可以修改质量设置" in response.content.decode()
    assert RatingJob.objects.get(pk=job.pk).quality_settings["gold_rate"] == 0.0


@pytest.mark.django_db
def test_experts_and_crowdworkers_get_403_on_the_gold_and_quality_routes(
    expert_client, crowdworker_client
):
    job = _job("msde")
    item = gold_item_set(
        job=job,
        dialogue=dialogue_with_turns(campaign=job.campaign),
        purpose="gold",
        answers=[{"question": "coh", "turn": None, "value": 1}],
    )
    for c in (expert_client, crowdworker_client):
        assert c.get(_gold_url(job)).status_code == 403
        assert c.post(_gold_url(job), {}).status_code == 403
        assert c.get(reverse("annotation:job-gold-answers", args=[job.pk])).status_code == 403
        assert c.post(reverse("annotation:job-quality", args=[job.pk]), {}).status_code == 403
        delete = reverse("annotation:job-gold-delete", args=[job.pk, item.pk])
        assert c.post(delete).status_code == 403
    assert GoldItem.objects.filter(pk=item.pk).exists()


@pytest.mark.django_db
def test_without_javascript_the_job_page_loads_the_answer_fields_from_the_query(
    researcher_client,
):
    job = _job("msde")
    dialogue = dialogue_with_turns(campaign=job.campaign, skill_key="knowledge")
    url = reverse("annotation:job-detail", args=[job.pk])
    html = researcher_client.get(url, {"dialogue": dialogue.pk}).content.decode()
    assert "<html" in html and 'name="a-know"' in html and 'name="a-info"' in html
    assert 'name="a-know"' not in researcher_client.get(url).content.decode()
