import pytest
from django.urls import reverse

from chat.models import Campaign, CampaignBackend
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.factories import participant, scenario_dataset, study
from tests.chat.factories import BackendFactory

pytestmark = pytest.mark.django_db


def _form_data(**overrides) -> dict:
    data = {
        "name": "知识对话采集",
        "mode": "interactive",
        "skills": ["knowledge"],
        "quota_per_cell": "0",
        "max_turns": "10",
        "min_turns": "1",
        "per_worker_cap": "0",
        "reservation_timeout_minutes": "30",
        "completion_url": "",
        "acc_min_chars": "4",
        "acc_min_words": "3",
        "acc_reject_all_caps": "on",
        "acc_reject_repeats": "on",
        "acc_repeat_similarity": "0.9",
        "acc_reject_grounding_copy": "on",
        "acc_grounding_copy_chars": "20",
        "acc_safety_words": "傻瓜\nidiot\n",
        "acc_flag_threshold": "5",
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    "name", ["chat:campaign-list", "chat:campaign-create"], ids=["list", "create"]
)
def test_crowdworkers_and_experts_get_403(name, crowdworker_client, expert_client):
    assert crowdworker_client.get(reverse(name)).status_code == 403
    assert expert_client.get(reverse(name)).status_code == 403


def test_other_roles_cannot_see_or_change_a_campaign(crowdworker_client, expert_client):
    campaign = study(status=Campaign.Status.DRAFT)
    for client in (crowdworker_client, expert_client):
        assert client.get(reverse("chat:campaign-detail", args=[campaign.pk])).status_code == 403
        assert client.get(reverse("chat:campaign-edit", args=[campaign.pk])).status_code == 403
        response = client.post(reverse("chat:campaign-activate", args=[campaign.pk]))
        assert response.status_code == 403
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DRAFT


def test_anonymous_visitors_are_sent_to_login(client):
    response = client.get(reverse("chat:campaign-list"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_researcher_creates_a_campaign_with_aliases_instructions_and_checks(researcher_client):
    a, b = BackendFactory(name="qwen"), BackendFactory(name="glm")
    dataset = scenario_dataset("knowledge", 3)
    data = _form_data(
        backends=[a.pk, b.pk],
        datasets=[dataset.pk],
        **{
            f"alias_{a.pk}": "系统 1",
            f"alias_{b.pk}": "",
            "instructions_knowledge_zh": "请围绕知识聊天",
            "instructions_knowledge_en": "Chat about the knowledge",
            "instructions_persona_zh": "ignored: persona is not a campaign skill",
        },
    )
    response = researcher_client.post(reverse("chat:campaign-create"), data)
    campaign = Campaign.objects.get(name="知识对话采集")
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:campaign-detail", args=[campaign.pk])
    aliases = dict(
        CampaignBackend.objects.filter(campaign=campaign).values_list("backend__name", "alias")
    )
    assert aliases == {"qwen": "系统 1", "glm": "模型 A"}
    assert campaign.instructions == {
        "knowledge": {"zh-hans": "请围绕知识聊天", "en": "Chat about the knowledge"}
    }
    assert campaign.acceptability["safety_words"] == ["傻瓜", "idiot"]
    assert campaign.status == Campaign.Status.DRAFT


def test_bad_input_is_shown_on_the_form_and_nothing_is_saved(researcher_client):
    a = BackendFactory()
    persona = scenario_dataset("persona", 1)
    data = _form_data(backends=[a.pk], datasets=[persona.pk], min_turns="12", max_turns="10")
    response = researcher_client.post(reverse("chat:campaign-create"), data)
    assert response.status_code == 400
    body = response.content.decode()
    assert "最少轮数（12）不能大于最多轮数（10）" in body
    assert "「persona」不在本活动的技能中" in body
    assert not Campaign.objects.exists()


def test_a_missing_number_is_named(researcher_client):
    response = researcher_client.post(reverse("chat:campaign-create"), _form_data(max_turns="x"))
    assert response.status_code == 400
    assert "最多轮数" in response.content.decode()
    assert not Campaign.objects.exists()


def test_editing_keeps_aliases_and_saves_changes(researcher_client):
    campaign = study(backends=2, status=Campaign.Status.DRAFT)
    page = researcher_client.get(reverse("chat:campaign-edit", args=[campaign.pk]))
    assert page.status_code == 200
    form = page.context["form"]
    data = {k: v for k, v in form.initial.items() if not isinstance(v, list | bool)}
    data.update(
        skills=["knowledge"],
        backends=[b.pk for b in form.initial["backends"]],
        datasets=[d.pk for d in form.initial["datasets"]],
        max_turns="6",
        acc_reject_all_caps="on",
        acc_safety_words="",
    )
    response = researcher_client.post(reverse("chat:campaign-edit", args=[campaign.pk]), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    campaign.refresh_from_db()
    assert campaign.max_turns == 6
    assert sorted(campaign.campaign_backends.values_list("alias", flat=True)) == [
        "模型 A",
        "模型 B",
    ]


def test_activate_and_close_buttons(researcher_client):
    campaign = study(status=Campaign.Status.DRAFT)
    researcher_client.post(reverse("chat:campaign-activate", args=[campaign.pk]))
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.ACTIVE
    researcher_client.post(reverse("chat:campaign-close", args=[campaign.pk]))
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.CLOSED
    assert (
        researcher_client.get(reverse("chat:campaign-close", args=[campaign.pk])).status_code == 405
    )


def test_activation_problems_are_reported(researcher_client):
    campaign = study(status=Campaign.Status.DRAFT)
    campaign.datasets.clear()
    response = researcher_client.post(
        reverse("chat:campaign-activate", args=[campaign.pk]), follow=True
    )
    assert "请至少选择一个场景数据集" in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DRAFT


def test_the_detail_page_shows_invite_links_progress_and_flagged_workers(researcher_client):
    campaign = study(backends=2, scenarios={"knowledge": 2})
    worker = participant(campaign, flagged=True, violations=5, source="prolific")
    scenario_assign_next(participant=participant(campaign))
    response = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert f"/chat/join/{campaign.invite_token}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in body
    assert f"/chat/join/{campaign.invite_token}/?workerId=WORKER_ID" in body
    assert worker.external_id in body and "已标记" in body
    assert 'role="progressbar"' in body and 'hx-trigger="every 5s"' in body
    progress = response.context["progress"]
    assert progress.in_progress == 1 and progress.quota == 4


def test_the_progress_partial_answers_htmx_polls(researcher_client):
    campaign = study()
    response = researcher_client.get(
        reverse("chat:campaign-detail", args=[campaign.pk]), HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert 'role="progressbar"' in body and "<html" not in body


def test_model_names_and_aliases_are_escaped(researcher_client):
    campaign = study(backends=1)
    CampaignBackend.objects.filter(campaign=campaign).update(alias="<b>x</b>")
    body = researcher_client.get(reverse("chat:campaign-detail", args=[campaign.pk])).content
    assert b"<b>x</b>" not in body and b"&lt;b&gt;x&lt;/b&gt;" in body


def test_the_list_shows_campaigns_with_progress(researcher_client):
    study()
    response = researcher_client.get(reverse("chat:campaign-list"))
    assert response.status_code == 200
    assert 'role="progressbar"' in response.content.decode()
