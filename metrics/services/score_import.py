"""Import external metric scores (a CSV in the ``correlate`` format) as an imported MetricRun.

The file has the columns ``group,unit,metric,value`` (see docs/correlation.md). ``unit`` names a
platform unit at the chosen level:

* ``turn``: a turn id (``Turn`` pk) of a dialogue of the campaign;
* ``dialogue``: a dialogue id (``Dialogue`` pk) of the campaign;
* ``system``: a backend (system) name; ``group`` is kept as the score's group (a skill key or a
  dataset name), so corpus-level scores join reports grouped the same way.

At the turn and dialogue levels ``group`` is informational: reports group by the platform's own
skill or dataset of each dialogue. One score per metric and unit (a second one is refused: it
would be ambiguous whether to average); an ``item`` column is refused at the system level, where
a run holds one score per system (import per-dialogue scores at the dialogue level instead).

Scores are stored as MetricScore rows, so they join reports exactly as computed ones. The whole
file is checked first and stored in one transaction: any bad row refuses the file.
"""

from __future__ import annotations

import csv
import io
from typing import IO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from chat.models import Backend, Campaign, Dialogue, Turn
from metrics.analysis.join import LEVELS
from metrics.analysis.scores import ScoreFileError, ScoreRow, load_score_csv
from metrics.models import JobStatus, MetricRun, MetricScore

NAME_MAX_LENGTH = 160  # MetricRun.name
METRIC_MAX_LENGTH = 80  # MetricScore.metric
GROUP_MAX_LENGTH = 80  # MetricScore.group
_BATCH = 2000


def _row_numbers(text: str) -> list[int]:
    """Spreadsheet row numbers of the score rows, as load_score_csv numbers them."""
    numbers = []
    for number, record in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
        if number > 1 and any(cell.strip() for cell in record):
            numbers.append(number)
    return numbers


def _read(fileobj: IO[bytes], label: str) -> tuple[list[ScoreRow], list[int]]:
    limit = settings.DATASET_UPLOAD_MAX_BYTES
    data = fileobj.read(limit + 1)
    if len(data) > limit:
        raise ScoreFileError(
            f"larger than the {limit // (1024 * 1024)} MiB upload limit (DATASET_UPLOAD_MAX_BYTES)",
            source=label,
        )
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    rows = load_score_csv(stream, kind="metric", name=label)
    return rows, _row_numbers(data.decode("utf-8-sig"))


def _integer_unit(row: ScoreRow, number: int, label: str, what: str) -> int:
    if not row.unit.isdigit():
        raise ScoreFileError(
            f"{row.unit!r} is not a {what} id (a whole number)",
            source=label,
            row=number,
            column="unit",
        )
    return int(row.unit)


def _scores(
    rows: list[ScoreRow], numbers: list[int], *, campaign: Campaign, level: str, label: str
) -> list[MetricScore]:
    """Check every row against the platform and build the unsaved scores."""
    if level == "system":
        wanted = {row.unit for row in rows}
        backends = dict(Backend.objects.filter(name__in=wanted).values_list("name", "pk"))
    elif level == "dialogue":
        ids = {int(row.unit) for row in rows if row.unit.isdigit()}
        dialogues = set(
            Dialogue.objects.filter(campaign=campaign, pk__in=ids).values_list("pk", flat=True)
        )
    else:
        ids = {int(row.unit) for row in rows if row.unit.isdigit()}
        turns = dict(
            Turn.objects.filter(dialogue__campaign=campaign, pk__in=ids).values_list(
                "pk", "dialogue_id"
            )
        )
    first_row: dict[tuple[str, str, str], int] = {}
    scores = []
    for row, number in zip(rows, numbers, strict=True):
        if len(row.name) > METRIC_MAX_LENGTH:
            raise ScoreFileError(
                f"longer than {METRIC_MAX_LENGTH} characters",
                source=label,
                row=number,
                column="metric",
            )
        key = (row.name, row.group if level == "system" else "", row.unit)
        if key in first_row:
            raise ScoreFileError(
                f"a second score of metric {row.name!r} for unit {row.unit!r} "
                f"(the first is on row {first_row[key]}); give one score per metric and unit",
                source=label,
                row=number,
                column="unit",
            )
        first_row[key] = number
        score = MetricScore(metric=row.name, level=level, value=row.value)
        if level == "system":
            if row.item:
                raise ScoreFileError(
                    "a system-level import holds one score per system; import per-dialogue "
                    "scores at the dialogue level instead",
                    source=label,
                    row=number,
                    column="item",
                )
            if row.unit not in backends:
                raise ScoreFileError(
                    f"no system (backend) is named {row.unit!r}",
                    source=label,
                    row=number,
                    column="unit",
                )
            if len(row.group) > GROUP_MAX_LENGTH:
                raise ScoreFileError(
                    f"longer than {GROUP_MAX_LENGTH} characters",
                    source=label,
                    row=number,
                    column="group",
                )
            score.backend_id, score.group = backends[row.unit], row.group
        elif level == "dialogue":
            pk = _integer_unit(row, number, label, "dialogue")
            if pk not in dialogues:
                raise ScoreFileError(
                    f"dialogue {pk} is not a dialogue of campaign '{campaign.name}'",
                    source=label,
                    row=number,
                    column="unit",
                )
            score.dialogue_id = pk
        else:
            pk = _integer_unit(row, number, label, "turn")
            if pk not in turns:
                raise ScoreFileError(
                    f"turn {pk} is not a turn of a dialogue of campaign '{campaign.name}'",
                    source=label,
                    row=number,
                    column="unit",
                )
            score.turn_id, score.dialogue_id = pk, turns[pk]
        scores.append(score)
    return scores


def metric_scores_import(
    *,
    fileobj: IO[bytes],
    filename: str,
    name: str,
    campaign: Campaign,
    level: str,
    created_by: User | None = None,
) -> MetricRun:
    """Store a score CSV as a finished, imported MetricRun; raise ScoreFileError on bad input.

    Errors name the file, row and column (``ScoreFileError.row``/``.column``); argument errors
    (name, level) carry ``column`` "name"/"level" and no row. Nothing is saved unless every row
    is valid.
    """
    label = filename or "scores.csv"
    name = name.strip()
    if not name:
        raise ScoreFileError("a run name is required", source=label, column="name")
    if len(name) > NAME_MAX_LENGTH:
        raise ScoreFileError(
            f"the run name is longer than {NAME_MAX_LENGTH} characters", source=label, column="name"
        )
    if level not in LEVELS:
        raise ScoreFileError(
            f"level must be one of {', '.join(LEVELS)}, not {level!r}", source=label, column="level"
        )
    rows, numbers = _read(fileobj, label)
    scores = _scores(rows, numbers, campaign=campaign, level=level, label=label)
    metrics = list(dict.fromkeys(row.name for row in rows))
    now = timezone.now()
    with transaction.atomic():
        run = MetricRun.objects.create(
            name=name,
            campaign=campaign,
            source=MetricRun.Source.IMPORTED,
            metrics=metrics,
            metric_settings={"imported_from": label, "level": level},
            signatures=dict.fromkeys(metrics, f"imported:{label}"),
            status=JobStatus.DONE,
            progress_done=len(scores),
            progress_total=len(scores),
            created_by=created_by,
            started_at=now,
            finished_at=now,
        )
        for score in scores:
            score.run = run
        MetricScore.objects.bulk_create(scores, batch_size=_BATCH)
    return run
