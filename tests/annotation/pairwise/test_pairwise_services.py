"""ACUTE-style pairwise jobs: pairing on the database, answers and votes, onboarding, QC."""

from collections import Counter

import pytest
from django.core.exceptions import PermissionDenied

from annotation.models import Assignment, JobRater, Rating, RatingJob
from annotation.services import quality
from annotation.services.pairwise import job_pairs, pairwise_votes_include
from annotation.services.pairwise_answers import pairwise_submit
from annotation.services.rating_assignments import RatingJobError, assignment_next, rater_block
from annotation.services.rating_jobs import gold_pair_set, job_create, job_open
from annotation.services.ratings import RatingRuleError, rating_save
from chat.models import Vote, VoteSource
from tests.annotation.factories import rubric
from tests.annotation.pairwise.builders import acute_job, dialogue, study
from tests.chat.factories import SampleFactory

pytestmark = pytest.mark.django_db

QUESTIONS = ("engaging", "interesting", "humanlike", "knowledgeable")


def _answer_all(assignment, user, side="left", reason="更自然，回答切题"):
    return pairwise_submit(
        assignment=assignment, user=user, answers=dict.fromkeys(QUESTIONS, (side, reason))
    )


def test_a_pairwise_job_pairs_every_system_pair_once_per_scenario_with_n_raters():
    s = study(n_scenarios=3, n_systems=3, n_raters=6)
    job = acute_job(s, per_pair=2)
    job_open(job=job)
    pairs = job_pairs(job)
    assert len(pairs) == 3 * 3
    per_scenario = Counter((p.scenario, frozenset(p.systems)) for p in pairs)
    assert set(per_scenario.values()) == {1}
    real = Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL)
    per_pair = Counter(frozenset((a.dialogue_id, a.dialogue_b_id)) for a in real)
    assert set(per_pair.values()) == {2} and len(per_pair) == 9
    # Never the same dialogue twice for a rater.
    shown = Counter()
    for a in real:
        shown[(a.rater_id, a.dialogue_id)] += 1
        shown[(a.rater_id, a.dialogue_b_id)] += 1
    assert max(shown.values()) == 1
    # The vote source is the job's.
    assert job.vote_source.kind == VoteSource.Kind.PAIRWISE_JOB
    assert job.quality_settings["onboarding_threshold"] == 0.75


def test_the_left_right_order_is_drawn_per_assignment_kept_and_reproducible():
    s = study(n_scenarios=6, n_systems=2, n_raters=4)
    job = acute_job(s, per_pair=4)
    job_open(job=job)
    real = list(Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).order_by("pk"))
    first_system = s.systems[0].pk
    left_is_first = [a.dialogue.backend_id == first_system for a in real]
    assert 0 < sum(left_is_first) < len(real)  # both orders occur
    before = [(a.rater_id, a.dialogue_id, a.dialogue_b_id) for a in real]
    job_open(job=job)  # idempotent: nothing moves, nothing is added
    after = [
        (a.rater_id, a.dialogue_id, a.dialogue_b_id)
        for a in Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).order_by("pk")
    ]
    assert before == after


def test_a_rater_never_gets_a_dialogue_they_collected():
    s = study(n_scenarios=1, n_systems=2, n_raters=2)
    collected = s.dialogues[(0, 0)]
    collected.worker = s.raters[0]
    collected.save()
    job = acute_job(s, per_pair=2)
    job_open(job=job)
    raters = set(Assignment.objects.filter(job=job).values_list("rater_id", flat=True))
    assert raters == {s.raters[1].pk}


