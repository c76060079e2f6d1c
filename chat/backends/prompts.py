"""Per-skill system prompts that put a scenario's grounding into the model's context.

Templates use `string.Template` placeholders (`$knowledge`, `${goal}`; `$$` is a literal `$`):
substitution only, no expressions, no attribute access, so a researcher's template cannot run
code. The defaults exist per skill and language (zh, en, ja); a backend overrides them per skill
in `config["prompt_templates"][skill]` (one template for every language).
"""

from __future__ import annotations

from string import Template
from typing import Any

from chat.backends.errors import BackendConfigError

MAX_TEMPLATE_CHARS = 20_000

PLACEHOLDERS: dict[str, str] = {
    "knowledge": "knowledge triples, one per line",
    "goal": "topic path / goal sequence",
    "user_profile": "user profile, one attribute per line",
    "bot_persona": "the bot's persona sentences, one per line",
    "user_persona": "the user's persona sentences (what the bot may know), one per line",
    "situation": "the situation (time, place)",
    "skill": "the skill key",
    "language": "the language code",
}

_NONE = {"zh": "（无）", "en": "(none)", "ja": "（なし）"}
_LIST_SEP = {"zh": "、", "en": ", ", "ja": "、"}
_COLON = {"zh": "：", "en": ": ", "ja": "："}

DEFAULT_TEMPLATES: dict[str, dict[str, str]] = {
    "chitchat": {
        "zh": "你是一个友好、自然的聊天伙伴。请用中文简短地回复对方（一到三句话），不要自称 AI。",
        "en": (
            "You are a friendly, natural conversation partner. Reply in English, briefly "
            "(one to three sentences), and do not call yourself an AI."
        ),
        "ja": "あなたは親しみやすい会話相手です。日本語で短く（一〜三文）自然に返答してください。",
    },
    "knowledge": {
        "zh": (
            "你是一个知识型对话助手。请自然地和用户聊天，恰当地使用下面的知识，"
            "并沿着话题路径推进对话。每次回复用中文，一到三句话。\n\n"
            "知识：\n$knowledge\n\n话题路径：$goal"
        ),
        "en": (
            "You are a knowledgeable conversation partner. Chat naturally, use the knowledge "
            "below where it fits, and move the conversation along the topic path. Reply in "
            "English, one to three sentences.\n\nKnowledge:\n$knowledge\n\nTopic path: $goal"
        ),
        "ja": (
            "あなたは知識豊富な会話相手です。以下の知識を適切に使いながら自然に会話し、"
            "話題の流れに沿って会話を進めてください。日本語で一〜三文で返答してください。\n\n"
            "知識：\n$knowledge\n\n話題の流れ：$goal"
        ),
    },
    "recommendation": {
        "zh": (
            "你是一个对话推荐助手。请根据用户画像，按照目标序列一步步引导对话，"
            "在合适的时候推荐目标中的内容。每次回复用中文，一到三句话。\n\n"
            "用户画像：\n$user_profile\n\n目标序列：$goal\n\n情境：$situation\n\n"
            "相关知识：\n$knowledge"
        ),
        "en": (
            "You are a conversational recommender. Follow the goal sequence step by step, "
            "tailored to the user profile, and recommend the goal's items when the moment is "
            "right. Reply in English, one to three sentences.\n\nUser profile:\n$user_profile"
            "\n\nGoal sequence: $goal\n\nSituation: $situation\n\nKnowledge:\n$knowledge"
        ),
        "ja": (
            "あなたは会話型推薦アシスタントです。ユーザープロフィールに合わせて目標の順序に"
            "沿って会話を導き、適切なタイミングで推薦してください。日本語で一〜三文で返答して"
            "ください。\n\nユーザープロフィール：\n$user_profile\n\n目標の順序：$goal\n\n"
            "状況：$situation\n\n関連知識：\n$knowledge"
        ),
    },
    "persona": {
        "zh": (
            "请扮演具有以下人设的人，和用户自然地聊天，回复要符合你的人设，"
            "也可以利用你对用户的了解。每次回复用中文，一到三句话，不要自称 AI。\n\n"
            "你的人设：\n$bot_persona\n\n你对用户的了解：\n$user_persona"
        ),
        "en": (
            "Play a person with the persona below and chat naturally; stay consistent with "
            "your persona and use what you know about the user. Reply in English, one to three "
            "sentences, and do not call yourself an AI.\n\nYour persona:\n$bot_persona\n\n"
            "What you know about the user:\n$user_persona"
        ),
        "ja": (
            "以下のペルソナを持つ人物として自然に会話してください。ペルソナと矛盾しないように"
            "し、ユーザーについて知っていることも活かしてください。日本語で一〜三文で返答し、"
            "AI だと名乗らないでください。\n\nあなたのペルソナ：\n$bot_persona\n\n"
            "ユーザーについて：\n$user_persona"
        ),
    },
}


