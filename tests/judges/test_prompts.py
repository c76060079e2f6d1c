"""Prompts generated from every preset rubric in zh/en/ja, compared with reviewed snapshots.

A change to the generated prompts changes every judge's cache keys and scores; the snapshots make
that a reviewed decision. Regenerate with ``UPDATE_JUDGE_SNAPSHOTS=1 pytest tests/judges``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotation.presets import preset_specs
from annotation.rubric_spec import validate_spec
from judges import prompts

SNAPSHOTS = Path(__file__).parent / "snapshots"
DIALOGUE = {
    "zh": [("user", "你好，最近在看什么电影？"), ("system", "在看《流浪地球》，导演是郭帆。")],
    "en": [
        ("user", "Hi, seen any good films lately?"),
        ("system", "The Wandering Earth, by Frant Gwo."),
    ],
    "ja": [
        ("user", "こんにちは、最近何か映画を見ましたか？"),
        ("system", "『流転の地球』を見ました。監督はグオ・ファンです。"),
    ],
}
GROUNDING = {"knowledge": [["流浪地球", "导演", "郭帆"]], "goal": [["电影", "流浪地球"]]}


def _render(rubric_key: str, language: str, mode: str = "direct") -> str:
    spec = validate_spec(preset_specs()[rubric_key])
    view = prompts.DialogueView(
        turns=DIALOGUE[language], skill="knowledge", language=language, grounding=GROUNDING
    )
    parts = []
    for level in ("dialogue", "turn"):
        questions = prompts.questions_for(spec, skill="knowledge", level=level, mode=mode)
        if not questions:
            continue
        if level == "turn":
            prompt = prompts.render(
                spec=spec,
                mode=mode,
                level="turn",
                view=prompts.DialogueView(
                    turns=DIALOGUE[language][:1],
                    skill="knowledge",
                    language=language,
                    grounding=GROUNDING,
                ),
                reply=DIALOGUE[language][1][1],
                questions=questions,
            )
        else:
            other = view if mode == "pairwise" else None
            prompt = prompts.render(
                spec=spec,
                mode=mode,
                level="dialogue",
                view=view,
                other=other,
                reference="在看《流浪地球》。" if mode == "reference" else "",
                questions=questions,
            )
        parts.append(
            f"=== {level} · system ===\n{prompt.system}\n=== {level} · user ===\n{prompt.user}\n"
        )
    return "\n".join(parts)


CASES = [(key, lang, "direct") for key in sorted(preset_specs()) for lang in prompts.LANGUAGES]
CASES += [("msde", "zh", "pairwise"), ("msde", "en", "reference")]


@pytest.mark.parametrize(("rubric_key", "language", "mode"), CASES)
def test_the_generated_prompt_matches_its_snapshot(rubric_key, language, mode):
    text = _render(rubric_key, language, mode)
    path = SNAPSHOTS / f"{rubric_key}.{mode}.{language}.txt"
    if os.environ.get("UPDATE_JUDGE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}; run with UPDATE_JUDGE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


def test_msde_asks_only_the_questions_of_the_skill():
    spec = validate_spec(preset_specs()["msde"])
    assert [q.key for q in prompts.questions_for(spec, skill="chitchat", level="dialogue")] == [
        "info",
        "coh",
    ]
    assert [
        q.key for q in prompts.questions_for(spec, skill="recommendation", level="dialogue")
    ] == [
        "info",
        "coh",
        "know",
        "rec",
    ]


def test_the_seed001_gates_are_marked_as_the_first_level():
    text = _render("yesno-single-turn", "zh")
    assert "grammatical — 回复是否符合正确的语法？（一级评判 / 门槛题）" in text
    assert '"grammatical": <"yes" | "no">' in text


def test_an_override_with_an_unknown_placeholder_names_it():
    with pytest.raises(prompts.TemplateError, match=r"unknown placeholder \$dialog at line 1"):
        prompts.validate_template("$dialog $questions", field="prompt_templates.zh")
    with pytest.raises(prompts.TemplateError, match="must contain \\$questions"):
        prompts.validate_template("只有 $dialogue", field="prompt_templates.zh")


def test_an_override_is_rendered_with_the_same_values():
    spec = validate_spec(preset_specs()["likert"])
    view = prompts.DialogueView(turns=DIALOGUE["ja"], skill="chitchat", language="ja")
    prompt = prompts.render(
        spec=spec,
        mode="direct",
        level="dialogue",
        view=view,
        template="対話：\n$dialogue\n\n$questions\n$output_format",
    )
    assert prompt.user.startswith("対話：\nユーザー：こんにちは")
    assert "naturalness — 自然性：対話が自然である。" in prompt.user
    assert prompt.schema["properties"]["scores"]["properties"]["naturalness"]["enum"] == [
        1,
        2,
        3,
        4,
        5,
    ]
