"""The correlation study's texts in the page's language.

`metrics.analysis` and `metrics.reporting` run without Django (DESIGN: layout), so they write
their notes, warnings, table titles and labels in English, and a report stores them so. A page
(or a figure) shows them in its reader's language: each known English text is matched here and
given through gettext, with its numbers and names carried over; skill keys among the names are
shown as the skill's name. A text this catalogue does not know is shown as it is, so a new
sentence in the analysis reads in English until it is added here and to the catalogues.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext, pgettext_lazy

from chat.selectors.skills import skill_label
from metrics.analysis.tables import Row, Table
from metrics.reporting.figure_text import FigureText


def _level(value: str) -> str:
    levels = {
        "turn": pgettext("report level", "轮次"),
        "dialogue": pgettext("report level", "对话"),
        "system": pgettext("report level", "系统"),
        "turns": pgettext("report level", "轮次"),
        "dialogues": pgettext("report level", "对话"),
    }
    return levels.get(value, value)


def _groups(value: str) -> str:
    return ", ".join(skill_label(group) or group for group in value.split(", "))


def _resampled(value: str) -> str:
    if value == "items inside each system, system means recomputed":
        return _("每个系统内部的条目（重新计算系统平均）")
    return _level(value)


# Parameters that are words of the analysis, not data: translated before they are put in.
_PARAMETERS: dict[str, Callable[[str], str]] = {
    "level": _level,
    "group": _groups,
    "groups": _groups,
    "what": _resampled,
}

# (English text as `metrics.analysis` / `metrics.reporting` write it, the message it shows as).
_CATALOGUE: tuple[tuple[str, Any], ...] = (
    # Study warnings (metrics/analysis/study.py)
    (
        r"(?P<group>.+): no bootstrap interval, every system has a single score on both sides "
        r"\(give item-level rows to resample\)\.",
        gettext_lazy(
            "%(group)s：每个系统在两侧都只有一个分数，没有 bootstrap 区间（请提供条目级的行以便重采"
            "样）。"
        ),
    ),
    (
        r"Fewer than (?P<n>\d+) systems in (?P<groups>.+): system-level correlations there "
        r"cannot be significant\.",
        gettext_lazy("%(groups)s 中少于 %(n)s 个系统：这些分组的系统级相关不可能显著。"),
    ),
    (
        r"Fewer than (?P<n>\d+) systems in (?P<groups>.+): no Spearman or Kendall correlation "
        r"there can reach p < 0\.05 \(their exact p is at least 2/n!, 1/12 at 4 systems\), and "
        r"Pearson's p rests on the system scores being normally distributed, which so few "
        r"systems cannot show\.",
        gettext_lazy(
            "%(groups)s 中少于 %(n)s 个系统：这些分组的 Spearman 与 Kendall 相关都不可能达到 "
            "p < 0.05（精确 p 至少为 2/n!，4 个系统时为 1/12）；Pearson 的 p 依赖系统分数服从正态"
            "分布，这么少的系统无法说明这一点。"
        ),
    ),
    (
        r"(?P<group>.+): (?P<n>\d+) (?P<level>\w+) unit\(s\) have metric scores but no human "
        r"score \(e\.g\. (?P<examples>.*)\); they are not correlated\.",
        gettext_lazy(
            "%(group)s：%(n)s 个%(level)s单元有指标分但没有人工分（例如 %(examples)s），不参与相关"
            "计算。"
        ),
    ),
    (
        r"(?P<group>.+): (?P<n>\d+) (?P<level>\w+) unit\(s\) have human scores but no metric "
        r"score \(e\.g\. (?P<examples>.*)\); they are not correlated\.",
        gettext_lazy(
            "%(group)s：%(n)s 个%(level)s单元有人工分但没有指标分（例如 %(examples)s），不参与相关"
            "计算。"
        ),
    ),
    # Correlation cells' warnings (metrics/analysis/study.py: few_systems_warning)
    (
        r"only (?P<n>\d+) systems: Pearson's p rests on normally distributed scores",
        gettext_lazy("只有 %(n)s 个系统：Pearson 的 p 依赖分数服从正态分布"),
    ),
    (
        r"only (?P<n>\d+) systems: p cannot go below (?P<p>[\d.e+-]+) \(exact\), so not below "
        r"0\.05",
        gettext_lazy("只有 %(n)s 个系统：p 不可能低于 %(p)s（精确），因此不可能低于 0.05"),
    ),
    # Study notes
    (
        r"Pearson's r, Spearman's rho and Kendall's tau-b with two-sided p-values as in "
        r"scipy\.stats; n is the number of units with both scores\.",
        gettext_lazy(
            "Pearson r、Spearman ρ 与 Kendall τ-b，双侧 p 值（与 scipy.stats 相同）；n 为两侧都有分"
            "数的单元数。"
        ),
    ),
    (
        r"Pearson's r, Spearman's rho and Kendall's tau-b with two-sided p-values as in "
        r"scipy\.stats; n is the number of units with both scores\. Up to n = (?P<max>\d+) the "
        r"Spearman and Kendall p-values are exact: over all n! pairings of the scores, ties kept "
        r"\(scipy\.stats\.permutation_test\); Pearson's assume normality\.",
        gettext_lazy(
            "Pearson r、Spearman ρ 与 Kendall τ-b，双侧 p 值（与 scipy.stats 相同）；n 为两侧都有分"
            "数的单元数。n ≤ %(max)s 时 Spearman 与 Kendall 的 p 值是精确的：遍历分数的全部 n! 种"
            "配对，保留并列（scipy.stats.permutation_test）；Pearson 的 p 值假设正态分布。"
        ),
    ),
    (
        r"p_holm \(family-wise error, Holm 1979\) and p_bh \(false discovery rate, Benjamini & "
        r"Hochberg 1995\) adjust the p-values over all cells of one method\.",
        gettext_lazy(
            "p_holm（族错误率，Holm 1979）与 p_bh（错误发现率，Benjamini & Hochberg 1995）在同一相"
            "关系数的全部单元格上校正 p 值。"
        ),
    ),
    (
        r"Clusters: metrics sorted by correlation; a metric opens a new cluster when a metric "
        r"of the current one is significantly better \(one-sided p <= (?P<alpha>[\d.]+)\); "
        r"Williams test for Pearson and Spearman \(Graham & Baldwin 2014\), paired bootstrap "
        r"for Kendall\.",
        gettext_lazy(
            "显著性分簇：指标按相关系数排序；当前簇中有指标显著优于某指标（单侧 p ≤ %(alpha)s）时，"
            "该指标开启新的一簇；Pearson 与 Spearman 用 Willi"
            "ams 检验（Graham & Baldwin 2014），Kendall 用配对 bootstrap。"
        ),
    ),
    (
        r"(?P<confidence>\d+%) percentile bootstrap intervals from (?P<samples>\d+) resamples "
        r"of (?P<what>.+) \(seed (?P<seed>-?\d+)\)\.",
        gettext_lazy(
            "%(confidence)s 百分位 bootstrap 区间，对%(what)s重采样 %(samples)s 次（种子 %(seed)s）"
            "。"
        ),
    ),
    (
        r"Kendall clusters need bootstrap resamples \(none were requested\)\.",
        gettext_lazy("Kendall 的显著性分簇需要 bootstrap 重采样（本报告未设置）。"),
    ),
    # Figure warnings (metrics/reporting/fonts.py, metrics/services/reports.py)
    (
        r"No CJK font is available to matplotlib .*",
        gettext_lazy(
            "matplotlib 没有可用的中日韩字体（metrics/reporting/fontdata/ 中随附的字体缺失或无法读"
            "取）：图用 DejaVu Sans 绘制，其中的"
            "中文或日文标签显示为空框。表格和下载文件是完整的。请重新安装本项目或安装 fonts-noto-cj"
            "k 软件包，然后重新运行报告。"
        ),
    ),
    (
        r"(?P<n>\d+) character\(s\) are not in the figure font and show as empty boxes in the "
        r"figures: (?P<chars>.*)\. Install fonts-noto-cjk for full coverage\.",
        gettext_lazy(
            "图的字体缺少 %(n)s 个字符，它们在图中显示为空框：%(chars)s。安装 fonts-noto-cjk 可以完"
            "整显示。"
        ),
    ),
    (
        r"The figures could not be drawn \((?P<error>.*)\); tables and downloads are complete\.",
        gettext_lazy("无法绘制图（%(error)s）；表格和下载文件是完整的。"),
    ),
    # Table titles and notes (metrics/analysis/tables.py)
    (
        r"Metric–human correlations \(all groups\)",
        gettext_lazy("指标与人工评分的相关性（全部分组）"),
    ),
    (
        r"Metric–human correlations \((?P<groups>.+)\)",
        gettext_lazy("指标与人工评分的相关性（%(groups)s）"),
    ),
    (
        r"Correlation with human scores at the (?P<level>\w+) level; best per column bold\.",
        gettext_lazy("%(level)s级与人工评分的相关性；每列最佳值加粗。"),
    ),
    (r"— undefined: (?P<reasons>.+)\.", gettext_lazy("— 无定义：%(reasons)s。")),
    (
        r"† fewer than (?P<n>\d+) systems: cannot be significant\.",
        gettext_lazy("† 少于 %(n)s 个系统：不可能显著。"),
    ),
    (
        r"† fewer than (?P<n>\d+) systems: Spearman and Kendall cannot reach p < 0\.05 \(exact p "
        r">= 2/n!\); Pearson's p assumes normally distributed scores\.",
        gettext_lazy(
            "† 少于 %(n)s 个系统：Spearman 与 Kendall 不可能达到 p < 0.05（精确 p ≥ 2/n!）；"
            "Pearson 的 p 假设分数服从正态分布。"
        ),
    ),
    (
        r"\[low, high\]: (?P<confidence>\d+%) bootstrap interval\.",
        gettext_lazy("[下限, 上限]：%(confidence)s bootstrap 区间。"),
    ),
    (r"Correlation averaged over groups", gettext_lazy("各分组的平均相关性")),
    (
        r"Plain mean over the groups where the correlation is defined \(MSDE §5\.3\)\.",
        gettext_lazy("在相关系数有定义的分组上取简单平均（MSDE §5.3）。"),
    ),
    (r"Significance clusters", gettext_lazy("显著性分簇")),
    (
        r"1 = top cluster: no metric of it correlates significantly better than another "
        r"\(alpha = (?P<alpha>[\d.]+)\); blank = not tested\.",
        gettext_lazy(
            "1 = 最高的一簇：簇内没有指标的相关显著优于另一个（alpha = %(alpha)s）；空白 = 未检验。"
        ),
    ),
    (
        r"Score \(position\); systems ordered by the first human dimension\.",
        gettext_lazy("分数（名次）；系统按第一个人工维度排序。"),
    ),
    (
        r"† only (?P<n>\d+) systems: the ranking correlations cannot be significant\.",
        gettext_lazy("† 只有 %(n)s 个系统：排名相关不可能显著。"),
    ),
    (
        r"† only (?P<n>\d+) systems: the ranking correlations cannot reach p < 0\.05 \(exact p "
        r">= 2/n!\)\.",
        gettext_lazy("† 只有 %(n)s 个系统：排名相关不可能达到 p < 0.05（精确 p ≥ 2/n!）。"),
    ),
    (r"Systems: (?P<group>.+)", gettext_lazy("各系统：%(group)s")),
    (r"Units joined at the (?P<level>\w+) level", gettext_lazy("%(level)s级对齐的单元")),
    (
        r"Units on one side only are not correlated\.",
        gettext_lazy("只在一侧出现的单元不参与相关计算。"),
    ),
    (
        r"(?P<method>\w+) over (?P<units>\d+) scored units, clustered order\.",
        gettext_lazy("%(method)s，基于 %(units)s 个有分数的单元，按聚类顺序排列。"),
    ),
    (
        r"Metric × metric \((?P<group>.+), (?P<method>\w+)\)",
        gettext_lazy("指标 × 指标（%(group)s，%(method)s）"),
    ),
    (
        r"(?P<metric>[^ ]+) left out: (?P<reason>.+)\.",
        gettext_lazy("%(metric)s 未列入：%(reason)s。"),
    ),
)

# Labels of table headers and rows.
_LABELS: Mapping[str, Any] = {
    "Metric": gettext_lazy("指标"),
    "System": gettext_lazy("系统"),
    "Group": gettext_lazy("分组"),
    "Human": pgettext_lazy("report table", "人工"),
    "human": pgettext_lazy("report table", "人工"),
    "metric": gettext_lazy("指标"),
    "Items": gettext_lazy("条目"),
    "Average": gettext_lazy("平均"),
    "Pairwise acc.": gettext_lazy("成对排序准确率"),
    "both sides": gettext_lazy("两侧都有"),
    "metric only": gettext_lazy("仅有指标分"),
    "human only": gettext_lazy("仅有人工分"),
}
_COMPILED = tuple((re.compile(pattern, flags=re.S), message) for pattern, message in _CATALOGUE)
_VERSUS = re.compile(r"(?P<label>Spearman|Pairwise acc\.) vs (?P<dimension>.+)")


def report_text(text: str) -> str:
    """One of the study's texts (a note, a warning, a table title or note) in the active
    language; unknown texts as they are."""
    for pattern, message in _COMPILED:
        match = pattern.fullmatch(text)
        if match is not None:
            params = {
                name: _PARAMETERS.get(name, str)(value) for name, value in match.groupdict().items()
            }
            return str(message) % params
    return text


def report_label(text: str, dimensions: Mapping[str, str] | None = None) -> str:
    """A table's header or row label: the analysis's words translated, a skill key as the
    skill's name, a dimension key as its label; other names (metrics, systems) as they are."""
    if text in _LABELS:
        return str(_LABELS[text])
    versus = _VERSUS.fullmatch(text)
    if versus is not None:
        return _("%(label)s 与 %(dimension)s") % {
            "label": report_label(versus["label"]),
            "dimension": (dimensions or {}).get(versus["dimension"], versus["dimension"]),
        }
    if dimensions and text in dimensions:
        return dimensions[text]
    return skill_label(text) or text


