"""Judge prompts generated from a rubric spec, per language (zh, en, ja), and their JSON schema.

The judge reads the rubric the experts use: the rubric's instructions, each applicable question's
label, help and level definitions (MSDE's 0–2 definitions, seed 001's gated yes/no questions,
Likert anchors), the scenario's grounding, and the dialogue. Only the questions that apply to the
dialogue's skill (and to the unit's level) are asked. The output asked for is one JSON object
(``{"rationale": …, "scores": {key: value}}``, or ``"winners"`` in pairwise mode) whose schema
is sent as OpenAI ``response_format`` where the backend supports it.

Templates are ``string.Template`` texts (substitution only: a researcher's override cannot run
code). A judge may override the template per language; :data:`PLACEHOLDERS` lists what it can
use. No Django imports.
"""

# Prompt prose is kept one sentence per line so translators can compare the three languages.
# ruff: noqa: E501
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import Template
from typing import Any

from annotation.rubric_spec import Question, RubricSpec
from chat.backends.prompts import grounding_values
from core.errors import ServiceError

LANGUAGES = ("zh", "en", "ja")
MODES = ("direct", "pairwise", "reference")
MAX_TEMPLATE_CHARS = 20_000
SPEC_LANGUAGE = {"zh": "zh-hans", "en": "en", "ja": "ja"}

PLACEHOLDERS: dict[str, str] = {
    "instructions": "the rubric's instructions",
    "grounding": "the scenario's grounding (knowledge, goals, persona), one part per line",
    "dialogue": "the dialogue (or, at the turn level, the context up to the judged reply)",
    "reply": "the judged reply (turn level; empty at the dialogue level)",
    "reference": "the reference reply (reference-guided mode)",
    "dialogue_a": "pairwise: the first dialogue or reply shown",
    "dialogue_b": "pairwise: the second dialogue or reply shown",
    "questions": "the questions with their level definitions",
    "output_format": "the JSON object to answer with",
}


class TemplateError(ServiceError):
    """A template override that cannot render; ``field`` names it (``prompt_templates.zh``)."""

    location_style = "prefix"

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, field=field)


# --- fixed wording per language -----------------------------------------------------------------

