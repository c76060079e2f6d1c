"""Rater quality in a job: onboarding gate, gold items, duplicates, time and pattern flags."""

import math
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, GoldItem, JobRater, Rating
from annotation.rater_quality import FlagKind
from annotation.services.quality import (
    Onboarding,
    QualitySettings,
    QualitySettingsError,
    job_flags,
    onboarding_result,
)
from annotation.services.rating_assignments import RatingJobError, assignment_next
from annotation.services.rating_jobs import gold_item_set, job_create, job_open
from annotation.services.ratings import assignment_submit, rating_save
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts, rubric


def _job(campaign, raters, **kwargs):
    return job_create(
        name=f"q-{campaign.pk}",
        campaign=campaign,
        rubric=rubric("msde"),
        created_by=None,
        raters=raters,
        raters_per_dialogue=kwargs.pop("k", 1),
        allow_below_minimum=True,
        **kwargs,
    )


def _rate(assignment, rater, info, coh, know, *, submit=True):
    for key, value in (("info", info), ("coh", coh), ("know", know)):
        rating_save(assignment=assignment, user=rater, question=key, value=value)
    if submit:
        assignment_submit(assignment=assignment, user=rater)


GOLD = [
    {"question": "info", "turn": None, "value": 2},
    {"question": "coh", "turn": None, "value": 2},
    {"question": "know", "turn": None, "value": 1},
]


@pytest.mark.django_db
def test_quality_settings_are_validated_by_key():
    assert QualitySettings.parse({"gold_rate": 0.05}).gold_rate == 0.05
    with pytest.raises(QualitySettingsError) as error:
        QualitySettings.parse({"gold_rate": 0.9, "colour": "red", "pattern_min_items": 1})
    message = str(error.value)
    assert "quality_settings.colour：未知的设置" in message
    assert "quality_settings.gold_rate：必须在 0 到 0.5 之间" in message
    assert "quality_settings.pattern_min_items：必须是 ≥ 3 的整数" in message


@pytest.mark.django_db
def test_a_rater_must_pass_onboarding_before_real_items_and_a_failure_frees_their_work():
    campaign = CampaignFactory()
    good, bad = experts(2)
    screening = [dialogue_with_turns(campaign=campaign) for _ in range(2)]
    real = [dialogue_with_turns(campaign=campaign) for _ in range(4)]
    job = _job(campaign, [good, bad], quality_settings={"onboarding_threshold": 0.8})
    for dialogue in screening:
        gold_item_set(job=job, dialogue=dialogue, purpose="onboarding", answers=GOLD)
    job_open(job=job)
    # Before passing, nobody holds real work and the next item is a screening item.
    assert not Assignment.objects.filter(job=job, kind="real").exists()
    for rater, answers in ((good, (2, 2, 1)), (bad, (0, 0, 0))):
        for _ in screening:
            item = assignment_next(job=job, rater=rater)
            assert item.kind == Assignment.Kind.ONBOARDING
            _rate(item, rater, *answers)
    assert onboarding_result(job=job, rater=good)[0] == Onboarding.PASSED
    assert onboarding_result(job=job, rater=bad) == (Onboarding.FAILED, 0.0)
    assert JobRater.objects.get(job=job, rater=bad).state == JobRater.State.FAILED_SCREENING
    assert assignment_next(job=job, rater=bad) is None
    real_items = Assignment.objects.filter(job=job, kind="real")
    assert set(real_items.values_list("dialogue_id", flat=True)) == {d.pk for d in real}
    assert set(real_items.values_list("rater_id", flat=True)) == {good.pk}
    assert assignment_next(job=job, rater=good).kind == Assignment.Kind.REAL


@pytest.mark.django_db
def test_gold_items_are_mixed_in_at_the_rate_and_low_accuracy_is_flagged():
    campaign = CampaignFactory()
    (rater,) = experts(1)
    gold_dialogues = [dialogue_with_turns(campaign=campaign) for _ in range(3)]
    for _ in range(20):
        dialogue_with_turns(campaign=campaign)
    job = _job(campaign, [rater], quality_settings={"gold_rate": 0.1, "gold_min_accuracy": 0.7})
    for dialogue in gold_dialogues:
        gold_item_set(job=job, dialogue=dialogue, purpose="gold", answers=GOLD)
    job_open(job=job)
    gold = Assignment.objects.filter(job=job, rater=rater, kind="gold")
    assert gold.count() == math.ceil(0.1 * 20) == 2
    assert all(a.is_gold for a in gold)
    assert not Assignment.objects.filter(job=job, kind="real", dialogue__in=gold_dialogues).exists()
    for assignment in gold:
        _rate(assignment, rater, 0, 0, 0)
    flags = [f for f in job_flags(job) if f.kind == FlagKind.LOW_GOLD_ACCURACY]
    assert [(f.rater, f.detail) for f in flags] == [(rater.pk, "0/6 = 0% < 70%")]


