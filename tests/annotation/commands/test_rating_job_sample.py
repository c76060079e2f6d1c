"""Seed 001's sampling after generation: a rating job rates a seeded sample of each system's
dialogues (form, API and `create_rating_job`), drawn once when the job opens."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import RatingJob
from annotation.selectors.rating import draw_sample, job_dialogues
from chat.models import Dialogue
from tests.annotation.factories import dialogue_with_turns, experts, rubric
from tests.chat.factories import CampaignFactory, DatasetFactory, SampleFactory

pytestmark = pytest.mark.django_db


def test_draw_sample_takes_n_per_system_reproducibly():
    candidates = [(pk, "A" if pk % 2 else "B", None) for pk in range(1, 21)]
    first = draw_sample(candidates, size=3, seed=5)
    assert first == draw_sample(list(reversed(candidates)), size=3, seed=5)
    assert sum(pk % 2 for pk in first) == 3 and len(first) == 6
    assert draw_sample(candidates, size=3, seed=6) != first
    assert draw_sample(candidates, size=50, seed=5) == list(range(1, 21))


def test_draw_sample_keeps_the_same_prompts_for_every_system():
    # 2 systems × 6 prompts: the 3 drawn prompts are the same for both systems.
    candidates = [(10 * s + p, f"sys{s}", 100 + p) for s in (1, 2) for p in range(6)]
    picked = draw_sample(candidates, size=3, seed=1)
    prompts = {s: {pk % 10 for pk in picked if pk // 10 == s} for s in (1, 2)}
    assert len(picked) == 6 and prompts[1] == prompts[2] and len(prompts[1]) == 3


def _campaign_with_two_systems(per_system=5, with_scenarios=False):
    campaign = CampaignFactory(name="采样")
    dataset = DatasetFactory()
    prompts = [SampleFactory(dataset=dataset) for _ in range(per_system)]
    for _ in range(2):
        first = dialogue_with_turns(campaign=campaign)
        backend = first.backend
        dialogues = [first] + [
            dialogue_with_turns(campaign=campaign) for _ in range(per_system - 1)
        ]
        Dialogue.objects.filter(pk__in=[d.pk for d in dialogues]).update(backend=backend)
        if with_scenarios:
            for dialogue, prompt in zip(dialogues, prompts, strict=True):
                Dialogue.objects.filter(pk=dialogue.pk).update(scenario=prompt)
    return campaign


def test_create_rating_job_samples_each_system_and_keeps_the_draw(capsys):
    _campaign_with_two_systems(per_system=5, with_scenarios=True)
    experts(3)
    call_command("create_rating_job", "--name=s1", "--campaign=采样", "--rubric=msde",
                 "--sample-size=2", "--sample-seed=7", "--open")  # fmt: skip
    job = RatingJob.objects.get(name="s1")
    assert (job.sample_size, job.sample_seed, len(job.sample)) == (2, 7, 4)
    rated = set(job.assignments.filter(kind="real").values_list("dialogue_id", flat=True))
    assert rated == set(job.sample)
    assert job.assignments.filter(kind="real").count() == 4 * 3
    # the same dialogues, size and seed give the same sample in another job
    call_command("create_rating_job", "--name=s2", "--campaign=采样", "--rubric=msde",
                 "--sample-size=2", "--sample-seed=7", "--open")  # fmt: skip
    assert RatingJob.objects.get(name="s2").sample == job.sample
    # a later accepted dialogue does not change an opened job's sample
    dialogue_with_turns(campaign=job.campaign)
    assert set(job_dialogues(job).values_list("pk", flat=True)) == set(job.sample)


def test_a_sample_size_below_one_is_refused_by_the_command():
    CampaignFactory(name="c")
    with pytest.raises(CommandError, match="sample_size"):
        call_command("create_rating_job", "--name=j", "--campaign=c", "--rubric=msde",
                     "--sample-size=0")  # fmt: skip
    assert not RatingJob.objects.filter(name="j").exists()


def test_the_api_and_the_form_take_a_sample(researcher_client):
    campaign = _campaign_with_two_systems(per_system=3)
    experts(3)
    msde = rubric("msde")
    created = researcher_client.post(
        "/api/rating-jobs/",
        {"name": "api-s", "campaign": campaign.pk, "rubric": msde.pk, "sample_size": 1,
         "sample_seed": 3},
        content_type="application/json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    assert (created.json()["sample_size"], created.json()["sample_seed"]) == (1, 3)
    bad = researcher_client.post(
        "/api/rating-jobs/",
        {"name": "api-bad", "campaign": campaign.pk, "rubric": msde.pk, "sample_size": 0},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "sample_size" in bad.content.decode()
    response = researcher_client.post(
        reverse("annotation:job-create"),
        {"name": "form-s", "campaign": campaign.pk, "rubric": msde.pk, "raters_per_dialogue": 3,
         "deadline_hours": 72, "seed": 0, "sample_size": 2, "sample_seed": 9},
    )  # fmt: skip
    assert response.status_code == 302
    job = RatingJob.objects.get(name="form-s")
    assert (job.sample_size, job.sample_seed, job.sample) == (2, 9, [])
    page = researcher_client.get(reverse("annotation:job-detail", args=[job.pk]))
    assert "每个系统 2 段（抽样种子 9）" in page.content.decode()