_TEXT: dict[str, dict[str, str]] = {
    "zh": {
        "role": "你是一名严谨的对话系统评测专家。请严格按照下面的评分标准进行评价，不要受回复长度或先后顺序的影响。",
        "task_dialogue": "请评价下面整段对话中系统（机器人）一方的表现。",
        "task_turn": "请评价下面对话中系统（机器人）的最后一条回复（“待评价的回复”）。",
        "task_pairwise": "下面是两个系统在同一场景下的对话（或对同一上下文的回复），分别记为 A 和 B。请逐项判断哪一个更好；两者相当时回答 tie。",
        "task_reference": "评价时可参考给出的参考回复，但与参考回复不同的好回复同样可以得高分。",
        "h_instructions": "## 评分说明",
        "h_grounding": "## 对话背景信息",
        "h_dialogue": "## 对话",
        "h_context": "## 上文",
        "h_reply": "## 待评价的回复",
        "h_reference": "## 参考回复",
        "h_a": "## 对话 A",
        "h_b": "## 对话 B",
        "h_questions": "## 评分项",
        "h_output": "## 输出格式",
        "user": "用户",
        "system": "系统",
        "gate": "（一级评判 / 门槛题）",
        "yesno": "回答 yes（是）或 no（否）。",
        "range": "给出 {lo} 到 {hi} 之间的整数。",
        "choice": "给出选项编号：",
        "pairwise_answer": "回答 A、B 或 tie。",
        "output": "只输出一个 JSON 对象，不要输出任何其他文字：",
        "rationale": "简要理由",
        "knowledge": "知识",
        "goal": "目标",
        "user_profile": "用户画像",
        "bot_persona": "系统画像",
        "user_persona": "用户画像（系统可知）",
        "situation": "情境",
    },
    "en": {
        "role": "You are a rigorous evaluator of dialogue systems. Apply the rubric below strictly; do not let the length of a reply or the order of presentation affect your judgement.",
        "task_dialogue": "Evaluate the system (bot) side of the whole dialogue below.",
        "task_turn": "Evaluate the last reply of the system (bot) in the dialogue below (“Reply to evaluate”).",
        "task_pairwise": "Below are two systems' dialogues in the same scenario (or their replies to the same context), labelled A and B. For each question, decide which one is better; answer tie when they are equally good.",
        "task_reference": "A reference reply is given for guidance; a good reply that differs from it can still score high.",
        "h_instructions": "## Instructions",
        "h_grounding": "## Dialogue background",
        "h_dialogue": "## Dialogue",
        "h_context": "## Context",
        "h_reply": "## Reply to evaluate",
        "h_reference": "## Reference reply",
        "h_a": "## Dialogue A",
        "h_b": "## Dialogue B",
        "h_questions": "## Questions",
        "h_output": "## Output format",
        "user": "User",
        "system": "System",
        "gate": " (first level / gate question)",
        "yesno": "Answer yes or no.",
        "range": "Give a whole number from {lo} to {hi}.",
        "choice": "Give the option number:",
        "pairwise_answer": "Answer A, B or tie.",
        "output": "Output only one JSON object and nothing else:",
        "rationale": "brief rationale",
        "knowledge": "Knowledge",
        "goal": "Goal",
        "user_profile": "User profile",
        "bot_persona": "System persona",
        "user_persona": "User persona (known to the system)",
        "situation": "Situation",
    },
    "ja": {
        "role": "あなたは対話システムの厳格な評価者です。以下の評価基準に厳密に従って評価してください。応答の長さや提示順に影響されないでください。",
        "task_dialogue": "以下の対話全体について、システム（ボット）側を評価してください。",
        "task_turn": "以下の対話におけるシステム（ボット）の最後の応答（「評価対象の応答」）を評価してください。",
        "task_pairwise": "以下は同じ場面での二つのシステムの対話（または同じ文脈への応答）で、A と B とします。各項目についてどちらが良いかを判断し、同程度なら tie と答えてください。",
        "task_reference": "参考応答を参考にしてかまいませんが、参考応答と異なっていても良い応答には高い評価を与えてください。",
        "h_instructions": "## 評価の説明",
        "h_grounding": "## 対話の背景情報",
        "h_dialogue": "## 対話",
        "h_context": "## 文脈",
        "h_reply": "## 評価対象の応答",
        "h_reference": "## 参考応答",
        "h_a": "## 対話 A",
        "h_b": "## 対話 B",
        "h_questions": "## 評価項目",
        "h_output": "## 出力形式",
        "user": "ユーザー",
        "system": "システム",
        "gate": "（一次評価・足切り項目）",
        "yesno": "yes（はい）または no（いいえ）で答えてください。",
        "range": "{lo} から {hi} までの整数で答えてください。",
        "choice": "選択肢の番号で答えてください：",
        "pairwise_answer": "A、B、tie のいずれかで答えてください。",
        "output": "JSON オブジェクトを一つだけ出力し、それ以外は何も出力しないでください：",
        "rationale": "簡潔な理由",
        "knowledge": "知識",
        "goal": "目標",
        "user_profile": "ユーザープロフィール",
        "bot_persona": "システムのペルソナ",
        "user_persona": "ユーザーのペルソナ（システムが知っている情報）",
        "situation": "状況",
    },
}

_GROUNDING_PARTS = ("knowledge", "goal", "user_profile", "bot_persona", "user_persona", "situation")


def localized(texts: Mapping[str, str] | None, language: str, default: str = "") -> str:
    """A spec text in ``language`` (zh → zh-hans), else English, else Chinese, else default."""
    texts = texts or {}
    for code in (SPEC_LANGUAGE.get(language, language), "en", "zh-hans"):
        if texts.get(code):
            return texts[code]
    return default


# --- the unit shown to the judge ----------------------------------------------------------------


@dataclass(frozen=True)
class DialogueView:
    """One dialogue as the judge sees it: turns (speaker, text), grounding, skill, language."""

    turns: Sequence[tuple[str, str]]
    skill: str
    language: str
    grounding: Mapping[str, Any] = field(default_factory=dict)
    references: Sequence[str] = ()


