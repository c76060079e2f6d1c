"""Forms of the annotation app's review and rating-job pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.models import GoldItem, RatingJob, ReviewPolicy, Rubric
from annotation.selectors.rating import GoldGroup, experts, gold_dialogue
from annotation.services.quality import QualitySettings, QualitySettingsError
from annotation.services.review import MAX_REVIEWERS
from chat.models import Campaign, Dialogue, StaticRun
from core.i18n import pick_text, punctuation


class RubricChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Rubric) -> str:
        """The rubric's title in the page's language (its stored titles per language)."""
        return f"{obj.key} v{obj.version} — {pick_text(obj.title)}"


class RatingJobForm(forms.Form):
    name = forms.CharField(label=_("任务名称"), max_length=160)
    mode = forms.ChoiceField(
        label=_("评分方式"),
        choices=RatingJob.Mode.choices,
        initial=RatingJob.Mode.ABSOLUTE,
        required=False,
        help_text=_(
            "成对比较（ACUTE-Eval）：同一场景下两个系统的对话并排，每题二选一并写理由；"
            "选量表 acute-eval 即 ACUTE 的四个问题，选其他量表则逐项比较。"
        ),
    )
    campaign = forms.ModelChoiceField(label=_("评测活动"), queryset=Campaign.objects.all())
    static_run = forms.ModelChoiceField(
        label=_("只取某次静态生成（可选）"),
        queryset=StaticRun.objects.select_related("campaign"),
        required=False,
    )
    rubric = RubricChoiceField(
        label=_("评分量表"), queryset=Rubric.objects.order_by("key", "-version")
    )
    raters_per_dialogue = forms.IntegerField(
        label=_("每段对话（成对比较：每对对话）的评分人数"), min_value=1, initial=3
    )
    raters = forms.ModelMultipleChoiceField(
        label=_("评分专家（不选 = 全部专家）"),
        queryset=experts(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    deadline_hours = forms.IntegerField(label=_("每条的期限（小时）"), min_value=1, initial=72)
    seed = forms.IntegerField(label=_("随机种子"), initial=0)
    sample_size = forms.IntegerField(
        label=_("每个系统抽样评分的对话数（可空 = 全部）"),
        min_value=1,
        required=False,
        help_text=_("种子 001：先让系统回答全部问题，再随机抽取一部分问答评分（1500 取 500）。"),
    )
    sample_seed = forms.IntegerField(label=_("抽样种子"), initial=0, required=False)
    pair_sample_size = forms.IntegerField(
        label=_("成对比较：随机抽取的比较数（可空 = 全部比较）"),
        min_value=1,
        required=False,
        help_text=_(
            "只让评分专家比较随机抽取的一部分（场景，系统对），裁判比较全部，"
            "两者合起来给出“人工 + 裁判”的 Bradley–Terry 评分。用抽样种子抽取。"
        ),
    )
    gold_rate = forms.FloatField(
        label=_("金标题比例（0–0.5）"), min_value=0, max_value=0.5, initial=0, required=False
    )
    duplicate_rate = forms.FloatField(
        label=_("重复题比例（0–0.5）"), min_value=0, max_value=0.5, initial=0, required=False
    )
    onboarding_threshold = forms.FloatField(
        label=_("入门筛选通过线（0–1）"),
        min_value=0,
        max_value=1,
        required=False,
        help_text=_("留空：逐段评分为 0.8，成对比较为 ACUTE-Eval 的 0.75。"),
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


class ReviewPolicyForm(forms.Form):
    reviewers_per_dialogue = forms.IntegerField(
        label=_("每段对话的审核人数"),
        min_value=1,
        max_value=MAX_REVIEWERS,
        help_text=_("每段提交的对话由几位专家各自审核（MSDE 用了 3 位）。"),
    )
    decision_rule = forms.ChoiceField(
        label=_("决定规则"),
        choices=ReviewPolicy.Rule.choices,
        widget=forms.RadioSelect,
    )


# Each quality setting with its explanation (shown beside the field).
QUALITY_HELP = {
    "gold_rate": _(
        "混入每位评分专家工作中的金标题（已知答案的对话）所占比例，例如 0.05 = 5%。"
        "用来检查评分是否认真、准确；0 表示不用金标题。"
    ),
    "duplicate_rate": _(
        "每位专家的正式条目中，有多少比例会在稍后再出现一次（重复题），"
        "用来衡量同一个人前后打分是否一致；0 表示不用重复题。"
    ),
    "onboarding_threshold": _(
        "评分专家必须先完成全部入门筛选题，准确率达到这个比例（0–1）才能开始正式评分；"
        "未达到的会被标为「未通过筛选」，其条目交给别人。没有入门筛选题时不起作用。"
    ),
    "gold_min_accuracy": _("金标题准确率低于这个比例（0–1）时，在进度表中提示这位专家。"),
    "consistency_min": _("重复题前后一致的比例低于这个值（0–1）时，在进度表中提示这位专家。"),
    "min_seconds": _(
        "完成一条用时少于这个秒数就提示「太快」，可能没有读完对话；留空表示不设下限。"
    ),
    "n_sd": _(
        "用时偏离所有人平均用时超过这么多个标准差（SD）时提示用时异常，取值 0.5–10，"
        "数值越小越敏感。"
    ),
    "pattern_min_items": _(
        "某位专家至少评了这么多条、且答案一成不变或机械交替时，提示可疑的作答模式（≥ 3）。"
    ),
    "tolerance": _(
        "与金标题答案或自己先前答案相差不超过这个值就算一致，"
        "例如 1 表示相差一分也算对；0 = 必须完全相同。"
    ),
}


class QualitySettingsForm(forms.Form):
    """A draft job's rater-quality settings; `QualitySettings.parse` validates them, so each
    field's error names the setting exactly as the API does."""

    gold_rate = forms.CharField(label=_("金标题比例（0–0.5）"))
    duplicate_rate = forms.CharField(label=_("重复题比例（0–0.5）"))
    onboarding_threshold = forms.CharField(label=_("入门筛选通过线（0–1）"))
    gold_min_accuracy = forms.CharField(label=_("金标题准确率下限（0–1）"))
    consistency_min = forms.CharField(label=_("重复题一致率下限（0–1）"))
    min_seconds = forms.CharField(label=_("每条最少用时（秒，可空）"), required=False)
    n_sd = forms.CharField(label=_("用时异常阈值（标准差倍数）"))
    pattern_min_items = forms.IntegerField(label=_("可疑作答模式的最少条数"))
    tolerance = forms.CharField(label=_("一致的容差"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            field.help_text = QUALITY_HELP[name]
            if isinstance(field, forms.CharField):
                field.widget.attrs["inputmode"] = "decimal"

    @classmethod
    def for_settings(cls, settings: QualitySettings) -> QualitySettingsForm:
        initial = {
            key: "" if value is None else f"{value:g}" if isinstance(value, float) else value
            for key, value in settings.as_dict().items()
        }
        return cls(initial=initial)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            self.settings = QualitySettings.parse(
                {
                    key: (value.strip() if isinstance(value, str) else value)
                    for key, value in data.items()
                }
            )
        except QualitySettingsError as exc:
            for key, message in exc.errors.items():
                self.add_error(
                    key if key in self.fields else None, f"{key}{punctuation('colon')}{message}"
                )
        return data


class GoldItemForm(forms.Form):
    """A gold or onboarding item: a dialogue of the job and known answers to its questions.

    The answer fields depend on the dialogue (its skill, its model turns): they are added once
    `dialogue` names one; each is optional, and the service needs at least one."""

    dialogue = forms.CharField(
        label=_("对话 ID 或外部 ID"),
        max_length=200,
        help_text=_("本任务评测活动中的对话；用作金标题的对话不会再作为正式条目分配。"),
    )
    purpose = forms.ChoiceField(
        label=_("类型"), choices=GoldItem.Purpose.choices, initial=GoldItem.Purpose.GOLD
    )

    def __init__(
        self,
        *args: Any,
        job: RatingJob,
        groups_for: Any,
        **kwargs: Any,
    ) -> None:
        """`groups_for(dialogue)` builds the dialogue's known-answer groups (page language)."""
        super().__init__(*args, **kwargs)
        self.job = job
        ref = (self.data.get("dialogue") or self.initial.get("dialogue") or "").strip()
        self.target: Dialogue | None = gold_dialogue(job, ref) if ref else None
        self.groups: list[GoldGroup] = groups_for(self.target) if self.target else []
        self.answer_fields: list[tuple[str, str, int | None]] = []
        for group in self.groups:
            for f in group.fields:
                choices = [("", _("—（不设）"))] + [(o.value, o.label) for o in f.options]
                self.fields[f.name] = forms.CharField(
                    label=f"{f.label}{punctuation('lparen')}{f.key}{punctuation('rparen')}",
                    required=False,
                    widget=forms.Select(choices=choices),
                )
                self.answer_fields.append((f.name, f.key, f.turn))

    def grouped_fields(self) -> list[tuple[GoldGroup, list[forms.BoundField]]]:
        """Each group with its bound answer fields, for the template."""
        return [(group, [self[f.name] for f in group.fields]) for group in self.groups]

    def clean_dialogue(self) -> str:
        ref = self.cleaned_data["dialogue"].strip()
        if self.target is None:
            raise forms.ValidationError(
                _("本任务的评测活动中没有 ID 或外部 ID 为「%(ref)s」的对话") % {"ref": ref}
            )
        return ref

    def answers(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The given answers in the service's shape, and the form field of each (by index)."""
        answers, names = [], []
        for name, key, turn in self.answer_fields:
            value = (self.cleaned_data.get(name) or "").strip()
            if value:
                answers.append({"question": key, "turn": turn, "value": value})
                names.append(name)
        return answers, names
