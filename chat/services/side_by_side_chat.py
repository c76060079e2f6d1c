"""The worker's side of a side-by-side conversation: one utterance to both systems, the vote,
the finish. Each side is an ordinary dialogue, so the utterance is saved on each with
`chat.services.collection.worker_turn_post` (its checks, its locks) and each gets its reply
from the reply engine (`chat.services.replies`: a reply stream and a chat worker per side,
each under its backend's limits); the page follows both streams at once
(`chat.views.side_by_side`).

Votes: A is the system shown left, B the one shown right (`Vote.system_a`). Per turn (the
campaign's `vote_timing`), the worker votes on each pair of replies before writing the next
utterance; at the end, once, before finishing. A vote names its turn (the number of answered
utterances); its identity leak is the first identity word in the compared replies
(`chat.services.identity`). The systems' names are shown only when the campaign reveals them
and the worker's voting on the conversation is over: after the one vote at the end, or after
the conversation is finished when voting per turn (a name shown mid-conversation would sway
the votes still to come).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import Q
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import Campaign, Dialogue, SideBySide, Turn, Vote, VoteSource
from chat.selectors.collection import CHAT_TURN_FIELDS, ChatState, chat_state
from chat.services import collection
from chat.services.collection import CollectionError, PostedUtterance
from chat.services.dialogue_io import worker_pseudonym
from chat.services.identity import identity_matcher
from chat.services.side_by_side import item_of

REASON_MAX_CHARS = 1000


def worker_side_by_side_get(
    *,
    user: AbstractBaseUser | AnonymousUser,
    pk: int,
    lock: bool = False,
    lock_sides: bool = False,
) -> SideBySide:
    """A side-by-side conversation of this worker; anyone else's is a 404 (as for dialogues).
    `lock`: its row locked (in a transaction); `lock_sides`: both sides' dialogue rows too, in
    the same query, read as they are once locked (the send's one read of the three)."""
    if not user.is_authenticated:
        raise Http404("No such conversation.")
    # The sides' campaign is the conversation's: joined once, shared below.
    conversations = SideBySide.objects.select_related(
        "campaign", "left__skill", "right__skill"
    ).filter(left__worker_id=user.pk)
    if lock_sides:
        conversations = conversations.select_for_update(of=("self", "left", "right"))
    elif lock:
        conversations = conversations.select_for_update(of=("self",))
    try:
        conversation = conversations.get(pk=pk)
    except SideBySide.DoesNotExist:
        raise Http404("No such conversation.") from None
    for side in (conversation.left, conversation.right):
        if side.campaign_id == conversation.campaign_id:
            side.campaign = conversation.campaign
    return conversation


def answered_turns(turns: list[Turn]) -> int:
    """How many utterances of a side have their reply (the turn a vote names)."""
    return sum(1 for turn in turns if turn.speaker == Turn.Speaker.SYSTEM)


@dataclass(frozen=True)
class ConversationState:
    """Where a side-by-side conversation stands, for its page and its rules."""

    left: ChatState
    right: ChatState
    answered: int  # turns both sides have answered
    voted_turns: frozenset[int]
    vote_timing: str
    reveal: bool  # the systems' names may be shown now

    @property
    def vote_due(self) -> int | None:
        """The turn the worker must vote on now, or None."""
        if self.left.awaiting_reply or self.right.awaiting_reply or self.answered == 0:
            return None
        if self.left.status != Dialogue.Status.IN_PROGRESS:
            return None
        if self.vote_timing == Campaign.VoteTiming.TURN:
            return self.answered if self.answered not in self.voted_turns else None
        return None

    @property
    def end_vote_open(self) -> bool:
        """Voting at the end: the vote may be given now (both sides could finish)."""
        return (
            self.vote_timing == Campaign.VoteTiming.END
            and not self.voted_turns
            and self.left.status == Dialogue.Status.IN_PROGRESS
            and (self.left.can_finish and self.right.can_finish)
        )

    @property
    def voted_at_end(self) -> bool:
        """The one vote at the end is in: the conversation can only be finished now (a turn
        after it would not be judged, and the names may be shown)."""
        return self.vote_timing == Campaign.VoteTiming.END and bool(self.voted_turns)

    @property
    def can_send(self) -> bool:
        return (
            self.left.can_send
            and self.right.can_send
            and self.vote_due is None
            and not self.voted_at_end
        )

    @property
    def can_finish(self) -> bool:
        if not (self.left.can_finish and self.right.can_finish):
            return False
        if self.vote_timing == Campaign.VoteTiming.END:
            return bool(self.voted_turns)
        return self.vote_due is None

    @property
    def awaiting_reply(self) -> bool:
        return self.left.awaiting_reply or self.right.awaiting_reply


def _voted_turns(conversation: SideBySide) -> frozenset[int]:
    return frozenset(
        Vote.objects.filter(
            campaign_id=conversation.campaign_id,
            source__kind=VoteSource.Kind.SIDE_BY_SIDE,
            item=item_of(conversation.pk),
        ).values_list("turn", flat=True)
    )


def conversation_state(
    *,
    conversation: SideBySide,
    left_turns: list[Turn] | None = None,
    right_turns: list[Turn] | None = None,
    voted: frozenset[int] | None = None,
) -> ConversationState:
    """The conversation's state; the turns of each side (in order) and the turns voted on are
    read unless given (both sides' turns in one query)."""
    if left_turns is None or right_turns is None:
        left_turns, right_turns = _both_sides_turns(conversation)
    return state_of_sides(
        conversation=conversation,
        left=chat_state(dialogue=conversation.left, turns=left_turns),
        right=chat_state(dialogue=conversation.right, turns=right_turns),
        voted=_voted_turns(conversation) if voted is None else voted,
    )


def state_of_sides(
    *, conversation: SideBySide, left: ChatState, right: ChatState, voted: frozenset[int]
) -> ConversationState:
    """The conversation's state from each side's (`chat_state`: its `turns_done` counts the
    side's replies) and the turns voted on: no query."""
    campaign = conversation.campaign
    over = (
        bool(voted)
        if campaign.vote_timing == Campaign.VoteTiming.END
        else left.status != "in_progress"
    )
    return ConversationState(
        left=left,
        right=right,
        answered=min(left.turns_done, right.turns_done),
        voted_turns=voted,
        vote_timing=campaign.vote_timing,
        reveal=campaign.reveal_after_vote and over and bool(voted),
    )


@dataclass(frozen=True)
class PostedPair:
    conversation: SideBySide
    left: PostedUtterance
    right: PostedUtterance
    # The turns voted on when the utterance was saved: none can be added before both replies
    # are in (a vote waits for them), so the controls after the replies are built from these
    # and the replies' states (`state_of_sides`).
    voted: frozenset[int]


def side_by_side_post(
    *, worker: AbstractBaseUser | AnonymousUser, pk: int, text: str
) -> PostedPair:
    """Save the worker's utterance on both sides (one transaction: both or neither), after the
    single-chat checks on each (`collection.utterance_violations`, left then right) and, voting
    per turn, once the last pair of replies has its vote. The replies are dispatched by the
    caller (`replies.reply_dispatch`, one per side). A refused utterance is recorded against
    the participant once, outside the transaction (`collection.utterance_refuse`).

    This is the send's hot path, so both sides are handled together: the conversation and
    both dialogues read locked in one query, both sides' turns in one, the votes in one, both
    utterances inserted in one statement and both dialogues touched in one update."""
    text = collection.utterance_text(text)
    with transaction.atomic():
        conversation = worker_side_by_side_get(user=worker, pk=pk, lock_sides=True)
        left_turns, right_turns = _both_sides_turns(conversation)
        voted = _require_vote_given(conversation, left_turns, right_turns)
        refused = None
        for dialogue, turns in ((conversation.left, left_turns), (conversation.right, right_turns)):
            violations = collection.utterance_violations(dialogue=dialogue, turns=turns, text=text)
            if violations:
                refused = (dialogue, violations)
                break
        if refused is None:
            left, right = Turn.objects.bulk_create(
                [
                    collection.utterance_turn(
                        dialogue=conversation.left, turns=left_turns, text=text
                    ),
                    collection.utterance_turn(
                        dialogue=conversation.right, turns=right_turns, text=text
                    ),
                ]
            )
            Dialogue.objects.filter(pk__in=[conversation.left_id, conversation.right_id]).update(
                updated_at=timezone.now()
            )
            return PostedPair(
                conversation=conversation,
                left=_posted(conversation.left, left_turns, left),
                right=_posted(conversation.right, right_turns, right),
                voted=voted,
            )
    collection.utterance_refuse(dialogue=refused[0], violations=refused[1])


def _both_sides_turns(conversation: SideBySide) -> tuple[list[Turn], list[Turn]]:
    """Each side's turns in order (`CHAT_TURN_FIELDS`), read in one query."""
    turns = (
        Turn.objects.filter(dialogue_id__in=[conversation.left_id, conversation.right_id])
        .order_by("dialogue_id", "index")
        .only(*CHAT_TURN_FIELDS)
    )
    left: list[Turn] = []
    right: list[Turn] = []
    for turn in turns:
        (left if turn.dialogue_id == conversation.left_id else right).append(turn)
    return left, right


def _posted(dialogue: Dialogue, turns: list[Turn], turn: Turn) -> PostedUtterance:
    return PostedUtterance(dialogue, turn, chat_state(dialogue=dialogue, turns=[*turns, turn]))


def _require_vote_given(
    conversation: SideBySide, left_turns: list[Turn], right_turns: list[Turn]
) -> frozenset[int]:
    """The turns voted on, once the rule allows another utterance."""
    voted = _voted_turns(conversation)
    if conversation.campaign.vote_timing == Campaign.VoteTiming.END:
        if voted:
            raise CollectionError(_("已经投过票了，请点击「完成」。"))
        return voted
    answered = min(answered_turns(left_turns), answered_turns(right_turns))
    if answered and answered not in voted:
        raise CollectionError(_("请先对这一轮的两条回复投票，再继续聊天。"))
    return voted


def _vote_source(campaign: Campaign) -> VoteSource:
    source = VoteSource.objects.filter(campaign=campaign, kind=VoteSource.Kind.SIDE_BY_SIDE).first()
    if source is not None:
        return source
    # Once per campaign: its row lock keeps two first votes from making two sources.
    Campaign.objects.select_for_update().get(pk=campaign.pk)
    source, _created = VoteSource.objects.get_or_create(
        campaign=campaign, kind=VoteSource.Kind.SIDE_BY_SIDE, defaults={"label": campaign.name}
    )
    return source


@dataclass(frozen=True)
class CastVote:
    vote: Vote
    conversation: SideBySide
    state: ConversationState  # the conversation's state with the vote (what the page shows next)


@transaction.atomic
def side_by_side_vote(
    *,
    worker: AbstractBaseUser | AnonymousUser,
    pk: int,
    outcome: str,
    reason: str = "",
) -> CastVote:
    """Record the worker's vote on the turn due (per turn) or on the whole conversation (at the
    end). A second vote on the same turn is refused. The state after the vote comes back with
    it, built from what the vote read (the page's controls need no second read)."""
    if outcome not in Vote.Outcome.values:
        raise CollectionError(_("请选择：A 更好、B 更好、平局或都不好。"))
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX_CHARS:
        raise CollectionError(_("理由最多 %(n)d 个字。") % {"n": REASON_MAX_CHARS})
    conversation = worker_side_by_side_get(user=worker, pk=pk, lock=True)
    left_turns, right_turns = _both_sides_turns(conversation)
    state = conversation_state(
        conversation=conversation, left_turns=left_turns, right_turns=right_turns
    )
    collection.require_open(conversation.left)
    if state.vote_due is not None:
        turn = state.vote_due
        compared = [_replies(left_turns)[turn - 1], _replies(right_turns)[turn - 1]]
    elif state.end_vote_open:
        turn = state.answered
        compared = [*_replies(left_turns), *_replies(right_turns)]
    else:
        raise CollectionError(_("现在没有需要投票的回复。"))
    campaign = conversation.campaign
    left, right = conversation.left, conversation.right
    names = Dialogue.objects.filter(pk__in=[left.pk, right.pk]).values_list(
        "backend__name", flat=True
    )
    matcher = identity_matcher(study_words=campaign.identity_words, system_names=names)
    vote = Vote.objects.create(
        campaign=campaign,
        source=_vote_source(campaign),
        item=item_of(conversation.pk),
        system_a_id=left.backend_id,
        system_b_id=right.backend_id,
        dialogue_a=left,
        dialogue_b=right,
        outcome=outcome,
        voter_kind=Vote.VoterKind.HUMAN,
        voter=worker_pseudonym(campaign_id=campaign.pk, user_id=left.worker_id or 0),
        voter_user_id=left.worker_id,
        turn=turn,
        reason=reason,
        identity_leak=matcher.find(*compared)[:120],
        voted_at=timezone.now(),
    )
    after = conversation_state(
        conversation=conversation,
        left_turns=left_turns,
        right_turns=right_turns,
        voted=state.voted_turns | {turn},
    )
    return CastVote(vote=vote, conversation=conversation, state=after)


def _replies(turns: list[Turn]) -> list[str]:
    return [turn.text for turn in turns if turn.speaker == Turn.Speaker.SYSTEM]


@transaction.atomic
def side_by_side_submit(
    *, worker: AbstractBaseUser | AnonymousUser, pk: int, cannot_continue: bool = False
) -> SideBySide:
    """Hand both sides in for review, once both may finish and the votes are in."""
    conversation = worker_side_by_side_get(user=worker, pk=pk, lock=True)
    state = conversation_state(conversation=conversation)
    if state.left.status == Dialogue.Status.IN_PROGRESS and not cannot_continue:
        if state.vote_timing == Campaign.VoteTiming.END and not state.voted_turns:
            raise CollectionError(_("请先投票：哪一边的对话更好？"))
        if state.vote_due is not None:
            raise CollectionError(_("请先对这一轮的两条回复投票。"))
    for dialogue in (conversation.left, conversation.right):
        collection.dialogue_submit(dialogue=dialogue, cannot_continue=cannot_continue)
    return conversation


@transaction.atomic
def side_by_side_ticks(
    *, worker: AbstractBaseUser | AnonymousUser, pk: int, item_ids: list[str]
) -> SideBySide:
    """Set the used grounding items on both sides (they share the scenario)."""
    conversation = worker_side_by_side_get(user=worker, pk=pk, lock=True)
    for dialogue in (conversation.left, conversation.right):
        collection.grounding_tick(dialogue=dialogue, item_ids=item_ids)
    return worker_side_by_side_get(user=worker, pk=pk)


def side_by_side_for_dialogue(*, dialogue_id: int) -> int | None:
    """The id of the conversation a dialogue is a side of (None: a single chat)."""
    return (
        SideBySide.objects.filter(Q(left_id=dialogue_id) | Q(right_id=dialogue_id))
        .values_list("pk", flat=True)
        .first()
    )