@pytest.mark.django_db
def test_duplicated_items_measure_self_consistency():
    campaign = CampaignFactory()
    (rater,) = experts(1)
    for _ in range(4):
        dialogue_with_turns(campaign=campaign)
    job = _job(campaign, [rater], quality_settings={"duplicate_rate": 0.5})
    job_open(job=job)
    duplicates = list(Assignment.objects.filter(job=job, kind="duplicate"))
    assert len(duplicates) == 2
    for duplicate in duplicates:
        assert duplicate.duplicate_of.dialogue_id == duplicate.dialogue_id
        assert duplicate.duplicate_of.kind == Assignment.Kind.REAL
    for assignment in Assignment.objects.filter(job=job, kind="real"):
        _rate(assignment, rater, 2, 2, 2)
    for duplicate in duplicates:
        _rate(duplicate, rater, 0, 2, 2)
    flags = [f for f in job_flags(job) if f.kind == FlagKind.LOW_SELF_CONSISTENCY]
    assert [(f.rater, f.detail) for f in flags] == [(rater.pk, "4/6 = 67% < 70%")]


@pytest.mark.django_db
def test_fast_items_and_constant_answers_are_flagged():
    campaign = CampaignFactory()
    (rater,) = experts(1)
    for _ in range(10):
        dialogue_with_turns(campaign=campaign)
    job = _job(campaign, [rater], quality_settings={"min_seconds": 5, "pattern_min_items": 10})
    job_open(job=job)
    start = timezone.now()
    for i, assignment in enumerate(Assignment.objects.filter(job=job).order_by("order")):
        _rate(assignment, rater, 1, 1, 1, submit=False)
        Assignment.objects.filter(pk=assignment.pk).update(started_at=start)
        seconds = 2 if i == 0 else 30
        assignment_submit(assignment=assignment, user=rater, now=start + timedelta(seconds=seconds))
    flags = job_flags(job)
    kinds = {f.kind for f in flags}
    assert FlagKind.TOO_FAST in kinds
    constant = [f for f in flags if f.kind == FlagKind.CONSTANT_ANSWERS]
    assert {f.question for f in constant} == {"info", "coh", "know"}
    assert all(f.detail == "all 10 answers are 1" for f in constant)


@pytest.mark.django_db
def test_gold_answers_are_validated_against_the_rubric():
    campaign = CampaignFactory()
    dialogue = dialogue_with_turns(campaign=campaign)
    job = _job(campaign, experts(1))
    expected = r"answers\[0\]：评分量表不接受这个答案：info: expected a whole number"
    with pytest.raises(RatingJobError, match=expected):
        gold_item_set(
            job=job,
            dialogue=dialogue,
            purpose="gold",
            answers=[{"question": "info", "turn": None, "value": 5}],
        )
    assert not GoldItem.objects.exists()
    assert not Rating.objects.exists()


@pytest.mark.django_db
def test_expired_screening_items_are_given_back_to_the_same_rater():
    from annotation.services.rating_assignments import assignments_expire_overdue

    campaign = CampaignFactory()
    (rater,) = experts(1)
    screening = dialogue_with_turns(campaign=campaign)
    dialogue_with_turns(campaign=campaign)
    job = _job(campaign, [rater], deadline_hours=1)
    gold_item_set(job=job, dialogue=screening, purpose="onboarding", answers=GOLD)
    job_open(job=job)
    assignments_expire_overdue(job=job, now=timezone.now() + timedelta(hours=2))
    item = assignment_next(job=job, rater=rater)
    assert item is not None and item.kind == Assignment.Kind.ONBOARDING
    assert item.status == Assignment.Status.PENDING
    assert item.due_at > timezone.now()
