"""Dialogue JSONL export: its fields, filters, pseudonymous workers and the round trip."""

from __future__ import annotations

import io
import json

import pytest

from chat.models import Campaign, Dialogue, Participant, StaticRun
from chat.services.dialogue_io import dialogue_export_lines, dialogues_import
from tests.chat.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DatasetFactory,
    DialogueFactory,
    SampleFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def export(**kwargs) -> list[dict]:
    return [json.loads(line) for line in dialogue_export_lines(**kwargs)]


@pytest.fixture
def collected():
    """An interactive campaign: a worker's rejected dialogue and an accepted one over a scenario."""
    campaign = CampaignFactory(name="采集")
    backend = BackendFactory(name="模型甲")
    CampaignBackendFactory(campaign=campaign, backend=backend, alias="模型 A")
    sample = SampleFactory(dataset=DatasetFactory(name="场景"), external_id="k7")
    worker = UserFactory(username="alice", email="alice@example.org")
    Participant.objects.create(campaign=campaign, user=worker, external_id="PROLIFIC123")
    accepted = DialogueFactory(
        campaign=campaign,
        backend=backend,
        scenario=sample,
        worker=worker,
        status=Dialogue.Status.ACCEPTED,
        grounding=sample.grounding,
        grounding_used=["k0"],
    )
    TurnFactory(dialogue=accepted, index=0, speaker="user", text="你好")
    TurnFactory(dialogue=accepted, index=1, speaker="system", text="<b>你好</b>", latency_ms=42)
    rejected = DialogueFactory(
        campaign=campaign,
        backend=backend,
        worker=worker,
        status=Dialogue.Status.REJECTED,
        rejection_reason="没有使用知识",
        external_id="ext-9",
    )
    TurnFactory(dialogue=rejected, index=0, speaker="user", text="在吗")
    return campaign, accepted, rejected


def test_the_export_carries_scenario_alias_worker_review_and_timings(collected):
    campaign, accepted, rejected = collected
    first, second = export(campaign=campaign)
    assert first["id"] == f"d{accepted.pk}" and second["id"] == "ext-9"
    assert first["system"] == "模型甲" and first["alias"] == "模型 A"
    assert (first["skill"], first["language"], first["campaign"]) == ("knowledge", "zh", "采集")
    assert first["grounding"] == {"knowledge": [["流浪地球", "导演", "郭帆"]]}
    assert first["scenario"] == {"dataset": "场景", "sample": "k7"}
    assert first["status"] == "accepted" and first["grounding_used"] == ["k0"]
    assert first["review"] == {"status": "accepted", "rejection_reason": ""}
    assert second["review"] == {"status": "rejected", "rejection_reason": "没有使用知识"}
    assert first["created_at"] and first["submitted_at"] is None
    assert first["cannot_continue"] is False  # seed 001: not ended early by the worker
    assert [(t["speaker"], t["text"], t["latency_ms"]) for t in first["turns"]] == [
        ("user", "你好", None),
        ("system", "<b>你好</b>", 42),
    ]
    assert all(t["created_at"] for t in first["turns"])
    # One stable pseudonym per worker; never the username, email or the site's worker id.
    assert first["worker"] == second["worker"] and first["worker"].startswith("w")
    raw = "\n".join(dialogue_export_lines(campaign=campaign))
    assert "alice" not in raw and "PROLIFIC123" not in raw


def test_the_status_filter_and_the_static_run_filter(collected):
    campaign, accepted, rejected = collected
    assert [d["id"] for d in export(campaign=campaign, statuses=["rejected"])] == ["ext-9"]
    run = StaticRun.objects.create(name="r", campaign=campaign, dataset=accepted.scenario.dataset)
    Dialogue.objects.filter(pk=accepted.pk).update(static_run=run)
    assert [d["id"] for d in export(campaign=campaign, static_run=run)] == [f"d{accepted.pk}"]


def test_an_export_imports_into_a_fresh_campaign_as_the_same_dialogues(collected, monkeypatch):
    campaign, accepted, _ = collected
    monkeypatch.setattr("chat.services.dialogue_io.EXPORT_CHUNK_SIZE", 1)  # several chunks
    static = DialogueFactory(campaign=campaign, backend=accepted.backend, status="accepted")
    TurnFactory(dialogue=static, index=0, speaker="user", text="推荐一部电影")
    TurnFactory(
        dialogue=static,
        index=1,
        speaker="system",
        text="《流浪地球》",
        references=["看看《流浪地球》吧"],
        prompt="你是电影推荐助手。",
        latency_ms=7,
    )
    exported = "\n".join(dialogue_export_lines(campaign=campaign)) + "\n"

    result = dialogues_import(fileobj=io.BytesIO(exported.encode()), campaign_name="副本")

    copy = Campaign.objects.get(name="副本")
    assert result.dialogues == 3 and result.systems_created == []

    def comparable(lines: list[dict]) -> list[dict]:
        keep = ("id", "system", "skill", "language", "grounding", "alias")
        turn_keep = ("speaker", "text", "references", "prompt", "latency_ms")
        return [
            {
                **{k: d[k] for k in keep},
                "turns": [{k: t.get(k) for k in turn_keep} for t in d["turns"]],
            }
            for d in lines
        ]

    # Ids included: a dialogue without an external id is exported as d<pk>, which the copy
    # keeps as its external id.
    assert comparable(export(campaign=copy)) == comparable(export(campaign=campaign))
    assert {d["status"] for d in export(campaign=copy)} == {"accepted"}