def test_an_answer_becomes_a_vote_with_a_as_the_left_dialogue_in_one_transaction():
    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    job = acute_job(s, per_pair=1)
    job_open(job=job)
    rater = s.raters[0]
    a = assignment_next(job=job, rater=rater)
    pairwise_submit(
        assignment=a,
        user=rater,
        answers={
            "engaging": ("left", "更愿意聊下去"),
            "interesting": ("right", "右边讲了新东西"),
            "humanlike": ("left", "语气自然"),
            "knowledgeable": ("right", "知道导演是谁"),
        },
    )
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED
    votes = {v.question: v for v in Vote.objects.filter(source=job.vote_source)}
    assert set(votes) == set(QUESTIONS)
    engaging = votes["engaging"]
    assert engaging.dialogue_a_id == a.dialogue_id and engaging.dialogue_b_id == a.dialogue_b_id
    assert engaging.system_a_id == a.dialogue.backend_id
    assert engaging.outcome == Vote.Outcome.A and votes["interesting"].outcome == Vote.Outcome.B
    assert engaging.item == str(a.dialogue.scenario_id)
    assert engaging.voter_kind == Vote.VoterKind.HUMAN and engaging.voter_user == rater
    assert engaging.voter.startswith("w") and rater.username not in engaging.voter
    assert engaging.reason == "更愿意聊下去" and engaging.excluded_reason == ""
    assert Rating.objects.get(assignment=a, question="interesting").value == 1.0


def test_a_missing_reason_or_side_is_refused_and_nothing_is_stored():
    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    job = acute_job(s, per_pair=1)
    job_open(job=job)
    rater = s.raters[0]
    a = assignment_next(job=job, rater=rater)
    answers = dict.fromkeys(QUESTIONS, ("left", "理由"))
    answers["humanlike"] = ("left", "  ")
    with pytest.raises(RatingRuleError, match="humanlike.reason"):
        pairwise_submit(assignment=a, user=rater, answers=answers)
    answers["humanlike"] = ("tie", "都差不多")
    with pytest.raises(RatingRuleError, match="humanlike"):
        pairwise_submit(assignment=a, user=rater, answers=answers)
    assert not Rating.objects.filter(assignment=a).exists()
    assert not Vote.objects.exists()
    # The absolute autosave cannot write a side without a reason.
    with pytest.raises(RatingRuleError):
        rating_save(assignment=a, user=rater, question="engaging", value=0)
    with pytest.raises(PermissionDenied):
        pairwise_submit(assignment=a, user=s.raters[0].__class__(pk=10**6), answers=answers)


def _onboarding_study():
    s = study(n_scenarios=2, n_systems=2, n_raters=2)
    scenario = SampleFactory()
    good = dialogue(s.campaign, s.systems[0], scenario, ["你好", "你好！今天过得怎么样？"])
    broken = dialogue(s.campaign, s.systems[1], scenario, ["你好", "的的的的的 的的的"])
    job = acute_job(s, per_pair=1)
    gold_pair_set(job=job, better=good, worse=broken, purpose="onboarding")
    return s, job, good


def test_onboarding_comes_first_and_a_rater_below_the_threshold_is_blocked_and_excluded():
    s, job, good = _onboarding_study()
    job_open(job=job)
    careful, careless = s.raters
    # Real work waits for the onboarding pair.
    assert not Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).exists()
    first = assignment_next(job=job, rater=careless)
    assert first.kind == Assignment.Kind.ONBOARDING
    wrong = "right" if first.dialogue_id == good.pk else "left"
    _answer_all(first, careless, side=wrong)
    member = JobRater.objects.get(job=job, rater=careless)
    assert member.state == JobRater.State.FAILED_SCREENING and "75%" in member.reason
    assert assignment_next(job=job, rater=careless) is None
    assert not Vote.objects.exists()  # onboarding answers are not votes

    mine = assignment_next(job=job, rater=careful)
    right = "left" if mine.dialogue_id == good.pk else "right"
    _answer_all(mine, careful, side=right)
    assert quality.onboarding_result(job=job, rater=careful)[0] == quality.Onboarding.PASSED
    real = assignment_next(job=job, rater=careful)
    assert real.kind == Assignment.Kind.REAL
    # The careful rater now holds every real pair (the careless one gets none).
    assert set(
        Assignment.objects.filter(job=job, kind=Assignment.Kind.REAL).values_list(
            "rater_id", flat=True
        )
    ) == {careful.pk}


