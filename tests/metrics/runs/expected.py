"""What a run must store, computed by calling the metric registry directly on the same texts."""

from __future__ import annotations

import math
from collections import defaultdict

from chat.models import Dialogue, Turn
from metrics.scorers.registry import score


def _units(dialogues: list[Dialogue]) -> list[tuple[Turn, list[str], str]]:
    units = []
    for dialogue in sorted(dialogues, key=lambda d: d.pk):
        turns = list(dialogue.turns.order_by("index"))
        for position, turn in enumerate(turns):
            if turn.speaker == Turn.Speaker.SYSTEM:
                units.append((turn, [t.text for t in turns[:position]], dialogue.skill.key))
    return units


def expected_scores(
    dialogues: list[Dialogue], metrics: list[str], settings: dict
) -> dict[tuple, float]:
    """``{(level, metric, unit...): value}`` with unit = turn id, dialogue id or
    (backend name, group)."""
    out: dict[tuple, float] = {}
    by_backend: dict[str, list[Dialogue]] = defaultdict(list)
    for d in dialogues:
        by_backend[d.backend.name].append(d)
    for backend, own in by_backend.items():
        skills = sorted({d.skill.key for d in own})
        batches = [(key, [d for d in own if d.skill.key == key]) for key in skills]
        if len(skills) > 1:
            batches.append(("", own))
        for group, members in batches:
            units = _units(members)
            results = score(
                metrics,
                [t.text for t, _, _ in units],
                [t.references for t, _, _ in units],
                [c for _, c, _ in units],
                settings,
            )
            for name, result in results.items():
                out[("system", name, backend, group)] = result.corpus
                if len(skills) == 1:
                    out[("system", name, backend, "")] = result.corpus
                if group == "":
                    continue
                per_dialogue = defaultdict(list)
                for (turn, _, _), value in zip(units, result.per_response.tolist(), strict=True):
                    if math.isfinite(value):
                        out[("turn", name, turn.pk)] = value
                        per_dialogue[turn.dialogue_id].append(value)
                for dialogue_id, values in per_dialogue.items():
                    out[("dialogue", name, dialogue_id)] = sum(values) / len(values)
    return out


def stored_scores(run) -> dict[tuple, float]:
    out = {}
    for s in run.scores.select_related("backend"):
        if s.level == "turn":
            key = ("turn", s.metric, s.turn_id)
        elif s.level == "dialogue":
            key = ("dialogue", s.metric, s.dialogue_id)
        else:
            key = ("system", s.metric, s.backend.name, s.group)
        assert key not in out, f"duplicate score {key}"
        out[key] = s.value
    return out
