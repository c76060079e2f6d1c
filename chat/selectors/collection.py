"""Reads for live collection: a worker's dialogue, its grounding items and where the chat stands.

A *turn* is one user utterance and the model's reply (MSDE counts "10 turns (20 utterances)"),
so the number of finished turns is the number of system turns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from chat.models import Campaign, CampaignBackend, Dialogue, Participant, Turn
from core.i18n import display_alias, pick_text


@dataclass(frozen=True)
class GroundingItem:
    """One tickable piece of grounding; `id` is what `Dialogue.grounding_used` stores."""

    id: str
    text: str
    cells: tuple[str, ...] = ()  # a knowledge triple's subject, relation, object
    used: bool = False  # ticked by the worker (shown to reviewers)


@dataclass(frozen=True)
class GroundingSection:
    key: str
    title: str
    layout: str  # "triples" (a table), "path" (topics in order) or "list"
    items: tuple[GroundingItem, ...]


@dataclass(frozen=True)
class ChatState:
    """Where a dialogue stands, computed once so templates and the stream never query again."""

    status: str
    turns_done: int
    max_turns: int
    min_turns: int
    awaiting_reply: bool
    items_total: int
    items_ticked: int
    can_send: bool
    can_finish: bool
    finish_hint: str = field(default="")
    # Seed 001: the tester ends a multi-turn test early when the conversation cannot go on.
    can_end_early: bool = False
    # Seed 001's multi-turn protocol rates each reply before the chat goes on: the questions
    # still unanswered on the last reply (the composer stays locked until it is 0) and on all
    # replies (「完成」 waits for 0; 「无法继续」 does not, the unanswered ones then score 0).
    reply_answers_missing: int = 0
    answers_missing: int = 0

    @property
    def turn_number(self) -> int:
        """The turn being held now, as the counter shows it ("第 n / N 轮")."""
        if self.status == Dialogue.Status.IN_PROGRESS:
            return min(self.turns_done + 1, self.max_turns)
        return self.turns_done


def _text(value: Any) -> str:
    """A grounding value as people read it: lists enumerated (、), mappings as "key：value",
    never a Python repr (`['周杰伦']`)."""
    if isinstance(value, list | tuple):
        return "、".join(_text(part) for part in value if part not in (None, ""))
    if isinstance(value, dict):
        return "；".join(f"{key}：{_text(part)}" for key, part in value.items())
    if value is None:
        return ""
    return str(value)


def _triples(key: str, rows: list[Any]) -> tuple[GroundingItem, ...]:
    items = []
    for i, row in enumerate(rows):
        cells = (
            tuple(_text(cell) for cell in row) if isinstance(row, list | tuple) else (_text(row),)
        )
        items.append(GroundingItem(id=f"{key}:{i}", text=" · ".join(cells), cells=cells))
    return tuple(items)


def _sentences(key: str, rows: list[Any]) -> tuple[GroundingItem, ...]:
    return tuple(GroundingItem(id=f"{key}:{i}", text=_text(row)) for i, row in enumerate(rows))


def _topic_path(goal: list[Any]) -> tuple[GroundingItem, ...]:
    """Knowledge dialogue's topic path as tickable topics.

    DuConv writes the path as `["START", topic_a, topic_b]` (flat, or as the first of several
    lists, the others being goal triples such as `[topic_a, "主演", topic_b]`); "START" is a
    marker, not something to talk about.
    """
    texts: list[str] = []
    for entry in goal:
        if isinstance(entry, list | tuple):
            if entry and entry[0] == "START":
                texts.extend(_text(topic) for topic in entry[1:])
            else:
                texts.append(" · ".join(_text(part) for part in entry))
        elif entry != "START":
            texts.append(_text(entry))
    return tuple(GroundingItem(id=f"goal:{i}", text=text) for i, text in enumerate(texts))


def grounding_sections(*, skill: str, grounding: dict[str, Any]) -> list[GroundingSection]:
    """The grounding panel of a skill: what the worker sees and ticks.

    Knowledge dialogue shows the triples and the topic path (`goal`), recommendation the user
    profile and the goal sequence, persona chat both personas; chit-chat has no grounding. A
    skill added by researchers shows whatever parts its scenarios carry.
    """
    knowledge = grounding.get("knowledge") or []
    goal = grounding.get("goal") or []
    profile = grounding.get("user_profile") or {}
    persona = grounding.get("persona") or {}
    sections: list[GroundingSection] = []

    def add(key: str, title: str, layout: str, items: tuple[GroundingItem, ...]) -> None:
        if items:
            sections.append(GroundingSection(key=key, title=title, layout=layout, items=items))

    if skill == "chitchat":
        return sections
    show_knowledge = skill not in ("recommendation", "persona")
    show_goal = skill != "persona"
    show_profile = skill not in ("knowledge", "persona")
    show_persona = skill not in ("knowledge", "recommendation")
    if show_profile and isinstance(profile, dict):
        add(
            "user_profile",
            _("用户画像"),
            "list",
            tuple(
                GroundingItem(id=f"user_profile:{key}", text=f"{key}：{_text(value)}")
                for key, value in profile.items()
            ),
        )
    if show_knowledge:
        add("knowledge", _("知识"), "triples", _triples("knowledge", knowledge))
    if show_goal:
        if skill == "knowledge":
            add("goal", _("话题路径"), "path", _topic_path(goal))
        else:
            add("goal", _("对话目标"), "list", _sentences("goal", goal))
    if show_persona and isinstance(persona, dict):
        bot = persona.get("bot", [])
        add("persona.bot", _("模型的人设"), "list", _sentences("persona.bot", bot))
        add(
            "persona.user",
            _("你的人设"),
            "list",
            _sentences("persona.user", persona.get("user", [])),
        )
    return sections


# Keys the sections above show (or the chat page shows beside them); anything else a scenario
# carries is listed as "other" so a reviewer sees everything the model was given.
_SHOWN_KEYS = {"knowledge", "goal", "user_profile", "persona", "situation"}


@dataclass(frozen=True)
class GroundingView:
    """A dialogue's or sample's grounding as people read it, for the one shared template
    (`templates/grounding.html`): the chat, review, rating and dataset pages."""

    sections: list[GroundingSection]
    situation: str = ""
    other: list[tuple[str, str]] = field(default_factory=list)
    show_used: bool = False

    @property
    def empty(self) -> bool:
        return not (self.sections or self.situation or self.other)

    @property
    def used_count(self) -> int:
        return sum(item.used for section in self.sections for item in section.items)

    @property
    def item_count(self) -> int:
        return sum(len(section.items) for section in self.sections)


def grounding_view(
    *, skill: str, grounding: Any, used: Iterable[str] | None = None
) -> GroundingView:
    """The skill's grounding sections (as the worker saw them), the situation and any other
    part; with ``used`` (the worker's ticks) each item says whether it was ticked."""
    if not isinstance(grounding, dict):
        return GroundingView(sections=[])
    ticked = set(used or ())
    sections = grounding_sections(skill=skill, grounding=grounding)
    if used is not None:
        sections = [
            replace(
                section,
                items=tuple(replace(item, used=item.id in ticked) for item in section.items),
            )
            for section in sections
        ]
    other = [
        (key, _text(value))
        for key, value in grounding.items()
        if key not in _SHOWN_KEYS and value not in (None, "", [], {})
    ]
    return GroundingView(
        sections=sections,
        situation=_text(grounding.get("situation") or ""),
        other=other,
        show_used=used is not None,
    )


def grounding_item_ids(*, skill: str, grounding: dict[str, Any]) -> list[str]:
    return [
        item.id
        for section in grounding_sections(skill=skill, grounding=grounding)
        for item in section.items
    ]


# Apps above `chat` may lower a campaign's turn limit without `chat` importing them: annotation
# registers the live rubric's `max_turns` (seed 001 locks multi-turn tests at 5 turns).
TURN_LIMIT_SOURCES: list[Callable[[Campaign], int | None]] = []


@dataclass(frozen=True)
class AnswersOwed:
    """Questions the worker has not answered yet on the replies rated while chatting."""

    last_reply: int  # on the latest reply
    total: int  # on every reply so far


# Likewise annotation registers what a rate-while-chatting worker still owes (seed 001: each
# reply is rated before the chat goes on); a source answers None for other campaigns.
ANSWERS_OWED_SOURCES: list[Callable[[Dialogue, list[Turn]], AnswersOwed | None]] = []


def registered_turn_limit(campaign: Campaign) -> int | None:
    """The lowest turn limit a registered source sets for the campaign (None: none does).
    The campaign may be unsaved (a campaign being created is checked against it)."""
    limits = [limit for source in TURN_LIMIT_SOURCES if (limit := source(campaign)) is not None]
    return min(limits) if limits else None


def turn_limit(campaign: Campaign) -> int:
    """The campaign's `max_turns`, lowered to any limit a registered source sets."""
    limit = registered_turn_limit(campaign)
    return campaign.max_turns if limit is None else min(campaign.max_turns, limit)


def answers_owed(*, dialogue: Dialogue, turns: list[Turn]) -> AnswersOwed:
    """What the worker still has to answer on the replies so far (nothing outside a
    rate-while-chatting campaign)."""
    last = total = 0
    for source in ANSWERS_OWED_SOURCES:
        owed = source(dialogue, turns)
        if owed is not None:
            last, total = last + owed.last_reply, total + owed.total
    return AnswersOwed(last_reply=last, total=total)


def chat_state(*, dialogue: Dialogue, turns: list[Turn] | None = None) -> ChatState:
    """Turn counts and what the worker may do now (send, finish), by the MSDE rule.

    Finish needs at least `min_turns` turns, no reply still awaited, and either every grounding
    item ticked or `max_turns` reached. With no grounding (chit-chat) "every item ticked" holds
    trivially, so `min_turns` alone decides. When the campaign rates while chatting (seed 001's
    multi-turn protocol), sending also waits until the last reply's questions are answered and
    finishing until every reply's are (`answers_owed`).
    """
    campaign = dialogue.campaign
    max_turns = turn_limit(campaign)
    min_turns = min(campaign.min_turns, max_turns)
    if turns is None:
        turns = list(dialogue.turns.order_by("index"))
    turns_done = sum(1 for turn in turns if turn.speaker == Turn.Speaker.SYSTEM)
    awaiting = bool(turns) and turns[-1].speaker == Turn.Speaker.USER
    ids = grounding_item_ids(skill=dialogue.skill.key, grounding=dialogue.grounding or {})
    ticked = len(set(ids) & set(dialogue.grounding_used or []))
    open_ = dialogue.status == Dialogue.Status.IN_PROGRESS
    rule_met = ticked == len(ids) or turns_done >= max_turns
    owed = answers_owed(dialogue=dialogue, turns=turns) if open_ else AnswersOwed(0, 0)
    can_finish = open_ and not awaiting and turns_done >= min_turns and rule_met and not owed.total
    state = ChatState(
        status=dialogue.status,
        turns_done=turns_done,
        max_turns=max_turns,
        min_turns=min_turns,
        awaiting_reply=awaiting,
        items_total=len(ids),
        items_ticked=ticked,
        can_send=open_ and not awaiting and turns_done < max_turns and not owed.last_reply,
        can_finish=can_finish,
        # Seed 001's multi-turn protocol, and a side-by-side chat that broke down on one side:
        # the worker may end it after a turn ("cannot continue", recorded on the dialogue).
        can_end_early=open_
        and not awaiting
        and turns_done >= 1
        and (campaign.rate_while_chatting or campaign.mode == Campaign.Mode.SIDE_BY_SIDE),
        reply_answers_missing=owed.last_reply,
        answers_missing=owed.total,
    )
    return with_finish_hint(state)


def with_finish_hint(state: ChatState) -> ChatState:
    """The state with its finish hint in the active language (a state that travelled from
    another process, e.g. a `chat` worker, is re-worded for the request showing it)."""
    hint = ""
    if state.status == Dialogue.Status.IN_PROGRESS and not state.can_finish:
        if state.awaiting_reply:
            hint = _("请等待模型回复。")
        elif state.answers_missing:
            hint = _("还有 %(n)d 个评分问题没有回答：答完才能继续聊天或完成。") % {
                "n": state.answers_missing
            }
        elif state.turns_done < state.min_turns:
            hint = ngettext(
                "至少需要 %(n)d 轮对话。", "至少需要 %(n)d 轮对话。", state.min_turns
            ) % {"n": state.min_turns}
        else:
            hint = ngettext(
                "请用完并勾选全部信息，或聊满 %(n)d 轮。",
                "请用完并勾选全部信息，或聊满 %(n)d 轮。",
                state.max_turns,
            ) % {"n": state.max_turns}
    return replace(state, finish_hint=hint)


def worker_dialogues(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Dialogue]:
    """The worker's dialogues as the chat path reads one: only the relations it reads, and the
    blind alias along (a subquery), so no request of a turn reads it on its own."""
    alias = CampaignBackend.objects.filter(
        campaign_id=OuterRef("campaign_id"), backend_id=OuterRef("backend_id")
    ).values("alias")[:1]
    return (
        Dialogue.objects.filter(worker_id=user.pk)
        .select_related("campaign", "skill")
        .annotate(blind_alias=Subquery(alias))
    )


def worker_dialogue_get(
    *, user: AbstractBaseUser | AnonymousUser, pk: int, lock: bool = False
) -> Dialogue:
    """A dialogue of this worker; someone else's (or a missing one) is a 404, not a 403, so
    dialogue ids of other workers cannot be probed. `lock`: row-locked (in a transaction)."""
    if not user.is_authenticated:
        raise Http404("No such dialogue.")
    dialogues = worker_dialogues(user=user)
    if lock:
        dialogues = dialogues.select_for_update(of=("self",))
    # On every chat request: `get`, no ORDER BY to compile.
    try:
        return dialogues.get(pk=pk)
    except Dialogue.DoesNotExist:
        raise Http404("No such dialogue.") from None


def worker_participant_get(
    *, user: AbstractBaseUser | AnonymousUser, campaign_id: int
) -> Participant | None:
    """The worker's participation in a campaign (with the campaign), or None if they never
    joined it."""
    return (
        Participant.objects.select_related("campaign")  # type: ignore[misc]  # user_id of an anonymous user: None, no row
        .filter(campaign_id=campaign_id, user_id=user.pk)
        .first()
    )


def dialogue_turns(*, dialogue: Dialogue) -> list[Turn]:
    return list(dialogue.turns.order_by("index"))


# What the chat's hot path reads of a dialogue's turns: not the prompts stored with each reply
# (the longest column, read and parsed for every earlier turn of every request otherwise).
CHAT_TURN_FIELDS = ("id", "dialogue_id", "index", "speaker", "text")


def chat_turns(*, dialogue_id: int) -> list[Turn]:
    """The turns in order, with only `CHAT_TURN_FIELDS` (what sending, following and answering
    need)."""
    return list(
        Turn.objects.filter(dialogue_id=dialogue_id).order_by("index").only(*CHAT_TURN_FIELDS)
    )


def backend_alias(*, dialogue: Dialogue) -> str:
    """The blind alias workers see; the model's name never reaches them. A dialogue from
    `worker_dialogue_get` carries it already."""
    if "blind_alias" in vars(dialogue):
        return display_alias(vars(dialogue)["blind_alias"] or "") or _("模型")
    aliases = CampaignBackend.objects.filter(
        campaign_id=dialogue.campaign_id, backend_id=dialogue.backend_id
    ).values_list("alias", flat=True)[:1]  # (unique together; no ORDER BY as `first` adds)
    return display_alias(next(iter(aliases), "")) or _("模型")


def campaign_instructions(*, dialogue: Dialogue, language_code: str) -> str:
    """The campaign's instructions for the dialogue's skill in the worker's interface language
    (falling back as `core.i18n.pick_text` does)."""
    per_skill = (dialogue.campaign.instructions or {}).get(dialogue.skill.key) or {}
    return pick_text(per_skill, language_code or None)
