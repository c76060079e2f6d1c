"""An arena-style study for the pairwise tests: votes with their conversations, imported through
the real importer, over four systems whose true strengths are known."""

from __future__ import annotations

import io
import json
import math
import random

from chat.models import Campaign
from chat.services.votes import votes_import

STRENGTHS = {"alpha-bot": 1.2, "beta-bot": 0.5, "gamma-bot": 0.0, "delta-bot": -0.8}


def arena_lines(*, items: int = 60, voters: int = 3, seed: int = 7) -> list[dict]:
    """FastChat records: each item compares two systems' replies (the better system writes the
    longer reply, so `length` predicts the votes); every voter votes on each item."""
    rng = random.Random(seed)
    names = list(STRENGTHS)
    lines = []
    for item in range(items):
        a, b = rng.sample(names, 2)
        prompt = f"Question {item}: tell me about topic {item}."
        answers = {
            name: "answer " + "detail " * (3 + round(3 * (STRENGTHS[name] + 1))) for name in (a, b)
        }
        p = 1 / (1 + math.exp(-(STRENGTHS[a] - STRENGTHS[b]) * 1.5))
        for voter in range(voters):
            roll = rng.random()
            winner = "tie" if roll < 0.12 else ("model_a" if rng.random() < p else "model_b")
            lines.append(
                {
                    "question_id": item,
                    "model_a": a,
                    "model_b": b,
                    "winner": winner,
                    "judge": f"expert_{voter}",
                    "turn": 1,
                    "language": "English",
                    "conversation_a": [
                        {"role": "user", "content": prompt},
                        {"role": "assistant", "content": answers[a]},
                    ],
                    "conversation_b": [
                        {"role": "user", "content": prompt},
                        {"role": "assistant", "content": answers[b]},
                    ],
                }
            )
    return lines


def import_lines(lines: list[dict], *, study: str = "arena", **options: object) -> Campaign:
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    return votes_import(fileobj=io.BytesIO(data), campaign_name=study, **options).campaign


def arena_study(**options: object) -> Campaign:
    return import_lines(arena_lines(**options))
