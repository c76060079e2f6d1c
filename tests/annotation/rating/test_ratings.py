"""Saving answers: validation, gates, revision until submit, submit refusing missing answers."""

import threading

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection

from annotation.models import Assignment, Rating
from annotation.rubric_spec import AnswerError
from annotation.selectors.rating import model_turns
from annotation.services.rating_jobs import job_create, job_open
from annotation.services.ratings import (
    IncompleteError,
    assignment_submit,
    missing_answers,
    rating_save,
)
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts, rubric


def _assignment(rubric_key="msde", skill_key="knowledge", k=1, **dialogue_kwargs):
    campaign = CampaignFactory()
    (rater,) = experts(1, prefix=f"r{campaign.pk}-")
    dialogue_with_turns(campaign=campaign, skill_key=skill_key, **dialogue_kwargs)
    job = job_create(
        name=f"job-{campaign.pk}",
        campaign=campaign,
        rubric=rubric(rubric_key),
        created_by=None,
        raters=[rater],
        raters_per_dialogue=k,
        allow_below_minimum=True,
    )
    job_open(job=job)
    return Assignment.objects.get(job=job, rater=rater), rater


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("question", "value", "message"),
    [
        ("info", 3, "info: expected a whole number from 0 to 2, got 3"),
        ("info", "abc", "info: expected a whole number from 0 to 2, got 'abc'"),
        ("nonsense", 1, "unknown question 'nonsense'"),
    ],
)
def test_bad_answers_are_refused_with_a_precise_message(question, value, message):
    assignment, rater = _assignment()
    with pytest.raises(AnswerError, match=message):
        rating_save(assignment=assignment, user=rater, question=question, value=value)
    assert not Rating.objects.exists()


@pytest.mark.django_db
def test_a_question_not_applicable_to_the_skill_is_refused():
    assignment, rater = _assignment(skill_key="chitchat")
    with pytest.raises(AnswerError, match="know: does not apply to skill 'chitchat'"):
        rating_save(assignment=assignment, user=rater, question="know", value=1)


@pytest.mark.django_db
def test_answers_are_revised_until_submit_and_submit_names_what_is_missing():
    assignment, rater = _assignment()  # knowledge: info, coh, know
    rating_save(assignment=assignment, user=rater, question="info", value=1)
    rating_save(assignment=assignment, user=rater, question="info", value="2")
    assert Rating.objects.get(assignment=assignment, question="info").value == 2.0
    with pytest.raises(IncompleteError) as refused:
        assignment_submit(assignment=assignment, user=rater)
    assert refused.value.missing == ["coh", "know"]
    rating_save(assignment=assignment, user=rater, question="coh", value=0)
    rating_save(assignment=assignment, user=rater, question="know", value=2)
    submitted = assignment_submit(assignment=assignment, user=rater)
    assert submitted.status == Assignment.Status.SUBMITTED
    assert submitted.started_at is not None and submitted.submitted_at is not None
    with pytest.raises(AnswerError, match="答案不能再修改"):
        rating_save(assignment=assignment, user=rater, question="info", value=0)
    assert Rating.objects.get(assignment=assignment, question="info").value == 2.0


@pytest.mark.django_db
def test_gate_questions_come_first_and_a_failed_gate_needs_no_second_level():
    assignment, rater = _assignment("yesno-single-turn")
    with pytest.raises(AnswerError, match="请先回答第一级问题「grammatical」"):
        rating_save(assignment=assignment, user=rater, question="relevance_content", value="yes")
    rating_save(assignment=assignment, user=rater, question="grammatical", value="yes")
    rating_save(assignment=assignment, user=rater, question="unacceptable", value="no")
    rating_save(assignment=assignment, user=rater, question="relevance_content", value="yes")
    assert "relevance_logic" in missing_answers(assignment)
    # Unacceptable content fails the first level: the second-level answers are dropped.
    rating_save(assignment=assignment, user=rater, question="unacceptable", value="yes")
    assert not Rating.objects.filter(assignment=assignment, question="relevance_content").exists()
    assert missing_answers(assignment) == []
    with pytest.raises(AnswerError, match="第一级问题「unacceptable」未通过"):
        rating_save(assignment=assignment, user=rater, question="emotion_tone", value="yes")
    assert assignment_submit(assignment=assignment, user=rater).status == "submitted"


@pytest.mark.django_db
def test_turn_level_questions_need_a_model_turn_of_the_dialogue():
    assignment, rater = _assignment("yesno-multi-turn")
    user_turn = assignment.dialogue.turns.get(index=0)
    with pytest.raises(AnswerError, match="不是这段对话的模型回复"):
        rating_save(
            assignment=assignment,
            user=rater,
            question="relevance_topic",
            value=1,
            turn_id=user_turn.pk,
        )
    with pytest.raises(AnswerError, match="needs the index of the model turn"):
        rating_save(assignment=assignment, user=rater, question="relevance_topic", value=1)
    first, second = model_turns(assignment.dialogue)
    rating_save(
        assignment=assignment, user=rater, question="relevance_topic", value=1, turn_id=second.pk
    )
    missing = missing_answers(assignment)
    assert "relevance_topic (turn 1)" in missing and "relevance_topic (turn 2)" not in missing
    assert len(missing) == 15


@pytest.mark.django_db
def test_an_expert_cannot_save_into_another_experts_assignment_or_rate_their_own_dialogue():
    assignment, rater = _assignment()
    (other,) = experts(1, prefix="other")
    with pytest.raises(PermissionDenied):
        rating_save(assignment=assignment, user=other, question="info", value=1)
    # An assignment on a dialogue the rater collected (made by hand: generation never does it).
    assignment.dialogue.worker = rater
    assignment.dialogue.save()
    with pytest.raises(PermissionDenied, match="自己收集的对话"):
        rating_save(assignment=assignment, user=rater, question="info", value=1)
    assert not Rating.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL")
def test_concurrent_saves_of_the_same_answer_leave_one_row_with_a_last_value():
    assignment, rater = _assignment()
    errors, saved = [], []
    barrier = threading.Barrier(8)

    def save(value):
        try:
            barrier.wait()
            rating = rating_save(assignment=assignment, user=rater, question="info", value=value)
            saved.append((rating.updated_at, value))
        except Exception as exc:  # noqa: BLE001 — collected for the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=save, args=(i % 3,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = Rating.objects.filter(assignment=assignment, question="info")
    assert rows.count() == 1
    # Saves are serialised by the assignment's row lock: the row holds the last save's value.
    assert len(saved) == 8
    assert rows.get().value == float(max(saved)[1])
