"""The judges' scoring runs in a program without Django, like `annotation.scoring` (issue 24):
plain records in (a judge's configuration, a dialogue, its answers), scores out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chat.models import Turn
from judges import scoring

REPO_ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import json, sys
from types import SimpleNamespace

from annotation.presets import preset_spec
from annotation.rubric_spec import validate_spec
from chat.backends.base import BackendSpec
from judges import client
from judges.scoring import DialogueData, JudgeConfig, direct_scores, metric_names, pair_outcomes

spec = validate_spec(preset_spec("likert"))
config = JudgeConfig(
    judge_id=1, prefix="judge:likert@v1", mode="direct", spec=spec,
    backend=BackendSpec(id=1, name="judge", adapter="openai"), n=2, aggregate="mean",
    geval=False, params=client.Params(n=2), max_attempts=1, templates={}, rate_limit=0.0,
    signature="",
)
data = DialogueData(
    id=7, backend_id=1, skill="chitchat", language="en", grounding={}, scenario_id=None,
    turns=[(1, "user", "hi", []), (2, "system", "hello", [])], static=False,
)


def answer(sample, order="", other=None, **values):
    return SimpleNamespace(
        dialogue_id=7, other_dialogue_id=other, turn_id=None, order=order, sample=sample,
        values=values, geval={},
    )


dialogue, turns = direct_scores(config, data, [
    answer(0, naturalness=4, topic_following=5, topic_providing=3),
    answer(1, naturalness=2, topic_following=5, topic_providing=3),
])
pairs = pair_outcomes(config, [
    answer(0, order="ab", other=8, naturalness="A"),
    answer(0, order="ba", other=8, naturalness="B"),
])
print(json.dumps({
    "names": metric_names(mode="direct", spec=spec, prefix=config.prefix),
    "dialogue": dialogue,
    "turns": len(turns),
    "model_turns": data.model_turns(),
    "pair": pairs[(7, 8)]["naturalness"],
    "django": sorted(m for m in sys.modules if m == "django" or m.startswith("django.")),
}))
"""


def test_judge_scoring_runs_without_django() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["django"] == []
    prefix = "judge:likert@v1"
    assert out["names"] == [
        f"{prefix}:naturalness",
        f"{prefix}:topic_following",
        f"{prefix}:topic_providing",
        f"{prefix}:overall",
    ]
    # Each question over the two samples; the overall is the rubric's mean, per sample, averaged.
    assert out["dialogue"][f"{prefix}:naturalness"] == 3.0
    assert out["dialogue"][f"{prefix}:topic_following"] == 5.0
    assert abs(out["dialogue"][f"{prefix}:overall"] - (4 + 10 / 3) / 2) < 1e-9
    assert out["turns"] == 0 and out["model_turns"] == [1]
    # Preferred as A, then as B once the order is swapped: dialogue 7 wins the pair.
    assert out["pair"] == [1.0, "1", False]  # (score of dialogue 7, verdict, flipped)


def test_the_model_speaker_is_the_chat_models() -> None:
    # judges.scoring names the model's turns without importing chat.models.
    assert scoring.SYSTEM_SPEAKER == Turn.Speaker.SYSTEM


def test_an_orders_verdict_is_its_samples_majority_and_its_overall_the_mean_outcome() -> None:
    from types import SimpleNamespace

    from annotation.presets import preset_spec
    from annotation.rubric_spec import validate_spec
    from chat.backends.base import BackendSpec
    from judges import client

    spec = validate_spec(preset_spec("likert"))
    config = scoring.JudgeConfig(
        judge_id=1,
        prefix="judge:likert@v1",
        mode="pairwise",
        spec=spec,
        backend=BackendSpec(id=1, name="judge", adapter="openai"),
        n=3,
        aggregate="majority",
        geval=False,
        params=client.Params(n=3),
        max_attempts=1,
        templates={},
        rate_limit=0.0,
        signature="",
    )

    def answer(sample, order, **values):
        return SimpleNamespace(
            dialogue_id=7,
            other_dialogue_id=8,
            turn_id=None,
            order=order,
            sample=sample,
            values=values,
            geval={},
        )

    verdicts = scoring.order_verdicts(
        config,
        [
            answer(0, "ab", naturalness="B", topic_following="A"),
            answer(1, "ab", naturalness="A", topic_following="A"),
            answer(2, "ab", naturalness="A"),
            answer(0, "ba", naturalness="tie"),
            answer(1, "ba"),  # nothing readable: no verdict from this sample
        ],
    )
    assert verdicts == {
        (7, 8): {
            "ab": {"naturalness": "A", "topic_following": "A"},
            "ba": {"naturalness": "tie"},
        }
    }
    assert scoring.order_overall(verdicts[(7, 8)]["ab"]) == "A"
    assert scoring.order_overall({"naturalness": "A", "topic_following": "B"}) == "tie"
    assert scoring.order_overall({"naturalness": "B", "topic_following": "tie"}) == "B"
    assert scoring.order_overall({}) is None
