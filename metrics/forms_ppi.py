"""Forms of a rating job's "human + judge" page: the predictor and planning target, and the
stopping rule of a job in rounds (issue 28)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.models import RatingJob
from metrics.models import JobStatus, MetricRun
from metrics.selectors.reports import job_dimensions, scored_metric_names
from metrics.services import ppi, ppi_rounds


def _runs(job: RatingJob) -> Any:
    return MetricRun.objects.filter(campaign=job.campaign_id, status=JobStatus.DONE).order_by("-pk")


class PredictorForm(forms.Form):
    runs = forms.ModelMultipleChoiceField(
        label=_("指标运行 / 裁判运行"),
        queryset=MetricRun.objects.none(),
        widget=forms.CheckboxSelectMultiple,
    )
    predictor = forms.MultipleChoiceField(
        label=_("预测器"),
        widget=forms.CheckboxSelectMultiple,
        help_text=_("一个指标或裁判；选多个 = 其 z 分数的平均。"),
    )
    question = forms.ChoiceField(label=_("评分问题"), initial="overall")
    alpha = forms.FloatField(
        label=_("α（0.1 = 90% 区间）"),
        initial=0.1,
        min_value=ppi.ALPHA_RANGE[0],
        max_value=ppi.ALPHA_RANGE[1],
    )
    target_width = forms.FloatField(
        label=_("目标区间宽度"),
        required=False,
        min_value=1e-9,
        max_value=1e6,
        help_text=_("填写后给出达到该宽度所需的人工评分数（仅人工 vs 人工 + 预测器）。"),
    )

    def __init__(self, *args: Any, job: RatingJob, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        runs = _runs(job)
        self.fields["runs"].queryset = runs  # type: ignore[attr-defined]  # a ModelMultipleChoiceField
        names = scored_metric_names(runs=list(runs))
        self.fields["predictor"].choices = [(m, m) for m in names]  # type: ignore[attr-defined]  # a MultipleChoiceField
        self.fields["question"].choices = [  # type: ignore[attr-defined]  # a ChoiceField
            (d, d) for d in job_dimensions(jobs=[job])
        ]


class StoppingRuleForm(forms.Form):
    kind = forms.ChoiceField(
        label=_("停止规则"),
        choices=[
            ("width", _("每个系统的区间不宽于目标宽度")),
            ("separated", _("相邻系统的区间全部分开")),
            ("budget", _("人工评分预算用完")),
        ],
        widget=forms.RadioSelect,
    )
    target_width = forms.FloatField(label=_("目标区间宽度"), required=False, min_value=1e-9)
    budget = forms.IntegerField(
        label=_("预算（人工评分的对话数）"),
        required=False,
        min_value=1,
        max_value=ppi_rounds.MAX_BUDGET,
    )
    first_round = forms.IntegerField(
        label=_("第一轮每个系统的对话数"), min_value=2, max_value=ppi_rounds.MAX_ROUND_SIZE
    )
    round_size = forms.IntegerField(
        label=_("之后每轮的对话数"), min_value=2, max_value=ppi_rounds.MAX_ROUND_SIZE
    )
    question = forms.ChoiceField(label=_("评分问题"), initial="overall")
    runs = forms.ModelMultipleChoiceField(
        label=_("指标运行 / 裁判运行"),
        queryset=MetricRun.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    predictor = forms.MultipleChoiceField(
        label=_("预测器（可不选：只用人工估计）"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(self, *args: Any, job: RatingJob, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        runs = _runs(job)
        self.fields["runs"].queryset = runs  # type: ignore[attr-defined]  # a ModelMultipleChoiceField
        names = scored_metric_names(runs=list(runs))
        self.fields["predictor"].choices = [(m, m) for m in names]  # type: ignore[attr-defined]  # a MultipleChoiceField
        self.fields["question"].choices = [  # type: ignore[attr-defined]  # a ChoiceField
            (d, d) for d in job_dimensions(jobs=[job])
        ]
