"""Prediction-powered Bradley–Terry ratings of a pairwise job (issue 28): the pair sampler and
its recorded design, the service against the kernel, refusals, the panel, the command, the API."""

import json
import random
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment, RatingJob, Rubric
from annotation.selectors.sampling import pair_design
from annotation.services.pairwise import all_job_pairs, job_pairs
from annotation.services.rating_assignments import RatingJobError
from annotation.services.rating_jobs import job_open
from chat.models import Dialogue, Vote, VoteSource
from metrics.analysis.ppi import bradley_terry_ppi
from metrics.services.ppi import PPIError
from metrics.services.ppi_pairwise import pairwise_ppi
from tests.annotation.pairwise.builders import acute_job, study

pytestmark = pytest.mark.django_db

JUDGE = "judge:acute-v1"
QUESTION = "engaging"
SKILL = {0: 0.4, 1: 0.0, 2: -0.4}  # system index → strength


def _sampled(n_scenarios=12, size=16, seed=5, per_pair=2):
    s = study(n_scenarios=n_scenarios, n_systems=3, n_raters=8)
    job = acute_job(s, per_pair=per_pair, pair_sample_size=size, sample_seed=seed)
    job_open(job=job)
    job.refresh_from_db()
    return s, job


def _vote(campaign, source, a: Dialogue, b: Dialogue, outcome, voter, kind):
    return Vote(
        campaign=campaign,
        source=source,
        item=str(a.scenario_id),
        system_a=a.backend,
        system_b=b.backend,
        dialogue_a=a,
        dialogue_b=b,
        outcome=outcome,
        voter_kind=kind,
        voter=voter,
        question=QUESTION,
    )


def _winner(rng, a: Dialogue, b: Dialogue, systems) -> str:
    index = {system.pk: i for i, system in enumerate(systems)}
    gap = SKILL[index[a.backend_id]] - SKILL[index[b.backend_id]]
    return Vote.Outcome.A if rng.random() < 1 / (1 + np.exp(-gap)) else Vote.Outcome.B


def _votes(s, job, *, judge_pairs=None, human_pairs=None, raters=2, seed=0):
    """Judge votes in both orders on `judge_pairs` (default: every comparison) and `raters`
    human votes on `human_pairs` (default: the drawn ones)."""
    rng = random.Random(seed)
    dialogues = Dialogue.objects.in_bulk()
    source = VoteSource.objects.create(campaign=s.campaign, kind=VoteSource.Kind.JUDGE)
    rows = []
    for first, second in judge_pairs if judge_pairs is not None else pair_design(job).population:
        a, b = dialogues[first], dialogues[second]
        outcome = _winner(rng, a, b, s.systems)
        rows.append(_vote(s.campaign, source, a, b, outcome, JUDGE, Vote.VoterKind.JUDGE))
        # The swapped order agrees most of the time; when it does not, the pair is a tie.
        swapped = {Vote.Outcome.A: Vote.Outcome.B, Vote.Outcome.B: Vote.Outcome.A}[outcome]
        if rng.random() < 0.2:
            swapped = outcome
        rows.append(_vote(s.campaign, source, b, a, swapped, JUDGE, Vote.VoterKind.JUDGE))
    for first, second in human_pairs if human_pairs is not None else pair_design(job).drawn:
        for r in range(raters):
            a, b = dialogues[first], dialogues[second]
            if r % 2:
                a, b = b, a
            outcome = _winner(rng, a, b, s.systems)
            rows.append(
                _vote(s.campaign, job.vote_source, a, b, outcome, f"r{r}", Vote.VoterKind.HUMAN)
            )
    Vote.objects.bulk_create(rows)


# --- the pair sampler ---------------------------------------------------------------------------


def test_the_job_rates_a_seeded_random_subset_of_its_comparisons_and_records_pi():
    s, job = _sampled(n_scenarios=8, size=10, seed=5)
    population = sorted(p.key for p in all_job_pairs(job))
    assert len(population) == 8 * 3
    design = pair_design(job)
    assert design.kind == "random" and design.seed == 5
    assert sorted(design.population) == population
    assert len(design.drawn) == 10 and set(design.drawn) <= set(population)
    assert design.inclusion == pytest.approx(10 / 24)
    # Only the drawn comparisons are assigned, each to the job's raters per pair.
    assert sorted(p.key for p in job_pairs(job)) == sorted(design.drawn)
    real = Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL)
    assert {tuple(sorted((a.dialogue_id, a.dialogue_b_id))) for a in real} == {
        tuple(sorted(k)) for k in design.drawn
    }
    # The same seed draws the same comparisons; another seed another subset.
    same = acute_job(s, name="again", pair_sample_size=10, sample_seed=5)
    job_open(job=same)
    same.refresh_from_db()
    assert pair_design(same).drawn == design.drawn
    other = acute_job(s, name="other", pair_sample_size=10, sample_seed=6)
    job_open(job=other)
    other.refresh_from_db()
    assert pair_design(other).drawn != design.drawn
    # Reopening keeps the draw.
    job_open(job=job)
    job.refresh_from_db()
    assert pair_design(job).drawn == design.drawn


