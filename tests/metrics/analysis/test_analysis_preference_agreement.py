"""MT-Bench agreement as FastChat counts it, the conservative rule, position bias."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from metrics.analysis.preference_agreement import (
    A_WINS,
    B_WINS,
    BOTH_BAD,
    TIE,
    Agreement,
    PairwiseVote,
    conservative_votes,
    human_agreement,
    judge_agreement,
    judge_human_agreement,
    position_bias,
    position_bias_counts,
    ratio_replicates,
    resample_counts,
    self_consistency,
    vote_from_fastchat,
)

GPT4 = ["gpt-4", "pair-v2"]
JUDGE = "gpt-4/pair-v2"


def record(qid: int, a: str, b: str, winner: str, judge: Any, turn: int = 1) -> dict[str, Any]:
    return {
        "question_id": qid,
        "model_a": a,
        "model_b": b,
        "winner": winner,
        "judge": judge,
        "turn": turn,
    }


# FastChat sorts a pair with `<`: "alpaca" < "gpt-4" < "vicuna"; a vote stored the other way
# round has its winner reverted. Verdicts below are in the sorted order.
JUDGE_RECORDS = [
    record(81, "vicuna", "alpaca", "model_a", GPT4),  # swapped → model_b (vicuna)
    record(82, "alpaca", "gpt-4", "tie", GPT4),  # tie
    record(83, "gpt-4", "vicuna", "model_a", GPT4),  # model_a (gpt-4)
    record(81, "alpaca", "vicuna", "model_a", GPT4, turn=2),  # model_a (alpaca), turn 2
]
HUMAN_RECORDS = [
    record(81, "alpaca", "vicuna", "model_b", "expert_0"),  # model_b
    record(81, "vicuna", "alpaca", "model_a", "expert_1"),  # swapped → model_b
    record(81, "alpaca", "vicuna", "tie", "expert_2"),  # tie
    record(82, "gpt-4", "alpaca", "tie (bothbad)", "expert_0"),  # both-bad (a tie)
    record(82, "alpaca", "gpt-4", "model_b", "expert_3"),  # model_b
    record(83, "vicuna", "gpt-4", "model_a", "expert_1"),  # swapped → model_b
    record(84, "alpaca", "vicuna", "model_a", "expert_2"),  # model_a
    record(84, "vicuna", "alpaca", "model_b", "expert_2"),  # same person again → model_a
    record(84, "alpaca", "vicuna", "model_a", "expert_3"),  # model_a
    record(81, "alpaca", "vicuna", "model_a", "expert_0", turn=2),  # model_a, turn 2
]


def fixture_votes() -> list[PairwiseVote]:
    return [vote_from_fastchat(r, voter_kind="judge") for r in JUDGE_RECORDS] + [
        vote_from_fastchat(r, voter_kind="human") for r in HUMAN_RECORDS
    ]


def pooled(results: list[Agreement], with_ties: bool) -> Agreement:
    (found,) = [r for r in results if r.question is None and r.with_ties is with_ties]
    return found


def test_fastchat_records_become_votes_with_reverted_swaps_kept_as_shown() -> None:
    vote = vote_from_fastchat(JUDGE_RECORDS[0], voter_kind="judge")
    assert vote == PairwiseVote(81, "vicuna", "alpaca", A_WINS, JUDGE, "judge", "", 1)
    assert vote_from_fastchat(HUMAN_RECORDS[3], voter_kind="human").outcome == BOTH_BAD
    with pytest.raises(ValueError, match="winner"):
        vote_from_fastchat(record(1, "a", "b", "model_c", "expert_0"), voter_kind="human")


def test_judge_human_agreement_counts_as_fastchat_with_and_without_ties() -> None:
    # With ties (judge vs every human vote on a key):
    #   81/t1: judge B; humans B ✓, B ✓ (reverted), tie ✗ → 2 of 3
    #   82/t1: judge tie; humans both-bad ✓ (tie = both-bad), B ✗ → 1 of 2
    #   83/t1: judge A; human B (reverted) ✗ → 0 of 1
    #   81/t2: judge A; human A ✓ → 1 of 1;   84/t1: no judge vote
    #   → 4 of 7 over 4 keys.
    # Without ties: 81/t1 drops the human tie → 2 of 2; 82/t1 judge tie drops the key;
    #   83 → 0 of 1; 81/t2 → 1 of 1 → 3 of 4 over 3 keys.
    results = judge_human_agreement(fixture_votes(), judge=JUDGE, samples=200)
    with_ties, without = pooled(results, True), pooled(results, False)
    assert (with_ties.matched, with_ties.total, with_ties.keys) == (4, 7, 4)
    assert with_ties.value == pytest.approx(4 / 7)
    assert (without.matched, without.total, without.keys) == (3, 4, 3)
    # One rubric question ("") only: its rows equal the pooled ones.
    assert [r.question for r in results] == ["", "", None, None]
    assert results[0].matched == 4 and results[1].total == 4


def test_turns_split_as_fastchat_reports_them() -> None:
    turn_one = [v for v in fixture_votes() if v.turn == 1]
    results = judge_human_agreement(turn_one, judge=JUDGE, samples=50)
    assert (pooled(results, True).matched, pooled(results, True).total) == (3, 6)
    assert (pooled(results, False).matched, pooled(results, False).total) == (2, 3)


def test_human_agreement_pairs_every_two_people_on_a_key() -> None:
    # With ties: 81/t1: (e0 B, e1 B) ✓, (e0, e2 tie) ✗, (e1, e2) ✗ → 1 of 3;
    #   82/t1: (both-bad, B) ✗ → 0 of 1; 84/t1: e2 twice (A, A) is not a pair,
    #   (e2 A, e3 A) ✓ twice → 2 of 2; single-voter keys give nothing → 3 of 6 over 3 keys.
    #   (FastChat would also pair e2 with e2: 4 of 7.)
    # Without ties: 81 → 1 of 1; 82 → none; 84 → 2 of 2 → 3 of 3 over 2 keys.
    results = human_agreement(fixture_votes(), samples=200)
    with_ties, without = pooled(results, True), pooled(results, False)
    assert (with_ties.matched, with_ties.total, with_ties.keys) == (3, 6, 3)
    assert (without.matched, without.total, without.keys) == (3, 3, 2)
    assert without.value == 1.0


def test_agreement_is_reported_per_rubric_question_and_pooled() -> None:
    votes = [
        PairwiseVote(1, "x", "y", A_WINS, "h1", "human", "fluency"),
        PairwiseVote(1, "y", "x", B_WINS, "h2", "human", "fluency"),  # reverted: A ✓
        PairwiseVote(1, "x", "y", A_WINS, "h1", "human", "safety"),
        PairwiseVote(1, "x", "y", B_WINS, "h2", "human", "safety"),  # ✗
        PairwiseVote(2, "x", "y", TIE, "h1", "human", "safety"),
        PairwiseVote(2, "x", "y", TIE, "h2", "human", "safety"),  # ✓ (tie = tie)
    ]
    results = {(r.question, r.with_ties): r for r in human_agreement(votes, samples=100)}
    assert (results["fluency", True].matched, results["fluency", True].total) == (1, 1)
    assert (results["safety", True].matched, results["safety", True].total) == (1, 2)
    assert (results["safety", False].matched, results["safety", False].total) == (0, 1)
    assert (results[None, True].matched, results[None, True].total) == (2, 3)
    assert results[None, True].keys == 3


def test_a_judge_with_two_votes_on_a_key_must_be_combined_first() -> None:
    votes = [
        *fixture_votes(),
        vote_from_fastchat(record(81, "alpaca", "vicuna", "model_b", GPT4), voter_kind="judge"),
    ]
    with pytest.raises(ValueError, match="conservative_votes"):
        judge_human_agreement(votes, judge=JUDGE)


# A judge that voted in both orders; the conservative rule and its self-consistency.
BOTH_ORDERS = [
    PairwiseVote(1, "x", "y", A_WINS, "j", "judge"),
    PairwiseVote(1, "y", "x", B_WINS, "j", "judge"),  # x both times → x wins
    PairwiseVote(2, "x", "y", A_WINS, "j", "judge"),
    PairwiseVote(2, "y", "x", A_WINS, "j", "judge"),  # x then y → tie
    PairwiseVote(3, "x", "y", TIE, "j", "judge"),
    PairwiseVote(3, "y", "x", B_WINS, "j", "judge"),  # tie then x → tie
    PairwiseVote(4, "x", "y", BOTH_BAD, "j", "judge"),
    PairwiseVote(4, "y", "x", BOTH_BAD, "j", "judge"),  # both-bad twice → both-bad
    PairwiseVote(5, "y", "x", A_WINS, "j", "judge"),  # one order only: kept as shown
]


def test_conservative_rule_keeps_consistent_winners_and_ties_the_rest() -> None:
    combined = {vote.item: vote for vote in conservative_votes(BOTH_ORDERS)}
    assert len(combined) == 5
    assert combined[1] == PairwiseVote(1, "x", "y", A_WINS, "j", "judge")
    assert combined[2].outcome == TIE
    assert combined[3].outcome == TIE
    assert combined[4].outcome == BOTH_BAD
    assert combined[5] == BOTH_ORDERS[-1]


def test_conservative_rule_refuses_two_votes_in_one_order() -> None:
    with pytest.raises(ValueError, match="more than once"):
        conservative_votes([*BOTH_ORDERS, PairwiseVote(1, "x", "y", B_WINS, "j", "judge")])


def test_self_consistency_compares_the_two_orders() -> None:
    # With ties: 1 ✓, 2 ✗, 3 ✗ (tie vs x), 4 ✓ (both-bad twice); 5 has one order → 2 of 4.
    # Without ties: 1 ✓, 2 ✗ → 1 of 2.
    results = self_consistency(BOTH_ORDERS, judge="j", samples=100)
    assert (pooled(results, True).matched, pooled(results, True).total) == (2, 4)
    assert (pooled(results, False).matched, pooled(results, False).total) == (1, 2)


def test_two_judges_agree_on_the_keys_both_voted_on() -> None:
    other = [
        PairwiseVote(1, "y", "x", B_WINS, "k", "judge"),  # x wins ✓ (j: x after the rule)
        PairwiseVote(2, "x", "y", A_WINS, "k", "judge"),  # x wins ✗ (j: tie)
        PairwiseVote(4, "x", "y", TIE, "k", "judge"),  # tie ✓ (j: both-bad)
        PairwiseVote(9, "x", "y", TIE, "k", "judge"),  # j did not vote
    ]
    votes = conservative_votes(BOTH_ORDERS) + other
    results = judge_agreement(votes, judge_a="j", judge_b="k", samples=100)
    assert (pooled(results, True).matched, pooled(results, True).total) == (2, 3)
    assert (pooled(results, False).matched, pooled(results, False).total) == (1, 1)


def test_agreement_interval_is_reproducible_with_a_seed_and_brackets_the_value() -> None:
    rng = np.random.default_rng(3)
    votes = [
        PairwiseVote(item, "x", "y", int(rng.integers(0, 4)), f"h{h}", "human")
        for item in range(40)
        for h in range(3)
    ]
    first = pooled(human_agreement(votes, samples=300, seed=7), True)
    again = pooled(human_agreement(votes, samples=300, seed=7), True)
    other = pooled(human_agreement(votes, samples=300, seed=8), True)
    assert (first.low, first.high) == (again.low, again.high)
    assert (first.low, first.high) != (other.low, other.high)
    assert first.low is not None and first.high is not None and first.value is not None
    assert first.low <= first.value <= first.high


def test_ratio_replicates_equal_the_materialised_resamples() -> None:
    rng = np.random.default_rng(4)
    hits = rng.integers(0, 3, 25).astype(float)
    totals = hits + rng.integers(0, 3, 25)
    replicates = ratio_replicates(hits, totals, samples=40, seed=11)
    counts = resample_counts(np.random.default_rng(11), 25, 40)
    for b in range(40):
        drawn = np.repeat(np.arange(25), counts[b])
        expected = hits[drawn].sum() / totals[drawn].sum()
        assert replicates[b] == pytest.approx(expected, abs=1e-12)


def test_position_bias_by_hand() -> None:
    # 6 first-shown wins, 2 second-shown wins, 1 tie, 1 both-bad.
    codes = [A_WINS] * 6 + [B_WINS] * 2 + [TIE, BOTH_BAD]
    bias = position_bias_counts(codes, voter="v")
    assert (bias.votes, bias.a_wins, bias.b_wins, bias.ties, bias.both_bad) == (10, 6, 2, 2, 1)
    assert (bias.a_share, bias.b_share, bias.tie_share) == (0.6, 0.2, 0.2)
    assert bias.decisive_a_share == 0.75
    # Two-sided exact test of 6 of 8 against 1/2: 2·P(X ≥ 6) = 2·(28 + 8 + 1)/256.
    assert bias.p_value == pytest.approx(74 / 256)
    # Wilson score interval, 6/8, z = Φ⁻¹(0.975).
    z, n, p = stats.norm.ppf(0.975), 8, 0.75
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (bias.low, bias.high) == (pytest.approx(centre - half), pytest.approx(centre + half))
    exact = position_bias_counts(codes, voter="v", method="exact")
    assert exact.low == pytest.approx(stats.beta.ppf(0.025, 6, 3))
    assert exact.high == pytest.approx(stats.beta.ppf(0.975, 7, 2))


def test_position_bias_per_voter_and_without_decisive_votes() -> None:
    votes = [
        PairwiseVote(1, "x", "y", A_WINS, "h1", "human"),
        PairwiseVote(2, "x", "y", B_WINS, "h1", "human"),
        PairwiseVote(1, "x", "y", TIE, "h2", "human"),
    ]
    first, second = position_bias(votes)
    assert (first.voter, first.a_wins, first.b_wins, first.p_value) == ("h1", 1, 1, 1.0)
    assert (second.voter, second.ties, second.tie_share) == ("h2", 1, 1.0)
    assert second.p_value is None and second.low is None and second.decisive_a_share is None


def test_the_pairwise_kernels_import_no_django() -> None:
    code = (
        "import sys, metrics.analysis.preference_agreement, metrics.analysis.pairwise_accuracy; "
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
