"""Side-by-side conversations: their creation (which pair, which scenario, which side), and
keeping the two dialogues of one conversation in step (abandon, time out, reject, re-collect).

A side-by-side conversation (`SideBySide`) is two ordinary `Dialogue` rows, one per system,
with the same scenario, worker and user turns: everything built for single chats (grounding,
openings, the turn limit, review, scoring, rating) works on each of them unchanged. This module
is called by `chat.services.scenario_assignment` (the worker's next conversation, timeouts,
abandon, re-collection); the worker's page (send, vote, finish) is
`chat.services.side_by_side_chat`.

The rules (issue 27):

- the pair: `chat.pairing`, uniform (balanced counts) or adaptive (Chatbot Arena eq. 9), over
  the pairs that still have room (quota per pair × skill, 0 = every scenario once per pair)
  and a scenario this worker has not had in the campaign;
- then the skill with the fewest conversations of that pair, then the scenario the pair has
  used least (in the campaign's fixed pseudo-random order);
- left and right: a fair coin per conversation, stored (`SideBySide.swapped`).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone

from chat import pairing
from chat.models import (
    Campaign,
    Dialogue,
    Sample,
    SideBySide,
    Vote,
    VoteSource,
)
from chat.services.openings import dialogue_start, opening_pick
from chat.services.side_by_side_hooks import Leaderboard, ranking_provider

# A vote's outcome as the share of a win for the pair's first (smaller id) system.
_SHARE_A = {
    Vote.Outcome.A: 1.0,
    Vote.Outcome.B: 0.0,
    Vote.Outcome.TIE: 0.5,
    Vote.Outcome.BOTH_BAD: 0.5,
}


def item_of(conversation_id: int) -> str:
    """The votes' `item` of a side-by-side conversation."""
    return f"sbs:{conversation_id}"


def side_by_side_of(dialogue: Dialogue) -> SideBySide | None:
    """The side-by-side conversation a dialogue is one side of, or None (a single chat)."""
    return (
        SideBySide.objects.filter(Q(left=dialogue) | Q(right=dialogue))
        .select_related("left", "right", "campaign")
        .first()
    )


def partners_abandon(*, campaign: Campaign) -> int:
    """Abandon the in-progress side of a conversation whose other side was abandoned (by the
    worker, a timeout or a flag): the two sides of a conversation end together, with the same
    reason. Returns how many dialogues it changed."""
    changed = 0
    for side, other in (("sbs_as_left", "right"), ("sbs_as_right", "left")):
        rows = list(
            Dialogue.objects.filter(
                campaign=campaign,
                status=Dialogue.Status.IN_PROGRESS,
                **{f"{side}__{other}__status": Dialogue.Status.ABANDONED},
            ).values_list(
                "pk", f"{side}__{other}__abandon_reason", f"{side}__{other}__abandon_note"
            )
        )
        for pk, reason, note in rows:
            changed += Dialogue.objects.filter(pk=pk, status=Dialogue.Status.IN_PROGRESS).update(
                status=Dialogue.Status.ABANDONED,
                abandon_reason=reason,
                abandon_note=note,
                updated_at=timezone.now(),
            )
    return changed


def partner_reject(*, dialogue: Dialogue) -> Dialogue | None:
    """A reviewer rejected one side of a conversation: the other side is rejected with it
    (with the same reason), since the worker re-collects the conversation as a whole."""
    conversation = side_by_side_of(dialogue)
    if conversation is None or dialogue.status != Dialogue.Status.REJECTED:
        return None
    other = conversation.right if conversation.left_id == dialogue.pk else conversation.left
    if other.status == Dialogue.Status.REJECTED:
        return None
    other.status = Dialogue.Status.REJECTED
    other.rejection_reason = dialogue.rejection_reason
    other.save(update_fields=["status", "rejection_reason", "updated_at"])
    return other


def _votes(campaign: Campaign) -> list[tuple[int, int, str]]:
    return list(
        Vote.objects.filter(
            campaign=campaign,
            source__kind=VoteSource.Kind.SIDE_BY_SIDE,
            identity_leak="",
            excluded_reason="",
        ).values_list("system_a_id", "system_b_id", "outcome")
    )


def side_by_side_vote_rows(*, campaign: Campaign) -> list[tuple[int, int, str]]:
    """The campaign's side-by-side votes as (system A, system B, outcome), leaks left out."""
    return _votes(campaign)


