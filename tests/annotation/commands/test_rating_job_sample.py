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


def _interactive(systems, scenarios_of, per_scenario=3):
    """(pk, system, scenario) rows of an interactive campaign: each system collected each of its
    scenarios `per_scenario` times (three workers per scenario and system)."""
    rows, pk = [], 0
    for system in systems:
        for scenario in scenarios_of[system]:
            for _ in range(per_scenario):
                pk += 1
                rows.append((pk, system, scenario))
    return rows


def test_draw_sample_counts_dialogues_per_system_when_scenarios_repeat():
    # 2 systems × 4 scenarios × 3 dialogues: sample 2 is 2 dialogues per system (it was every
    # dialogue of 2 drawn scenarios: 6 per system), on the same 2 scenarios for both.
    rows = _interactive(["A", "B"], {"A": [1, 2, 3, 4], "B": [1, 2, 3, 4]})
    system = {pk: s for pk, s, _ in rows}
    scenario = {pk: sc for pk, _, sc in rows}
    for seed in range(5):
        picked = draw_sample(rows, size=2, seed=seed)
        assert [system[pk] for pk in picked].count("A") == 2
        assert [system[pk] for pk in picked].count("B") == 2
        on = {s: sorted(scenario[pk] for pk in picked if system[pk] == s) for s in "AB"}
        assert on["A"] == on["B"] and len(set(on["A"])) == 2
    assert draw_sample(rows, size=2, seed=3) == draw_sample(rows[::-1], size=2, seed=3)


def test_draw_sample_gives_a_system_missing_a_scenario_its_n_on_shared_scenarios_first():
    # B never collected scenario 4: every seed pairs both systems on shared scenarios, and B
    # still gets N dialogues (it used to get fewer when scenario 4 was drawn).
    rows = _interactive(["A", "B"], {"A": [1, 2, 3, 4], "B": [1, 2, 3]})
    system = {pk: s for pk, s, _ in rows}
    scenario = {pk: sc for pk, _, sc in rows}
    for seed in range(8):
        picked = draw_sample(rows, size=3, seed=seed)
        on = {s: sorted(scenario[pk] for pk in picked if system[pk] == s) for s in "AB"}
        assert on == {"A": [1, 2, 3], "B": [1, 2, 3]}
        more = draw_sample(rows, size=4, seed=seed)
        on = {s: sorted(scenario[pk] for pk in more if system[pk] == s) for s in "AB"}
        assert on["A"] == [1, 2, 3, 4]
        assert len(on["B"]) == 4 and set(on["B"]) == {1, 2, 3}


def _campaign_with_repeated_scenarios(scenarios_per_system):
    campaign = CampaignFactory(name="交互采样")
    dataset = DatasetFactory()
    prompts = [SampleFactory(dataset=dataset) for _ in range(max(scenarios_per_system))]
    for n_scenarios in scenarios_per_system:
        first = dialogue_with_turns(campaign=campaign)
        dialogues = [first] + [
            dialogue_with_turns(campaign=campaign) for _ in range(3 * n_scenarios - 1)
        ]
        for i, dialogue in enumerate(dialogues):
            Dialogue.objects.filter(pk=dialogue.pk).update(
                backend=first.backend, scenario=prompts[i // 3]
            )
    return campaign


def test_a_job_reports_how_its_sample_was_paired(researcher_client):
    campaign = _campaign_with_repeated_scenarios([4, 3])
    experts(3)
    msde = rubric("msde")
    call_command("create_rating_job", "--name=paired", "--campaign=交互采样", "--rubric=msde",
                 "--sample-size=2", "--sample-seed=1", "--open")  # fmt: skip
    job = RatingJob.objects.get(name="paired")
    assert len(job.sample) == 4
    assert job.assignments.filter(kind="real").count() == 4 * 3
    api = researcher_client.get(f"/api/rating-jobs/{job.pk}/").json()
    assert api["sample_pairing"]["unpaired_scenarios"] == 0
    assert sorted(api["sample_pairing"]["per_system"].values()) == [2, 2]
    # 4 per system: the second system has 3 scenarios, so one scenario is rated for one only.
    call_command("create_rating_job", "--name=unpaired", "--campaign=交互采样", "--rubric=msde",
                 "--sample-size=4", "--sample-seed=1", "--open")  # fmt: skip
    job = RatingJob.objects.get(name="unpaired", campaign=campaign, rubric=msde)
    assert len(job.sample) == 8
    api = researcher_client.get(f"/api/rating-jobs/{job.pk}/").json()
    assert api["sample_pairing"]["unpaired_scenarios"] == 1
    assert api["sample_pairing"]["short_systems"] == []
    page = researcher_client.get(reverse("annotation:job-detail", args=[job.pk]))
    assert page.status_code == 200
    assert "1 个场景不是每个系统都有对话，这些场景没有配对" in page.content.decode()