@dataclass(frozen=True)
class JudgePrompt:
    """A rendered prompt, the questions it asks, and its hash (the cache key's prompt part)."""

    system: str
    user: str
    questions: tuple[Question, ...]
    schema: dict[str, Any]

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.system}\x00{self.user}".encode()).hexdigest()


def questions_for(
    spec: RubricSpec, *, skill: str | None, level: str, mode: str = "direct"
) -> tuple[Question, ...]:
    """The scored questions asked of a unit: applicable to the skill, of the unit's level.

    Pairwise mode compares on every scored question except the yes/no gates (a gate is a
    pass/fail check, not a preference).
    """
    questions = tuple(
        q for q in spec.questions if q.scored and q.applies_to(skill) and q.level == level
    )
    if mode == "pairwise":
        questions = tuple(q for q in questions if not q.gate)
    return questions


def _transcript(turns: Sequence[tuple[str, str]], language: str) -> str:
    text = _TEXT[language]
    colon = "：" if language in ("zh", "ja") else ": "
    return "\n".join(
        f"{text['user'] if speaker == 'user' else text['system']}{colon}{body}"
        for speaker, body in turns
    )


def _grounding(view: DialogueView) -> str:
    text = _TEXT[view.language]
    values = grounding_values(dict(view.grounding), skill=view.skill, language=view.language)
    none = grounding_values({}, skill=view.skill, language=view.language)
    colon = "：" if view.language in ("zh", "ja") else ": "
    lines = []
    for part in _GROUNDING_PARTS:
        if values[part] != none[part]:
            body = values[part]
            listed = "\n" in body or body.startswith("- ")
            lines.append(f"{text[part]}{colon}\n{body}" if listed else f"{text[part]}{colon}{body}")
    return "\n".join(lines) or none["knowledge"]


def _answer_hint(question: Question, language: str, mode: str) -> str:
    text = _TEXT[language]
    if mode == "pairwise":
        return text["pairwise_answer"]
    if question.type == "yesno":
        return text["yesno"]
    if question.type == "choice":
        options = "; ".join(
            f"{i} = {localized(o.label, language, str(i))}" for i, o in enumerate(question.options)
        )
        return f"{text['choice']} {options}"
    return text["range"].format(lo=question.minimum, hi=question.maximum)


