"""ACUTE-Eval style comparison of two whole dialogues (Li, Weston & Roller 2019,
arXiv:1909.03087): the comparative questions and the pairing of dialogues with raters.

An item is two dialogues of the same scenario by two systems, shown side by side; the rater
judges one speaker (the system side) in each and answers every question with a forced choice
and a one-line reason. Pairing is a paired design: in every scenario each pair of systems that
both have a dialogue there is compared once, by `per_pair` raters, and a rater never sees the
same dialogue twice (ACUTE shows a worker each conversation once so a judgement is never
anchored on an earlier reading of it).

No Django imports: the services and the property tests share this module.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from annotation.rubric_spec import RubricSpec

LEFT, RIGHT = 0, 1  # the stored answer: which side the rater chose
REASON_MAX_LENGTH = 500


@dataclass(frozen=True)
class ComparativeQuestion:
    key: str
    label: Mapping[str, str]  # language → the question as asked
    left: Mapping[str, str]  # language → the text of the left choice
    right: Mapping[str, str]


_BETTER = {
    "zh-hans": "哪段对话中的模型在「{}」上更好？",
    "en": "In which dialogue is the model better on “{}”?",
    "ja": "「{}」の点で、どちらの対話のモデルのほうが優れていますか？",
}
_LEFT = {"zh-hans": "左边", "en": "Left", "ja": "左"}
_RIGHT = {"zh-hans": "右边", "en": "Right", "ja": "右"}


def comparative_questions(spec: RubricSpec) -> list[ComparativeQuestion]:
    """The questions a pairwise job asks, from its rubric.

    A `choice` question with exactly two options is already comparative (the ACUTE-Eval preset:
    its label is the published question, its options the left and right choices) and is asked
    as written. Every other scored question (not free text, not a gate) becomes "in which
    dialogue is the model better on <label>?", at dialogue level: ACUTE compares whole
    conversations, so a rubric's per-turn question is asked once about the whole dialogue.
    """
    questions = []
    for q in spec.questions:
        if q.type == "choice" and len(q.options) == 2:
            left, right = q.options[0].label, q.options[1].label
            questions.append(ComparativeQuestion(q.key, q.label, left, right))
        elif q.type != "text" and not q.gate:
            label = {lang: text.format(q.label.get(lang) or "") for lang, text in _BETTER.items()}
            label = {lang: text for lang, text in label.items() if q.label.get(lang)}
            questions.append(ComparativeQuestion(q.key, label, _LEFT, _RIGHT))
    return questions


# --- pairing (pure) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """Two dialogues of one scenario by two systems; `first` has the smaller system key."""

    scenario: Hashable
    first: int  # dialogue
    second: int  # dialogue
    systems: tuple[Hashable, Hashable]

    @property
    def key(self) -> tuple[int, int]:
        return (self.first, self.second)


def pairs_for_scenarios(scenarios: Mapping[Hashable, Mapping[Hashable, int]]) -> list[Pair]:
    """Every pair of systems once per scenario: `scenarios` maps a scenario to {system: its
    dialogue}. A scenario with k systems gives k(k-1)/2 pairs, so each system pair is compared
    equally often in every scenario both systems have (the paired design)."""
    pairs = []
    for scenario, by_system in scenarios.items():
        systems = sorted(by_system, key=str)
        for a, b in combinations(systems, 2):
            pairs.append(Pair(scenario, by_system[a], by_system[b], (a, b)))
    return pairs


@dataclass(frozen=True)
class Placement:
    pair: tuple[int, int]
    rater: int
    left: int  # the dialogue shown on the left
    right: int


def left_first(*, seed: str, pair: tuple[int, int], rater: int) -> bool:
    """Whether the pair's first dialogue goes on the left for this rater: a fair coin that is
    reproducible from the job's seed and independent per (pair, rater)."""
    digest = hashlib.sha256(f"{seed}:{pair[0]}:{pair[1]}:{rater}".encode()).digest()
    return digest[0] & 1 == 0


def item_position(*, seed: str, rater: int, pair: tuple[int, int]) -> int:
    """A rater's random position for a pair: reproducible, different per rater."""
    digest = hashlib.sha256(f"{seed}:{rater}:{pair[0]}:{pair[1]}:order".encode()).digest()
    return int.from_bytes(digest[:4], "big") & (2**31 - 1)


def place_pairs(
    *,
    pairs: Sequence[Pair],
    raters: Sequence[int],
    per_pair: int,
    holders: Mapping[tuple[int, int], set[int]],
    seen: Mapping[int, set[int]],
    excluded: Mapping[int, set[int]],
    loads: Mapping[int, int],
    seed: str,
) -> list[Placement]:
    """Give each pair raters until it has `per_pair` of them.

    `holders` are the raters a pair already has; `seen` the dialogues each rater was ever shown
    (so never again); `excluded` the raters who may not see a dialogue (its collector); `loads`
    each rater's current work. Pairs are taken in a seeded random order, and each goes to the
    least-loaded eligible raters (ties broken by the seeded order), so work stays balanced. A
    pair left short has too few eligible raters: the caller reports the shortfall.
    """
    rng = random.Random(seed)
    order = list(pairs)
    rng.shuffle(order)
    tiebreak = {r: i for i, r in enumerate(rng.sample(list(raters), len(raters)))}
    load = {r: loads.get(r, 0) for r in raters}
    shown: dict[int, set[int]] = defaultdict(set, {r: set(seen.get(r, ())) for r in raters})
    placements = []
    for pair in order:
        have = set(holders.get(pair.key, ()))
        missing = per_pair - len(have)
        if missing <= 0:
            continue
        blocked = excluded.get(pair.first, set()) | excluded.get(pair.second, set())
        eligible = [
            r
            for r in raters
            if r not in have
            and r not in blocked
            and pair.first not in shown[r]
            and pair.second not in shown[r]
        ]
        eligible.sort(key=lambda r: (load[r], tiebreak[r]))
        for rater in eligible[:missing]:
            first = left_first(seed=seed, pair=pair.key, rater=rater)
            left, right = (pair.first, pair.second) if first else (pair.second, pair.first)
            placements.append(Placement(pair.key, rater, left, right))
            shown[rater].update(pair.key)
            load[rater] += 1
    return placements
