"""A pairwise judge run writes its verdicts as votes: one per order asked (decision 73)."""

from __future__ import annotations

import io
import itertools
import json
from collections import Counter

import pytest

from chat.models import Vote, VoteSource
from chat.services.votes import votes_import
from judges import services
from judges.models import JudgeAnswer, JudgeChunk
from metrics.models import JobStatus, MetricRun, MetricRunChunk
from metrics.services import metric_run_scoring
from tests.annotation.factories import rubric
from tests.chat.factories import skill
from tests.chat.fake_openai import FakeOpenAI
from tests.judges.helpers import answer_for, judge_backend
from tests.judges.test_judge_modes import _paired_campaign
from tests.judges.test_judge_runs import run_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def _shown(payload) -> tuple[str, str]:
    user = payload["messages"][-1]["content"]
    a = user.split("## 对话 A\n", 1)[1].split("\n\n", 1)[0]
    b = user.split("## 对话 B\n", 1)[1].split("\n\n", 1)[0]
    return a, b


def prefer_the_longer(payload) -> str:
    """info: the longer reply wins (whatever the order); coh: always the one shown first."""
    a, b = _shown(payload)
    info = "A" if len(a) > len(b) else "B"
    return json.dumps({"rationale": f"info {info}", "winners": {"info": info, "coh": "A"}})


def pairwise_judge(server, **fields):
    return services.judge_create(
        name="成对裁判",
        backend=judge_backend(server),
        rubric=rubric("msde"),
        mode="pairwise",
        **fields,
    )


def judge_votes(run: MetricRun):
    return Vote.objects.filter(source=run.judge_run.vote_source)


def test_a_pairwise_run_writes_one_vote_per_pair_order_and_question(server):
    server.set_behaviour(reply_fn=prefer_the_longer)
    campaign, backends, dialogues = _paired_campaign()
    judge = pairwise_judge(server)
    run = run_all(services.judge_run_create(judge=judge, campaign=campaign))
    assert run.status == JobStatus.DONE, run.error
    source = run.judge_run.vote_source
    assert (source.kind, source.label, source.campaign_id) == (
        VoteSource.Kind.JUDGE,
        judge.metric_prefix,
        campaign.pk,
    )
    votes = judge_votes(run)
    # 2 pairs × 2 orders × (info, coh, and the overall "")
    assert votes.count() == 12
    first, second = backends
    for s in range(2):
        longer, shorter = dialogues[(s, 0)], dialogues[(s, 1)]
        pair = votes.filter(item=str(longer.scenario_id))
        assert set(pair.values_list("voter_kind", "voter", "turn")) == {
            (Vote.VoterKind.JUDGE, judge.metric_prefix, 1)
        }
        ab = {v.question: v for v in pair.filter(dialogue_a=longer, dialogue_b=shorter)}
        ba = {v.question: v for v in pair.filter(dialogue_a=shorter, dialogue_b=longer)}
        assert {v.system_a_id for v in ab.values()} == {first.pk}
        assert {v.system_a_id for v in ba.values()} == {second.pk}
        # Shown first, the longer wins info (A); shown second, it still wins (B: the first shown
        # — the shorter, system two — lost).
        assert ab["info"].outcome == Vote.Outcome.A and ab["info"].reason == "info A"
        assert ba["info"].outcome == Vote.Outcome.B and ba["info"].reason == "info B"
        # coh is always "A": in order "ba" that means the second dialogue (system two) won.
        assert ab["coh"].outcome == Vote.Outcome.A
        assert ba["coh"].outcome == Vote.Outcome.A and ba["coh"].system_a_id == second.pk
        # The overall of an order: its mean outcome (ab: 1 and 1; ba: 0 and 1 → tie).
        assert ab[""].outcome == Vote.Outcome.A and ba[""].outcome == Vote.Outcome.TIE


def test_sampled_verdicts_are_the_majority_and_unparseable_orders_write_nothing(server):
    def answer(payload):
        a, _b = _shown(payload)
        if a.endswith("嗯。"):  # order "ba": the judge answers nothing readable
            return '{"winners": 这不是 JSON'
        return next(replies)

    # Each request's n=3 samples are consecutive calls: B, A, A — the majority is A.
    replies = itertools.cycle(
        json.dumps({"rationale": r, "winners": {"info": w, "coh": w}})
        for r, w in [("s0", "B"), ("s1", "A"), ("s2", "A")]
    )
    server.set_behaviour(reply_fn=answer)
    campaign, _backends, _dialogues = _paired_campaign()
    judge = pairwise_judge(server, sampling={"n": 3, "temperature": 0.7, "aggregate": "majority"})
    run = run_all(services.judge_run_create(judge=judge, campaign=campaign))
    assert run.status == JobStatus.DONE, run.error
    assert JudgeAnswer.objects.filter(
        run=run, order="ba", status=JudgeAnswer.Status.UNPARSEABLE
    ).exists()
    votes = judge_votes(run)
    assert votes.count() == 2 * 3  # order "ab" only: info, coh, overall per pair
    assert set(votes.values_list("outcome", flat=True)) == {Vote.Outcome.A}
    # The reason is the rationale of the first sample that gave the majority verdict.
    assert set(votes.exclude(question="").values_list("reason", flat=True)) == {"s1"}


