"""Forms of a study's pairwise-vote panel: the upload and the identity-word list."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.models import Language, Skill, Vote
from chat.services.identity import MAX_IDENTITY_WORD_LENGTH, MAX_IDENTITY_WORDS


def _skill_choices() -> list[tuple[str, str]]:
    return [(key, key) for key in Skill.objects.values_list("key", flat=True)]


class VoteImportForm(forms.Form):
    file = forms.FileField(label=_("投票文件（UTF-8 编码的 CSV 或 JSON Lines）"))
    voter_kind = forms.ChoiceField(
        label=_("投票者"),
        choices=Vote.VoterKind.choices,
        initial=Vote.VoterKind.HUMAN,
        help_text=_("用于没有 voter_kind 字段的记录。"),
    )
    language = forms.ChoiceField(
        label=_("对话语言"),
        choices=[("", _("由文件的 language 字段给出")), *Language.choices],
        required=False,
    )
    # A callable: read when the form is shown or checked, not at import (researchers add skills),
    # and not at all on a study page that shows no upload form.
    skill = forms.ChoiceField(label=_("对话技能"), initial="chitchat", choices=_skill_choices)


class IdentityWordsForm(forms.Form):
    words = forms.CharField(
        label=_("身份词（每行一个）"),
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        max_length=MAX_IDENTITY_WORDS * (MAX_IDENTITY_WORD_LENGTH + 1),
        help_text=_("留空则使用默认词表（英、中、日三种语言的模型名和公司名）。"),
    )

    def clean_words(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["words"].splitlines() if line.strip()]
