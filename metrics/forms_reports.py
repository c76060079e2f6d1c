"""Forms of the report pages: configure a correlation report, import external metric scores.

The forms only parse input; the configuration rules live in ``metrics.services.reports``
(``report_config_check``), whose messages the view attaches to the fields they name.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from chat.models import Campaign
from metrics.selectors import reports as selectors
from metrics.services.reports import DEFAULTS, MAX_BOOTSTRAP, NAME_MAX_LENGTH

LEVEL_CHOICES = [
    ("system", _("系统级（每个系统的平均分，MSDE 表 11–13）")),
    ("dialogue", _("对话级")),
    ("turn", _("轮次级")),
]
GROUPING_CHOICES = [
    ("skill", _("按技能")),
    ("dataset", _("按数据集")),
    ("none", _("不分组")),
]
SYSTEM_SCORE_CHOICES = [
    ("mean", _("每个系统各对话指标分的平均（MSDE）")),
    ("corpus", _("语料级系统分（如语料 BLEU）")),
]
METHOD_CHOICES = [("pearson", "Pearson"), ("spearman", "Spearman"), ("kendall", "Kendall τ-b")]


class _RunChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} · {obj.campaign.name} · {obj.get_source_display()}"


class _JobChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} · {obj.campaign.name} · {obj.rubric.key} v{obj.rubric.version}"


class ReportForm(forms.Form):
    name = forms.CharField(label=_("报告名称"), max_length=NAME_MAX_LENGTH)
    metric_runs = _RunChoice(
        label=_("指标运行"),
        queryset=selectors.report_metric_runs(),
        widget=forms.CheckboxSelectMultiple,
        help_text=_("系统级可用静态生成活动的指标运行，与交互活动的人工评分按系统名称对齐。"),
    )
    rating_jobs = _JobChoice(
        label=_("评分任务"),
        queryset=selectors.report_rating_jobs(),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text=_("只有成对投票的研究（如导入的竞技场投票）可不选，勾选下方的成对分析。"),
    )
    metrics = forms.MultipleChoiceField(
        label=_("指标"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("不选 = 所选运行的全部指标。"),
    )
    dimensions = forms.MultipleChoiceField(
        label=_("人工评分维度"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("不选 = 评分量表的全部维度（含 overall）。"),
    )
    level = forms.ChoiceField(
        label=_("相关性层级"),
        choices=LEVEL_CHOICES,
        initial=DEFAULTS["level"],
        widget=forms.RadioSelect,
    )
    grouping = forms.ChoiceField(
        label=_("分组"),
        choices=GROUPING_CHOICES,
        initial=DEFAULTS["grouping"],
        widget=forms.RadioSelect,
    )
    system_scores = forms.ChoiceField(
        label=_("系统级指标分"),
        choices=SYSTEM_SCORE_CHOICES,
        initial=DEFAULTS["system_scores"],
        widget=forms.RadioSelect,
    )
    methods = forms.MultipleChoiceField(
        label=_("相关系数"),
        choices=METHOD_CHOICES,
        initial=DEFAULTS["methods"],
        widget=forms.CheckboxSelectMultiple,
    )
    bootstrap = forms.IntegerField(
        label=_("Bootstrap 重采样次数"),
        min_value=0,
        max_value=MAX_BOOTSTRAP,
        initial=DEFAULTS["bootstrap"],
        help_text=_("用于 95% 置信区间；0 = 不计算。"),
    )
    seed = forms.IntegerField(label=_("随机种子"), min_value=0, initial=DEFAULTS["seed"])
    ppi_predictor = forms.MultipleChoiceField(
        label=_("人工 + 裁判：预测器"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_(
            "选中后报告增加“人工 + 裁判”一节：用该指标或裁判（选多个 = 其 z 分数的平均）"
            "对全部对话的预测与随机抽样的人工评分，给出每个系统的预测增强估计（PPI++）。"
            "需要恰好一个评分任务。"
        ),
    )
    ppi_question = forms.ChoiceField(
        label=_("人工 + 裁判：评分问题"), required=False, initial="overall"
    )
    pairwise = forms.BooleanField(
        label=_("成对分析"),
        required=False,
        help_text=_(
            "加入研究中的成对投票：Bradley–Terry 排名与区间、胜率矩阵、投票者一致率，"
            "以及每个指标与裁判的成对准确率。"
        ),
    )
    pairwise_voters = forms.CharField(
        label=_("排名所用投票"),
        max_length=200,
        initial="humans",
        required=False,
        help_text=_("humans（人工）、judge:<裁判 key> 或 all（全部）。"),
    )
    pairwise_judge_rule = forms.ChoiceField(
        label=_("裁判的两种顺序"),
        choices=[
            ("per_order", _("每种顺序各算一票")),
            ("conservative", _("合为一票（MT-Bench 保守规则：不一致算平局）")),
        ],
        initial="per_order",
        widget=forms.RadioSelect,
        required=False,
    )
    pairwise_include_identity_leaks = forms.BooleanField(
        label=_("计入泄露模型身份的投票"),
        required=False,
        help_text=_("默认不计入：回复中出现模型或厂商名称的投票。"),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        runs = list(self.fields["metric_runs"].queryset)  # type: ignore[attr-defined]  # ModelMultipleChoiceFields
        jobs = list(self.fields["rating_jobs"].queryset)  # type: ignore[attr-defined]  # ModelMultipleChoiceFields
        # Only what has values: a metric with scores, a dimension with submitted ratings.
        metrics = selectors.scored_metric_names(runs=runs) if runs else []
        dimensions = selectors.rated_dimensions(jobs=jobs) if jobs else []
        labels = selectors.dimension_labels(jobs=jobs, language=get_language() or "zh-hans")
        self.fields["metrics"].choices = [(m, m) for m in metrics]  # type: ignore[attr-defined]  # a MultipleChoiceField
        self.fields["dimensions"].choices = [  # type: ignore[attr-defined]  # a MultipleChoiceField
            (d, f"{labels.get(d, d)} ({d})" if labels.get(d, d) != d else d) for d in dimensions
        ]
        self.fields["ppi_predictor"].choices = [(m, m) for m in metrics]  # type: ignore[attr-defined]  # a MultipleChoiceField
        self.fields["ppi_question"].choices = [  # type: ignore[attr-defined]  # a ChoiceField
            ("overall", "overall"),
            *((d, labels.get(d, d)) for d in dimensions if d != "overall"),
        ]

    def config(self) -> dict[str, Any]:
        """The cleaned data as a report configuration (ids for runs and jobs)."""
        data = self.cleaned_data
        return {
            "metric_runs": [run.pk for run in data["metric_runs"]],
            "rating_jobs": [job.pk for job in data["rating_jobs"]],
            "metrics": list(data["metrics"]),
            "dimensions": list(data["dimensions"]),
            "level": data["level"],
            "grouping": data["grouping"],
            "system_scores": data["system_scores"],
            "methods": list(data["methods"]),
            "bootstrap": data["bootstrap"],
            "seed": data["seed"],
            "ppi": (
                {"predictor": list(data["ppi_predictor"]), "question": data["ppi_question"]}
                if data.get("ppi_predictor")
                else None
            ),
            "pairwise": (
                {
                    "voters": data["pairwise_voters"].strip() or "humans",
                    "judge_rule": data["pairwise_judge_rule"] or "per_order",
                    "include_identity_leaks": data["pairwise_include_identity_leaks"],
                }
                if data["pairwise"]
                else None
            ),
        }


class ScoreImportForm(forms.Form):
    file = forms.FileField(
        label=_("分数文件（CSV）"),
        help_text=_("列：group,unit,metric,value；UTF-8。"),
    )
    name = forms.CharField(label=_("运行名称"), max_length=160)
    campaign = forms.ModelChoiceField(label=_("评测活动"), queryset=Campaign.objects.all())
    level = forms.ChoiceField(
        label=_("分数层级"),
        choices=[
            ("dialogue", _("对话级（unit = 对话 ID）")),
            ("turn", _("轮次级（unit = 轮次 ID）")),
            ("system", _("系统级（unit = 系统名称）")),
        ],
        initial="dialogue",
    )
