from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.models import (
    CAMPAIGN_LANGUAGE_CHOICES,
    Backend,
    Campaign,
    Dataset,
    Language,
    Skill,
    default_acceptability,
)
from core.errors import ServiceError, form_add_service_errors


class DatasetUploadForm(forms.Form):
    file = forms.FileField(label=_("文件（UTF-8 编码，每行一个 JSON 对象）"))
    source_format = forms.ChoiceField(label=_("格式"), choices=Dataset.Format.choices)
    name = forms.CharField(label=_("名称"), max_length=120)
    skill = forms.ModelChoiceField(
        label=_("技能"),
        queryset=Skill.objects.all(),
        to_field_name="key",
        required=False,
        help_text=_("LIC 2021 格式按每行的 subtrack 自动确定，可留空。"),
    )
    language = forms.ChoiceField(label=_("语言"), choices=Language.choices, initial=Language.ZH)
    description = forms.CharField(
        label=_("说明"), widget=forms.Textarea(attrs={"rows": 2}), required=False
    )


class JoinForm(forms.Form):
    worker_id = forms.CharField(
        label=_("您的工作者 ID（由众包平台提供）"), max_length=120, strip=True
    )
    resume_code = forms.CharField(
        label=_("恢复码（仅在换用其他浏览器或设备继续时需要）"),
        max_length=12,
        required=False,
        strip=True,
    )


class SkillChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Skill) -> str:
        return f"{obj.display_name} ({obj.key})"


class DatasetChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Dataset) -> str:
        skill = obj.skill.key if obj.skill else "mixed"
        return f"{obj.name} ({skill} · {obj.get_language_display()} · {obj.sample_count})"