def pair_variances(*, campaign: Campaign, systems: list[int]) -> dict[pairing.Pair, float]:
    """Eq. 9's Σ_aa per pair from the campaign's votes: the registered Bradley–Terry provider's,
    else the pairs' own (`chat.pairing.pair_variances`). Recomputed once every
    `SIDE_BY_SIDE_REFIT_VOTES` votes and cached in between, so choosing a pair costs a count
    query, not a fit, on most assignments."""
    votes_count = Vote.objects.filter(
        campaign=campaign, source__kind=VoteSource.Kind.SIDE_BY_SIDE
    ).count()
    bucket = votes_count // max(1, settings.SIDE_BY_SIDE_REFIT_VOTES)
    key = f"sbs-variances:{campaign.pk}:{bucket}:{','.join(map(str, systems))}"
    cached = cache.get(key)
    if cached is not None:
        return {(pair[0], pair[1]): value for pair, value in cached}
    votes = _votes(campaign)
    provider = ranking_provider()
    variances = provider.variances(systems, votes) if provider is not None else None
    if variances is None:
        outcomes: dict[pairing.Pair, list[float]] = defaultdict(list)
        for a, b, outcome in votes:
            share = _SHARE_A[Vote.Outcome(outcome)]
            pair = (a, b) if a < b else (b, a)
            outcomes[pair].append(share if a < b else 1.0 - share)
        variances = pairing.pair_variances(outcomes)
    cache.set(key, [(list(pair), value) for pair, value in variances.items()], timeout=3600)
    return variances


def _pair_weights(
    campaign: Campaign, pairs: list[pairing.Pair], conversations: Counter[pairing.Pair]
) -> dict[pairing.Pair, float]:
    """Eq. 9 over `pairs`. n_a counts the pair's votes plus its conversations in progress that
    have no vote yet (each will give at least one): without them, workers arriving together
    would all be sent to the same pair before any of them voted."""
    systems = sorted({system for pair in pairs for system in pair})
    votes: Counter[pairing.Pair] = Counter()
    for a, b in Vote.objects.filter(
        campaign=campaign, source__kind=VoteSource.Kind.SIDE_BY_SIDE
    ).values_list("system_a_id", "system_b_id"):
        votes[(a, b) if a < b else (b, a)] += 1
    counts = {pair: votes[pair] + conversations[pair] for pair in pairs}
    return pairing.eq9_weights(pairs, counts, pair_variances(campaign=campaign, systems=systems))


@dataclass(frozen=True)
class _Next:
    pair: pairing.Pair
    sample_id: int


def _next(
    *,
    campaign: Campaign,
    worker_id: int,
    holding: Q,
    order: Callable[[int], str],
    rng: random.Random,
) -> _Next | None:
    """The pair and scenario of the worker's next conversation (see the module docstring)."""
    if campaign.mode != Campaign.Mode.SIDE_BY_SIDE or campaign.status != Campaign.Status.ACTIVE:
        return None
    backend_ids = list(campaign.campaign_backends.values_list("backend_id", flat=True))
    skill_ids = list(campaign.skills.order_by("pk").values_list("pk", flat=True))
    scenarios: dict[int, list[int]] = {skill_id: [] for skill_id in skill_ids}
    for sample_id, skill_id in Sample.objects.filter(
        dataset__in=campaign.datasets.all(), skill_id__in=skill_ids
    ).values_list("pk", "skill_id"):
        scenarios[skill_id].append(sample_id)
    for ids in scenarios.values():
        ids.sort(key=order)

    cells: Counter[tuple[pairing.Pair, int]] = Counter()
    uses: Counter[tuple[pairing.Pair, int]] = Counter()
    conversations: Counter[pairing.Pair] = Counter()
    pending: Counter[pairing.Pair] = Counter()
    voted = set(
        Vote.objects.filter(campaign=campaign, source__kind=VoteSource.Kind.SIDE_BY_SIDE)
        .values_list("item", flat=True)
        .distinct()
    )
    for pk, left, right, skill_id, sample_id, status in (
        SideBySide.objects.filter(campaign=campaign)
        .filter(left__in=Dialogue.objects.filter(holding))
        .values_list(
            "pk",
            "left__backend_id",
            "right__backend_id",
            "left__skill_id",
            "left__scenario_id",
            "left__status",
        )
    ):
        pair = (left, right) if left < right else (right, left)
        cells[(pair, skill_id)] += 1
        uses[(pair, sample_id)] += 1
        conversations[pair] += 1
        if status == Dialogue.Status.IN_PROGRESS and item_of(pk) not in voted:
            pending[pair] += 1
    had = set(
        Dialogue.objects.filter(campaign=campaign, worker_id=worker_id).values_list(
            "scenario_id", flat=True
        )
    )

    def open_skills(pair: pairing.Pair) -> list[int]:
        found = []
        for skill_id in skill_ids:
            cell = scenarios[skill_id]
            quota = campaign.quota_per_cell or len(cell)
            if cell and cells[(pair, skill_id)] < quota and any(s not in had for s in cell):
                found.append(skill_id)
        return found

    pairs = [pair for pair in pairing.all_pairs(backend_ids) if open_skills(pair)]
    if not pairs:
        return None
    if campaign.pairing == Campaign.Pairing.ADAPTIVE:
        chosen = pairing.weighted_pair(_pair_weights(campaign, pairs, pending), rng)
    else:
        chosen = pairing.balanced_pair(pairs, conversations, rng)
    skill_id = min(open_skills(chosen), key=lambda s: (cells[(chosen, s)], skill_ids.index(s)))
    sample_id = min(
        (s for s in scenarios[skill_id] if s not in had),
        key=lambda s: (uses[(chosen, s)], scenarios[skill_id].index(s)),
    )
    return _Next(pair=chosen, sample_id=sample_id)


