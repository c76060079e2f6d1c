"""The words drawn in the report figures (no matplotlib, no Django: a web process builds them in
its reader's language, a worker draws with them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FigureText:
    """The words drawn in the figures, as %-format strings (``%(group)s``, …), and the names
    to show for levels, groups (skill keys) and dimensions. English by default; a report gives
    its reader's language (this module runs without Django, so the caller translates)."""

    heatmap_title: str = "%(method)s correlation with human scores (%(level)s level)"
    scatter_title: str = "%(group)s: systems, human %(dimension)s vs metrics"
    distribution_title: str = "%(group)s: score distributions"
    not_drawn: str = " (not drawn: %(metrics)s)"
    z_score: str = "z-normalised score"
    density: str = "density"
    metric_matrix_title: str = "%(group)s: metric × metric"
    levels: Mapping[str, str] = field(default_factory=dict)
    groups: Mapping[str, str] = field(default_factory=dict)
    dimensions: Mapping[str, str] = field(default_factory=dict)

    def group(self, name: str) -> str:
        return self.groups.get(name, name)

    def dimension(self, name: str) -> str:
        return self.dimensions.get(name, name)


ENGLISH = FigureText()
