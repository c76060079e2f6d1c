"""The backend form: common fields, a JSON config editor, and one prompt template per skill."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.backends.errors import BackendConfigError
from chat.models import Backend, Skill

CALLABLE_ADAPTERS = [
    (value, label) for value, label in Backend.Adapter.choices if value != Backend.Adapter.IMPORTED
]
SERVICE_FIELDS = ("name", "adapter", "api_key_env", "concurrency_limit", "timeout_s")


def prompt_field_name(skill_key: str) -> str:
    return f"prompt_{skill_key}"


class BackendForm(forms.Form):
    name = forms.CharField(label=_("名称"), max_length=120)
    adapter = forms.ChoiceField(label=_("适配器"), choices=CALLABLE_ADAPTERS)
    description = forms.CharField(
        label=_("说明"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    api_key_env = forms.CharField(
        label=_("API 密钥所在的环境变量名"),
        required=False,
        max_length=120,
        help_text=_("只填变量名（如 OPENAI_API_KEY），不要填写密钥本身；密钥从服务器环境读取。"),
    )
    concurrency_limit = forms.IntegerField(label=_("并发上限"), min_value=1, initial=4)
    timeout_s = forms.FloatField(
        label=_("超时（秒）"),
        min_value=0.1,
        initial=60.0,
        help_text=_("等待首个片段以及两个片段之间的最长时间。"),
    )
    config = forms.CharField(
        label=_("配置（JSON）"),
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "code"}),
        initial="{}",
    )

    def __init__(self, *args: Any, skills: list[Skill], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.skills = skills
        for skill in skills:
            self.fields[prompt_field_name(skill.key)] = forms.CharField(
                label=skill.label,
                required=False,
                strip=False,
                widget=forms.Textarea(attrs={"rows": 4}),
            )

    @classmethod
    def initial_for(cls, backend: Backend) -> dict[str, Any]:
        config = dict(backend.config or {})
        templates = config.pop("prompt_templates", None) or {}
        initial = {
            "name": backend.name,
            "adapter": backend.adapter,
            "description": backend.description,
            "api_key_env": backend.api_key_env,
            "concurrency_limit": backend.concurrency_limit,
            "timeout_s": backend.timeout_s,
            "config": json.dumps(config, ensure_ascii=False, indent=2),
        }
        initial.update({prompt_field_name(k): v for k, v in templates.items()})
        return initial

    def main_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in SERVICE_FIELDS]

    def prompt_fields(self) -> list[forms.BoundField]:
        return [self[prompt_field_name(skill.key)] for skill in self.skills]

    def clean_config(self) -> dict[str, Any]:
        text = self.cleaned_data["config"]
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                _("不是合法的 JSON（第 %(line)d 行第 %(col)d 列）：%(msg)s"),
                params={"line": exc.lineno, "col": exc.colno, "msg": exc.msg},
            ) from None
        if not isinstance(config, dict):
            raise forms.ValidationError(_("配置必须是一个 JSON 对象（{…}）。"))
        if "prompt_templates" in config:
            raise forms.ValidationError(_("提示模板请在下方按技能填写，不要放在配置 JSON 里。"))
        return config

    def service_config(self) -> dict[str, Any]:
        """The config JSON plus the non-empty per-skill templates, as the service stores it."""
        config = dict(self.cleaned_data["config"])
        # Browsers send textarea lines with CRLF; templates are stored with plain newlines.
        texts = {
            skill.key: self.cleaned_data.get(prompt_field_name(skill.key), "").replace("\r\n", "\n")
            for skill in self.skills
        }
        templates = {key: text for key, text in texts.items() if text.strip()}
        if templates:
            config["prompt_templates"] = templates
        return config

    def add_service_error(self, exc: BackendConfigError) -> None:
        """Show a service's validation error on the form field it concerns."""
        if exc.field.startswith("prompt_templates.") or exc.field.startswith(
            "config.prompt_templates."
        ):
            skill = exc.field.rsplit(".", 1)[1]
            if prompt_field_name(skill) in self.fields:
                self.add_error(prompt_field_name(skill), exc.detail)
                return
        if exc.field in SERVICE_FIELDS:
            self.add_error(exc.field, exc.detail)
        else:
            self.add_error("config", str(exc))
