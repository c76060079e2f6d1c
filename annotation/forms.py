"""Forms of the annotation app's review and rating-job pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.models import Rubric
from annotation.selectors.rating import experts
from chat.models import Campaign, StaticRun


class RubricChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Rubric) -> str:
        title = obj.title.get("zh-hans") or obj.title.get("en") or ""
        return f"{obj.key} v{obj.version} — {title}"


class RatingJobForm(forms.Form):
    name = forms.CharField(label=_("任务名称"), max_length=160)
    campaign = forms.ModelChoiceField(label=_("评测活动"), queryset=Campaign.objects.all())
    static_run = forms.ModelChoiceField(
        label=_("只取某次静态生成（可选）"),
        queryset=StaticRun.objects.select_related("campaign"),
        required=False,
    )
    rubric = RubricChoiceField(
        label=_("评分量表"), queryset=Rubric.objects.order_by("key", "-version")
    )
    raters_per_dialogue = forms.IntegerField(label=_("每段对话的评分人数"), min_value=1, initial=3)
    raters = forms.ModelMultipleChoiceField(
        label=_("评分专家（不选 = 全部专家）"),
        queryset=experts(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    deadline_hours = forms.IntegerField(label=_("每条的期限（小时）"), min_value=1, initial=72)
    seed = forms.IntegerField(label=_("随机种子"), initial=0)
    gold_rate = forms.FloatField(
        label=_("金标题比例（0–0.5）"), min_value=0, max_value=0.5, initial=0, required=False
    )
    duplicate_rate = forms.FloatField(
        label=_("重复题比例（0–0.5）"), min_value=0, max_value=0.5, initial=0, required=False
    )
    onboarding_threshold = forms.FloatField(
        label=_("入门筛选通过线（0–1）"), min_value=0, max_value=1, initial=0.8, required=False
    )
    min_seconds = forms.FloatField(label=_("每条最少用时（秒，可空）"), min_value=0, required=False)
    allow_below_minimum = forms.BooleanField(
        label=_("允许评分人数低于量表要求的最少人数"), required=False
    )

    def quality_settings(self) -> dict[str, Any]:
        data = self.cleaned_data
        settings: dict[str, Any] = {}
        for key in ("gold_rate", "duplicate_rate", "onboarding_threshold", "min_seconds"):
            if data.get(key) is not None:
                settings[key] = data[key]
        return settings
