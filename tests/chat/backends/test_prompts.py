"""Prompt templates: defaults per skill and language, overrides, and refused templates."""

from __future__ import annotations

import pytest

from chat.backends.errors import BackendConfigError
from chat.backends.prompts import DEFAULT_TEMPLATES, render_prompt, validate_template
from chat.models import Backend
from chat.services.generation import BackendError, build_request

KNOWLEDGE = {"knowledge": [["霸王别姬", "导演", "陈凯歌"]], "goal": ["START", "霸王别姬", "张国荣"]}
RECOMMENDATION = {
    "user_profile": {"姓名": "陈嘉怡", "喜欢的明星": ["梁朝伟", "张曼玉"]},
    "goal": ["寒暄", "电影推荐 『无间道』"],
    "situation": "晚上 20:00，在家里",
}
PERSONA = {"persona": {"bot": ["我是一名护士"], "user": ["我喜欢跑步"], "user_unsaid": ["秘密"]}}


def _prompt(skill: str, language: str, grounding: dict, config: dict | None = None) -> str:
    backend = Backend(name="p", adapter="retrieval", config=config or {})
    return build_request(
        backend=backend, skill=skill, language=language, grounding=grounding, history=[]
    ).prompt


@pytest.mark.parametrize("language", ["zh", "en", "ja"])
def test_every_skill_has_a_default_per_language(language: str) -> None:
    for skill, templates in DEFAULT_TEMPLATES.items():
        assert language in templates, skill
        validate_template(templates[language])


@pytest.mark.parametrize(
    ("language", "labels"),
    [("zh", ("知识", "话题路径")), ("en", ("Knowledge", "Topic path")), ("ja", ("知識", "話題"))],
)
def test_knowledge_prompts_carry_the_triples_and_topic_path(
    language: str, labels: tuple[str, str]
) -> None:
    prompt = _prompt("knowledge", language, KNOWLEDGE)
    assert "- 霸王别姬 导演 陈凯歌" in prompt
    assert "START → 霸王别姬 → 张国荣" in prompt
    assert all(label in prompt for label in labels)


def test_recommendation_prompts_carry_profile_goals_and_situation() -> None:
    prompt = _prompt("recommendation", "zh", RECOMMENDATION)
    assert "- 姓名：陈嘉怡" in prompt
    assert "- 喜欢的明星：梁朝伟、张曼玉" in prompt
    assert "寒暄 → 电影推荐 『无间道』" in prompt
    assert "晚上 20:00，在家里" in prompt
    assert "相关知识：\n（无）" in prompt


def test_persona_prompts_carry_both_personas_but_not_the_unsaid_one() -> None:
    prompt = _prompt("persona", "en", PERSONA)
    assert "Your persona:\n- 我是一名护士" in prompt
    assert "What you know about the user:\n- 我喜欢跑步" in prompt
    assert "秘密" not in prompt


def test_chitchat_prompts_carry_no_grounding() -> None:
    prompt = _prompt("chitchat", "zh", KNOWLEDGE)
    assert "霸王别姬" not in prompt
    assert prompt == DEFAULT_TEMPLATES["chitchat"]["zh"]


def test_duconv_goal_triples_are_readable() -> None:
    prompt = _prompt("knowledge", "zh", {"goal": [["START", "流浪地球", "吴京"]]})
    assert "START 流浪地球 吴京" in prompt


def test_a_backend_overrides_a_skill_template() -> None:
    config = {"prompt_templates": {"knowledge": "Facts ($language, $$5):\n${knowledge}"}}
    assert (
        _prompt("knowledge", "zh", KNOWLEDGE, config) == "Facts (zh, $5):\n- 霸王别姬 导演 陈凯歌"
    )
    assert _prompt("persona", "zh", PERSONA, config).startswith("请扮演")  # other skills: default


def test_a_skill_researchers_added_gets_the_chitchat_default() -> None:
    assert _prompt("debate", "en", {}) == DEFAULT_TEMPLATES["chitchat"]["en"]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("你好\n知识：$knowlege", "unknown placeholder $knowlege at line 2, column 4"),
        ("价格 $5", "'$' at line 1, column 4 does not start a placeholder"),
        ("${goal", "'$' at line 1, column 1 does not start a placeholder"),
        ("{{ request.user.password }} ${__class__}", "unknown placeholder $__class__"),
    ],
)
def test_broken_templates_are_refused_with_the_place(template: str, message: str) -> None:
    with pytest.raises(BackendConfigError) as caught:
        validate_template(template, field="prompt_templates.knowledge")
    assert message in str(caught.value)
    assert caught.value.field == "prompt_templates.knowledge"


def test_a_broken_stored_template_is_a_config_error_at_call_time() -> None:
    backend = Backend(
        name="p", adapter="retrieval", config={"prompt_templates": {"chitchat": "$x"}}
    )
    with pytest.raises(BackendError) as caught:
        build_request(backend=backend, skill="chitchat", language="zh", grounding={}, history=[])
    assert caught.value.kind == "config"
    assert "chitchat" in str(caught.value) and "$x" in str(caught.value)


def test_grounding_text_is_substituted_literally() -> None:
    """A `$` or template syntax inside grounding is data, never expanded."""
    prompt = render_prompt(
        "$knowledge",
        grounding={"knowledge": [["$goal", "{{ x }}", "${bot_persona}"]]},
        skill="knowledge",
        language="zh",
    )
    assert prompt == "- $goal {{ x }} ${bot_persona}"
