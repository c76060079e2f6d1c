"""The demo loader brings a Japanese study: a dataset per skill with grounding, and a campaign."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from chat.models import Backend, Campaign, Dataset
from chat.services.generation import build_request, complete_reply_sync
from tests.core.test_translations_ja import not_japanese
from workspace.demo import DEMO_DATA_DIR, JAPANESE_CAMPAIGN, demo_load

pytestmark = pytest.mark.django_db

JAPANESE_FILES = {
    "ja_chitchat.jsonl": "chitchat",
    "ja_knowledge.jsonl": "knowledge",
    "ja_recommendation.jsonl": "recommendation",
    "ja_persona.jsonl": "persona",
}
GROUNDING_KEYS = {
    "chitchat": set(),
    "knowledge": {"knowledge", "goal"},
    "recommendation": {"user_profile", "goal", "knowledge", "situation"},
    "persona": {"persona"},
}


@pytest.mark.parametrize(("filename", "skill"), JAPANESE_FILES.items())
def test_each_japanese_demo_file_is_japanese_with_the_skills_grounding(filename, skill):
    lines = (DEMO_DATA_DIR / filename).read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 8
    for number, line in enumerate(lines, start=1):
        sample = json.loads(line)
        where = f"{filename}:{number}"
        context = sample["context"]
        # Starts and ends with the user; the reference is the bot's next reply.
        assert len(context) % 2 == 1, where
        text = "".join(context + sample["references"])
        assert not not_japanese(text), (where, not_japanese(text))
        assert any("\u3040" <= c <= "\u30ff" for c in text), where  # kana: Japanese, not Chinese
        assert set(sample["grounding"]) == GROUNDING_KEYS[skill], where


def test_load_demo_imports_the_japanese_datasets_and_opens_a_japanese_campaign():
    demo_load()
    demo_load()  # idempotent
    japanese = Dataset.objects.filter(language="ja")
    assert sorted(japanese.values_list("skill__key", flat=True)) == sorted(JAPANESE_FILES.values())
    assert all(d.sample_count >= 8 for d in japanese)
    campaign = Campaign.objects.get(name=JAPANESE_CAMPAIGN)
    assert campaign.status == Campaign.Status.ACTIVE
    assert campaign.interface_language == "ja"
    assert campaign.instructions["knowledge"]["ja"]
    assert list(campaign.datasets.values_list("language", flat=True)) == ["ja"]
    assert sorted(campaign.campaign_backends.values_list("alias", flat=True)) == [
        "モデル A",
        "モデル B",
    ]
    assert Campaign.objects.filter(name=JAPANESE_CAMPAIGN).count() == 1


def test_the_japanese_demo_systems_answer_in_japanese_from_the_japanese_dialogues():
    demo_load()
    for name in ("検索-TFIDF-ja", "検索-BM25-ja"):
        backend = Backend.objects.get(name=name)
        request = build_request(
            backend=backend,
            skill="knowledge",
            language="ja",
            grounding={},
            history=[("user", "『千と千尋の神隠し』は宮崎駿監督の作品ですよね？")],
        )
        reply = complete_reply_sync(backend=backend, request=request).text
        assert "ベルリン" in reply, (name, reply)


def test_the_command_prints_the_japanese_invite_link(capsys):
    call_command("load_demo", base_url="http://demo")
    out = capsys.readouterr().out
    token = Campaign.objects.get(name=JAPANESE_CAMPAIGN).invite_token
    assert f"http://demo/chat/join/{token}/?worker_id=demo-worker-ja-1" in out