def test_pair_sampling_is_refused_outside_pairwise_jobs_and_beside_a_dialogue_sample():
    s = study(n_scenarios=2)
    with pytest.raises(RatingJobError, match="sample_size"):
        acute_job(s, pair_sample_size=3, sample_size=1)
    with pytest.raises(RatingJobError, match="pair_sample_size"):
        acute_job(s, name="zero", pair_sample_size=0)


# --- the service ----------------------------------------------------------------------------------


def test_the_service_equals_the_kernel_on_the_same_arrays():
    s, job = _sampled()
    _votes(s, job)
    result = pairwise_ppi(job=job, judge=JUDGE, question=QUESTION, alpha=0.1)
    design = pair_design(job)
    dialogues = Dialogue.objects.in_bulk()
    names = sorted(system.name for system in s.systems)
    index = {name: i for i, name in enumerate(names)}
    system_of = {pk: d.backend.name for pk, d in dialogues.items()}

    def value(outcome, first_is_a):
        if outcome == Vote.Outcome.A:
            return 1.0 if first_is_a else 0.0
        if outcome == Vote.Outcome.B:
            return 0.0 if first_is_a else 1.0
        return 0.5

    judge_all = []
    for first, second in design.population:
        votes = {
            (v.dialogue_a_id, v.dialogue_b_id): v.outcome
            for v in Vote.objects.filter(voter=JUDGE, dialogue_a__in=(first, second))
        }
        forward = value(votes[(first, second)], True)
        backward = value(votes[(second, first)], False)
        judge_all.append(forward if forward == backward else 0.5)
    labelled, human = [], []
    for i, key in enumerate(design.population):
        if key not in design.drawn:
            continue
        own = Vote.objects.filter(source=job.vote_source, dialogue_a__in=key, dialogue_b__in=key)
        labelled.append(i)
        human.append(np.mean([value(v.outcome, v.dialogue_a_id == key[0]) for v in own]))
    pairs_all = np.array([[index[system_of[a]], index[system_of[b]]] for a, b in design.population])
    direct = bradley_terry_ppi(
        3,
        pairs_all,
        np.array(judge_all),
        np.array(labelled),
        np.array(human),
        pi=[16 / 36] * len(labelled),
        alpha=0.1,
    )
    assert [row["system"] for row in result["systems"]] == names
    got = np.array([row["ppi"]["rating"] for row in result["systems"]])
    np.testing.assert_allclose(got, direct.rating)
    np.testing.assert_allclose([r["ppi"]["low"] for r in result["systems"]], direct.low)
    np.testing.assert_allclose(
        [r["human_only"]["high"] for r in result["systems"]], direct.human_only_high
    )
    assert result["n_labelled"] == 16 and result["n_comparisons"] == 36
    assert result["human_votes"] == 32
    for i, row in enumerate(result["systems"]):
        width = direct.high[i] - direct.low[i]
        human_width = direct.human_only_high[i] - direct.human_only_low[i]
        assert row["effective_n"] == pytest.approx(16 * (human_width / width) ** 2)
    agreement = result["agreement"]
    assert 0 <= agreement["matched"] <= agreement["total"] == 16


def test_refusals_say_why():
    s, job = _sampled()
    with pytest.raises(PPIError, match="no votes"):
        pairwise_ppi(job=job, judge=JUDGE, question=QUESTION)
    design = pair_design(job)
    # The judge missed a comparison people voted on.
    _votes(s, job, judge_pairs=[k for k in design.population if k != design.drawn[0]])
    with pytest.raises(PPIError, match="did not vote on 1 of the 16"):
        pairwise_ppi(job=job, judge=JUDGE, question=QUESTION)
    with pytest.raises(PPIError, match="no question"):
        pairwise_ppi(job=job, judge=JUDGE, question="nope")
    with pytest.raises(PPIError, match="not a judge"):
        pairwise_ppi(job=job, judge="humans", question=QUESTION)


def test_fewer_than_two_labelled_comparisons_are_refused():
    s, job = _sampled()
    _votes(s, job, human_pairs=pair_design(job).drawn[:1])
    with pytest.raises(PPIError, match="at least 2 drawn comparisons, got 1"):
        pairwise_ppi(job=job, judge=JUDGE, question=QUESTION)


def test_a_job_that_rates_every_comparison_is_refused():
    s = study(n_scenarios=3)
    job = acute_job(s)
    job_open(job=job)
    with pytest.raises(PPIError, match="every comparison"):
        pairwise_ppi(job=job, judge=JUDGE, question=QUESTION)
    everything = acute_job(s, name="all", pair_sample_size=100)
    job_open(job=everything)
    everything.refresh_from_db()
    with pytest.raises(PPIError, match="took all 9 comparisons"):
        pairwise_ppi(job=everything, judge=JUDGE, question=QUESTION)
    undrawn = acute_job(s, name="draft", pair_sample_size=4)
    with pytest.raises(PPIError, match="not been drawn"):
        pairwise_ppi(job=undrawn, judge=JUDGE, question=QUESTION)


