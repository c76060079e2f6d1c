"""Forms of the judge pages; the services validate (and name the field of) every problem."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.forms import RubricChoiceField
from annotation.models import Rubric
from chat.models import Backend, Campaign, StaticRun
from judges.models import Judge


class JudgeForm(forms.Form):
    name = forms.CharField(label=_("名称"), max_length=160)
    backend = forms.ModelChoiceField(
        label=_("裁判模型（已注册的后端）"),
        queryset=Backend.objects.filter(active=True).exclude(adapter=Backend.Adapter.IMPORTED),
    )
    rubric = RubricChoiceField(label=_("量表"), queryset=Rubric.objects.all())
    mode = forms.ChoiceField(label=_("评判方式"), choices=Judge.Mode.choices)
    temperature = forms.FloatField(label=_("温度"), required=False, min_value=0, max_value=2)
    max_tokens = forms.IntegerField(label=_("最大生成 token 数"), required=False, min_value=1)
    n = forms.IntegerField(label=_("采样次数 n"), initial=1, min_value=1, max_value=20)
    aggregate = forms.ChoiceField(
        label=_("多次采样的汇总"), choices=[("mean", _("平均")), ("majority", _("多数投票"))]
    )
    geval = forms.BooleanField(
        label=_("G-Eval：按对数概率加权打分（后端返回 logprobs 时）"), required=False
    )
    structured = forms.ChoiceField(label=_("结构化输出"), choices=Judge.Structured.choices)
    max_attempts = forms.IntegerField(
        label=_("无法解析时最多尝试次数"), initial=3, min_value=1, max_value=10
    )
    rate_limit_per_s = forms.FloatField(
        label=_("每秒最多请求数（0 = 不限）"), required=False, min_value=0
    )
    price_input = forms.FloatField(label=_("输入价格（每百万 token）"), initial=0, min_value=0)
    price_output = forms.FloatField(label=_("输出价格（每百万 token）"), initial=0, min_value=0)
    template_zh = forms.CharField(
        label=_("中文提示词模板（留空 = 由量表自动生成）"), required=False, widget=forms.Textarea
    )
    template_en = forms.CharField(
        label=_("英文提示词模板（留空 = 由量表自动生成）"), required=False, widget=forms.Textarea
    )
    template_ja = forms.CharField(
        label=_("日文提示词模板（留空 = 由量表自动生成）"), required=False, widget=forms.Textarea
    )
    description = forms.CharField(label=_("说明"), required=False, widget=forms.Textarea)

    @staticmethod
    def initial_for(judge: Judge) -> dict[str, Any]:
        sampling = judge.sampling or {}
        return {
            "name": judge.name,
            "backend": judge.backend_id,
            "rubric": judge.rubric_id,
            "mode": judge.mode,
            "temperature": sampling.get("temperature"),
            "max_tokens": sampling.get("max_tokens"),
            "n": sampling.get("n", 1),
            "aggregate": sampling.get("aggregate", "mean"),
            "geval": sampling.get("geval", False),
            "rate_limit_per_s": sampling.get("rate_limit_per_s"),
            "structured": judge.structured,
            "max_attempts": judge.max_attempts,
            "price_input": judge.price_input,
            "price_output": judge.price_output,
            "template_zh": judge.prompt_templates.get("zh", ""),
            "template_en": judge.prompt_templates.get("en", ""),
            "template_ja": judge.prompt_templates.get("ja", ""),
            "description": judge.description,
        }

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        sampling: dict[str, Any] = {"n": data["n"], "aggregate": data["aggregate"]}
        for key in ("temperature", "max_tokens", "rate_limit_per_s"):
            if data.get(key) not in (None, ""):
                sampling[key] = data[key]
        if data["geval"]:
            sampling["geval"] = True
        return {
            "name": data["name"],
            "backend": data["backend"],
            "rubric": data["rubric"],
            "mode": data["mode"],
            "sampling": sampling,
            "structured": data["structured"],
            "max_attempts": data["max_attempts"],
            "prompt_templates": {
                lang: data[f"template_{lang}"]
                for lang in ("zh", "en", "ja")
                if data[f"template_{lang}"].strip()
            },
            "price_input": data["price_input"],
            "price_output": data["price_output"],
            "description": data["description"],
        }


class RunForm(forms.Form):
    campaign = forms.ModelChoiceField(
        label=_("评测活动"), queryset=Campaign.objects.order_by("-created_at"), required=False
    )
    static_run = forms.ModelChoiceField(
        label=_("或：静态生成任务"),
        queryset=StaticRun.objects.select_related("campaign").order_by("-created_at"),
        required=False,
    )
    include_submitted = forms.BooleanField(label=_("也评判未审核的已提交对话"), required=False)
    name = forms.CharField(label=_("运行名称（可选）"), required=False, max_length=160)


class PreviewForm(forms.Form):
    dialogue = forms.IntegerField(label=_("对话编号"), min_value=1)
    other = forms.IntegerField(label=_("成对比较的另一段对话编号"), required=False, min_value=1)
