"""The Bradley–Terry provider side-by-side campaigns get from metrics: eq. 9's variances, and
the campaign page's live leaderboard with intervals and adjacent-pair separation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chat.models import Campaign, CampaignBackend, Vote, VoteSource
from chat.services.side_by_side import pair_variances, side_by_side_leaderboard
from chat.services.side_by_side_hooks import ranking_provider
from metrics.analysis import bradley_terry as bt
from metrics.analysis.side_by_side import pair_outcome_variances
from metrics.services.side_by_side_ranking import side_by_side_leaderboard as board_of
from metrics.services.side_by_side_ranking import side_by_side_variances
from tests.chat.factories import BackendFactory
from tests.conftest import make_user


def test_metrics_registers_the_provider_with_chat() -> None:
    provider = ranking_provider()
    assert provider is not None
    assert provider.variances([1, 2], [(1, 2, "a"), (2, 1, "a")]) is not None


def test_the_variances_are_the_residuals_around_the_fitted_probability() -> None:
    # 3 systems, every pair played, outcomes mixed: the fit exists.
    votes = [(1, 2, "a")] * 6 + [(2, 1, "a")] * 2 + [(2, 3, "a")] * 5 + [(3, 2, "a")] * 3
    votes += [(1, 3, "a")] * 4 + [(3, 1, "a")] * 1 + [(1, 3, "tie")] * 2
    variances = side_by_side_variances([1, 2, 3], votes)
    assert variances is not None and set(variances) == {(1, 2), (1, 3), (2, 3)}
    index = {1: 0, 2: 1, 3: 2}
    counts = bt.pair_counts(
        np.array([index[a] for a, _, _ in votes]),
        np.array([index[b] for _, b, _ in votes]),
        np.array([{"a": 0, "b": 1, "tie": 2}[o] for _, _, o in votes]),
        3,
    )
    ratings = bt.fit_bradley_terry(counts.wins).ratings
    p12 = bt.predicted_win_probability(ratings)[0, 1]
    expected = (6 * (1 - p12) ** 2 + 2 * p12**2) / 8
    assert math.isclose(variances[(1, 2)], expected)
    assert np.allclose(
        pair_outcome_variances(counts, ratings),
        [variances[(1, 2)], variances[(1, 3)], variances[(2, 3)]],
    )


def test_no_fit_while_the_votes_do_not_link_every_system() -> None:
    assert side_by_side_variances([1, 2, 3, 4], [(1, 2, "a"), (3, 4, "b")]) is None
    assert board_of([1, 2, 3, 4], [(1, 2, "a"), (3, 4, "b")]) is None
    assert board_of([1, 2], []) is None


def test_the_leaderboard_orders_systems_and_says_which_adjacent_intervals_separate() -> None:
    votes = [(1, 2, "a")] * 180 + [(2, 1, "a")] * 20 + [(2, 3, "a")] * 52 + [(3, 2, "a")] * 48
    votes += [(1, 3, "a")] * 90 + [(3, 1, "a")] * 10
    board = board_of([1, 2, 3], votes)
    assert board is not None and board.total_votes == len(votes)
    assert [row.system for row in board.rows] == [1, 2, 3]
    for row in board.rows:
        assert row.lower < row.rating < row.upper
    (top, bottom) = board.adjacent
    assert (top.higher, top.lower, top.separated, top.votes_needed) == (1, 2, True, 0)
    assert (bottom.higher, bottom.lower) == (2, 3) and not bottom.separated
    assert bottom.votes_needed is not None and bottom.votes_needed > 0


@pytest.mark.django_db
def test_the_campaign_page_shows_the_live_leaderboard(client) -> None:
    campaign = Campaign.objects.create(name="并排排行", mode=Campaign.Mode.SIDE_BY_SIDE)
    backends = [BackendFactory(name=f"system-{n}") for n in range(3)]
    for n, backend in enumerate(backends):
        CampaignBackend.objects.create(campaign=campaign, backend=backend, alias=f"模型 {n}")
    source = VoteSource.objects.create(campaign=campaign, kind=VoteSource.Kind.SIDE_BY_SIDE)
    plan = [(0, 1, "a", 30), (1, 0, "a", 10), (1, 2, "a", 20), (2, 1, "a", 10)]
    plan += [(0, 2, "a", 15), (2, 0, "a", 5), (0, 1, "a", 1)]
    for a, b, outcome, n in plan:
        for _ in range(n):
            Vote.objects.create(
                campaign=campaign,
                source=source,
                item="sbs:1",
                system_a=backends[a],
                system_b=backends[b],
                outcome=outcome,
                voter_kind=Vote.VoterKind.HUMAN,
                voter="w1",
            )
    leaked = Vote.objects.filter(campaign=campaign).last()
    assert leaked is not None
    leaked.identity_leak = "chatgpt"
    leaked.save()
    board = side_by_side_leaderboard(campaign=campaign)
    assert board.board is not None and board.leaks == 1 and board.votes == 90
    assert [row.system for row in board.board.rows] == [b.pk for b in backends]
    systems = sorted(b.pk for b in backends)
    assert set(pair_variances(campaign=campaign, systems=systems)) == {
        (systems[0], systems[1]),
        (systems[0], systems[2]),
        (systems[1], systems[2]),
    }
    from core.access import Role

    client.force_login(make_user("rose", Role.RESEARCHER))
    page = client.get(f"/chat/campaigns/{campaign.pk}/")
    text = page.content.decode()
    assert page.status_code == 200
    assert 'id="leaderboard-table"' in text and "system-0" in text and "区间已分开" in text