# --- the command, the API, the panel ---------------------------------------------------------


def test_the_command_prints_the_ratings_and_json():
    s, job = _sampled()
    _votes(s, job)
    out = StringIO()
    call_command(
        "ppi_pairwise", job=job.name, judge="judge:acute", question=QUESTION, json=True, stdout=out
    )
    data = json.loads(out.getvalue())
    assert data["judge"] == JUDGE and len(data["systems"]) == 3
    out = StringIO()
    call_command("ppi_pairwise", job=job.name, judge=JUDGE, question=QUESTION, stdout=out)
    text = out.getvalue()
    assert all(system.name in text for system in s.systems) and "effective" in text


def test_the_api_and_the_job_panel(researcher, researcher_client):
    s, job = _sampled()
    _votes(s, job)
    api = APIClient()
    api.force_authenticate(researcher)
    url = reverse("api-rating-job-ppi-pairwise", args=[job.pk])
    response = api.post(url, {"judge": JUDGE, "question": QUESTION}, format="json")
    assert response.status_code == 200, response.content[:300]
    assert len(response.json()["systems"]) == 3
    bad = api.post(url, {"judge": JUDGE, "question": "nope"}, format="json")
    assert bad.status_code == 400 and "nope" in bad.content.decode()
    long = api.post(url, {"judge": "j" * 5000, "question": QUESTION}, format="json")
    assert long.status_code == 400 and "judge" in long.json()
    page = researcher_client.get(
        reverse("annotation:job-detail", args=[job.pk]),
        {"ppi_judge": JUDGE, "ppi_question": QUESTION},
    )
    html = page.content.decode()
    assert 'id="job-panel-ppi-pairwise"' in html and "等效样本量" in html
    assert all(system.name in html for system in s.systems)
    refused = researcher_client.get(
        reverse("annotation:job-detail", args=[job.pk]), {"ppi_judge": "judge:none"}
    )
    assert "has no votes" in refused.content.decode()


def test_the_create_command_and_api_take_a_pair_sample_size(researcher):
    s = study(n_scenarios=4, n_systems=3, n_raters=4)
    call_command(
        "create_rating_job",
        "--name=cmd-pairs",
        f"--campaign={s.campaign.name}",
        "--mode=pairwise",
        "--questions=acute",
        "--raters-per-pair=1",
        f"--experts={','.join(u.username for u in s.raters)}",
        "--pair-sample-size=5",
        "--sample-seed=3",
        "--open",
        stdout=StringIO(),
    )
    job = RatingJob.objects.get(name="cmd-pairs")
    design = pair_design(job)
    assert design.kind == "random" and len(design.drawn) == 5 and len(design.population) == 12
    assert Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).count() == 5
    api = APIClient()
    api.force_authenticate(researcher)
    body = {
        "name": "api-pairs",
        "campaign": s.campaign.pk,
        "rubric": job.rubric_id,
        "mode": "pairwise",
        "raters_per_dialogue": 1,
        "pair_sample_size": 4,
    }
    created = api.post("/api/rating-jobs/", body, format="json")
    assert created.status_code == 201, created.content[:300]
    assert created.json()["pair_sample_size"] == 4
    absolute = api.post(
        "/api/rating-jobs/", {**body, "name": "abs", "mode": "absolute"}, format="json"
    )
    assert absolute.status_code == 400 and "pair_sample_size" in absolute.content.decode()


def test_the_job_form_takes_a_pair_sample_size_and_the_page_shows_the_draw(researcher_client):
    s = study(n_scenarios=3, n_systems=3, n_raters=2)
    form = {
        "name": "form-pairs",
        "mode": "pairwise",
        "campaign": s.campaign.pk,
        "rubric": Rubric.objects.get(key="acute-eval").pk,
        "raters_per_dialogue": 1,
        "raters": [u.pk for u in s.raters],
        "deadline_hours": 72,
        "seed": 0,
        "sample_seed": 2,
        "pair_sample_size": 4,
    }
    response = researcher_client.post(reverse("annotation:job-create"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    job = RatingJob.objects.get(name="form-pairs")
    assert job.pair_sample_size == 4
    job_open(job=job)
    page = researcher_client.get(reverse("annotation:job-detail", args=[job.pk]))
    html = page.content.decode()
    assert 'id="job-pair-sample"' in html and "4 / 9" in html
    # No judge has voted yet: the panel says so instead of a table.
    assert "no judge has voted" in html
    refused = researcher_client.post(
        reverse("annotation:job-create"), {**form, "name": "abs", "mode": "absolute"}
    )
    assert refused.status_code == 400 and "pair_sample_size" in refused.content.decode()
