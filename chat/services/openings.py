"""Campaign openings: seed 001's multi-turn protocol opens every test with a dataset prompt.

Seed 001 draws 20 of its dataset's 1,500 prompts, together covering all 16 topics, and feeds each
to the system under test as the first question of a conversation. A campaign with an
`opening_dataset` does the same:

- `openings_draw` draws `opening_count` samples with every topic covered: one sample per topic
  first, then the rest at random from the samples left, all with `random.Random(opening_seed)`,
  so the same dataset, count and seed always give the same set. A sample's topic is its
  `metadata["topic"]`; its opening is its last context utterance. Samples without either are
  not drawn. More topics than openings is refused (the set could not cover them);
- the drawn set is stored (`CampaignOpening`: sample, topic, text, position) and stays fixed
  once a dialogue has used it;
- each new dialogue gets the opening used least often with its backend (ties: one this worker
  has not had with that backend, then drawing order) as its first user turn. The model's reply
  to it is generated like any reply: the chat page finds the dialogue awaiting a reply and
  follows its stream, which dispatches the generation.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass

from django.db.models import Q
from django.utils.translation import gettext as _

from chat.models import Campaign, CampaignOpening, Dataset, Dialogue, Sample, Turn
from core.errors import ServiceError

TOPIC_KEY = "topic"
TOPIC_MAX_LENGTH = 200  # CampaignOpening.topic
MAX_OPENINGS = 1000


class OpeningDrawError(ServiceError):
    """The openings cannot be drawn from this dataset as asked (the message says why)."""

    location_style = "prefix"


@dataclass(frozen=True)
class DrawnOpening:
    sample_id: int
    sample_index: int
    topic: str
    text: str


def _opening_text(context: object) -> str:
    if not isinstance(context, list):
        return ""
    texts = [item.strip() for item in context if isinstance(item, str) and item.strip()]
    return texts[-1] if texts else ""


def _topic(metadata: object) -> str:
    if not isinstance(metadata, dict):
        return ""
    value = metadata.get(TOPIC_KEY)
    if value is None or isinstance(value, dict | list):
        return ""
    return str(value).strip()[:TOPIC_MAX_LENGTH]


def openings_draw(*, dataset: Dataset, count: int, seed: int) -> list[DrawnOpening]:
    """Draw `count` openings from `dataset` covering every topic (see the module), in the
    dataset's order. Raises `OpeningDrawError` naming what is wrong."""
    if count < 1 or count > MAX_OPENINGS:
        raise OpeningDrawError(
            _("起始话语的数量必须在 1 到 %(max)d 之间。") % {"max": MAX_OPENINGS},
            field="opening_count",
        )
    eligible: list[DrawnOpening] = []
    for pk, index, context, metadata in (
        Sample.objects.filter(dataset=dataset)
        .order_by("index")
        .values_list("pk", "index", "context", "metadata")
    ):
        topic, text = _topic(metadata), _opening_text(context)
        if topic and text:
            eligible.append(DrawnOpening(sample_id=pk, sample_index=index, topic=topic, text=text))
    if not eligible:
        raise OpeningDrawError(
            _(
                "数据集「%(dataset)s」没有可用作起始话语的样本：需要有上下文，"
                "并在 metadata 中用「%(key)s」标明话题。"
            )
            % {"dataset": dataset.name, "key": TOPIC_KEY},
            field="opening_dataset",
        )
    by_topic: dict[str, list[DrawnOpening]] = defaultdict(list)
    for drawn in eligible:
        by_topic[drawn.topic].append(drawn)
    if len(by_topic) > count:
        raise OpeningDrawError(
            _(
                "数据集「%(dataset)s」有 %(topics)d 个话题，%(count)d 条起始话语无法覆盖全部话题；"
                "请至少选取 %(topics)d 条。"
            )
            % {"dataset": dataset.name, "topics": len(by_topic), "count": count},
            field="opening_count",
        )
    if count > len(eligible):
        raise OpeningDrawError(
            _("数据集「%(dataset)s」只有 %(available)d 个带话题的样本，不够选取 %(count)d 条。")
            % {"dataset": dataset.name, "available": len(eligible), "count": count},
            field="opening_count",
        )
    rng = random.Random(seed)
    chosen = [rng.choice(by_topic[topic]) for topic in sorted(by_topic)]
    taken = {drawn.sample_id for drawn in chosen}
    rest = [drawn for drawn in eligible if drawn.sample_id not in taken]
    chosen += rng.sample(rest, count - len(chosen))
    return sorted(chosen, key=lambda drawn: drawn.sample_index)


def openings_in_use(*, campaign: Campaign) -> bool:
    """Whether a dialogue of the campaign opened with one of its openings (the set is fixed)."""
    return Dialogue.objects.filter(campaign=campaign, opening__isnull=False).exists()


def campaign_openings_store(*, campaign: Campaign, drawn: list[DrawnOpening]) -> None:
    """Replace the campaign's openings with `drawn` (callers check `openings_in_use` first)."""
    campaign.openings.all().delete()
    CampaignOpening.objects.bulk_create(
        CampaignOpening(
            campaign=campaign,
            sample_id=item.sample_id,
            position=position,
            topic=item.topic,
            text=item.text,
        )
        for position, item in enumerate(drawn)
    )


def opening_pick(
    *, campaign: Campaign, backend_id: int, worker_id: int, holding: Q
) -> CampaignOpening | None:
    """The opening for a new dialogue with this backend: the one fewest of the backend's
    dialogues holding a slot (`holding`, as scenario assignment counts them) opened with; ties
    go to one this worker has not had with the backend, then to drawing order. None when the
    campaign has no openings."""
    openings = list(campaign.openings.order_by("position"))
    if not openings:
        return None
    used = Counter(
        Dialogue.objects.filter(campaign=campaign, backend_id=backend_id, opening__isnull=False)
        .filter(holding)
        .values_list("opening_id", flat=True)
    )
    had = set(
        Dialogue.objects.filter(
            campaign=campaign, backend_id=backend_id, worker_id=worker_id, opening__isnull=False
        ).values_list("opening_id", flat=True)
    )
    return min(openings, key=lambda o: (used[o.pk], o.pk in had, o.position))


def opening_turn_create(*, dialogue: Dialogue, opening: CampaignOpening) -> Turn:
    """The opening as the new dialogue's first user turn (not subject to the worker checks)."""
    return Turn.objects.create(
        dialogue=dialogue, index=0, speaker=Turn.Speaker.USER, text=opening.text
    )


def dialogue_start(
    *,
    campaign: Campaign,
    backend_id: int,
    sample: Sample,
    worker_id: int,
    opening: CampaignOpening | None,
) -> Dialogue:
    """A worker's new in-progress dialogue with a backend on a scenario (its grounding copied),
    opened with `opening` as its first user turn when the campaign has openings."""
    dialogue = Dialogue.objects.create(
        campaign=campaign,
        backend_id=backend_id,
        scenario=sample,
        opening=opening,
        skill_id=sample.skill_id,
        language=sample.dataset.language,
        worker_id=worker_id,
        status=Dialogue.Status.IN_PROGRESS,
        grounding=sample.grounding,
    )
    if opening is not None:
        opening_turn_create(dialogue=dialogue, opening=opening)
    return dialogue
