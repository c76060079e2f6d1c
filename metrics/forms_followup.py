from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.models import RatingJob
from metrics.scorers import followup


class FollowupSelectionForm(forms.Form):
    name = forms.CharField(label=_("名称"), max_length=160)
    job = forms.ModelChoiceField(label=_("评分任务（人工分数）"), queryset=RatingJob.objects.all())
    dimension = forms.CharField(
        label=_("评分维度"),
        initial="overall",
        help_text=_("评分标准中对话级问题的键，或 overall（总分）。"),
    )
    model_path = forms.CharField(
        label=_("因果语言模型目录"),
        help_text=_(
            "服务器上的本地 Hugging Face 模型目录（如 DialoGPT、日文/中文 GPT）；不会下载。"
        ),
    )
    language = forms.ChoiceField(
        label=_("随访语言"), choices=[("zh", "中文"), ("en", "English"), ("ja", "日本語")]
    )
    variant = forms.ChoiceField(
        label=_("似然"),
        choices=[
            ("cond", _("条件似然（FED-Cond-Selected）")),
            ("joint", _("整体似然（FED-Selected）")),
        ],
    )
    criterion = forms.ChoiceField(
        label=_("选择依据"), choices=[("spearman", "Spearman"), ("pearson", "Pearson")]
    )
    max_items = forms.IntegerField(label=_("最多项数（可选）"), min_value=1, required=False)
    seed = forms.IntegerField(label=_("随机种子（划分两折）"), initial=0)
    # The scorer's inputs; a metric run naming this selection takes them (followup_selection).
    layout = forms.ChoiceField(
        label=_("序列布局"),
        choices=[(layout, layout) for layout in followup.LAYOUTS],
        initial="fed",
        help_text=_("fed：fed.py 的文本布局（DialoGPT）；eos：各句单独分词，以分隔符相连。"),
    )
    normalisation = forms.ChoiceField(
        label=_("似然归一化"),
        choices=[(norm, norm) for norm in followup.NORMALISATIONS],
        initial="mean",
        help_text=_("mean：每词元平均；sum：词元总和。"),
    )
    max_length = forms.IntegerField(
        label=_("最大长度（词元，可选）"),
        min_value=8,
        required=False,
        help_text=_("留空为模型的位置上限。"),
    )