class CampaignForm(forms.Form):
    """A campaign's settings. Validation is the service's; this form only parses the input.

    Besides the declared fields it has, per backend, `alias_<pk>`; per skill,
    `instructions_<key>_zh`, `instructions_<key>_en` and `instructions_<key>_ja`.
    """

    RULE_FIELDS = (
        "quota_per_cell",
        "max_turns",
        "min_turns",
        "per_worker_cap",
        "reservation_timeout_minutes",
        "worker_session_hours",
        "rate_while_chatting",
        "completion_url",
        "vote_timing",
        "reveal_after_vote",
        "pairing",
    )

    name = forms.CharField(label=_("名称"), max_length=160)
    mode = forms.ChoiceField(
        label=_("模式"), choices=Campaign.Mode.choices, initial=Campaign.Mode.INTERACTIVE
    )
    interface_language = forms.ChoiceField(
        label=_("众包工作者的界面语言"),
        choices=CAMPAIGN_LANGUAGE_CHOICES,
        required=False,
        help_text=_(
            "选定后，本活动的加入、对话和完成页面总以这种语言显示，不论工作者的浏览器设置；"
            "留空则按浏览器的语言或工作者自己的选择。"
        ),
    )
    skills = SkillChoiceField(
        label=_("技能"),
        queryset=Skill.objects.all(),
        to_field_name="key",
        widget=forms.CheckboxSelectMultiple,
    )
    backends = forms.ModelMultipleChoiceField(
        label=_("模型后端"),
        queryset=Backend.objects.all(),
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    datasets = DatasetChoiceField(
        label=_("场景数据集"),
        queryset=Dataset.objects.select_related("skill").order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    quota_per_cell = forms.IntegerField(
        label=_("每个（模型, 技能）的配额"),
        min_value=0,
        initial=0,
        help_text=_("0 = 每个场景与每个模型各采集一次。"),
    )
    max_turns = forms.IntegerField(label=_("最多轮数"), min_value=1, initial=10)
    min_turns = forms.IntegerField(label=_("最少轮数"), min_value=1, initial=1)
    per_worker_cap = forms.IntegerField(
        label=_("每位工作者的上限"), min_value=0, initial=0, help_text=_("0 = 不限。")
    )
    reservation_timeout_minutes = forms.IntegerField(
        label=_("预留超时（分钟）"),
        min_value=1,
        initial=30,
        help_text=_("进行中的对话闲置超过这个时间即被放弃，名额释放给其他人。"),
    )
    worker_session_hours = forms.IntegerField(
        label=_("工作者登录有效期（小时）"),
        min_value=1,
        max_value=720,
        initial=24,
        required=False,
        help_text=_("众包工作者加入后保持登录的时长；之后需重新打开邀请链接。"),
    )
    rate_while_chatting = forms.BooleanField(label=_("聊天时逐轮打分"), required=False)
    completion_url = forms.CharField(
        label=_("完成后跳转网址"),
        required=False,
        help_text=_("完成码以 ?cc=完成码 附加在网址后（Prolific 的方式）；留空则只显示完成码。"),
    )
    vote_timing = forms.ChoiceField(
        label=_("并排对比：何时投票"),
        choices=Campaign.VoteTiming.choices,
        initial=Campaign.VoteTiming.TURN,
        required=False,
    )
    reveal_after_vote = forms.BooleanField(
        label=_("并排对比：投票后显示模型名称（Chatbot Arena 的做法；研究中通常不显示）"),
        required=False,
    )
    pairing = forms.ChoiceField(
        label=_("并排对比：如何选择模型对"),
        choices=Campaign.Pairing.choices,
        initial=Campaign.Pairing.UNIFORM,
        required=False,
    )
    opening_dataset = forms.ModelChoiceField(
        label=_("起始话语数据集"),
        queryset=Dataset.objects.order_by("name"),
        required=False,
        help_text=_(
            "选定后（仅交互采集），每段对话的第一句用户话语取自从这个数据集抽取的样本，"
            "抽取的样本覆盖数据集中的全部话题（样本 metadata 中的 topic）；留空则由工作者自己开场。"
        ),
    )
    opening_count = forms.IntegerField(
        label=_("起始话语数量"), min_value=1, initial=20, required=False
    )
    opening_seed = forms.IntegerField(
        label=_("抽取的随机种子"),
        initial=0,
        required=False,
        help_text=_("相同的数据集、数量和种子总是抽出同一组起始话语。"),
    )
    acc_min_chars = forms.IntegerField(label=_("最少字数（中文、日文）"), min_value=0)
    acc_min_words = forms.IntegerField(label=_("最少词数（英文）"), min_value=0)
    acc_reject_all_caps = forms.BooleanField(label=_("拒绝全大写"), required=False)
    acc_reject_repeats = forms.BooleanField(label=_("拒绝重复之前的话"), required=False)
    acc_repeat_similarity = forms.FloatField(
        label=_("重复的相似度阈值（0–1）"), min_value=0.01, max_value=1
    )
    acc_reject_grounding_copy = forms.BooleanField(label=_("拒绝照抄知识/资料"), required=False)
    acc_grounding_copy_chars = forms.IntegerField(label=_("照抄判定的连续字数"), min_value=0)
    acc_safety_words = forms.CharField(
        label=_("禁用词（每行一个）"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    acc_flag_threshold = forms.IntegerField(
        label=_("违规多少次后标记工作者"), min_value=0, help_text=_("0 = 从不标记。")
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key, value in default_acceptability().items():
            field = self.fields[f"acc_{key}"]
            field.initial = "\n".join(value) if key == "safety_words" else value
        self.backend_rows = list(Backend.objects.order_by("name"))
        for backend in self.backend_rows:
            self.fields[f"alias_{backend.pk}"] = forms.CharField(
                label=_("「%(name)s」的别名") % {"name": backend.name},
                max_length=60,
                required=False,
            )
        self.skill_rows = list(Skill.objects.all())
        for skill in self.skill_rows:
            for language, label in (
                ("zh", _("中文说明")),
                ("en", _("英文说明")),
                ("ja", _("日文说明")),
            ):
                self.fields[f"instructions_{skill.key}_{language}"] = forms.CharField(
                    label=f"{skill.key} · {label}",
                    required=False,
                    widget=forms.Textarea(attrs={"rows": 2}),
                )

    @classmethod
    def initial_for(cls, campaign: Campaign) -> dict[str, Any]:
        """The form's initial data for editing `campaign`."""
        initial: dict[str, Any] = {
            "name": campaign.name,
            "mode": campaign.mode,
            "skills": list(campaign.skills.all()),
            "backends": [cb.backend for cb in campaign.campaign_backends.all()],
            "datasets": list(campaign.datasets.all()),
            "quota_per_cell": campaign.quota_per_cell,
            "max_turns": campaign.max_turns,
            "min_turns": campaign.min_turns,
            "per_worker_cap": campaign.per_worker_cap,
            "reservation_timeout_minutes": campaign.reservation_timeout_minutes,
            "worker_session_hours": campaign.worker_session_hours,
            "rate_while_chatting": campaign.rate_while_chatting,
            "completion_url": campaign.completion_url,
            "interface_language": campaign.interface_language,
            "opening_count": campaign.opening_count,
            "opening_seed": campaign.opening_seed,
            "vote_timing": campaign.vote_timing,
            "reveal_after_vote": campaign.reveal_after_vote,
            "pairing": campaign.pairing,
        }
        if campaign.opening_dataset_id is not None:
            initial["opening_dataset"] = campaign.opening_dataset_id
        for cb in campaign.campaign_backends.all():
            initial[f"alias_{cb.backend_id}"] = cb.alias
        for key, value in {**default_acceptability(), **campaign.acceptability}.items():
            initial[f"acc_{key}"] = "\n".join(value) if key == "safety_words" else value
        for skill, texts in campaign.instructions.items():
            initial[f"instructions_{skill}_zh"] = texts.get("zh-hans", "")
            initial[f"instructions_{skill}_en"] = texts.get("en", "")
            initial[f"instructions_{skill}_ja"] = texts.get("ja", "")
        return initial

    def backend_choices(self) -> list[tuple[Any, forms.BoundField]]:
        """(checkbox, alias field) per backend, for the backends table."""
        boxes = {str(box.data["value"]): box for box in self["backends"]}
        return [(boxes[str(b.pk)], self[f"alias_{b.pk}"]) for b in self.backend_rows]

    def opening_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("opening_dataset", "opening_count", "opening_seed")]

    def rule_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.RULE_FIELDS]

    def acceptability_fields(self) -> list[forms.BoundField]:
        return [self[f"acc_{key}"] for key in default_acceptability()]

    def instruction_fields(self) -> list[tuple[Skill, list[forms.BoundField]]]:
        """(skill, its instruction fields in zh, en, ja) per skill."""
        return [
            (s, [self[f"instructions_{s.key}_{language}"] for language in ("zh", "en", "ja")])
            for s in self.skill_rows
        ]

    def service_arguments(self) -> dict[str, Any]:
        """Cleaned data as keyword arguments of `campaign_create` / `campaign_update`."""
        data = self.cleaned_data
        backends = list(data["backends"])
        skills = [s.key for s in data["skills"]]
        instructions: dict[str, dict[str, str]] = {}
        for skill in skills:
            texts = {
                "zh-hans": self.cleaned_data.get(f"instructions_{skill}_zh", ""),
                "en": self.cleaned_data.get(f"instructions_{skill}_en", ""),
                "ja": self.cleaned_data.get(f"instructions_{skill}_ja", ""),
            }
            texts = {language: text for language, text in texts.items() if text.strip()}
            if texts:
                instructions[skill] = texts
        acceptability = {
            key: data[f"acc_{key}"] for key in default_acceptability() if key != "safety_words"
        }
        acceptability["safety_words"] = [
            line.strip() for line in data["acc_safety_words"].splitlines() if line.strip()
        ]
        return {
            "name": data["name"],
            "mode": data["mode"],
            "skills": skills,
            "backends": backends,
            "aliases": [data.get(f"alias_{b.pk}", "") for b in backends],
            "datasets": list(data["datasets"]),
            "quota_per_cell": data["quota_per_cell"],
            "max_turns": data["max_turns"],
            "min_turns": data["min_turns"],
            "per_worker_cap": data["per_worker_cap"],
            "reservation_timeout_minutes": data["reservation_timeout_minutes"],
            "worker_session_hours": data["worker_session_hours"] or 24,
            "rate_while_chatting": data["rate_while_chatting"],
            "completion_url": data["completion_url"],
            "interface_language": data.get("interface_language") or "",
            "opening_dataset": data.get("opening_dataset"),
            "opening_count": data.get("opening_count") or 20,
            "opening_seed": data.get("opening_seed") or 0,
            "instructions": instructions,
            "acceptability": acceptability,
            "vote_timing": data.get("vote_timing") or Campaign.VoteTiming.TURN,
            "reveal_after_vote": data.get("reveal_after_vote") is True,
            "pairing": data.get("pairing") or Campaign.Pairing.UNIFORM,
        }

    def add_service_errors(self, error: ServiceError) -> None:
        """Put the service's refused fields on the matching fields (others on top)."""
        form_add_service_errors(self, error)
