"""Seed 001's openings: drawn from a dataset with every topic covered, first user turn of each
dialogue, used evenly per backend."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.db.models import RestrictedError

from chat.models import Campaign, CampaignOpening, Dialogue, Turn
from chat.selectors.campaigns import opening_usage
from chat.services.campaigns import CampaignError, campaign_create, campaign_update
from chat.services.dialogue_io import dialogue_export_lines
from chat.services.openings import OpeningDrawError, openings_draw
from chat.services.scenario_assignment import (
    dialogue_abandon,
    dialogue_recollect,
    scenario_assign_next,
)
from tests.chat.campaigns.factories import participant, study
from tests.chat.factories import BackendFactory, DatasetFactory, SampleFactory, skill

pytestmark = pytest.mark.django_db

TOPICS = [f"话题{n:02d}" for n in range(16)]


def prompt_dataset(n: int = 64, topics: list[str] = TOPICS, **metadata_extra):
    """`n` one-question samples, topics in turn (seed 001: 1,500 prompts over 16 topics)."""
    dataset = DatasetFactory(skill=skill("chitchat"), sample_count=n)
    for i in range(n):
        SampleFactory(
            dataset=dataset,
            skill=skill("chitchat"),
            context=[f"第 {i} 个问题：你怎么看{topics[i % len(topics)]}？"],
            metadata={"topic": topics[i % len(topics)], **metadata_extra},
        )
    return dataset


def test_the_draw_covers_every_topic_and_is_deterministic_with_a_seed():
    dataset = prompt_dataset()
    drawn = openings_draw(dataset=dataset, count=20, seed=7)
    assert len(drawn) == 20
    assert len({d.sample_id for d in drawn}) == 20
    assert {d.topic for d in drawn} == set(TOPICS)
    assert [d.sample_index for d in drawn] == sorted(d.sample_index for d in drawn)
    assert all(d.text.startswith("第 ") for d in drawn)
    assert openings_draw(dataset=dataset, count=20, seed=7) == drawn
    others = [openings_draw(dataset=dataset, count=20, seed=seed) for seed in range(1, 6)]
    assert any(other != drawn for other in others)
    assert all({d.topic for d in other} == set(TOPICS) for other in others)


def test_as_many_openings_as_topics_takes_exactly_one_per_topic():
    drawn = openings_draw(dataset=prompt_dataset(), count=16, seed=0)
    assert sorted(d.topic for d in drawn) == TOPICS


def test_more_topics_than_openings_is_refused_naming_both_numbers():
    with pytest.raises(OpeningDrawError) as exc:
        openings_draw(dataset=prompt_dataset(), count=10, seed=0)
    assert exc.value.field == "opening_count"
    assert "16" in str(exc.value) and "10" in str(exc.value)


def test_too_few_samples_and_a_dataset_without_topics_are_refused():
    with pytest.raises(OpeningDrawError) as exc:
        openings_draw(dataset=prompt_dataset(n=18), count=20, seed=0)
    assert "18" in str(exc.value) and "20" in str(exc.value)
    untagged = DatasetFactory()
    SampleFactory(dataset=untagged)
    with pytest.raises(OpeningDrawError) as exc:
        openings_draw(dataset=untagged, count=1, seed=0)
    assert exc.value.field == "opening_dataset" and "topic" in str(exc.value)


def _campaign(**options) -> Campaign:
    return study(
        backends=2, scenarios={"knowledge": 3}, opening_dataset=prompt_dataset(), **options
    )


def test_the_campaign_stores_the_drawn_set_with_samples_and_topics():
    campaign = _campaign(opening_count=20, opening_seed=3)
    stored = list(campaign.openings.order_by("position"))
    drawn = openings_draw(dataset=campaign.opening_dataset, count=20, seed=3)
    assert [(o.sample_id, o.topic, o.text) for o in stored] == [
        (d.sample_id, d.topic, d.text) for d in drawn
    ]
    assert [o.position for o in stored] == list(range(20))


def test_a_new_dialogue_starts_with_an_opening_as_its_first_user_turn():
    campaign = _campaign()
    dialogue = scenario_assign_next(participant=participant(campaign))
    turns = list(dialogue.turns.all())
    assert dialogue.opening is not None and dialogue.opening.campaign == campaign
    assert [(t.index, t.speaker, t.text) for t in turns] == [
        (0, Turn.Speaker.USER, dialogue.opening.text)
    ]


def test_openings_are_used_evenly_per_backend_least_used_first():
    campaign = study(
        backends=2,
        scenarios={"knowledge": 30},
        opening_dataset=prompt_dataset(n=4, topics=["甲", "乙"]),
        opening_count=3,
    )
    dialogues = [scenario_assign_next(participant=participant(campaign)) for _ in range(12)]
    by_backend: dict[int, Counter[int]] = {}
    for dialogue in dialogues:
        by_backend.setdefault(dialogue.backend_id, Counter())[dialogue.opening_id] += 1
    assert len(by_backend) == 2
    for counts in by_backend.values():
        assert sorted(counts.values()) == [2, 2, 2]
    usage = opening_usage(campaign=campaign)
    assert [use.used for use in usage] == [4, 4, 4]


def test_an_abandoned_dialogue_gives_its_opening_back():
    campaign = study(
        backends=1,
        scenarios={"knowledge": 5},
        opening_dataset=prompt_dataset(n=4, topics=["甲", "乙"]),
        opening_count=2,
    )
    first = scenario_assign_next(participant=participant(campaign))
    dialogue_abandon(dialogue=first, reason=Dialogue.AbandonReason.UNCLEAR)
    second = scenario_assign_next(participant=participant(campaign))
    assert second.opening == first.opening
    assert [use.used for use in opening_usage(campaign=campaign)] == [1, 0]


def test_a_recollection_keeps_the_rejected_dialogues_opening():
    campaign = _campaign()
    dialogue = scenario_assign_next(participant=participant(campaign))
    Dialogue.objects.filter(pk=dialogue.pk).update(status=Dialogue.Status.REJECTED)
    again = dialogue_recollect(dialogue=dialogue)
    assert again.opening == dialogue.opening
    assert again.turns.get().text == dialogue.opening.text


def test_without_the_option_the_worker_opens_the_dialogue():
    campaign = study()
    dialogue = scenario_assign_next(participant=participant(campaign))
    assert dialogue.opening is None and not dialogue.turns.exists()
    assert not campaign.openings.exists()


def _create(**options) -> Campaign:
    return campaign_create(
        name="seed-001",
        mode=options.pop("mode", Campaign.Mode.INTERACTIVE),
        skills=["knowledge"],
        backends=[BackendFactory()],
        datasets=[],
        created_by=None,
        **options,
    )


def test_the_service_refuses_with_the_field_named():
    with pytest.raises(CampaignError) as exc:
        _create(opening_dataset=prompt_dataset(), opening_count=5)
    assert "opening_count" in exc.value.errors and "16" in exc.value.errors["opening_count"]
    with pytest.raises(CampaignError) as exc:
        _create(opening_dataset=prompt_dataset(), mode=Campaign.Mode.STATIC)
    assert "opening_dataset" in exc.value.errors
    with pytest.raises(CampaignError) as exc:
        _create(opening_dataset=prompt_dataset(), opening_count=0)
    assert "opening_count" in exc.value.errors
    assert not Campaign.objects.exists() and not CampaignOpening.objects.exists()


def test_the_set_is_redrawn_on_change_and_fixed_once_used():
    campaign = _campaign(opening_seed=1)
    before = list(campaign.openings.values_list("sample_id", flat=True))
    campaign_update(campaign=campaign, opening_seed=2)
    after = list(campaign.openings.values_list("sample_id", flat=True))
    assert after != before and len(after) == 20
    campaign_update(campaign=campaign, max_turns=5)  # other settings keep the set
    assert list(campaign.openings.values_list("sample_id", flat=True)) == after
    scenario_assign_next(participant=participant(campaign))
    with pytest.raises(CampaignError) as exc:
        campaign_update(campaign=campaign, opening_seed=3)
    assert "opening_dataset" in exc.value.errors
    with pytest.raises(CampaignError):
        campaign_update(campaign=campaign, opening_dataset=None)
    assert list(campaign.openings.values_list("sample_id", flat=True)) == after


def test_turning_the_option_off_removes_the_unused_set():
    campaign = _campaign()
    campaign_update(campaign=campaign, opening_dataset=None)
    campaign.refresh_from_db()
    assert campaign.opening_dataset is None and not campaign.openings.exists()


def test_the_export_names_each_dialogues_opening():
    campaign = _campaign()
    dialogue = scenario_assign_next(participant=participant(campaign))
    (line,) = [json.loads(line) for line in dialogue_export_lines(campaign=campaign)]
    assert line["opening"] == {
        "dataset": campaign.opening_dataset.name,
        "sample": dialogue.opening.sample.external_id,
        "topic": dialogue.opening.topic,
    }
    assert line["turns"][0] == {
        **line["turns"][0],
        "speaker": "user",
        "text": dialogue.opening.text,
    }


def test_a_used_opening_cannot_be_deleted_alone_but_goes_with_its_campaign():
    campaign = _campaign()
    dialogue = scenario_assign_next(participant=participant(campaign))
    with pytest.raises(RestrictedError):
        dialogue.opening.delete()
    campaign.delete()
    assert not CampaignOpening.objects.exists() and not Dialogue.objects.exists()
