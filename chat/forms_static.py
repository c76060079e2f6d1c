"""Forms of the static-run and dialogue import pages."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.models import Backend, Campaign, Dataset


class StaticRunForm(forms.Form):
    name = forms.CharField(label=_("名称"), max_length=160)
    dataset = forms.ModelChoiceField(label=_("数据集"), queryset=Dataset.objects.all())
    backends = forms.ModelMultipleChoiceField(
        label=_("模型后端"),
        queryset=Backend.objects.filter(active=True).exclude(adapter=Backend.Adapter.IMPORTED),
        widget=forms.CheckboxSelectMultiple,
    )
    sample_size = forms.IntegerField(
        label=_("抽样数量"),
        min_value=1,
        required=False,
        help_text=_("留空表示回答数据集中的全部上下文。"),
    )
    seed = forms.IntegerField(
        label=_("随机种子"), initial=0, help_text=_("相同的数据集、数量和种子抽到相同的样本。")
    )
    campaign = forms.ModelChoiceField(
        label=_("已有的静态评测活动"),
        queryset=Campaign.objects.filter(mode=Campaign.Mode.STATIC),
        required=False,
        empty_label=_("（新建评测活动）"),
        help_text=_("留空则新建一个静态评测活动。"),
    )
    campaign_name = forms.CharField(
        label=_("新评测活动名称"),
        max_length=160,
        required=False,
        help_text=_("留空则与运行同名。"),
    )


class DialogueImportForm(forms.Form):
    file = forms.FileField(label=_("文件（UTF-8 编码，每行一个对话的 JSON 对象）"))
    campaign = forms.CharField(
        label=_("评测活动名称"),
        max_length=160,
        help_text=_("不存在时新建一个“导入”模式的评测活动。"),
    )
