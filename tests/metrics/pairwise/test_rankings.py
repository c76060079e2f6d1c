"""Leaderboards from a study's votes: the service the command, the API and the pages share."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from chat.models import Vote
from metrics.analysis import bradley_terry as bt
from metrics.services import pairwise
from tests.metrics.pairwise.factories import STRENGTHS, arena_lines, arena_study, import_lines

pytestmark = pytest.mark.django_db


def test_the_leaderboard_equals_the_kernel_on_the_same_votes_and_orders_the_known_strengths():
    campaign = arena_study(items=120)
    board = pairwise.rank_pairwise(campaign_ids=[campaign.pk], rounds=200, seed=3)
    votes = Vote.objects.filter(campaign=campaign).select_related("system_a", "system_b")
    names = sorted(STRENGTHS)
    index = {name: i for i, name in enumerate(names)}
    codes = {"a": 0, "b": 1, "tie": 2, "both_bad": 3}
    ordered = list(votes.order_by("voted_at", "pk"))
    counts = bt.pair_counts(
        np.array([index[v.system_a.name] for v in ordered]),
        np.array([index[v.system_b.name] for v in ordered]),
        np.array([codes[v.outcome] for v in ordered]),
        len(names),
    )
    expected = bt.bradley_terry(counts, rounds=200, seed=3)
    got = {row["system"]: row for row in board["systems"]}
    for name in names:
        assert got[name]["rating"] == pytest.approx(expected.ratings[index[name]])
        assert got[name]["lower"] == pytest.approx(expected.lower[index[name]])
        assert got[name]["rank_upper"] == expected.rank_upper[index[name]]
    assert [row["system"] for row in board["systems"]][0] == "alpha-bot"
    assert board["votes"] == 360
    assert "prior:none" in board["signature"] and "rounds:200|seed:3" in board["signature"]
    assert len(board["separation"]) == 3
    assert np.mean([row["rating"] for row in board["systems"]]) == pytest.approx(1000)


def test_identity_leaks_are_left_out_and_counted_unless_included():
    lines = arena_lines(items=20)
    lines[0]["conversation_b"][1]["content"] = "I am ChatGPT, made by OpenAI."
    campaign = import_lines(lines)
    leaked = Vote.objects.filter(campaign=campaign).exclude(identity_leak="").count()
    assert leaked >= 1
    out = pairwise.rank_pairwise(campaign_ids=[campaign.pk], rounds=0)
    into = pairwise.rank_pairwise(campaign_ids=[campaign.pk], rounds=0, include_identity_leaks=True)
    assert out["left_out"]["identity_leak"] == leaked
    assert into["votes"] == out["votes"] + leaked
    assert "leaks:out" in out["signature"] and "leaks:in" in into["signature"]


def test_several_questions_need_a_choice_naming_them():
    lines = arena_lines(items=10)
    for line in lines:
        line["question"] = "engaging" if line["question_id"] % 2 else "humanlike"
    campaign = import_lines(lines)
    with pytest.raises(pairwise.PairwiseConfigError, match="engaging, humanlike"):
        pairwise.rank_pairwise(campaign_ids=[campaign.pk], rounds=0)
    board = pairwise.rank_pairwise(campaign_ids=[campaign.pk], question="engaging", rounds=0)
    assert board["question"] == "engaging"
    with pytest.raises(pairwise.PairwiseConfigError, match="no votes on question 'x'"):
        pairwise.rank_pairwise(campaign_ids=[campaign.pk], question="x", rounds=0)


def test_a_system_that_never_loses_is_ranked_with_a_prior_the_signature_names():
    lines = (
        [
            {"model_a": "top", "model_b": "mid", "winner": "model_a", "question_id": i}
            for i in range(5)
        ]
        + [
            {"model_a": "mid", "model_b": "low", "winner": "model_a", "question_id": 10 + i}
            for i in range(3)
        ]
        + [{"model_a": "low", "model_b": "mid", "winner": "model_a", "question_id": 20}]
    )
    campaign = import_lines(lines)
    board = pairwise.rank_pairwise(campaign_ids=[campaign.pk], rounds=0)
    assert board["prior"] is not None
    assert "prior:" in board["signature"] and "top" in board["signature"]
    assert any("never lost" in note for note in board["notes"])


def test_a_split_battle_graph_is_refused_naming_the_groups():
    lines = [
        {"model_a": "a1", "model_b": "a2", "winner": "tie", "question_id": 1},
        {"model_a": "b1", "model_b": "b2", "winner": "tie", "question_id": 2},
    ]
    campaign = import_lines(lines)
    with pytest.raises(pairwise.PairwiseDataError, match="a1|b1"):
        pairwise.rank_pairwise(campaign_ids=[campaign.pk], rounds=0)


def test_an_anchor_fixes_one_system_and_must_have_votes():
    campaign = arena_study(items=30)
    board = pairwise.rank_pairwise(
        campaign_ids=[campaign.pk], rounds=0, anchor={"system": "gamma-bot", "rating": 1200}
    )
    assert {r["system"]: r["rating"] for r in board["systems"]}["gamma-bot"] == pytest.approx(1200)
    with pytest.raises(pairwise.PairwiseDataError, match="anchor system 'nobody'"):
        pairwise.rank_pairwise(
            campaign_ids=[campaign.pk], rounds=0, anchor={"system": "nobody", "rating": 1}
        )


def test_judge_votes_per_order_or_combined_by_the_conservative_rule():
    lines = [
        # The judge prefers x in one order and y in the other: conservative → one tie.
        {
            "model_a": "x",
            "model_b": "y",
            "winner": "model_a",
            "question_id": 1,
            "judge": "judge:j-v1",
            "voter_kind": "judge",
        },
        {
            "model_a": "y",
            "model_b": "x",
            "winner": "model_a",
            "question_id": 1,
            "judge": "judge:j-v1",
            "voter_kind": "judge",
        },
        {
            "model_a": "x",
            "model_b": "y",
            "winner": "model_a",
            "question_id": 2,
            "judge": "judge:j-v1",
            "voter_kind": "judge",
        },
        {
            "model_a": "y",
            "model_b": "x",
            "winner": "model_b",
            "question_id": 2,
            "judge": "judge:j-v1",
            "voter_kind": "judge",
        },
    ]
    campaign = import_lines(lines)
    per_order = pairwise.rank_pairwise(campaign_ids=[campaign.pk], voters="judge:j", rounds=0)
    combined = pairwise.rank_pairwise(
        campaign_ids=[campaign.pk], voters="judge:j", rounds=0, judge_rule="conservative"
    )
    assert per_order["votes"] == 4 and combined["votes"] == 2
    with pytest.raises(pairwise.PairwiseConfigError, match="unknown voters"):
        pairwise.rank_pairwise(campaign_ids=[campaign.pk], voters="robots", rounds=0)


def test_the_leaderboard_csv_has_the_documented_columns():
    campaign = arena_study(items=20)
    board = pairwise.rank_pairwise(campaign_ids=[campaign.pk], rounds=50)
    rows = list(csv.DictReader(io.StringIO(pairwise.leaderboard_csv(board))))
    assert list(rows[0])[:8] == [
        "system",
        "rating",
        "lower",
        "upper",
        "rank",
        "rank_lower",
        "rank_upper",
        "votes",
    ]
    assert len(rows) == 4
