"""Review of collected dialogues: decision rules, rejection reasons, who may review."""

import pytest
from django.core.exceptions import PermissionDenied

from annotation.models import Review, ReviewPolicy
from annotation.selectors.review import review_queue
from annotation.services.review import (
    ReviewError,
    resolve_decision,
    review_policy_set,
    review_submit,
)
from chat.models import Dialogue
from core.access import Role
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts
from tests.conftest import make_user

A, R = Review.Decision.ACCEPT, Review.Decision.REJECT


@pytest.mark.parametrize(
    ("rule", "n", "decisions", "expected"),
    [
        ("any_reject", 3, [A], None),
        ("any_reject", 3, [A, R], R),
        ("any_reject", 3, [A, A, A], A),
        ("any_reject", 1, [A], A),
        ("majority", 3, [A], None),
        ("majority", 3, [A, A], A),
        ("majority", 3, [R, R], R),
        ("majority", 3, [A, R], None),
        ("majority", 3, [A, R, A], A),
        ("majority", 2, [R], R),  # 2 of 2 accepts needed: one reject settles it
        ("all", 3, [R], None),
        ("all", 3, [A, A, R], R),
        ("all", 3, [A, A, A], A),
    ],
)
def test_decision_rules(rule, n, decisions, expected):
    assert resolve_decision(rule=rule, reviewers=n, decisions=decisions) == expected


@pytest.mark.django_db
def test_a_rejection_sets_the_status_and_the_reason_the_worker_sees():
    worker = make_user("w1", Role.CROWDWORKER)
    (reviewer,) = experts(1)
    dialogue = dialogue_with_turns(worker=worker, status=Dialogue.Status.SUBMITTED)
    review_submit(
        dialogue=dialogue,
        reviewer=reviewer,
        decision="reject",
        reasons=["fluent", "knowledge"],
        comment="第二轮答非所问",
    )
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.REJECTED
    assert "表达不流畅" in dialogue.rejection_reason
    assert "Knowledge used inaccurately" in dialogue.rejection_reason
    assert "第二轮答非所问" in dialogue.rejection_reason


@pytest.mark.django_db
def test_three_reviewers_by_majority_accept_and_the_dialogue_goes_to_rating():
    campaign = CampaignFactory()
    review_policy_set(campaign=campaign, reviewers_per_dialogue=3, decision_rule="majority")
    dialogue = dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED)
    first, second, third = experts(3)
    review_submit(dialogue=dialogue, reviewer=first, decision="reject", reasons=["natural"])
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED
    assert dialogue in review_queue(reviewer=second)
    assert dialogue not in review_queue(reviewer=first)
    review_submit(dialogue=dialogue, reviewer=second, decision="accept")
    review_submit(dialogue=dialogue, reviewer=third, decision="accept")
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.ACCEPTED
    assert dialogue.rejection_reason == ""
    assert Review.objects.filter(dialogue=dialogue).count() == 3
    assert not review_queue(reviewer=experts(1, prefix="late")[0]).filter(pk=dialogue.pk).exists()


@pytest.mark.django_db
def test_a_reviewer_never_reviews_their_own_dialogue_or_twice():
    (expert,) = experts(1)
    own = dialogue_with_turns(worker=expert, status=Dialogue.Status.SUBMITTED)
    assert own not in review_queue(reviewer=expert)
    with pytest.raises(PermissionDenied):
        review_submit(dialogue=own, reviewer=expert, decision="accept")
    campaign = CampaignFactory()
    ReviewPolicy.objects.create(campaign=campaign, reviewers_per_dialogue=2)
    other = dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED)
    review_submit(dialogue=other, reviewer=expert, decision="accept")
    with pytest.raises(ReviewError, match="您已经审核过对话"):
        review_submit(dialogue=other, reviewer=expert, decision="accept")
    assert Review.objects.filter(dialogue=other).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("decision", "reasons", "comment", "message"),
    [
        ("reject", [], "", "reasons：退回时至少要选一个理由或写一段说明"),
        ("reject", ["rude"], "", "reasons：未知的退回理由 'rude'"),
        ("accept", ["fluent"], "", "reasons：通过的对话不能带退回理由"),
        ("maybe", [], "", "decision：必须是 accept（通过）或 reject（退回）"),
    ],
)
def test_bad_reviews_are_refused_and_nothing_is_saved(decision, reasons, comment, message):
    (expert,) = experts(1)
    dialogue = dialogue_with_turns(status=Dialogue.Status.SUBMITTED)
    with pytest.raises(ReviewError, match=message):
        review_submit(
            dialogue=dialogue, reviewer=expert, decision=decision, reasons=reasons, comment=comment
        )
    assert not Review.objects.exists()
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED


@pytest.mark.django_db
def test_only_submitted_dialogues_are_reviewed():
    (expert,) = experts(1)
    dialogue = dialogue_with_turns(status=Dialogue.Status.IN_PROGRESS)
    with pytest.raises(ReviewError, match="只有已提交的对话可以审核"):
        review_submit(dialogue=dialogue, reviewer=expert, decision="accept")


@pytest.mark.django_db
def test_a_rejection_reads_in_the_language_the_campaign_fixes_for_its_workers():
    (reviewer,) = experts(1, prefix="ja-rev")
    japanese = dialogue_with_turns(
        campaign=CampaignFactory(interface_language="ja"), status=Dialogue.Status.SUBMITTED
    )
    review_submit(
        dialogue=japanese,
        reviewer=reviewer,
        decision=R,
        reasons=["fluent", "knowledge"],
        comment="もう少し自然に話してください。",
    )
    japanese.refresh_from_db()
    assert japanese.rejection_reason == (
        "流暢でない；知識の使い方が不正確 — もう少し自然に話してください。"
    )
    default = dialogue_with_turns(status=Dialogue.Status.SUBMITTED)
    review_submit(dialogue=default, reviewer=reviewer, decision=R, reasons=["fluent"])
    default.refresh_from_db()
    assert default.rejection_reason == "表达不流畅 (Not fluent)"