def _position(template: str, index: int) -> str:
    line = template.count("\n", 0, index) + 1
    column = index - (template.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


def validate_template(template: str, *, field: str = "template") -> None:
    """Refuse a template that cannot render, naming the place: `BackendConfigError`."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise BackendConfigError(
            f"longer than {MAX_TEMPLATE_CHARS} characters ({len(template)})", field=field
        )
    for match in Template.pattern.finditer(template):
        if match.group("invalid") is not None:
            raise BackendConfigError(
                f"'$' at {_position(template, match.start())} does not start a placeholder "
                "(write $$ for a literal $, or $name / ${name})",
                field=field,
            )
        name = match.group("named") or match.group("braced")
        if name is not None and name not in PLACEHOLDERS:
            raise BackendConfigError(
                f"unknown placeholder ${name} at {_position(template, match.start())} "
                f"(known: {', '.join('$' + p for p in PLACEHOLDERS)})",
                field=field,
            )


def _text(value: Any, language: str) -> str:
    if isinstance(value, list | tuple):
        return _LIST_SEP.get(language, ", ").join(_text(v, language) for v in value)
    return str(value)


def _lines(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def grounding_values(grounding: dict, *, skill: str, language: str) -> dict[str, str]:
    """The placeholder values for one scenario; empty parts read "(none)" in the language."""
    none = _NONE.get(language, _NONE["en"])
    colon = _COLON.get(language, ": ")
    knowledge = [" ".join(str(part) for part in t) for t in grounding.get("knowledge") or []]
    goal_steps = [
        " ".join(str(p) for p in step) if isinstance(step, list | tuple) else str(step)
        for step in grounding.get("goal") or []
    ]
    profile = [
        f"{key}{colon}{_text(value, language)}"
        for key, value in (grounding.get("user_profile") or {}).items()
    ]
    persona = grounding.get("persona") or {}
    values = {
        "knowledge": _lines(knowledge),
        "goal": " → ".join(goal_steps),
        "user_profile": _lines(profile),
        "bot_persona": _lines([str(p) for p in persona.get("bot") or []]),
        "user_persona": _lines([str(p) for p in persona.get("user") or []]),
        "situation": str(grounding.get("situation") or ""),
    }
    values = {key: value or none for key, value in values.items()}
    values.update(skill=skill, language=language)
    return values


def default_template(skill: str, language: str) -> str:
    """The built-in template; a skill researchers added gets the chit-chat one."""
    by_language = DEFAULT_TEMPLATES.get(skill, DEFAULT_TEMPLATES["chitchat"])
    return by_language.get(language, by_language["en"])


def template_for(config: dict, *, skill: str, language: str) -> str:
    override = (config.get("prompt_templates") or {}).get(skill)
    return override if override else default_template(skill, language)


def render_prompt(template: str, *, grounding: dict, skill: str, language: str) -> str:
    """Render a validated template; raises `BackendConfigError` for a broken one."""
    validate_template(template)
    return Template(template).substitute(
        grounding_values(grounding, skill=skill, language=language)
    )
