import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from chat.models import Backend, Campaign
from chat.services.scenario_assignment import scenario_assign_next
from tests.chat.campaigns.factories import participant, scenario_dataset, study
from tests.chat.factories import BackendFactory

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _payload(**overrides) -> dict:
    payload = {
        "name": "API 活动",
        "mode": "interactive",
        "skills": ["knowledge"],
        "backends": [{"id": BackendFactory().pk, "alias": "甲"}, {"id": BackendFactory().pk}],
        "datasets": [scenario_dataset("knowledge", 2).pk],
        "max_turns": 8,
        "instructions": {"knowledge": {"zh-hans": "聊知识", "en": "Talk"}},
        "acceptability": {"min_chars": 6, "safety_words": ["坏词"]},
    }
    payload.update(overrides)
    return payload


def test_crowdworkers_and_experts_get_403(crowdworker, expert):
    campaign = study()
    for user in (crowdworker, expert):
        client = _api(user)
        assert client.get(reverse("api-campaign-list")).status_code == 403
        assert (
            client.post(reverse("api-campaign-list"), _payload(), format="json").status_code == 403
        )
        for name in ("api-campaign-activate", "api-campaign-close"):
            assert client.post(reverse(name, args=[campaign.pk])).status_code == 403
        assert client.get(reverse("api-campaign-progress", args=[campaign.pk])).status_code == 403
    assert Campaign.objects.count() == 1


def test_create_retrieve_update_and_progress(researcher):
    client = _api(researcher)
    response = client.post(reverse("api-campaign-list"), _payload(), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert sorted(b["alias"] for b in body["backends"]) == ["模型 A", "甲"]
    assert body["max_turns"] == 8 and body["status"] == "draft"
    assert body["acceptability"]["min_chars"] == 6
    assert body["acceptability"]["flag_threshold"] == 5  # defaults filled in
    assert body["invite_url"].endswith(f"/chat/join/{body['invite_token']}/")
    pk = body["id"]

    response = client.patch(
        reverse("api-campaign-detail", args=[pk]), {"min_turns": 3}, format="json"
    )
    assert response.status_code == 200 and response.json()["min_turns"] == 3
    assert client.post(reverse("api-campaign-activate", args=[pk])).json()["status"] == "active"

    progress = client.get(reverse("api-campaign-progress", args=[pk])).json()
    assert progress["quota"] == 4 and len(progress["cells"]) == 2
    assert {cell["alias"] for cell in progress["cells"]} == {"甲", "模型 A"}
    listing = client.get(reverse("api-campaign-list")).json()
    assert [c["id"] for c in listing["results"]] == [pk]
    assert client.post(reverse("api-campaign-close", args=[pk])).json()["status"] == "closed"


def test_service_errors_come_back_by_field_and_nothing_is_saved(researcher):
    imported = BackendFactory(adapter=Backend.Adapter.IMPORTED, name="老日志")
    response = _api(researcher).post(
        reverse("api-campaign-list"),
        _payload(skills=["knowledge", "weather"], backends=[{"id": imported.pk}], min_turns=9),
        format="json",
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "未知的技能「weather」" in errors["skills"]
    assert "「老日志」是导入的系统" in errors["backends"]
    assert "最少轮数（9）不能大于最多轮数（8）" in errors["min_turns"]
    assert not Campaign.objects.exists()


def test_an_unknown_backend_id_is_a_400(researcher):
    response = _api(researcher).post(
        reverse("api-campaign-list"), _payload(backends=[{"id": 99999}]), format="json"
    )
    assert response.status_code == 400 and "backends" in response.json()


def test_status_changes_only_through_activate_and_close(researcher):
    campaign = study(status=Campaign.Status.DRAFT)
    response = _api(researcher).patch(
        reverse("api-campaign-detail", args=[campaign.pk]), {"status": "active"}, format="json"
    )
    assert response.status_code == 400
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DRAFT


def test_activation_problems_are_a_400(researcher):
    campaign = study(status=Campaign.Status.DRAFT)
    campaign.datasets.clear()
    response = _api(researcher).post(reverse("api-campaign-activate", args=[campaign.pk]))
    assert response.status_code == 400
    assert "请至少选择一个场景数据集" in response.json()["errors"]["status"]


def test_replacing_backends_through_patch_keeps_kept_aliases(researcher):
    campaign = study(backends=2, status=Campaign.Status.DRAFT)
    kept = campaign.campaign_backends.order_by("pk").last()
    new = BackendFactory()
    response = _api(researcher).patch(
        reverse("api-campaign-detail", args=[campaign.pk]),
        {"backends": [{"id": kept.backend_id}, {"id": new.pk}]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    aliases = {b["id"]: b["alias"] for b in response.json()["backends"]}
    assert aliases == {kept.backend_id: "模型 B", new.pk: "模型 A"}


def test_progress_counts_reservations(researcher):
    campaign = study(backends=1, scenarios={"knowledge": 2})
    scenario_assign_next(participant=participant(campaign))
    body = _api(researcher).get(reverse("api-campaign-progress", args=[campaign.pk])).json()
    assert (body["in_progress"], body["collected"], body["quota"]) == (1, 0, 2)


def test_a_campaign_fixes_its_crowdworker_language_through_the_api(researcher):
    client = _api(researcher)
    response = client.post(
        reverse("api-campaign-list"), _payload(interface_language="ja"), format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["interface_language"] == "ja"
    assert sorted(b["alias"] for b in body["backends"]) == ["モデル A", "甲"]  # blank → Japanese
    bad = client.patch(
        reverse("api-campaign-detail", args=[body["id"]]),
        {"interface_language": "fr"},
        format="json",
    )
    assert bad.status_code == 400 and "interface_language" in bad.json()
    cleared = client.patch(
        reverse("api-campaign-detail", args=[body["id"]]), {"interface_language": ""}, format="json"
    )
    assert cleared.status_code == 200 and cleared.json()["interface_language"] == ""
