"""Preset rubric specs shipped with the platform, one JSON file each.

- `msde` — seed 000 §3.2: Info, Coh, Know, Rec on 0–2 with the paper's level definitions
  (Chinese as in the paper, English translated); per seed 000 Table 3, chit-chat is rated on
  Info+Coh, knowledge and persona dialogue add Know, recommendation adds Rec; overall = mean.
- `yesno-single-turn` — seed 001 单轮对话评测: two gate questions (grammar; unacceptable content),
  then 5 categories × 2 yes/no questions, ≥ 3 raters, normalised to 0–100.
- `yesno-multi-turn` — seed 001 多轮对话评测: per model turn, 2 categories (relevance and
  divergence) × 4 yes/no indicators, at most 5 turns, ≥ 5 raters, normalised to 0–100.
- `likert` — seed 004 (対話コンペ 3, open track): naturalness, topic following and topic
  providing on 1–5, phrased as agreement statements; overall = their mean.
- `dslc3-open` — seed 004 §4.1, 対話システムライブコンペティション 3's open track in its own
  wording: 自然性, 話題追従, 話題提供, each on 5 points in steps of 0.5 (the competition's
  published scores have half points); the dialogue's score is their mean.
- `dslc3-situation` — seed 004 §4.1, the situation track's single 5-point (0.5-step) question
  (どれくらいシチュエーションに適しており、かつ、人らしい会話か).

Every text is given in Chinese, English and Japanese (`zh-hans`, `en`, `ja`).

`pairwise/acute_eval.json` (`acute-eval`) holds ACUTE-Eval's four comparative questions (Li,
Weston & Roller 2019) as two-option choices, for pairwise rating jobs only; it is kept apart
from the presets above, which rate one dialogue and which LLM judges are prompted with.

The loader validates each file, so a broken preset fails loudly (and in the tests), never when a
migration has already half-run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from annotation.rubric_spec import validate_spec

PRESET_DIR = Path(__file__).resolve().parent


def preset_specs() -> dict[str, dict[str, Any]]:
    """Every preset spec (validated), keyed by rubric key, as the JSON to store in `Rubric.spec`."""
    specs: dict[str, dict[str, Any]] = {}
    for path in sorted(PRESET_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        spec = validate_spec(data)
        if spec.key in specs:
            raise ValueError(f"{path.name}: preset key {spec.key!r} is used twice")
        specs[spec.key] = data
    return specs


def acute_eval_spec() -> dict[str, Any]:
    """The ACUTE-Eval question set of pairwise jobs (validated)."""
    path = PRESET_DIR / "pairwise" / "acute_eval.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    validate_spec(data)
    return data


def preset_spec(key: str) -> dict[str, Any]:
    """One preset spec by rubric key (`msde`, `yesno-single-turn`, `yesno-multi-turn`, `likert`)."""
    specs = preset_specs()
    if key not in specs:
        raise KeyError(f"no preset rubric {key!r}; presets: {', '.join(specs)}")
    return specs[key]
