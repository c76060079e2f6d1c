"""Fake judge answers for the fake OpenAI server: well-formed JSON for whatever was asked."""

from __future__ import annotations

import json
import re
from typing import Any

from chat.models import Backend
from tests.chat.factories import BackendFactory

_ASKED = re.compile(r'"([a-z0-9_-]+)": <([^>]*)>')


def asked(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """(question key, value hint) pairs of the prompt's output format line."""
    user = payload["messages"][-1]["content"]
    return _ASKED.findall(user[user.rfind('{"rationale"') :])


def answer_for(payload: dict[str, Any], value: Any = None) -> str:
    """A JSON judgement: the top of each scale (or ``value``), yes, or "A" for pairs."""
    scores: dict[str, Any] = {}
    for key, hint in asked(payload):
        if "A" in hint and "tie" in hint:
            scores[key] = "A"
        elif "yes" in hint:
            scores[key] = "yes"
        else:
            low, high = (int(x) for x in hint.split("–"))
            scores[key] = high if value is None else min(max(value, low), high)
    container = "winners" if any("tie" in h for _, h in asked(payload)) else "scores"
    return json.dumps(
        {"rationale": "理由：回复相关且信息丰富。", container: scores}, ensure_ascii=False
    )


def judge_backend(server, **config: Any) -> Backend:
    return BackendFactory(
        name="裁判模型",
        adapter=Backend.Adapter.OPENAI,
        config={"base_url": server.base_url, "model": "judge-model", "max_retries": 0, **config},
        concurrency_limit=8,
        timeout_s=10,
    )
