"""Dialogue JSONL through the pages, the API and the management commands; who may use them."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from chat.models import Campaign, Dialogue
from tests.chat.factories import CampaignFactory, DialogueFactory, TurnFactory
from tests.downloads import streamed_bytes

pytestmark = pytest.mark.django_db

GOOD = (
    '{"id": "a", "system": "甲", "skill": "chitchat", "language": "zh", '
    '"turns": [{"speaker": "user", "text": "你好"}, {"speaker": "system", "text": "你好呀"}]}\n'
)
BAD = GOOD + GOOD.replace('"a"', '"b"').replace('"speaker": "system"', '"speaker": "model"')


def upload(text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("d.jsonl", text.encode(), content_type="application/x-ndjson")


@pytest.fixture
def campaign_with_dialogue():
    campaign = CampaignFactory(name="采集")
    dialogue = DialogueFactory(campaign=campaign, status="accepted")
    TurnFactory(dialogue=dialogue, index=0, speaker="user", text="<script>alert(1)</script>")
    DialogueFactory(campaign=campaign, status="submitted")
    return campaign


def test_the_import_page_imports_and_reports_a_bad_line_precisely(researcher_client):
    url = reverse("chat:dialogue-import")
    assert researcher_client.get(url).status_code == 200
    response = researcher_client.post(url, {"file": upload(BAD), "campaign": "日志"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "line 2, field &#x27;turns[1].speaker&#x27;: expected &quot;user&quot; or" in body
    assert not Campaign.objects.filter(name="日志").exists()

    response = researcher_client.post(url, {"file": upload(GOOD), "campaign": "日志"})
    assert response.status_code == 302
    assert Campaign.objects.get(name="日志").dialogues.count() == 1


def test_the_campaign_export_streams_jsonl_with_filters(researcher_client, campaign_with_dialogue):
    url = reverse("chat:campaign-dialogues-export", args=[campaign_with_dialogue.pk])
    response = researcher_client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in response["Content-Disposition"]
    lines = streamed_bytes(response).decode().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0])["turns"][0]["text"] == "<script>alert(1)</script>"
    accepted = researcher_client.get(url + "?status=accepted")
    assert len(streamed_bytes(accepted).splitlines()) == 1
    assert researcher_client.get(url + "?status=bogus").status_code == 404
    assert researcher_client.get(url + "?static_run=999").status_code == 404


def test_the_api_imports_exports_and_names_the_bad_line(researcher):
    client = APIClient()
    client.force_authenticate(researcher)
    bad = client.post(
        reverse("api-dialogue-import"),
        {"file": upload(BAD), "campaign": "日志"},
        format="multipart",
    )
    assert bad.status_code == 400
    assert bad.json()["line"] == 2 and bad.json()["field"] == "turns[1].speaker"
    good = client.post(
        reverse("api-dialogue-import"),
        {"file": upload(GOOD), "campaign": "日志"},
        format="multipart",
    )
    assert good.status_code == 201
    assert good.json() | {"campaign_id": 0} == {
        "campaign": "日志",
        "campaign_id": 0,
        "dialogues": 1,
        "turns": 2,
        "systems_created": ["甲"],
    }
    campaign = Campaign.objects.get(name="日志")
    exported = client.get(reverse("api-campaign-dialogues-export", args=[campaign.pk]))
    assert exported.status_code == 200
    line = json.loads(streamed_bytes(exported))
    assert (line["id"], line["system"], line["status"]) == ("a", "甲", "accepted")


def test_only_researchers_may_import_or_export(
    crowdworker_client, expert_client, client, campaign_with_dialogue, crowdworker
):
    export_url = reverse("chat:campaign-dialogues-export", args=[campaign_with_dialogue.pk])
    import_url = reverse("chat:dialogue-import")
    for who in (crowdworker_client, expert_client):
        assert who.get(export_url).status_code == 403
        assert who.post(import_url, {"file": upload(GOOD), "campaign": "x"}).status_code == 403
    assert client.get(export_url).status_code == 302  # anonymous: to the login page
    api = APIClient()
    api.force_authenticate(crowdworker)
    api_export = reverse("api-campaign-dialogues-export", args=[campaign_with_dialogue.pk])
    assert api.get(api_export).status_code == 403
    posted = api.post(
        reverse("api-dialogue-import"), {"file": upload(GOOD), "campaign": "x"}, format="multipart"
    )
    assert posted.status_code == 403
    assert not Campaign.objects.filter(name="x").exists()


def test_the_commands_round_trip_and_fail_with_the_line(tmp_path, campaign_with_dialogue):
    out = tmp_path / "out.jsonl"
    call_command("export_dialogues", "--campaign", "采集", "--status", "accepted", "--output", out)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1
    call_command("import_dialogues", str(out), "--campaign", "副本")
    assert Campaign.objects.get(name="副本").dialogues.count() == 1

    bad = tmp_path / "bad.jsonl"
    bad.write_text(BAD, encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 2, field 'turns\[1\]\.speaker'"):
        call_command("import_dialogues", str(bad), "--campaign", "坏")
    assert not Campaign.objects.filter(name="坏").exists()
    with pytest.raises(CommandError, match="no campaign named"):
        call_command("export_dialogues", "--campaign", "没有", "--output", out)
    assert Dialogue.objects.filter(campaign__name="副本").count() == 1