def test_a_chunk_run_again_replaces_its_votes_and_deleting_the_run_deletes_them(server):
    server.set_behaviour(reply_fn=prefer_the_longer)
    campaign, backends, _dialogues = _paired_campaign()
    human = VoteSource.objects.create(campaign=campaign, kind=VoteSource.Kind.IMPORT)
    Vote.objects.create(
        campaign=campaign,
        source=human,
        item="x",
        system_a=backends[0],
        system_b=backends[1],
        outcome=Vote.Outcome.A,
        voter_kind=Vote.VoterKind.HUMAN,
        voter="rater",
    )
    run_judge = pairwise_judge(server)
    run = run_all(services.judge_run_create(judge=run_judge, campaign=campaign))
    before = sorted(judge_votes(run).values_list("item", "dialogue_a", "question", "outcome"))
    assert len(before) == 12
    # A crash after the chunk's write: the chunk is run again from the start.
    chunk = run.chunks.get()
    MetricRunChunk.objects.filter(pk=chunk.pk).update(status=JobStatus.PENDING)
    metric_run_scoring.metric_run_score_chunk(chunk_id=chunk.pk)
    after = sorted(judge_votes(run).values_list("item", "dialogue_a", "question", "outcome"))
    assert after == before
    source_id = run.judge_run.vote_source_id
    MetricRun.objects.filter(pk=run.pk).delete()
    assert not VoteSource.objects.filter(pk=source_id).exists()
    assert list(Vote.objects.values_list("voter_kind", flat=True)) == [Vote.VoterKind.HUMAN]
    # Deleting the study takes a run, its source and every vote with it.
    run = run_all(services.judge_run_create(judge=run_judge, campaign=campaign))
    assert judge_votes(run).count() == 12
    campaign.delete()
    assert not Vote.objects.exists() and not VoteSource.objects.exists()


def _battle(question_id, model_a, model_b, winner, judge, turn, replies):
    """A FastChat record; ``replies``: per user turn, (model A's reply, model B's reply)."""

    def conversation(side):
        return [
            message
            for q, pair in enumerate(replies, start=1)
            for message in (
                {"role": "user", "content": f"Question {question_id}.{q}?"},
                {"role": "assistant", "content": pair[side]},
            )
        ]

    return {
        "question_id": question_id,
        "model_a": model_a,
        "model_b": model_b,
        "winner": winner,
        "judge": judge,
        "turn": turn,
        "conversation_a": conversation(0),
        "conversation_b": conversation(1),
    }


def test_pairs_planned_from_imported_votes_carry_the_human_votes_items_and_turns(server):
    skill("chitchat")
    mt_bench = [("Paris is the capital.", "Paris."), ("It has 2 million people.", "Many.")]
    arena = [("Tea is good for you.", "I like tea, but I am Claude.")]
    records = [
        _battle(81, "alpha-model", "beta-model", "model_a", "expert_1", 1, mt_bench),
        _battle(81, "alpha-model", "beta-model", "tie", "expert_2", 2, mt_bench),
        _battle(81, "alpha-model", "beta-model", "model_b", "expert_3", 2, mt_bench),
        _battle(82, "beta-model", "alpha-model", "model_a", "expert_1", 1, arena),
    ]
    data = "\n".join(json.dumps(r, ensure_ascii=False) for r in records).encode()
    result = votes_import(
        fileobj=io.BytesIO(data), campaign_name="MT-Bench 人工", language="en", label="mt.jsonl"
    )
    assert result.dialogues == 4
    server.set_behaviour(reply_fn=answer_for)  # "A" on every question, in both orders
    judge = pairwise_judge(server)
    run = run_all(services.judge_run_create(judge=judge, campaign=result.campaign))
    assert run.status == JobStatus.DONE, run.error
    assert len(server.requests) == 4  # 2 voted pairs × 2 orders
    planned = [
        keys for part in JudgeChunk.objects.filter(chunk__run=run) for keys in part.pair_items
    ]
    assert sorted(planned) == [[["81", 1], ["81", 2]], [["82", 1]]]
    humans = Vote.objects.filter(source=result.source)
    judges = judge_votes(run)

    def keys(votes):
        return {
            (v.item, v.turn, frozenset((v.system_a_id, v.system_b_id)), v.dialogue_a_id)
            for v in votes
        }

    human_keys = {(item, turn, systems) for item, turn, systems, _d in keys(humans)}
    judge_keys = {(item, turn, systems) for item, turn, systems, _d in keys(judges)}
    assert judge_keys == human_keys
    # Per pair, order, turn: info, coh and the overall; both orders shown first once.
    assert Counter((v.item, v.turn) for v in judges) == {
        ("81", 1): 6,
        ("81", 2): 6,
        ("82", 1): 6,
    }
    assert len({d for *_k, d in keys(judges.filter(item="81", turn=2))}) == 2
    assert set(judges.values_list("outcome", flat=True)) == {Vote.Outcome.A}
    # The arena pair names a model in a reply: its judge votes are flagged like the human one.
    assert set(judges.filter(item="82").values_list("identity_leak", flat=True)) == {"claude"}
    assert set(judges.filter(item="81").values_list("identity_leak", flat=True)) == {""}
