"""A whole study: cells, warnings, clusters, JSON round trip, and the MSDE table layout."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from metrics.analysis.results import CorrelationStudy, StudyConfig
from metrics.analysis.scores import ScoreRow
from metrics.analysis.study import run_study
from metrics.analysis.tables import (
    UNDEFINED,
    cluster_table,
    correlation_table,
    group_average_table,
)
from metrics.analysis.tidy import tidy_tables


def _dialogue_rows(seed: int = 0) -> tuple[list[ScoreRow], list[ScoreRow]]:
    rng = np.random.default_rng(seed)
    metric, human = [], []
    for group in ("knowledge", "chitchat"):
        for u in range(40):
            quality = rng.normal()
            unit = f"{group}-{u}"
            for _ in range(3):  # three raters
                human.append(
                    ScoreRow(group, unit, "info", float(np.clip(round(quality + 1), 0, 2)))
                )
                if group == "knowledge":
                    human.append(ScoreRow(group, unit, "know", quality + rng.normal()))
            metric.append(ScoreRow(group, unit, "BLEU-1", quality + 0.5 * rng.normal()))
            metric.append(ScoreRow(group, unit, "METEOR", quality + rng.normal()))
            metric.append(ScoreRow(group, unit, "DIST-1", rng.normal()))
            metric.append(ScoreRow(group, unit, "LEN", 7.0))  # constant: undefined everywhere
    metric.append(ScoreRow("knowledge", "orphan", "BLEU-1", 0.3))
    return metric, human


@pytest.fixture(scope="module")
def study() -> CorrelationStudy:
    metric, human = _dialogue_rows()
    config = StudyConfig(level="dialogue", methods=("pearson", "kendall"), bootstrap=200, seed=1)
    return run_study(metric, human, config)


def test_cells_cover_each_groups_own_dimensions(study: CorrelationStudy) -> None:
    assert study.columns() == [("knowledge", "info"), ("knowledge", "know"), ("chitchat", "info")]
    assert len(study.cells) == 3 * 4 * 2
    cell = study.cell("knowledge", "know", "BLEU-1", "pearson")
    assert cell is not None and cell.n == 40
    assert cell.ci_low is not None and cell.ci_low < cell.value < cell.ci_high
    assert cell.p_holm >= cell.p_value and cell.p_bh >= cell.p_value
    constant = study.cell("chitchat", "info", "LEN", "kendall")
    assert constant is not None and constant.value is None and constant.p_value is None
    assert constant.undefined == "metric scores are constant" and constant.ci_low is None
    assert any("orphan" in w for w in study.warnings)


def test_the_point_estimate_is_scipys_on_rater_means(study: CorrelationStudy) -> None:
    metric, human = _dialogue_rows()
    units = [f"chitchat-{u}" for u in range(40)]
    info = [np.mean([r.value for r in human if r.unit == u and r.name == "info"]) for u in units]
    meteor = [next(r.value for r in metric if r.unit == u and r.name == "METEOR") for u in units]
    expected = stats.kendalltau(meteor, info)
    cell = study.cell("chitchat", "info", "METEOR", "kendall")
    assert cell.value == pytest.approx(expected.statistic) and cell.p_value == pytest.approx(
        expected.pvalue
    )


def test_clusters_put_the_noise_metric_below_the_good_ones(study: CorrelationStudy) -> None:
    comparison = next(
        c
        for c in study.comparisons
        if (c.group, c.dimension, c.method) == ("knowledge", "know", "pearson")
    )
    assert comparison.test == "Williams"
    assert comparison.metrics[0] == "BLEU-1" and comparison.metrics[-1] == "DIST-1"
    assert comparison.clusters[0] == 1 and comparison.clusters[-1] > 1
    assert "LEN" not in comparison.metrics  # undefined correlations are not ranked
    kendall = [c for c in study.comparisons if c.method == "kendall"]
    assert kendall and all(c.test == "paired bootstrap" for c in kendall)


def test_json_round_trip_is_lossless_and_has_no_nan(study: CorrelationStudy) -> None:
    text = json.dumps(study.to_dict(), allow_nan=False)
    assert CorrelationStudy.from_dict(json.loads(text)) == study


def test_correlation_table_has_the_msde_layout(study: CorrelationStudy) -> None:
    table = correlation_table(study)
    assert table.stub == ("Metric",)
    assert table.header[0] == (("knowledge", 4), ("chitchat", 2))
    assert table.header[1] == (("info", 2), ("know", 2), ("info", 2))
    assert [label for label, _ in table.header[2]] == ["Pearson", "Kendall"] * 3
    assert [r.labels[0] for r in table.rows] == ["BLEU-1", "METEOR", "DIST-1", "LEN", "Average"]
    for j in range(6):
        column = [row.cells[j] for row in table.rows[:-1]]
        best = max(c.value for c in column if c.value is not None)
        assert [c.bold for c in column] == [c.value == best for c in column]
        defined = [c.value for c in column if c.value is not None]
        assert table.rows[-1].cells[j].value == pytest.approx(np.mean(defined))
    assert table.rows[3].cells[0].text == UNDEFINED
    assert any("metric scores are constant" in note for note in table.notes)
    with_ci = correlation_table(study, with_ci=True)
    assert "[" in with_ci.rows[0].cells[0].text


def test_average_over_groups_and_clusters(study: CorrelationStudy) -> None:
    table = group_average_table(study)
    info_pearson = table.rows[0].cells[0]
    values = [study.cell(g, "info", "BLEU-1", "pearson").value for g in ("knowledge", "chitchat")]
    assert info_pearson.value == pytest.approx(np.mean(values))
    clusters = cluster_table(study)
    assert clusters.rows[0].cells[0].text == "1"
    tidy = tidy_tables(study)
    assert tidy[0].name == "correlations" and len(tidy[0].records) == len(study.cells)


def test_few_systems_carry_a_warning() -> None:
    rows = [ScoreRow("g", s, "bleu", v) for s, v in zip("ABCD", (0.1, 0.3, 0.2, 0.5), strict=True)]
    human = [ScoreRow("g", s, "info", v) for s, v in zip("ABCD", (1.0, 1.5, 1.2, 2.0), strict=True)]
    study = run_study(rows, human, StudyConfig(level="system"))
    cell = study.cell("g", "info", "bleu", "pearson")
    assert cell.value is not None and "normally distributed" in cell.warning
    assert any("Fewer than 5 systems" in w for w in study.warnings)
    assert correlation_table(study).rows[0].cells[0].text.endswith("†")


def test_four_systems_get_the_exact_rank_p_and_a_warning_that_agrees_with_it() -> None:
    # The report: rho = 1 printed with p = 2.2e-16 beside "cannot be significant".
    rows = [ScoreRow("g", s, "bleu", v) for s, v in zip("ABCD", (0.1, 0.3, 0.2, 0.5), strict=True)]
    human = [ScoreRow("g", s, "info", v) for s, v in zip("ABCD", (1.0, 1.5, 1.2, 2.0), strict=True)]
    study = run_study(
        rows,
        human,
        StudyConfig(level="system", bootstrap=0, methods=("pearson", "spearman", "kendall")),
    )
    for method in ("spearman", "kendall"):
        cell = study.cell("g", "info", "bleu", method)
        assert cell is not None and cell.value == pytest.approx(1.0)
        assert cell.p_value == pytest.approx(1 / 12)
        assert "cannot go below 0.0833" in cell.warning
    (ranking,) = study.systems[0].agreement
    assert ranking.p_value == pytest.approx(1 / 12)
    (warning,) = [w for w in study.warnings if "Fewer than 5 systems" in w]
    assert "can reach p < 0.05" in warning and "normally distributed" in warning
    assert "cannot be significant" not in warning


def test_five_systems_can_be_significant_by_the_exact_rank_test() -> None:
    rows = [ScoreRow("g", s, "bleu", float(v)) for v, s in enumerate("ABCDE")]
    human = [ScoreRow("g", s, "info", float(v) ** 2) for v, s in enumerate("ABCDE")]
    study = run_study(rows, human, StudyConfig(level="system", bootstrap=0))
    cell = study.cell("g", "info", "bleu", "spearman")
    assert cell is not None and cell.p_value == pytest.approx(2 / 120)
    assert not cell.warning


def test_progress_is_reported_up_to_done() -> None:
    metric, human = _dialogue_rows()
    seen: list[tuple[float, str]] = []
    run_study(metric, human, StudyConfig(level="turn"), progress=lambda f, m: seen.append((f, m)))
    assert seen[0][0] == 0.0 and seen[-1] == (1.0, "done")


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown method 'pearsn'"):
        StudyConfig(level="turn", methods=("pearsn",))  # type: ignore[arg-type]  # a typo on purpose
    with pytest.raises(ValueError, match="level must be one of"):
        StudyConfig(level="session")  # type: ignore[arg-type]  # refused on purpose
    with pytest.raises(ValueError, match="cannot be negative"):
        StudyConfig(level="turn", bootstrap=-1)


def test_groups_on_one_side_and_system_means_without_items_are_reported() -> None:
    metric = [ScoreRow("a", s, "bleu", v) for s, v in zip("ABCDE", (1, 3, 2, 5, 4), strict=True)]
    metric.append(ScoreRow("metric-only", "A", "bleu", 1.0))
    human = [ScoreRow("a", s, "info", v) for s, v in zip("ABCDE", (1, 2, 3, 5, 4), strict=True)]
    human.append(ScoreRow("human-only", "Z", "info", 1.0))
    study = run_study(metric, human, StudyConfig(level="system", bootstrap=100))
    assert [c.group for c in study.coverage] == ["a", "metric-only", "human-only"]
    assert {c.group for c in study.cells} == {"a"}
    assert [s.group for s in study.systems] == ["a"]
    assert any("a: no bootstrap interval" in w for w in study.warnings)
    assert any(w.startswith("metric-only: 1 system unit(s)") for w in study.warnings)
    assert all(c.ci_low is None for c in study.cells)
    assert study.cell("a", "info", "bleu", "spearman").value == pytest.approx(0.9)  # Σd² = 2
