"""Reads for live collection: a worker's dialogue, its grounding items and where the chat stands.

A *turn* is one user utterance and the model's reply (MSDE counts "10 turns (20 utterances)"),
so the number of finished turns is the number of system turns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import Http404
from django.utils.translation import gettext as _

from chat.models import CampaignBackend, Dialogue, Turn


@dataclass(frozen=True)
class GroundingItem:
    """One tickable piece of grounding; `id` is what `Dialogue.grounding_used` stores."""

    id: str
    text: str
    cells: tuple[str, ...] = ()  # a knowledge triple's subject, relation, object


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

    @property
    def turn_number(self) -> int:
        """The turn being held now, as the counter shows it ("第 n / N 轮")."""
        if self.status == Dialogue.Status.IN_PROGRESS:
            return min(self.turns_done + 1, self.max_turns)
        return self.turns_done


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(part) for part in value)
    return str(value)


def _triples(key: str, rows: list[Any]) -> tuple[GroundingItem, ...]:
    items = []
    for i, row in enumerate(rows):
        cells = tuple(str(cell) for cell in row) if isinstance(row, list | tuple) else (str(row),)
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
                texts.extend(str(topic) for topic in entry[1:])
            else:
                texts.append(" · ".join(str(part) for part in entry))
        elif entry != "START":
            texts.append(str(entry))
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


def grounding_item_ids(*, skill: str, grounding: dict[str, Any]) -> list[str]:
    return [
        item.id
        for section in grounding_sections(skill=skill, grounding=grounding)
        for item in section.items
    ]


def chat_state(*, dialogue: Dialogue, turns: list[Turn] | None = None) -> ChatState:
    """Turn counts and what the worker may do now (send, finish), by the MSDE rule.

    Finish needs at least `min_turns` turns, no reply still awaited, and either every grounding
    item ticked or `max_turns` reached. With no grounding (chit-chat) "every item ticked" holds
    trivially, so `min_turns` alone decides.
    """
    campaign = dialogue.campaign
    if turns is None:
        turns = list(dialogue.turns.order_by("index"))
    turns_done = sum(1 for turn in turns if turn.speaker == Turn.Speaker.SYSTEM)
    awaiting = bool(turns) and turns[-1].speaker == Turn.Speaker.USER
    ids = grounding_item_ids(skill=dialogue.skill.key, grounding=dialogue.grounding or {})
    ticked = len(set(ids) & set(dialogue.grounding_used or []))
    open_ = dialogue.status == Dialogue.Status.IN_PROGRESS
    rule_met = ticked == len(ids) or turns_done >= campaign.max_turns
    can_finish = open_ and not awaiting and turns_done >= campaign.min_turns and rule_met
    hint = ""
    if open_ and not can_finish:
        if awaiting:
            hint = _("请等待模型回复。")
        elif turns_done < campaign.min_turns:
            hint = _("至少需要 %(n)d 轮对话。") % {"n": campaign.min_turns}
        else:
            hint = _("请用完并勾选全部信息，或聊满 %(n)d 轮。") % {"n": campaign.max_turns}
    return ChatState(
        status=dialogue.status,
        turns_done=turns_done,
        max_turns=campaign.max_turns,
        min_turns=campaign.min_turns,
        awaiting_reply=awaiting,
        items_total=len(ids),
        items_ticked=ticked,
        can_send=open_ and not awaiting and turns_done < campaign.max_turns,
        can_finish=can_finish,
        finish_hint=hint,
    )


def worker_dialogue_get(*, user: AbstractBaseUser | AnonymousUser, pk: int) -> Dialogue:
    """A dialogue of this worker; someone else's (or a missing one) is a 404, not a 403, so
    dialogue ids of other workers cannot be probed."""
    dialogue = (
        Dialogue.objects.select_related("campaign", "backend", "skill", "scenario")
        .filter(pk=pk, worker_id=user.pk)
        .first()
    )
    if dialogue is None or not user.is_authenticated:
        raise Http404("No such dialogue.")
    return dialogue


def dialogue_turns(*, dialogue: Dialogue) -> list[Turn]:
    return list(dialogue.turns.order_by("index"))


def backend_alias(*, dialogue: Dialogue) -> str:
    """The blind alias workers see; the model's name never reaches them."""
    alias = (
        CampaignBackend.objects.filter(
            campaign_id=dialogue.campaign_id, backend_id=dialogue.backend_id
        )
        .values_list("alias", flat=True)
        .first()
    )
    return alias or _("模型")


def campaign_instructions(*, dialogue: Dialogue, language_code: str) -> str:
    """The campaign's instructions for the dialogue's skill in the worker's interface language
    (falling back to Chinese, then English)."""
    per_skill = (dialogue.campaign.instructions or {}).get(dialogue.skill.key) or {}
    if isinstance(per_skill, str):
        return per_skill
    for code in (language_code, "zh-hans", "en"):
        if per_skill.get(code):
            return str(per_skill[code])
    return ""


def rejected_dialogues(*, user: AbstractBaseUser) -> QuerySet[Dialogue]:
    """Dialogues returned to this worker that have not been re-collected yet."""
    return (
        Dialogue.objects.filter(worker_id=user.pk, status=Dialogue.Status.REJECTED)
        .filter(recollections__isnull=True)
        .select_related("campaign", "skill")
        .order_by("-updated_at")
    )
