"""Forms of the metrics app: creating a metric run."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.models import Campaign, Skill, StaticRun
from metrics.models import MetricRun
from metrics.scorers.base import (
    BLEU_SMOOTHINGS,
    EMBEDDING_OOV,
    METEOR_SYNONYMS,
    RUBER_BLENDS,
    Settings,
)
from metrics.scorers.registry import METRICS, PRESET_LABELS, PRESETS
from metrics.scorers.text import LANGUAGES, PROFILES, TOKENIZERS
from metrics.selectors.discriminators import usable_discriminators
from metrics.selectors.metric_runs import done_selections

SETTING_CHOICES: dict[str, tuple[str, ...]] = {
    "lang": LANGUAGES,
    "profile": PROFILES,
    "tokenizer": TOKENIZERS,
    "bleu_smoothing": BLEU_SMOOTHINGS,
    "meteor_synonyms": METEOR_SYNONYMS,
    "embedding_oov": EMBEDDING_OOV,
    "ruber_blend": RUBER_BLENDS,
}
SETTING_PREFIX = "setting_"


def _setting_field(name: str, annotation: Any, default: Any) -> forms.Field:
    label = name
    help_text = _("默认：%(value)s") % {"value": "—" if default is None else default}
    if name in SETTING_CHOICES:
        choices = [(c, c) for c in SETTING_CHOICES[name]]
        if default is None:
            choices = [("", _("按语言默认")), *choices]
        return forms.ChoiceField(
            label=label, choices=choices, required=False, initial=default, help_text=help_text
        )
    kinds = set(typing.get_args(annotation)) or {annotation}
    if any(typing.get_origin(kind) is tuple for kind in kinds):
        return forms.CharField(
            label=label,
            required=False,
            max_length=2000,
            help_text=_("逗号分隔；留空为默认"),
        )
    if bool in kinds:
        return forms.BooleanField(label=label, required=False, initial=default)
    if int in kinds:
        return forms.IntegerField(
            label=label, required=default is not None, initial=default, help_text=help_text
        )
    if float in kinds:
        return forms.FloatField(label=label, required=True, initial=default, help_text=help_text)
    return forms.CharField(
        label=label, required=False, initial=default or "", max_length=500, help_text=help_text
    )


class MetricRunForm(forms.Form):
    """Name, one target, metrics (presets or names) and every scorer setting with its default."""

    name = forms.CharField(label=_("名称"), max_length=160)
    target = forms.ChoiceField(
        label=_("评测对象"),
        choices=MetricRun.Target.choices,
        initial=MetricRun.Target.CAMPAIGN,
        widget=forms.RadioSelect,
    )
    campaign = forms.ModelChoiceField(
        label=_("评测活动"), queryset=Campaign.objects.all(), required=False
    )
    include_submitted = forms.BooleanField(
        label=_("也包括待审核（已提交）的对话"),
        required=False,
        help_text=_("默认只评测审核通过的对话。"),
    )
    static_run = forms.ModelChoiceField(
        label=_("静态生成任务"),
        queryset=StaticRun.objects.select_related("campaign"),
        required=False,
    )
    file = forms.FileField(
        label=_("回复文件（JSONL，与 score_responses 的输入格式相同）"),
        required=False,
        help_text=_("每行：id、hypothesis、references（列表）、可选 context（列表）。"),
    )
    system = forms.CharField(
        label=_("系统名称"), max_length=120, required=False, initial="uploaded"
    )
    skill = forms.ModelChoiceField(
        label=_("技能"),
        queryset=Skill.objects.all(),
        to_field_name="key",
        required=False,
    )
    metrics = forms.MultipleChoiceField(
        label=_("指标"),
        choices=[*[(k, PRESET_LABELS[k]) for k in PRESETS], *[(n, n) for n in METRICS]],
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        hints = typing.get_type_hints(Settings)
        for field in dataclasses.fields(Settings):
            self.fields[SETTING_PREFIX + field.name] = _setting_field(
                field.name, hints[field.name], field.default
            )
        trained = [
            (d.path, f"{d.name} · {d.config.get('preset', '')}") for d in usable_discriminators()
        ]
        if trained:
            # Trained versions by name; a directory from elsewhere goes through the API or command.
            self.fields[SETTING_PREFIX + "discriminator_model"] = forms.ChoiceField(
                label="discriminator_model",
                choices=[("", _("不使用")), *trained],
                required=False,
                help_text=_("学习型指标页面训练好的判别器版本"),
            )

        # Finished item selections by name; the run takes their items and scorer inputs.
        self.fields[SETTING_PREFIX + "followup_selection"] = forms.TypedChoiceField(
            label="followup_selection",
            choices=[("", _("不使用")), *done_selections()],
            coerce=int,
            empty_value=None,
            required=False,
            help_text=_("随访项选择：*-selected 指标的评价项和打分输入取自它"),
        )

    def setting_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if name.startswith(SETTING_PREFIX)]

    def settings(self) -> dict[str, Any]:
        """The settings that differ from the defaults (empty text = the default)."""
        chosen: dict[str, Any] = {}
        hints = typing.get_type_hints(Settings)
        for field in dataclasses.fields(Settings):
            value = self.cleaned_data.get(SETTING_PREFIX + field.name)
            if value in ("", None):
                continue
            kinds = typing.get_args(hints[field.name])
            if any(typing.get_origin(kind) is tuple for kind in kinds):
                value = [item.strip() for item in value.split(",") if item.strip()]
            if value != field.default:
                chosen[field.name] = value
        return chosen

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        target = data.get("target")
        required = {
            MetricRun.Target.CAMPAIGN: "campaign",
            MetricRun.Target.STATIC_RUN: "static_run",
            MetricRun.Target.UPLOAD: "file",
        }.get(target)
        if required and not data.get(required):
            self.add_error(required, _("请选择或上传评测对象。"))
        return data