def localized_table(table: Table, dimensions: Mapping[str, str] | None = None) -> Table:
    """The table with its title, labels and notes in the active language (the cells' numbers
    unchanged)."""
    return replace(
        table,
        title=report_text(table.title),
        stub=tuple(report_label(s) for s in table.stub),
        header=tuple(
            tuple((report_label(label, dimensions), span) for label, span in spans)
            for spans in table.header
        ),
        rows=tuple(
            Row(
                tuple(report_label(label, dimensions) for label in row.labels),
                row.cells,
                rule_above=row.rule_above,
            )
            for row in table.rows
        ),
        notes=tuple(report_text(note) for note in table.notes),
    )


def figure_text(
    *, language: str, groups: Iterable[str], dimensions: Mapping[str, str]
) -> FigureText:
    """The figures' words in `language`: titles and axis names, the levels, the groups' skill
    names and the dimensions' labels (`dimensions` already in that language)."""
    with translation.override(language):
        return FigureText(
            heatmap_title=_("%(method)s 与人工评分的相关性（%(level)s级）"),
            scatter_title=_("%(group)s：各系统的人工评分（%(dimension)s）与指标"),
            distribution_title=_("%(group)s：分数分布"),
            not_drawn=_("（未绘制：%(metrics)s）"),
            z_score=_("z 标准化分数"),
            density=_("密度"),
            metric_matrix_title=_("%(group)s：指标 × 指标"),
            levels={level: _level(level) for level in ("turn", "dialogue", "system")},
            groups={group: skill_label(group) or group for group in groups},
            dimensions=dict(dimensions),
        )
