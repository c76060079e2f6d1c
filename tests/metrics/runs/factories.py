"""Test data for metric runs: a campaign of two backends whose model turns carry references."""

from __future__ import annotations

from dataclasses import dataclass

from chat.models import Backend, Campaign, Dialogue, Turn
from tests.chat.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DialogueFactory,
    TurnFactory,
    skill,
)

# (user, model reply, reference) exchanges; two per dialogue.
EXCHANGES = [
    ("你好，最近在看什么电影？", "在看流浪地球，很好看。", "我在看《流浪地球》，你看过吗？"),
    ("导演是谁？", "导演是郭帆。", "是郭帆导演的。"),
    ("你喜欢科幻片吗？", "喜欢，科幻片很有想象力。", "很喜欢，尤其是国产科幻。"),
    ("推荐一本书吧。", "推荐你读三体。", "可以读读刘慈欣的《三体》。"),
    ("今天天气怎么样？", "今天天气很好，适合出去走走。", "天气不错，阳光很好。"),
    ("周末有什么安排？", "周末打算去爬山。", "我周末想去爬山。"),
]
REPLY_VARIANTS = ["", "我觉得", "嗯，"]


@dataclass
class Study:
    campaign: Campaign
    backends: list[Backend]
    dialogues: list[Dialogue]


def make_study(
    *,
    dialogues_per_cell: int = 3,
    skills: tuple[str, ...] = ("knowledge", "chitchat"),
    with_references: bool = True,
    status: str = Dialogue.Status.ACCEPTED,
) -> Study:
    """Two backends; the first answers in every skill, the second in the first skill only.

    Each dialogue has two exchanges (user, model) so dialogue means differ from turn values.
    """
    campaign = CampaignFactory(mode=Campaign.Mode.INTERACTIVE)
    backends = [BackendFactory(name="系统甲"), BackendFactory(name="系统乙")]
    for backend in backends:
        CampaignBackendFactory(campaign=campaign, backend=backend)
    dialogues = []
    n = 0
    for b, backend in enumerate(backends):
        for key in skills if b == 0 else skills[:1]:
            for _ in range(dialogues_per_cell):
                dialogue = DialogueFactory(
                    campaign=campaign, backend=backend, skill=skill(key), status=status
                )
                for position in range(2):
                    user, reply, reference = EXCHANGES[(n + position) % len(EXCHANGES)]
                    reply = REPLY_VARIANTS[(n + b) % len(REPLY_VARIANTS)] + reply
                    TurnFactory(dialogue=dialogue, index=2 * position, text=user)
                    TurnFactory(
                        dialogue=dialogue,
                        index=2 * position + 1,
                        speaker=Turn.Speaker.SYSTEM,
                        text=reply,
                        references=[reference] if with_references else [],
                    )
                dialogues.append(dialogue)
                n += 1
    return Study(campaign, backends, dialogues)
