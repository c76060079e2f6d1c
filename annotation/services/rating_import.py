"""Importing existing ratings from CSV into an imported rating job (all-or-nothing).

Columns: `dialogue_id` (the dialogue's external id in the campaign, as `import_dialogues` stored
it), `rater`, `question`, `value`, optional `turn` (0-based index among the dialogue's model
turns; given exactly for turn-level questions). Raters become expert accounts that cannot log in
(unusable password) until someone sets a password. A second import into the same job replaces
the answers it repeats, so a corrected file can be imported again.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.db.models import Field, Model
from django.utils import timezone

from annotation.models import Assignment, Rating, RatingJob, Rubric
from annotation.rubric_spec import AnswerError, Question, RubricSpec, validate_spec
from annotation.scoring import Answer, IncompleteAnswersError, score_unit
from annotation.selectors.human_scores import model_turn_indices
from annotation.selectors.rubrics import RubricLookupError, rubric_by_ref
from chat.models import Campaign, Dialogue
from core.access import Role, has_role
from core.errors import ServiceError

REQUIRED_COLUMNS = ("dialogue_id", "rater", "question", "value")
OPTIONAL_COLUMNS = ("turn",)
USERNAME_MAX_LENGTH = 150
IMPORTED_JOB_SUFFIX = "导入"
# Rows per INSERT/UPDATE statement: one statement per row made a 40,000-rating file take minutes.
BULK_BATCH_SIZE = 2000


class RatingImportError(ServiceError):
    """A ratings file (or an argument) refused. `row` is the CSV row (the header is row 1),
    `column` the CSV column, or `argument` the import argument at fault (also the `field`)."""

    def __init__(
        self,
        message: str,
        *,
        row: int | None = None,
        column: str | None = None,
        argument: str | None = None,
    ) -> None:
        self.argument = argument
        super().__init__(message, row=row, column=column, field=argument)

    def where(self) -> str:
        parts = []
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.column is not None:
            parts.append(f"column '{self.column}'")
        if self.argument is not None:
            parts.append(f"--{self.argument}")
        return ", ".join(parts)


@dataclass(frozen=True)
class RatingImportResult:
    job: RatingJob
    ratings: int
    dialogues: int
    raters: int
    new_raters: list[str]
    # (dialogue, rater) pairs of the job left with unanswered questions, which seed 001's
    # 0–100 rubrics score 0 (the job's results count them as incomplete)
    incomplete: int = 0


@dataclass(frozen=True)
class _Row:
    line: int
    dialogue_id: int
    external_id: str
    rater: str
    question: Question
    turn: int | None
    value: float | str


def imported_job_name(*, campaign: Campaign, rubric: Rubric) -> str:
    return f"{campaign.name[:120]} · {rubric.key} v{rubric.version} · {IMPORTED_JOB_SUFFIX}"


# What an import's progress reports: the fraction of the work done (0..1). The callback may raise
# to stop the import (a cancelled job), which rolls it back whole.
Progress = Callable[[float], None]


def _no_progress(_fraction: float) -> None:
    return None


@transaction.atomic
def ratings_import(
    *,
    fileobj: IO[bytes],
    campaign_name: str,
    rubric_ref: str,
    created_by: User | None = None,
    progress: Progress = _no_progress,
) -> RatingImportResult:
    """Import a ratings CSV into the imported job of (campaign, rubric); refuse it whole on
    any bad row, naming the row and column. `progress` is told the fraction done between the
    steps (reading, checking, writing the ratings batch by batch, the completeness check)."""
    campaign, rubric = import_target(campaign_name=campaign_name, rubric_ref=rubric_ref)
    spec = validate_spec(rubric.spec)
    records = _read_csv(fileobj)
    progress(0.05)
    dialogues = _campaign_dialogues(campaign)
    turn_index, turn_pks = model_turn_indices(pk for pk, _ in dialogues.values())
    rows = _parse(records, campaign=campaign, spec=spec, dialogues=dialogues, turn_pks=turn_pks)
    progress(0.3)
    raters, created = _raters(rows)
    job = _imported_job(campaign=campaign, rubric=rubric, created_by=created_by)

    assignments = _assignments(rows, job=job, raters=raters)
    progress(0.4)
    existing = _existing_answers(assignments)
    _save_ratings(
        rows,
        assignments,
        existing,
        turn_pks=turn_pks,
        progress=lambda share: progress(0.4 + 0.45 * share),
    )
    incomplete = _check_complete(
        rows,
        assignments,
        existing,
        spec,
        skills=dict(dialogues.values()),
        turn_index=turn_index,
        turn_pks=turn_pks,
    )
    progress(1.0)
    return RatingImportResult(
        job=job,
        ratings=len(rows),
        dialogues=len({row.dialogue_id for row in rows}),
        raters=len(raters),
        new_raters=created,
        incomplete=incomplete,
    )


def import_target(*, campaign_name: str, rubric_ref: str) -> tuple[Campaign, Rubric]:
    """The campaign and rubric an import names, or the argument at fault."""
    campaign = Campaign.objects.filter(name=campaign_name).first()
    if campaign is None:
        raise RatingImportError(f"no campaign named {campaign_name!r}", argument="campaign")
    try:
        rubric = rubric_by_ref(rubric_ref)
    except RubricLookupError as exc:
        raise RatingImportError(str(exc), argument="rubric") from None
    return campaign, rubric


def _assignments(
    rows: list[_Row], *, job: RatingJob, raters: dict[str, User]
) -> dict[tuple[int, str], int]:
    """The pk of the job's real assignment of each (dialogue, rater) in the file: the existing
    ones (a second import of the same job), and the others created submitted, in one insert."""
    rater_names = {user.pk: name for name, user in raters.items()}

    def held() -> dict[tuple[int, str], int]:
        return {
            (dialogue_id, rater_names[rater_id]): pk
            for pk, dialogue_id, rater_id in Assignment.objects.filter(
                job=job, kind=Assignment.Kind.REAL, rater_id__in=list(rater_names)
            ).values_list("pk", "dialogue_id", "rater_id")
        }

    existing = held()
    now = timezone.now()
    new: dict[tuple[int, str], tuple[object, ...]] = {}
    for row in rows:
        slot = (row.dialogue_id, row.rater)
        if slot not in existing and slot not in new:
            # job, dialogue, rater, status, order, is_gold, kind, submitted_at, created_at
            new[slot] = (
                job.pk,
                row.dialogue_id,
                raters[row.rater].pk,
                Assignment.Status.SUBMITTED.value,
                0,
                False,
                Assignment.Kind.REAL.value,
                now,
                now,
            )
    if not new:
        return existing
    _insert_rows(
        Assignment,
        (
            "job",
            "dialogue",
            "rater",
            "status",
            "order",
            "is_gold",
            "kind",
            "submitted_at",
            "created_at",
        ),
        list(new.values()),
    )
    return held()


# An answer the job holds: (assignment, question, turn pk) → (rating pk, value, text).
Existing = dict[tuple[int, str, int | None], tuple[int, float | None, str]]


def _existing_answers(assignments: dict[tuple[int, str], int]) -> Existing:
    """The answers the job already holds for the file's (dialogue, rater) pairs (a second
    import of the same job), read once for both the replacing and the completeness check."""
    ids = list(assignments.values())
    existing: Existing = {}
    for start in range(0, len(ids), BULK_BATCH_SIZE):
        ratings = Rating.objects.filter(
            assignment_id__in=ids[start : start + BULK_BATCH_SIZE]
        ).values_list("pk", "assignment_id", "question", "turn_id", "value", "text")
        for pk, assignment_id, question, turn_id, value, text in ratings:
            existing[(assignment_id, question, turn_id)] = (pk, value, text)
    return existing


def _save_ratings(
    rows: list[_Row],
    assignments: dict[tuple[int, str], int],
    existing: Existing,
    *,
    turn_pks: dict[tuple[int, int], int],
    progress: Progress,
) -> None:
    """Each row's answer: an answer the job already holds (same assignment, question and turn)
    is replaced, the others are added — a few statements for the whole file."""
    replaced: list[int] = []
    new: list[tuple[int, str, int | None, float | None, str]] = []
    for row in rows:
        assignment_id = assignments[(row.dialogue_id, row.rater)]
        turn_id = None if row.turn is None else turn_pks[(row.dialogue_id, row.turn)]
        held = existing.get((assignment_id, row.question.key, turn_id))
        if held is not None:
            replaced.append(held[0])
        if isinstance(row.value, str):
            new.append((assignment_id, row.question.key, turn_id, None, row.value))
        else:
            new.append((assignment_id, row.question.key, turn_id, row.value, ""))
    # Replace = delete and insert again (nothing refers to a rating): Django's bulk_update
    # writes one CASE branch per row and field, slower than the per-row updates it replaced.
    for start in range(0, len(replaced), BULK_BATCH_SIZE):
        Rating.objects.filter(pk__in=replaced[start : start + BULK_BATCH_SIZE]).delete()
    progress(0.1)
    now = timezone.now()
    for start in range(0, len(new), BULK_BATCH_SIZE):
        _insert_ratings(new[start : start + BULK_BATCH_SIZE], now=now)
        progress(0.1 + 0.9 * min(1.0, (start + BULK_BATCH_SIZE) / len(new)))


def _insert_ratings(
    values: list[tuple[int, str, int | None, float | None, str]], *, now: datetime
) -> None:
    """Insert ratings given as (assignment, question, turn, value, text)."""
    _insert_rows(
        Rating,
        ("assignment", "question", "turn", "value", "text", "updated_at"),
        [(*row, now) for row in values],
    )


def _insert_rows(model: type[Model], fields: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """Insert rows of `fields` values (a foreign key by its pk; every NOT NULL column must be
    among them: the fields' defaults are Django's, not the database's). On PostgreSQL with
    COPY: a model instance and its share of a compiled INSERT per row were most of an import's
    time; elsewhere with bulk_create."""
    manager = model._default_manager
    connection = connections[manager.db]
    meta = model._meta
    attnames, columns = [], []
    for name in fields:
        field = meta.get_field(name)
        if not isinstance(field, Field) or field.column is None:
            raise ValueError(f"{model.__name__}.{name} is not a column")
        attnames.append(field.attname)
        columns.append(field.column)
    if connection.vendor != "postgresql":
        manager.bulk_create(
            (model(**dict(zip(attnames, row, strict=True))) for row in rows),
            batch_size=BULK_BATCH_SIZE,
        )
        return
    quote = connection.ops.quote_name
    names = ", ".join(quote(column) for column in columns)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {quote(meta.db_table)} ({names}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


def read_upload(fileobj: IO[bytes]) -> bytes:
    """The file's bytes, refused above the upload limit."""
    limit = settings.DATASET_UPLOAD_MAX_BYTES
    raw = fileobj.read(limit + 1)
    if len(raw) > limit:
        raise RatingImportError(f"the file is larger than {limit} bytes")
    return raw


def _read_csv(fileobj: IO[bytes]) -> list[dict[str, str]]:
    raw = read_upload(fileobj)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise RatingImportError("not valid UTF-8 (save the CSV as UTF-8)", row=line) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        table = list(reader)
    except csv.Error as exc:
        raise RatingImportError(f"malformed CSV: {exc}", row=reader.line_num) from None
    if not table:
        raise RatingImportError("the file is empty (expected a header row)", row=1)
    header = [name.strip() for name in table[0]]
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise RatingImportError(f"missing column(s): {', '.join(missing)}", row=1)
    unknown = [name for name in header if name not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        allowed = ", ".join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)
        raise RatingImportError(
            f"unknown column(s): {', '.join(unknown)} (allowed: {allowed})", row=1
        )
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise RatingImportError(f"column(s) given twice: {', '.join(repeated)}", row=1)
    records = []
    for number, cells in enumerate(table[1:], start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise RatingImportError(
                f"{len(cells)} cells, but the header has {len(header)} columns", row=number
            )
        records.append({"_row": str(number)} | dict(zip(header, cells, strict=True)))
    if not records:
        raise RatingImportError("no ratings after the header row", row=2)
    return records


def _campaign_dialogues(campaign: Campaign) -> dict[str, tuple[int, str]]:
    """The campaign's dialogues by external id: (pk, skill key)."""
    return {
        external_id: (pk, skill)
        for pk, external_id, skill in Dialogue.objects.filter(campaign=campaign)
        .exclude(external_id="")
        .values_list("pk", "external_id", "skill__key")
    }


def _parse(
    records: list[dict[str, str]],
    *,
    campaign: Campaign,
    spec: RubricSpec,
    dialogues: dict[str, tuple[int, str]],
    turn_pks: dict[tuple[int, int], int],
) -> list[_Row]:
    model_turns = Counter(dialogue_pk for dialogue_pk, _ in turn_pks)
    username = UnicodeUsernameValidator()
    valid_raters: set[str] = set()
    rows: list[_Row] = []
    seen: dict[tuple[int, str, str, int | None], int] = {}
    for record in records:
        line = int(record["_row"])
        external_id = record["dialogue_id"].strip()
        if not external_id:
            raise RatingImportError("is empty", row=line, column="dialogue_id")
        if external_id not in dialogues:
            raise RatingImportError(
                f"no dialogue with id {external_id!r} in campaign {campaign.name!r}",
                row=line,
                column="dialogue_id",
            )
        dialogue_pk, skill = dialogues[external_id]
        rater = record["rater"].strip()
        if not rater:
            raise RatingImportError("is empty", row=line, column="rater")
        if rater not in valid_raters:  # each name checked once
            try:
                username(rater)
            except ValidationError:
                raise RatingImportError(
                    f"{rater!r} is not a valid user name (letters, digits and @ . + - _ only)",
                    row=line,
                    column="rater",
                ) from None
            if len(rater) > USERNAME_MAX_LENGTH:
                raise RatingImportError(
                    f"longer than {USERNAME_MAX_LENGTH} characters", row=line, column="rater"
                )
            valid_raters.add(rater)
        try:
            question = spec.question(record["question"].strip())
        except AnswerError as exc:
            raise RatingImportError(str(exc), row=line, column="question") from None
        if not question.applies_to(skill):
            raise RatingImportError(
                f"{question.key}: not asked for {skill!r} dialogues (dialogue {external_id!r})",
                row=line,
                column="question",
            )
        turn = _turn(record.get("turn", ""), line)
        try:
            question.check_turn(turn)
        except AnswerError as exc:
            raise RatingImportError(str(exc), row=line, column="turn") from None
        if turn is not None and turn >= model_turns[dialogue_pk]:
            raise RatingImportError(
                f"dialogue {external_id!r} has {model_turns[dialogue_pk]} model turn(s), "
                f"so turn {turn} is out of range (turns count from 0)",
                row=line,
                column="turn",
            )
        if not record["value"].strip():
            raise RatingImportError("is empty", row=line, column="value")
        try:
            value = question.clean(record["value"])
        except AnswerError as exc:
            raise RatingImportError(str(exc), row=line, column="value") from None
        slot = (dialogue_pk, rater, question.key, turn)
        if slot in seen:
            raise RatingImportError(
                f"the same answer as row {seen[slot]} (dialogue, rater, question, turn)",
                row=line,
            )
        seen[slot] = line
        rows.append(_Row(line, dialogue_pk, external_id, rater, question, turn, value))
    return rows


def _turn(raw: str, line: int) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise RatingImportError(
            f"expected a whole number ≥ 0 (the model turn, 0 = first), got {raw!r}",
            row=line,
            column="turn",
        )
    return int(raw)


def _raters(rows: list[_Row]) -> tuple[dict[str, User], list[str]]:
    """The rater accounts by user name (existing experts, or new expert accounts), and the
    names of the accounts created."""
    first_row: dict[str, int] = {}
    for row in rows:
        first_row.setdefault(row.rater, row.line)
    user_model = get_user_model()
    raters: dict[str, User] = {}
    for user in user_model.objects.filter(username__in=list(first_row)):
        if not has_role(user, Role.EXPERT):
            raise RatingImportError(
                f"user {user.get_username()!r} exists and is not an expert",
                row=first_row[user.get_username()],
                column="rater",
            )
        raters[user.get_username()] = user
    group = Group.objects.get(name=Role.EXPERT.value)
    created = []
    for name in first_row:
        if name not in raters:
            user = user_model.objects.create_user(username=name)  # unusable password
            user.groups.add(group)
            raters[name] = user
            created.append(name)
    return raters, created


def _imported_job(*, campaign: Campaign, rubric: Rubric, created_by: User | None) -> RatingJob:
    name = imported_job_name(campaign=campaign, rubric=rubric)
    job, _ = RatingJob.objects.select_for_update().get_or_create(
        name=name,
        defaults={
            "campaign": campaign,
            "rubric": rubric,
            "status": RatingJob.Status.CLOSED,
            "raters_per_dialogue": max(1, validate_spec(rubric.spec).min_raters),
            "created_by": created_by,
        },
    )
    if job.campaign_id != campaign.pk or job.rubric_id != rubric.pk:
        raise RatingImportError(
            f"a rating job named {name!r} exists for another campaign or rubric; rename it",
            argument="campaign",
        )
    return job


def _check_complete(
    rows: list[_Row],
    assignments: dict[tuple[int, str], int],
    existing: Existing,
    spec: RubricSpec,
    *,
    skills: dict[int, str],
    turn_index: dict[int, int],
    turn_pks: dict[tuple[int, int], int],
) -> int:
    """How many of the (dialogue, rater) pairs in the file miss answers, counting answers
    imported earlier into the same job.

    A mean-based rubric (MSDE, Likert) cannot score a unit without every answer its skill asks
    (gates and the rest): the file is refused, naming the first. Seed 001's 0–100 rubrics
    (`normalised_100`) have a fixed denominator: a missing answer scores 0 and the unit is
    counted as incomplete (`JobScores.completeness`), as a live chat with a reply left unrated
    is, so a multi-turn sheet with 7 of a turn's 8 answers imports.

    The answers are those the job holds after the import (the earlier ones the file does not
    replace, and the file's), built in memory rather than read back. Whether a unit is complete
    depends only on its skill, its number of model turns, which (question, turn) slots are
    answered and the gates' answers (a failed gate excuses what it gates), so units are grouped
    by that pattern and the scoring kernel runs once per pattern — a handful for a whole file —
    instead of once per unit. The values were checked when they were imported."""
    fixed_denominator = spec.overall == "normalised_100"
    gates = {q.key for q in spec.questions if q.gate}
    first_row: dict[tuple[int, str], _Row] = {}
    for row in rows:
        first_row.setdefault((row.dialogue_id, row.rater), row)
    by_assignment = {pk: slot for slot, pk in assignments.items()}
    values: dict[tuple[int, str], dict[tuple[str, int | None], float | str]] = defaultdict(dict)
    for (assignment_id, question, turn_id), (_, value, text) in existing.items():
        turn: int | None = None if turn_id is None else turn_index[turn_id]
        values[by_assignment[assignment_id]][(question, turn)] = text if value is None else value
    for row in rows:
        values[(row.dialogue_id, row.rater)][(row.question.key, row.turn)] = row.value
    model_turns = Counter(dialogue_id for dialogue_id, _ in turn_pks)
    unanswered: dict[tuple[object, ...], int] = {}  # pattern → slots left unanswered
    incomplete = 0
    for slot, row in first_row.items():
        unit_values = values[slot]
        dialogue_id = slot[0]
        pattern = (
            skills[dialogue_id],
            model_turns[dialogue_id] if fixed_denominator else None,
            frozenset(unit_values),
            frozenset((key, v) for key, v in unit_values.items() if key[0] in gates),
        )
        if pattern not in unanswered:  # the first unit of a refused pattern raises
            unanswered[pattern] = _unanswered(
                spec, row, unit_values, skills[dialogue_id], model_turns[dialogue_id]
            )
        incomplete += unanswered[pattern] > 0
    return incomplete


def _unanswered(
    spec: RubricSpec,
    row: _Row,
    values: dict[tuple[str, int | None], float | str],
    skill: str,
    n_turns: int,
) -> int:
    """How many slots the unit of `row` leaves unanswered under a fixed-denominator rubric; a
    mean-based one refuses such a unit (RatingImportError naming the unit's first row)."""
    answers = [
        Answer(unit=row.external_id, rater=row.rater, question=q, value=v, turn=t)
        for (q, t), v in values.items()
    ]
    if spec.overall == "normalised_100":
        score = score_unit(spec, answers, skill=skill, unanswered="zero", n_turns=n_turns)
        return score.n_unanswered
    try:
        score_unit(spec, answers, skill=skill)
    except IncompleteAnswersError as exc:
        raise RatingImportError(
            f"incomplete: {exc} (every question the rubric asks must be answered)",
            row=row.line,
            column="question",
        ) from None
    return 0