def side_by_side_available(
    *, campaign: Campaign, worker_id: int, holding: Q, order: Callable[[int], str]
) -> bool:
    """Whether `side_by_side_create_next` would create a conversation for this worker now."""
    found = _next(
        campaign=campaign,
        worker_id=worker_id,
        holding=holding,
        order=order,
        rng=random.Random(0),
    )
    return found is not None


def side_by_side_create_next(
    *,
    campaign: Campaign,
    worker_id: int,
    holding: Q,
    order: Callable[[int], str],
    rng: random.Random | None = None,
) -> SideBySide | None:
    """Create the worker's next side-by-side conversation, or None when nothing is left for
    them. `holding` says which dialogues hold a slot and `order` sorts a skill's scenarios, as
    scenario assignment does for single chats; the caller holds the campaign's row lock and
    has checked the worker's cap."""
    rng = rng or random.SystemRandom()
    found = _next(campaign=campaign, worker_id=worker_id, holding=holding, order=order, rng=rng)
    if found is None:
        return None
    swapped = rng.random() < 0.5
    left_id, right_id = (found.pair[1], found.pair[0]) if swapped else found.pair
    sample = Sample.objects.select_related("dataset").get(pk=found.sample_id)
    opening = opening_pick(
        campaign=campaign, backend_id=left_id, worker_id=worker_id, holding=holding
    )
    sides = [
        dialogue_start(
            campaign=campaign,
            backend_id=backend_id,
            sample=sample,
            worker_id=worker_id,
            opening=opening,
        )
        for backend_id in (left_id, right_id)
    ]
    return SideBySide.objects.create(
        campaign=campaign, left=sides[0], right=sides[1], swapped=swapped
    )


def side_by_side_recollect(
    *, conversation: SideBySide, recollect: Callable[[Dialogue], Dialogue]
) -> SideBySide:
    """Re-collect a rejected conversation: both sides, same pair, scenario, opening and order
    (`recollect` is scenario assignment's single-dialogue re-collection). Calling it again
    while the re-collection is in progress returns that one."""
    existing = conversation.recollections.filter(left__status=Dialogue.Status.IN_PROGRESS).first()
    if existing is not None:
        return existing
    left = recollect(conversation.left)
    right = recollect(conversation.right)
    return SideBySide.objects.create(
        campaign_id=conversation.campaign_id,
        left=left,
        right=right,
        swapped=conversation.swapped,
        recollection_of=conversation,
    )


@dataclass(frozen=True)
class CampaignLeaderboard:
    board: Leaderboard | None  # None: no provider, or the votes do not allow a fit yet
    names: dict[int, str]  # backend id → name (the researcher's page)
    votes: int  # side-by-side votes kept for ranking (identity leaks and exclusions left out)
    leaks: int  # votes left out for an identity leak


def side_by_side_leaderboard(*, campaign: Campaign) -> CampaignLeaderboard:
    """The campaign's live leaderboard from the registered provider, fitted again only when the
    number of votes changed (cached by that number: the campaign page polls it)."""
    systems = sorted(campaign.campaign_backends.values_list("backend_id", flat=True))
    names = dict(campaign.campaign_backends.values_list("backend_id", "backend__name").order_by())
    all_votes = Vote.objects.filter(campaign=campaign, source__kind=VoteSource.Kind.SIDE_BY_SIDE)
    leaks = all_votes.exclude(identity_leak="").count()
    votes = _votes(campaign)
    provider = ranking_provider()
    key = f"sbs-board:{campaign.pk}:{len(votes)}:{leaks}:{','.join(map(str, systems))}"
    board = cache.get(key)
    if board is None and provider is not None:
        board = provider.leaderboard(systems, votes)
        cache.set(key, board, timeout=3600)
    return CampaignLeaderboard(board=board, names=names, votes=len(votes), leaks=leaks)