def questions_text(questions: Sequence[Question], language: str, mode: str = "direct") -> str:
    """The numbered questions with help, level definitions and how to answer."""
    text = _TEXT[language]
    blocks = []
    for number, q in enumerate(questions, 1):
        label = localized(q.label, language, q.key)
        head = f"{number}. {q.key} — {label}" + (text["gate"] if q.gate else "")
        lines = [head]
        help_text = localized(q.help, language)
        if help_text:
            lines.append(f"   {help_text}")
        if mode != "pairwise":
            for value in sorted(q.levels, key=lambda v: float(v) if _numeric(v) else 0.0):
                definition = localized(q.levels[value], language)
                if definition:
                    lines.append(f"   [{value}] {definition}")
        lines.append(f"   {_answer_hint(q, language, mode)}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _value_example(question: Question, mode: str) -> str:
    if mode == "pairwise":
        return '"A" | "B" | "tie"'
    if question.type == "yesno":
        return '"yes" | "no"'
    return f"{question.minimum}–{question.maximum}"


def output_format_text(questions: Sequence[Question], language: str, mode: str) -> str:
    text = _TEXT[language]
    key = "winners" if mode == "pairwise" else "scores"
    items = ", ".join(f'"{q.key}": <{_value_example(q, mode)}>' for q in questions)
    return f'{text["output"]}\n{{"rationale": "<{text["rationale"]}>", "{key}": {{{items}}}}}'


def json_schema(questions: Sequence[Question], mode: str) -> dict[str, Any]:
    """The JSON schema of the answer (strict: every question required, nothing else allowed)."""
    properties: dict[str, Any] = {}
    for q in questions:
        if mode == "pairwise":
            properties[q.key] = {"type": "string", "enum": ["A", "B", "tie"]}
        elif q.type == "yesno":
            properties[q.key] = {"type": "string", "enum": ["yes", "no"]}
        else:
            properties[q.key] = {
                "type": "integer",
                "enum": list(range(q.minimum, q.maximum + 1)),
            }
    key = "winners" if mode == "pairwise" else "scores"
    return {
        "type": "object",
        "properties": {
            "rationale": {"type": "string"},
            key: {
                "type": "object",
                "properties": properties,
                "required": [q.key for q in questions],
                "additionalProperties": False,
            },
        },
        "required": ["rationale", key],
        "additionalProperties": False,
    }


# --- templates ----------------------------------------------------------------------------------


def default_template(*, mode: str, level: str, language: str) -> str:
    """The generated template of a mode and unit level in a language."""
    text = _TEXT[language]
    parts = []
    if mode == "pairwise":
        parts.append(text["task_pairwise"])
    else:
        parts.append(text["task_turn"] if level == "turn" else text["task_dialogue"])
        if mode == "reference":
            parts.append(text["task_reference"])
    parts += [
        "",
        text["h_instructions"],
        "$instructions",
        "",
        text["h_grounding"],
        "$grounding",
        "",
    ]
    if mode == "pairwise":
        parts += [text["h_a"], "$dialogue_a", "", text["h_b"], "$dialogue_b", ""]
    elif level == "turn":
        parts += [text["h_context"], "$dialogue", "", text["h_reply"], "$reply", ""]
    else:
        parts += [text["h_dialogue"], "$dialogue", ""]
    if mode == "reference":
        parts += [text["h_reference"], "$reference", ""]
    parts += [text["h_questions"], "$questions", "", text["h_output"], "$output_format"]
    return "\n".join(parts)


def _position(template: str, index: int) -> str:
    line = template.count("\n", 0, index) + 1
    column = index - (template.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


def validate_template(template: str, *, field: str) -> None:
    """Refuse an override that cannot render, naming the place (:class:`TemplateError`)."""
    if not isinstance(template, str) or not template.strip():
        raise TemplateError("expected a non-empty template", field=field)
    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateError(f"longer than {MAX_TEMPLATE_CHARS} characters", field=field)
    names = set()
    for match in Template.pattern.finditer(template):
        if match.group("invalid") is not None:
            raise TemplateError(
                f"'$' at {_position(template, match.start())} does not start a placeholder "
                "(write $$ for a literal $)",
                field=field,
            )
        name = match.group("named") or match.group("braced")
        if name is not None:
            if name not in PLACEHOLDERS:
                raise TemplateError(
                    f"unknown placeholder ${name} at {_position(template, match.start())} "
                    f"(known: {', '.join('$' + p for p in PLACEHOLDERS)})",
                    field=field,
                )
            names.add(name)
    if "questions" not in names:
        raise TemplateError("the template must contain $questions", field=field)


def render(
    *,
    spec: RubricSpec,
    mode: str,
    level: str,
    view: DialogueView,
    other: DialogueView | None = None,
    reply: str = "",
    reference: str = "",
    template: str | None = None,
    questions: Sequence[Question] | None = None,
) -> JudgePrompt:
    """The prompt for one unit: a dialogue (``reply`` empty), a turn (``view`` holds the context
    before ``reply``), or a pair (``view`` shown as A, ``other`` as B)."""
    language = view.language if view.language in LANGUAGES else "en"
    asked = (
        tuple(questions)
        if questions is not None
        else questions_for(spec, skill=view.skill, level=level, mode=mode)
    )
    values = {
        "instructions": localized(spec.instructions, language) or localized(spec.title, language),
        "grounding": _grounding(view),
        "dialogue": _transcript(view.turns, language),
        "reply": reply,
        "reference": reference,
        "dialogue_a": "",
        "dialogue_b": "",
        "questions": questions_text(asked, language, mode),
        "output_format": output_format_text(asked, language, mode),
    }
    if mode == "pairwise":
        if other is None:
            raise ValueError("pairwise mode needs two dialogues")
        values["dialogue_a"] = _transcript(view.turns, language)
        values["dialogue_b"] = _transcript(other.turns, language)
        values["dialogue"] = ""
    body = template or default_template(mode=mode, level=level, language=language)
    validate_template(body, field=f"prompt_templates.{language}")
    user = Template(body).substitute(values)
    return JudgePrompt(
        system=_TEXT[language]["role"],
        user=user,
        questions=asked,
        schema=json_schema(asked, mode),
    )
