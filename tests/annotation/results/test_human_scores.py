"""Ratings in the database become scores through the kernels: each preset, hand-computed."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, JobRater
from annotation.selectors.human_scores import (
    dialogue_score_rows,
    human_scores,
    normalised_system_scores,
    system_score_rows,
)
from tests.annotation.results.factories import (
    SINGLE_SECOND,
    dialogue_with_turns,
    expert,
    job_for,
    model_turn,
    multi,
    rate,
    single,
)
from tests.chat.factories import BackendFactory

pytestmark = pytest.mark.django_db


def by(rows, **match):
    found = [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


@pytest.fixture
def msde_job():
    """MSDE: skill-dependent dimensions, two systems, plus ratings that must not count."""
    job = job_for("msde")
    a, b = BackendFactory(name="系统A"), BackendFactory(name="系统B")
    d1 = dialogue_with_turns(job.campaign, a, skill_key="knowledge")
    d2 = dialogue_with_turns(job.campaign, a, skill_key="chitchat")
    d3 = dialogue_with_turns(job.campaign, b, skill_key="knowledge")
    d4 = dialogue_with_turns(job.campaign, b, skill_key="knowledge")
    rate(job, d1, "r1", {"info": 2, "coh": 1, "know": 2})
    rate(job, d1, "r2", {"info": 1, "coh": 1, "know": 1})
    rate(job, d1, "r3", {"info": 2, "coh": 2, "know": 0})
    rate(job, d2, "r1", {"info": 0, "coh": 2})
    rate(job, d2, "r2", {"info": 1, "coh": 2})
    rate(job, d3, "r1", {"info": 1, "coh": 1, "know": 1})
    rate(job, d4, "r2", {"info": 2, "coh": 2, "know": 2})
    # Not counted: gold, duplicate and onboarding items, an unsubmitted assignment, a blocked
    # rater, and another job's ratings.
    zeros = {"info": 0, "coh": 0, "know": 0}
    rate(job, d1, "gold-rater", zeros, kind=Assignment.Kind.GOLD)
    rate(job, d1, "r4", zeros, kind=Assignment.Kind.ONBOARDING)
    original = rate(job, d4, "r5", zeros, status=Assignment.Status.IN_PROGRESS)
    rate(job, d4, "r5", zeros, kind=Assignment.Kind.DUPLICATE, duplicate_of=original)
    rate(job, d3, "r3", zeros, status=Assignment.Status.IN_PROGRESS)
    blocked = rate(job, d3, "blocked", zeros)
    JobRater.objects.create(job=job, rater=blocked.rater, state=JobRater.State.BLOCKED)
    JobRater.objects.create(job=job, rater=expert("r1"), state=JobRater.State.ACTIVE)
    other = job_for("msde", campaign=job.campaign, name="other")
    rate(other, d1, "r1", {"info": 0, "coh": 0, "know": 0})
    return job, (d1, d2, d3, d4)


def test_msde_dialogue_scores_are_the_mean_over_raters_of_the_dimensions_that_apply(msde_job):
    job, (d1, d2, _, _) = msde_job
    rows = human_scores(job=job, level="dialogue")
    assert by(rows, dialogue_id=d1.pk, dimension="info").value == pytest.approx(5 / 3)
    assert by(rows, dialogue_id=d1.pk, dimension="know").value == pytest.approx(1.0)
    # overall per rater: 5/3, 1, 4/3 → mean 4/3
    overall = by(rows, dialogue_id=d1.pk, dimension="overall")
    assert (overall.value, overall.n_raters) == (pytest.approx(4 / 3), 3)
    assert (overall.backend, overall.skill, overall.turn_id) == ("系统A", "knowledge", None)
    chat = [r for r in rows if r.dialogue_id == d2.pk]
    assert {r.dimension for r in chat} == {"info", "coh", "overall"}  # no Know for chit-chat
    assert by(chat, dimension="overall").value == pytest.approx(1.25)
    assert human_scores(job=job, level="turn") == []  # MSDE has no turn-level questions


def test_msde_system_rows_rank_the_systems_per_skill_and_dimension(msde_job):
    job, _ = msde_job
    rows = system_score_rows(job=job, n_boot=200)
    info_a = by(rows, unit="系统A", skill="knowledge", dimension="info")
    info_b = by(rows, unit="系统B", skill="knowledge", dimension="info")
    assert (info_a.mean, info_a.n, info_a.rank) == (pytest.approx(5 / 3), 1, 1)
    assert (info_b.mean, info_b.n, info_b.rank) == (pytest.approx(1.5), 2, 2)
    assert info_b.std == pytest.approx(0.7071, abs=1e-4)
    assert info_b.ci_low == pytest.approx(1.0) and info_b.ci_high == pytest.approx(2.0)
    chat = by(rows, unit="系统A", skill="chitchat", dimension="coh")
    assert (chat.mean, chat.rank) == (2.0, 1)
    dialogue_rows = dialogue_score_rows(job=job)
    assert {r.unit for r in dialogue_rows} == {d.pk for d in msde_job[1]}
    assert normalised_system_scores(job=job) == []  # MSDE is not a 0–100 rubric


def test_seed_001_single_turn_gate_rule_and_0_100_normalisation():
    job = job_for("yesno-single-turn")
    a, b = BackendFactory(name="A"), BackendFactory(name="B")
    items = [dialogue_with_turns(job.campaign, sys) for sys in (a, a, b, b)]
    # System A: item 1 = 7 + 0 (gate failed, 10 yes ignored) + 5; item 2 = 3 × 10 → 42 points.
    rate(job, items[0], "r1", single(7))
    rate(job, items[0], "r2", single(10, grammatical=0))
    rate(job, items[0], "r3", single(5))
    for rater in ("r1", "r2", "r3"):
        rate(job, items[1], rater, single(10))
    # System B: item 3 = 3 × 4; item 4 = 0 (unacceptable content) + 6 + 6 → 24 points.
    for rater in ("r1", "r2", "r3"):
        rate(job, items[2], rater, single(4))
    rate(job, items[3], "r1", single(8, unacceptable=1))
    rate(job, items[3], "r2", single(6))
    rate(job, items[3], "r3", single(6))

    # sum / (items × 5 × 2 × raters) × 100: 42 / (2 × 10 × 3) = 70, 24 / 60 = 40.
    scores = normalised_system_scores(job=job)
    pooled = {s.backend: s.score for s in scores if s.skill is None}
    assert pooled == {"A": pytest.approx(70.0), "B": pytest.approx(40.0)}
    assert {(s.backend, s.n_dialogues, s.n_ratings) for s in scores if s.skill is None} == {
        ("A", 2, 6),
        ("B", 2, 6),
    }
    rows = system_score_rows(job=job, n_boot=100)
    assert by(rows, unit="A", dimension="overall").mean == pytest.approx(70.0)
    assert by(rows, unit="A", dimension="overall").rank == 1
    assert by(rows, unit="B", dimension="overall").rank == 2
    # The gate's own dimension is its pass rate: item 1 of A passed for 2 raters of 3.
    first = by(
        human_scores(job=job, level="dialogue"), dialogue_id=items[0].pk, dimension="grammatical"
    )
    assert first.value == pytest.approx(2 / 3)
    gated = by(
        human_scores(job=job, level="dialogue"),
        dialogue_id=items[0].pk,
        dimension=SINGLE_SECOND[9],
    )
    assert gated.value == pytest.approx(0.0)  # only r2 said yes, and r2's gate failed


def test_seed_001_multi_turn_scores_per_turn_and_normalises_over_five_turns():
    job = job_for("yesno-multi-turn")
    dialogue = dialogue_with_turns(job.campaign, BackendFactory(name="M"), model_turns=2)
    rate(job, dialogue, "r1", multi([8, 2]))
    rate(job, dialogue, "r2", multi([4, 0]))
    # 14 points / (1 prompt × 2 × 4 × 5 turns × 2 raters = 80) × 100
    assert normalised_system_scores(job=job)[0].score == pytest.approx(17.5)
    turns = human_scores(job=job, level="turn")
    first, second = model_turn(dialogue, 0), model_turn(dialogue, 1)
    assert by(turns, turn_id=first.pk, dimension="relevance_topic").value == 1.0
    assert by(turns, turn_id=first.pk, dimension="divergence_new").value == 0.5
    assert by(turns, turn_id=first.pk, dimension="overall").value == pytest.approx(75.0)
    assert by(turns, turn_id=second.pk, dimension="overall").value == pytest.approx(12.5)
    assert by(turns, turn_id=second.pk, dimension="overall").n_raters == 2
    assert {r.turn_id for r in turns} == {first.pk, second.pk}


def test_likert_overall_is_the_mean_of_the_items():
    job = job_for("likert")
    dialogue = dialogue_with_turns(job.campaign, BackendFactory(name="L"), skill_key="chitchat")
    rate(job, dialogue, "r1", {"naturalness": 4, "topic_following": 2, "topic_providing": 3})
    rate(job, dialogue, "r2", {"naturalness": 5, "topic_following": 5, "topic_providing": 5})
    rows = human_scores(job=job, level="dialogue")
    assert by(rows, dimension="overall").value == pytest.approx(4.0)  # (3 + 5) / 2
    assert by(rows, dimension="naturalness").value == pytest.approx(4.5)


def test_an_incomplete_submitted_unit_is_skipped_not_fatal():
    job = job_for("likert")
    dialogue = dialogue_with_turns(job.campaign, BackendFactory(name="L"), skill_key="chitchat")
    rate(job, dialogue, "r1", {"naturalness": 4, "topic_following": 2, "topic_providing": 3})
    rate(job, dialogue, "r2", {"naturalness": 1})
    rows = human_scores(job=job, level="dialogue")
    assert by(rows, dimension="naturalness").n_raters == 1
