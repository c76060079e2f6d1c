"""Scripting a study from the command line: register backends, create and open a campaign."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from chat.models import Backend, Campaign
from tests.chat.factories import SampleFactory

pytestmark = pytest.mark.django_db


def test_register_backend_then_create_and_activate_a_campaign(capsys):
    sample = SampleFactory()
    for name, method in (("tfidf", "tfidf"), ("bm25", "bm25")):
        call_command(
            "register_backend",
            f"--name={name}",
            "--adapter=retrieval",
            f"--config={json.dumps({'method': method, 'dataset': sample.dataset.name})}",
            "--test",
        )
    out = capsys.readouterr().out
    assert "registered backend 'tfidf'" in out and "test ok in" in out
    call_command(
        "create_campaign",
        "--name=知识采集",
        "--skills=knowledge",
        "--backends=tfidf,bm25",
        f"--datasets={sample.dataset.name}",
        '--options={"max_turns": 8}',
        "--activate",
    )
    out = capsys.readouterr().out
    campaign = Campaign.objects.get(name="知识采集")
    assert campaign.status == Campaign.Status.ACTIVE and campaign.max_turns == 8
    assert sorted(campaign.campaign_backends.values_list("alias", flat=True)) == [
        "模型 A",
        "模型 B",
    ]
    assert f"/chat/join/{campaign.invite_token}/" in out


def test_bad_input_is_named():
    with pytest.raises(CommandError, match="--config is not valid JSON"):
        call_command("register_backend", "--name=x", "--adapter=openai", "--config={")
    with pytest.raises(CommandError, match="base_url"):
        call_command("register_backend", "--name=x", "--adapter=openai", "--config={}")
    assert not Backend.objects.filter(name="x").exists()
    with pytest.raises(CommandError, match="--backends: no backend named 'ghost'"):
        call_command("create_campaign", "--name=c", "--skills=knowledge", "--backends=ghost")
    Backend.objects.create(name="b", adapter="retrieval", config={"method": "tfidf"})
    with pytest.raises(CommandError, match="min_turns"):
        call_command(
            "create_campaign",
            "--name=c",
            "--skills=knowledge",
            "--backends=b",
            '--options={"min_turns": 5, "max_turns": 2}',
        )
    assert not Campaign.objects.filter(name="c").exists()
