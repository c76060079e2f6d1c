"""Live collection, the worker's side: utterances, grounding ticks, submit.

`worker_turn_post` saves a worker's utterance after the acceptability checks; where that turn
then gets its reply (dispatch, generation, the streamed events, retry) is the reply engine,
`chat.services.replies`. Both are called by the chat page's async views (`chat.views.live`) on
the chat's database threads (`chat.services.db_threads`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from chat.models import Dialogue, Participant, Turn
from chat.selectors.collection import (
    ChatState,
    chat_state,
    chat_turns,
    grounding_item_ids,
    worker_dialogue_get,
)
from chat.services import acceptability
from core.errors import ServiceError

MAX_USER_CHARS = 1000


class CollectionError(ServiceError):
    """An operation the dialogue's state does not allow; the message is for the worker."""


class UtteranceRefused(CollectionError):
    """The utterance failed the campaign's acceptability checks; nothing was saved."""

    def __init__(self, messages: list[str], *, flagged: bool) -> None:
        super().__init__(" ".join(messages))
        self.messages = messages
        self.flagged = flagged


def _locked(dialogue: Dialogue) -> Dialogue:
    return (
        Dialogue.objects.select_for_update(of=("self",))
        .select_related("campaign", "skill")
        .get(pk=dialogue.pk)
    )


def require_open(dialogue: Dialogue) -> None:
    """Refuse to change a dialogue that is no longer in progress (the reply engine too)."""
    if dialogue.status != Dialogue.Status.IN_PROGRESS:
        raise CollectionError(
            _("这个对话已经结束（%(status)s），不能再修改。")
            % {"status": dialogue.get_status_display()}
        )


@dataclass(frozen=True)
class PostedUtterance:
    dialogue: Dialogue  # as `worker_dialogue_get` reads it (locked while the utterance was saved)
    turn: Turn
    state: ChatState  # the dialogue's state with the utterance (awaiting its reply)


def utterance_text(text: str) -> str:
    """The utterance as it is saved (stripped), or why it cannot be sent at all."""
    text = (text or "").strip()
    if not text:
        raise CollectionError(_("请输入要发送的话。"))
    if len(text) > MAX_USER_CHARS:
        raise CollectionError(
            _("一次最多发送 %(max)d 个字符（现在 %(n)d 个）。")
            % {"max": MAX_USER_CHARS, "n": len(text)}
        )
    return text


def utterance_violations(
    *, dialogue: Dialogue, turns: list[Turn], text: str
) -> list[acceptability.Violation]:
    """The send's checks on a dialogue read locked with its turns (`chat_turns`): a state that
    allows no utterance now raises `CollectionError`; the acceptability rules the utterance
    breaks are returned (empty: it may be saved)."""
    require_open(dialogue)
    state = chat_state(dialogue=dialogue, turns=turns)
    if state.awaiting_reply:
        raise CollectionError(_("请等模型回复后再发送。"))
    if state.reply_answers_missing:
        # Seed 001's multi-turn protocol: each reply is rated before the chat goes on.
        raise CollectionError(
            _("请先回答上一条回复下的 %(n)d 个评分问题，再继续聊天。")
            % {"n": state.reply_answers_missing}
        )
    if not state.can_send:
        raise CollectionError(
            ngettext(
                "已经聊满 %(n)d 轮，请点击「完成」。",
                "已经聊满 %(n)d 轮，请点击「完成」。",
                state.max_turns,
            )
            % {"n": state.max_turns}
        )
    return acceptability.utterance_check(
        campaign=dialogue.campaign,
        dialogue=dialogue,
        text=text,
        earlier=[turn.text for turn in turns],
    )


def utterance_turn(*, dialogue: Dialogue, turns: list[Turn], text: str) -> Turn:
    """The unsaved turn of an accepted utterance after `turns` (the dialogue's, in order)."""
    return Turn(
        dialogue=dialogue,
        index=turns[-1].index + 1 if turns else 0,
        speaker=Turn.Speaker.USER,
        text=text,
    )


def utterance_refuse(*, dialogue: Dialogue, violations: list[acceptability.Violation]) -> NoReturn:
    """Record a refused utterance against the participant (repeated violations flag them) and
    raise `UtteranceRefused`. Called outside the dialogue's transaction: the refusal stands
    even if recording it fails."""
    participant = (
        Participant.objects.filter(
            campaign_id=dialogue.campaign_id, user_id=dialogue.worker_id
        ).first()
        if dialogue.worker_id is not None
        else None
    )
    flagged = acceptability.violation_record(participant=participant) if participant else False
    raise UtteranceRefused([v.message for v in violations], flagged=flagged)


def worker_turn_post(
    *, worker: AbstractBaseUser | AnonymousUser, dialogue_id: int, text: str
) -> PostedUtterance:
    """Save a worker's utterance in their dialogue (someone else's is a 404, as
    `worker_dialogue_get` answers) after the acceptability checks. The dialogue is read once,
    locked: the send's one read of it.

    A refused utterance is recorded against the participant (repeated violations flag them) and
    raises `UtteranceRefused`; the dialogue is left as it was.
    """
    text = utterance_text(text)
    with transaction.atomic():
        locked = worker_dialogue_get(user=worker, pk=dialogue_id, lock=True)
        turns = chat_turns(dialogue_id=locked.pk)
        violations = utterance_violations(dialogue=locked, turns=turns, text=text)
        if not violations:
            turn = utterance_turn(dialogue=locked, turns=turns, text=text)
            turn.save(force_insert=True)
            Dialogue.objects.filter(pk=locked.pk).update(updated_at=timezone.now())
            return PostedUtterance(locked, turn, chat_state(dialogue=locked, turns=[*turns, turn]))
    utterance_refuse(dialogue=locked, violations=violations)


@transaction.atomic
def grounding_tick(*, dialogue: Dialogue, item_ids: Iterable[str]) -> Dialogue:
    """Set which grounding items the worker has used (the whole set, as the panel shows it)."""
    locked = _locked(dialogue)
    require_open(locked)
    valid = grounding_item_ids(skill=locked.skill.key, grounding=locked.grounding or {})
    wanted = set(item_ids)
    unknown = sorted(wanted - set(valid))
    if unknown:
        raise CollectionError(_("没有这个信息项：%(ids)s") % {"ids": ", ".join(unknown)})
    locked.grounding_used = [item for item in valid if item in wanted]
    locked.save(update_fields=["grounding_used", "updated_at"])
    return locked


def can_finish(*, dialogue: Dialogue) -> bool:
    return chat_state(dialogue=dialogue).can_finish


@transaction.atomic
def dialogue_submit(*, dialogue: Dialogue, cannot_continue: bool = False) -> Dialogue:
    """Hand the dialogue in for review once the finish rule holds (see `chat_state`).

    `cannot_continue` (seed 001's multi-turn protocol): the worker judges that the conversation
    cannot go on and ends it before the finish rule holds; recorded on the dialogue."""
    locked = _locked(dialogue)
    if locked.status == Dialogue.Status.SUBMITTED:
        raise CollectionError(_("这个对话已经提交过了。"))
    require_open(locked)
    state = chat_state(dialogue=locked)
    if cannot_continue and not state.can_end_early:
        raise CollectionError(state.finish_hint or _("现在不能提前结束这段对话。"))
    if not cannot_continue and not state.can_finish:
        raise CollectionError(state.finish_hint)
    locked.status = Dialogue.Status.SUBMITTED
    locked.submitted_at = timezone.now()
    locked.cannot_continue = cannot_continue
    locked.save(update_fields=["status", "submitted_at", "cannot_continue", "updated_at"])
    return locked
