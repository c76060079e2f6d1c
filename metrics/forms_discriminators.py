from django import forms
from django.utils.translation import gettext_lazy as _

from chat.models import Dataset
from metrics.scorers.discriminator import TABLE2_MODELS, DiscriminatorConfig

_DEFAULTS = DiscriminatorConfig()


class DiscriminatorForm(forms.Form):
    name = forms.CharField(label=_("名称"), max_length=140)
    dataset = forms.ModelChoiceField(
        label=_("训练数据集"),
        queryset=Dataset.objects.all(),
        help_text=_("用每个样本的最后一轮上下文与第一条参考回复作为真实回复对，1:1 随机负例。"),
    )
    preset = forms.ChoiceField(
        label=_("模型结构（种子 003 表 2）"),
        choices=[(name, name) for name in TABLE2_MODELS],
        initial="AB-LSTM-bi-MLP",
    )
    all_presets = forms.BooleanField(
        label=_("训练表 2 的全部消融模型（每个一个版本，名称加模型后缀）"), required=False
    )
    max_epochs = forms.IntegerField(
        label=_("最多训练轮数（epoch）"), min_value=1, initial=_DEFAULTS.max_epochs
    )
    patience = forms.IntegerField(label=_("早停耐心"), min_value=1, initial=_DEFAULTS.patience)
    embedding_dim = forms.IntegerField(
        label=_("词向量维度"), min_value=2, initial=_DEFAULTS.embedding_dim
    )
    hidden_size = forms.IntegerField(
        label=_("隐藏层大小"), min_value=2, initial=_DEFAULTS.hidden_size
    )
    learning_rate = forms.FloatField(
        label=_("学习率"), min_value=1e-7, initial=_DEFAULTS.learning_rate
    )
    batch_size = forms.IntegerField(label=_("批大小"), min_value=1, initial=_DEFAULTS.batch_size)
    dropout = forms.FloatField(
        label=_("Dropout"), min_value=0.0, max_value=0.95, initial=_DEFAULTS.dropout
    )
    l2 = forms.FloatField(label=_("L2 正则"), min_value=0.0, initial=_DEFAULTS.l2)
    vectors = forms.CharField(
        label=_("词向量文件（可选）"),
        required=False,
        help_text=_("服务器上的 word2vec/fastText 文本格式文件路径；留空则随机初始化。"),
    )
    seed = forms.IntegerField(label=_("随机种子"), initial=0)

    def overrides(self) -> dict:
        data = self.cleaned_data
        keys = (
            "max_epochs",
            "patience",
            "embedding_dim",
            "hidden_size",
            "learning_rate",
            "batch_size",
            "dropout",
            "l2",
        )
        return {key: data[key] for key in keys}
