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
from dataclasses import dataclass
from typing import IO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
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


@transaction.atomic
def ratings_import(
    *,
    fileobj: IO[bytes],
    campaign_name: str,
    rubric_ref: str,
    created_by: User | None = None,
) -> RatingImportResult:
    """Import a ratings CSV into the imported job of (campaign, rubric); refuse it whole on
    any bad row, naming the row and column."""
    campaign = Campaign.objects.filter(name=campaign_name).first()
    if campaign is None:
        raise RatingImportError(f"no campaign named {campaign_name!r}", argument="campaign")
    try:
        rubric = rubric_by_ref(rubric_ref)
    except RubricLookupError as exc:
        raise RatingImportError(str(exc), argument="rubric") from None
    spec = validate_spec(rubric.spec)
    rows = _parse(_read_csv(fileobj), campaign=campaign, spec=spec)
    raters, created = _raters(rows)
    job = _imported_job(campaign=campaign, rubric=rubric, created_by=created_by)

    assignments = _assignments(rows, job=job, raters=raters)
    _save_ratings(rows, assignments)
    incomplete = _check_complete(rows, assignments, spec)
    return RatingImportResult(
        job=job,
        ratings=len(rows),
        dialogues=len({row.dialogue_id for row in rows}),
        raters=len(raters),
        new_raters=created,
        incomplete=incomplete,
    )


def _assignments(
    rows: list[_Row], *, job: RatingJob, raters: dict[str, User]
) -> dict[tuple[int, str], Assignment]:
    """The job's real assignment of each (dialogue, rater) in the file: the existing ones (a
    second import of the same job), and the others created submitted, in one insert."""
    rater_names = {user.pk: name for name, user in raters.items()}
    existing = {
        (assignment.dialogue_id, rater_names[assignment.rater_id]): assignment
        for assignment in Assignment.objects.filter(
            job=job, kind=Assignment.Kind.REAL, rater_id__in=list(rater_names)
        )
    }
    now = timezone.now()
    new: dict[tuple[int, str], Assignment] = {}
    for row in rows:
        slot = (row.dialogue_id, row.rater)
        if slot not in existing and slot not in new:
            new[slot] = Assignment(
                job=job,
                dialogue_id=row.dialogue_id,
                rater=raters[row.rater],
                kind=Assignment.Kind.REAL,
                status=Assignment.Status.SUBMITTED,
                submitted_at=now,
            )
    Assignment.objects.bulk_create(new.values(), batch_size=BULK_BATCH_SIZE)
    return existing | new


def _save_ratings(rows: list[_Row], assignments: dict[tuple[int, str], Assignment]) -> None:
    """Each row's answer: an answer the job already holds (same assignment, question and turn)
    is replaced, the others are added — a few statements for the whole file."""
    _, turn_pks = model_turn_indices({row.dialogue_id for row in rows})
    existing: dict[tuple[int, str, int | None], int] = {
        (assignment_id, question, turn_id): pk
        for pk, assignment_id, question, turn_id in Rating.objects.filter(
            assignment_id__in=[a.pk for a in assignments.values()]
        ).values_list("pk", "assignment_id", "question", "turn_id")
    }
    replaced: list[int] = []
    new: list[Rating] = []
    for row in rows:
        assignment = assignments[(row.dialogue_id, row.rater)]
        turn_id = None if row.turn is None else turn_pks[(row.dialogue_id, row.turn)]
        is_text = isinstance(row.value, str)
        pk = existing.get((assignment.pk, row.question.key, turn_id))
        if pk is not None:
            replaced.append(pk)
        new.append(
            Rating(
                assignment=assignment,
                question=row.question.key,
                turn_id=turn_id,
                value=None if is_text else row.value,
                text=row.value if isinstance(row.value, str) else "",
            )
        )
    # Replace = delete and insert again (nothing refers to a rating): Django's bulk_update
    # writes one CASE branch per row and field, slower than the per-row updates it replaced.
    for start in range(0, len(replaced), BULK_BATCH_SIZE):
        Rating.objects.filter(pk__in=replaced[start : start + BULK_BATCH_SIZE]).delete()
    Rating.objects.bulk_create(new, batch_size=BULK_BATCH_SIZE)


def _read_csv(fileobj: IO[bytes]) -> list[dict[str, str]]:
    limit = settings.DATASET_UPLOAD_MAX_BYTES
    raw = fileobj.read(limit + 1)
    if len(raw) > limit:
        raise RatingImportError(f"the file is larger than {limit} bytes")
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


def _parse(records: list[dict[str, str]], *, campaign: Campaign, spec: RubricSpec) -> list[_Row]:
    dialogues = {
        external_id: (pk, skill)
        for pk, external_id, skill in Dialogue.objects.filter(campaign=campaign)
        .exclude(external_id="")
        .values_list("pk", "external_id", "skill__key")
    }
    model_turns: dict[int, int] = defaultdict(int)
    _, turn_pks = model_turn_indices(pk for pk, _ in dialogues.values())
    for dialogue_pk, _ in turn_pks:
        model_turns[dialogue_pk] += 1
    username = UnicodeUsernameValidator()
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
    rows: list[_Row], assignments: dict[tuple[int, str], Assignment], spec: RubricSpec
) -> int:
    """How many of the (dialogue, rater) pairs in the file miss answers, counting answers
    imported earlier into the same job.

    A mean-based rubric (MSDE, Likert) cannot score a unit without every answer its skill asks
    (gates and the rest): the file is refused, naming the first. Seed 001's 0–100 rubrics
    (`normalised_100`) have a fixed denominator: a missing answer scores 0 and the unit is
    counted as incomplete (`JobScores.completeness`), as a live chat with a reply left unrated
    is, so a multi-turn sheet with 7 of a turn's 8 answers imports."""
    fixed_denominator = spec.overall == "normalised_100"
    first_row: dict[tuple[int, str], _Row] = {}
    for row in rows:
        first_row.setdefault((row.dialogue_id, row.rater), row)
    by_assignment = {a.pk: slot for slot, a in assignments.items()}
    answers: dict[tuple[int, str], list[Answer]] = defaultdict(list)
    turn_index, turn_pks = model_turn_indices({dialogue_id for dialogue_id, _ in assignments})
    ratings = Rating.objects.filter(assignment_id__in=list(by_assignment)).values_list(
        "assignment_id", "question", "turn_id", "value", "text"
    )
    for assignment_id, question, turn_id, value, text in ratings:
        slot = by_assignment[assignment_id]
        row = first_row[slot]
        answers[slot].append(
            Answer(
                unit=row.external_id,
                rater=row.rater,
                question=question,
                value=text if value is None else value,
                turn=None if turn_id is None else turn_index[turn_id],
            )
        )
    skills = dict(
        Dialogue.objects.filter(pk__in=[d for d, _ in answers]).values_list("pk", "skill__key")
    )
    model_turns = Counter(dialogue_id for dialogue_id, _ in turn_pks)
    incomplete = 0
    for slot, unit_answers in answers.items():
        if fixed_denominator:
            score = score_unit(
                spec,
                unit_answers,
                skill=skills[slot[0]],
                unanswered="zero",
                n_turns=model_turns[slot[0]],
            )
            incomplete += score.n_unanswered > 0
            continue
        try:
            score_unit(spec, unit_answers, skill=skills[slot[0]])
        except IncompleteAnswersError as exc:
            raise RatingImportError(
                f"incomplete: {exc} (every question the rubric asks must be answered)",
                row=first_row[slot].line,
                column="question",
            ) from None
    return incomplete
