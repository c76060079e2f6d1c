"""Template filters for rubric results: dimension labels instead of question keys."""

from __future__ import annotations

from collections.abc import Mapping

from django import template
from django.utils.translation import gettext as _

register = template.Library()


@register.filter
def label_of(key: object, labels: Mapping[str, str] | None) -> str:
    """The label of a question/dimension key in the page's language (the key when unknown)."""
    text = str(key)
    return (labels or {}).get(text, text)


@register.filter
def measurement_label(kind: object) -> str:
    """Krippendorff's level of measurement, in words."""
    names = {"nominal": _("名义"), "ordinal": _("有序"), "interval": _("等距"), "ratio": _("比率")}
    return names.get(str(kind), str(kind))


@register.filter
def flag_label(kind: object) -> str:
    """A rater-quality flag (annotation.rater_quality.FlagKind) in words."""
    names = {
        "too_fast": _("答题过快"),
        "time_outlier_rater": _("用时异常（相对本人）"),
        "time_outlier_job": _("用时异常（相对本任务）"),
        "constant_answers": _("答案全部相同"),
        "alternating_answers": _("答案交替出现"),
        "low_gold_accuracy": _("金标题正确率低"),
        "low_self_consistency": _("重复题前后不一致"),
    }
    return names.get(str(kind), str(kind))