def test_blocking_a_rater_excludes_their_votes_and_the_switch_includes_them_again():
    s = study(n_scenarios=2, n_systems=2, n_raters=1)
    job = acute_job(s, per_pair=1)
    job_open(job=job)
    rater = s.raters[0]
    _answer_all(assignment_next(job=job, rater=rater), rater)
    rater_block(job=job, rater=rater, reason="总选左边", by=None)
    votes = Vote.objects.filter(source=job.vote_source)
    assert votes.count() == 4
    assert set(votes.values_list("excluded_reason", flat=True)) == {"已屏蔽：总选左边"}
    assert pairwise_votes_include(job=job, rater=rater) == 4
    assert set(votes.values_list("excluded_reason", flat=True)) == {""}


def test_always_choosing_the_left_side_is_flagged():
    s = study(n_scenarios=4, n_systems=3, n_raters=1)
    job = acute_job(s, per_pair=1, quality_settings={"pattern_min_items": 3})
    job_open(job=job)
    rater = s.raters[0]
    while (a := assignment_next(job=job, rater=rater)) is not None:
        _answer_all(a, rater, side="left")
    flags = [f for f in quality.job_flags(job) if f.kind == "constant_answers"]
    assert flags and all("left side" in f.detail for f in flags)


def test_gold_pairs_are_mixed_in_and_a_wrong_side_lowers_gold_accuracy():
    s = study(n_scenarios=2, n_systems=2, n_raters=1)
    scenario = SampleFactory()
    good = dialogue(s.campaign, s.systems[0], scenario, ["你好", "你好！"])
    bad = dialogue(s.campaign, s.systems[1], scenario, ["你好", "。。。"])
    job = acute_job(s, per_pair=1, quality_settings={"gold_rate": 0.5})
    gold_pair_set(job=job, better=good, worse=bad, purpose="gold")
    job_open(job=job)
    rater = s.raters[0]
    gold = Assignment.objects.get(job=job, kind=Assignment.Kind.GOLD)
    assert {gold.dialogue_id, gold.dialogue_b_id} == {good.pk, bad.pk}
    wrong = "right" if gold.dialogue_id == good.pk else "left"
    _answer_all(gold, rater, side=wrong)
    assert not Vote.objects.filter(dialogue_a__in=[good, bad]).exists()
    flags = [f for f in quality.job_flags(job) if f.kind == "low_gold_accuracy"]
    assert flags and flags[0].detail.startswith("0/4")


def test_creating_a_pairwise_job_refuses_bad_settings():
    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    with pytest.raises(RatingJobError, match="quality_settings"):
        acute_job(s, quality_settings={"duplicate_rate": 0.1})
    with pytest.raises(RatingJobError, match="mode"):
        job_create(
            name="x", campaign=s.campaign, rubric=rubric("msde"), created_by=None, mode="arena"
        )
    job = acute_job(s, name="ok")
    with pytest.raises(RatingJobError, match="worse"):
        gold_pair_set(
            job=job, better=s.dialogues[(0, 0)], worse=s.dialogues[(0, 0)], purpose="gold"
        )
    with pytest.raises(RatingJobError, match="questions"):
        gold_pair_set(
            job=job,
            better=s.dialogues[(0, 0)],
            worse=s.dialogues[(0, 1)],
            purpose="gold",
            questions=["fluency"],
        )
    assert job.mode == RatingJob.Mode.PAIRWISE


def test_renaming_relabels_the_vote_source_and_deleting_a_draft_removes_it():
    from annotation.services.rating_jobs import job_delete, job_update

    s = study(n_scenarios=1, n_systems=2, n_raters=1)
    job = acute_job(s, name="before")
    job_update(job=job, name="after")
    assert VoteSource.objects.get(pk=job.vote_source_id).label == "after"
    source = job.vote_source_id
    job_delete(job=job)
    assert not VoteSource.objects.filter(pk=source).exists()
