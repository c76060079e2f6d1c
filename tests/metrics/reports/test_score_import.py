"""External metric scores imported from a CSV as a MetricRun(source=imported)."""

from __future__ import annotations

import io

import pytest

from metrics.analysis.scores import ScoreFileError
from metrics.models import JobStatus, MetricRun, MetricScore
from metrics.selectors.reports import report_study
from metrics.services.reports import report_compute, report_create
from metrics.services.score_import import metric_scores_import
from tests.metrics.reports.factories import QUALITY, SYSTEMS, msde_study

pytestmark = pytest.mark.django_db


def upload(text: str) -> io.BytesIO:
    return io.BytesIO(text.encode("utf-8"))


def test_dialogue_scores_are_stored_as_metric_scores_and_join_a_report() -> None:
    study = msde_study(dialogues_per_system=1)
    lines = ["group,unit,metric,value"]
    for dialogue in study.rated:
        lines.append(f"knowledge,{dialogue.pk},外部指标,{QUALITY[dialogue.backend.name] / 10}")
    run = metric_scores_import(
        fileobj=upload("\n".join(lines) + "\n\n"),
        filename="external.csv",
        name="外部分数",
        campaign=study.interactive,
        level="dialogue",
    )
    assert run.source == MetricRun.Source.IMPORTED and run.status == JobStatus.DONE
    assert run.metrics == ["外部指标"]
    assert run.scores.count() == len(study.rated)
    assert set(run.scores.values_list("level", flat=True)) == {"dialogue"}

    report = report_create(
        name="导入",
        config={
            "metric_runs": [run.pk],
            "rating_jobs": [study.job.pk],
            "level": "dialogue",
            "bootstrap": 0,
        },
    )
    report_compute(report_id=report.pk)
    report.refresh_from_db()
    result = report_study(report)
    assert result is not None
    cell = result.cell("knowledge", "overall", "外部指标", "spearman")
    assert cell is not None and cell.n == len(SYSTEMS) and cell.value == pytest.approx(1.0)


def test_system_and_turn_scores_use_backend_names_and_turn_ids() -> None:
    study = msde_study(dialogues_per_system=1)
    text = "group,unit,metric,value\n" + "".join(
        f"knowledge,{name},corpus-bleu,{QUALITY[name]}\n" for name in SYSTEMS
    )
    run = metric_scores_import(
        fileobj=upload(text), filename="s.csv", name="语料", campaign=study.static, level="system"
    )
    assert set(run.scores.values_list("backend__name", "group")) == {
        (name, "knowledge") for name in SYSTEMS
    }
    turn = study.rated[0].turns.get(speaker="system")
    run = metric_scores_import(
        fileobj=upload(f"group,unit,metric,value\nknowledge,{turn.pk},f1,0.5\n"),
        filename="t.csv",
        name="轮次",
        campaign=study.interactive,
        level="turn",
    )
    score = run.scores.get()
    assert (score.turn_id, score.dialogue_id) == (turn.pk, study.rated[0].pk)


@pytest.mark.parametrize(
    ("rows", "level", "row", "column", "message"),
    [
        ("k,{d0},f1,0.1\nk,{d1},f1,n/a\n", "dialogue", 3, "value", "'n/a'"),
        ("k,{d0},f1,0.1\nk,abc,f1,0.2\n", "dialogue", 3, "unit", "not a dialogue id"),
        ("k,{d0},f1,0.1\nk,{other},f1,0.2\n", "dialogue", 3, "unit", "not a dialogue of"),
        ("k,{d0},f1,0.1\n\nk,{d0},f1,0.2\n", "dialogue", 4, "unit", "the first is on row 2"),
        ("k,{d0},f1,0.1\nk,{d1},,0.2\n", "dialogue", 3, "metric", "empty value"),
        ("k,无此系统,f1,0.1\n", "system", 2, "unit", "no system (backend) is named '无此系统'"),
        ("k,{d0},f1,0.1\n", "turn", 2, "unit", "is not a turn of a dialogue of campaign"),
    ],
)
def test_a_bad_row_is_named_and_nothing_is_imported(rows, level, row, column, message) -> None:
    study = msde_study(dialogues_per_system=1)
    d0, d1 = study.rated[0].pk, study.rated[1].pk
    text = "group,unit,metric,value\n" + rows.format(d0=d0, d1=d1, other=study.answers[0].pk)
    with pytest.raises(ScoreFileError) as caught:
        metric_scores_import(
            fileobj=upload(text),
            filename="bad.csv",
            name="坏文件",
            campaign=study.interactive,
            level=level,
        )
    assert (caught.value.row, caught.value.column) == (row, column)
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"bad.csv, row {row}, column '{column}'")
    assert not MetricRun.objects.exists() and not MetricScore.objects.exists()


def test_a_missing_column_and_an_item_at_system_level_are_refused() -> None:
    study = msde_study(dialogues_per_system=1)
    with pytest.raises(ScoreFileError, match="row 1, column 'metric': missing column"):
        metric_scores_import(
            fileobj=upload("group,unit,value\nknowledge,1,0.5\n"),
            filename="m.csv",
            name="x",
            campaign=study.static,
            level="dialogue",
        )
    with pytest.raises(ScoreFileError, match="row 2, column 'item'"):
        metric_scores_import(
            fileobj=upload("group,unit,metric,value,item\nknowledge,系统甲,f1,0.5,7\n"),
            filename="m.csv",
            name="x",
            campaign=study.static,
            level="system",
        )
    assert not MetricRun.objects.exists()
