"""Operations of the chat app (the writes); views, the API, tasks and commands call these."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, reset_queries, transaction

from chat.importers import PER_LINE_SKILL_FORMATS, DatasetImportError, check_size, iter_records
from chat.importers.fields import SampleRecord
from chat.models import Dataset, Language, Sample, Skill

# --- Datasets ---

# Rows per INSERT: large enough to amortise round trips, small enough that a batch of Sample
# objects stays a few megabytes whatever the file size.
IMPORT_BATCH_SIZE = 2000
EXPORT_CHUNK_SIZE = 2000
DATASET_NAME_MAX_LENGTH = 120  # chat.Dataset.name


def _check_import_arguments(
    *, name: str, source_format: str, language: str, skill: str | None, skill_ids: dict[str, int]
) -> int | None:
    """Validate everything that does not need the file; return the dataset skill's id."""
    if not name:
        raise DatasetImportError("a dataset name is required", field="name")
    if len(name) > DATASET_NAME_MAX_LENGTH:
        raise DatasetImportError(f"longer than {DATASET_NAME_MAX_LENGTH} characters", field="name")
    if source_format not in Dataset.Format.values:
        formats = ", ".join(Dataset.Format.values)
        raise DatasetImportError(
            f"unknown format '{source_format}' (expected one of: {formats})", field="source_format"
        )
    if language not in Language.values:
        raise DatasetImportError(
            f"unknown language '{language}' (expected one of: {', '.join(Language.values)})",
            field="language",
        )
    if skill is None:
        if source_format not in PER_LINE_SKILL_FORMATS:
            raise DatasetImportError(
                f"the '{source_format}' format needs a skill (one of: {', '.join(skill_ids)})",
                field="skill",
            )
        return None
    if skill not in skill_ids:
        raise DatasetImportError(
            f"unknown skill '{skill}' (known: {', '.join(skill_ids)})", field="skill"
        )
    return skill_ids[skill]


def _name_taken(name: str) -> DatasetImportError:
    return DatasetImportError(f"a dataset named '{name}' already exists", field="name")


def _insert_samples(*, dataset: Dataset, batch: list[Sample], lines: dict[str, int]) -> None:
    """Insert one batch; an id already used by an earlier batch is reported on its line.

    Ids are unique per dataset in the database (`sample_unique_external_id`), so instead of
    keeping every id of a million-line file in memory, the constraint finds cross-batch
    duplicates and only then are the batch's ids looked up. The savepoint keeps the outer
    transaction usable on PostgreSQL after the IntegrityError.
    """
    try:
        with transaction.atomic():
            Sample.objects.bulk_create(batch)
    except IntegrityError:
        ids = list(lines)
        taken: set[str] = set()
        # Chunked so that no query exceeds a backend's limit on bound parameters.
        for start in range(0, len(ids), 500):
            taken.update(
                Sample.objects.filter(
                    dataset=dataset, external_id__in=ids[start : start + 500]
                ).values_list("external_id", flat=True)
            )
        if not taken:
            raise
        duplicate = min(taken, key=lines.__getitem__)
        raise DatasetImportError(
            f"duplicate id '{duplicate}' (already used on an earlier line)",
            line=lines[duplicate],
            field="id",
        ) from None


@transaction.atomic
def dataset_import(
    *,
    fileobj: IO[bytes],
    name: str,
    source_format: str,
    language: str,
    skill: str | None = None,
    description: str = "",
    created_by: User | None = None,
) -> Dataset:
    """Import a dataset file (opened in binary mode) all-or-nothing.

    The file is streamed: lines are parsed one at a time and samples inserted in batches, so a
    file of a million samples never sits in memory. Any bad line raises `DatasetImportError`
    naming the line and field, and the transaction leaves no Dataset and no Sample behind.

    `skill` is the dataset's skill key: required for the single-skill formats (LCCC, DuConv,
    DuRecDial, CPC); for generic JSONL the default for lines without their own `skill`; for
    LIC 2021, whose lines name theirs in `subtrack`, optional, and when given every line must
    match it. The dataset's `skill` ends up as the one skill all samples share, else None.
    """
    name = name.strip()
    skill = skill or None
    skill_ids = dict(Skill.objects.values_list("key", "id"))
    default_skill_id = _check_import_arguments(
        name=name, source_format=source_format, language=language, skill=skill, skill_ids=skill_ids
    )
    dataset = _dataset_create(
        fileobj=fileobj,
        name=name,
        source_format=source_format,
        language=language,
        description=description,
        created_by=created_by,
    )
    records = iter_records(
        fileobj, source_format=source_format, max_bytes=settings.DATASET_UPLOAD_MAX_BYTES
    )
    skills = _SkillResolver(
        source_format=source_format, skill=skill, skill_ids=skill_ids, default=default_skill_id
    )
    count, skills_seen = _samples_insert(dataset=dataset, records=records, skills=skills)
    dataset.skill_id = skills_seen.pop() if len(skills_seen) == 1 else None
    dataset.sample_count = count
    dataset.save(update_fields=["skill", "sample_count"])
    return dataset


def _dataset_create(
    *,
    fileobj: IO[bytes],
    name: str,
    source_format: str,
    language: str,
    description: str,
    created_by: User | None,
) -> Dataset:
    """The empty dataset row, once its name is free and the file within the size limit."""
    if Dataset._base_manager.filter(name=name).exists():
        raise _name_taken(name)
    check_size(fileobj, max_bytes=settings.DATASET_UPLOAD_MAX_BYTES)
    try:
        return Dataset.objects.create(
            name=name,
            language=language,
            source_format=source_format,
            description=description,
            created_by=created_by,
        )
    except IntegrityError:  # created by a concurrent import since the check above
        raise _name_taken(name) from None


@dataclass(frozen=True)
class _SkillResolver:
    """The skill id of each record: its own (checked against the known skills and, for LIC 2021,
    the dataset's skill) or the dataset's default."""

    source_format: str
    skill: str | None
    skill_ids: dict[str, int]
    default: int | None

    def __call__(self, record: SampleRecord) -> int:
        if record.skill is None:
            if self.default is None:
                raise DatasetImportError(
                    "missing (the line has no skill and no dataset skill was given)",
                    line=record.line,
                    field="skill",
                )
            return self.default
        lic = self.source_format == Dataset.Format.LIC2021
        skill_field = "subtrack" if lic else "skill"
        if record.skill not in self.skill_ids:
            raise DatasetImportError(
                f"unknown skill '{record.skill}' (known: {', '.join(self.skill_ids)})",
                line=record.line,
                field=skill_field,
            )
        skill_id = self.skill_ids[record.skill]
        if lic and self.default not in (None, skill_id):
            raise DatasetImportError(
                f"skill '{record.skill}' differs from the dataset's skill '{self.skill}'",
                line=record.line,
                field=skill_field,
            )
        return skill_id


def _samples_insert(
    *, dataset: Dataset, records: Iterable[SampleRecord], skills: _SkillResolver
) -> tuple[int, set[int]]:
    """Insert the records as samples in batches; the count and the skill ids seen."""
    skills_seen: set[int] = set()
    batch: list[Sample] = []
    batch_lines: dict[str, int] = {}  # external id → line, for the batch being filled
    count = 0
    for record in records:
        skill_id = skills(record)
        if record.external_id in batch_lines:
            raise DatasetImportError(
                f"duplicate id '{record.external_id}' (first used on line "
                f"{batch_lines[record.external_id]})",
                line=record.line,
                field="id",
            )
        batch_lines[record.external_id] = record.line
        skills_seen.add(skill_id)
        batch.append(
            Sample(
                dataset=dataset,
                index=count,
                external_id=record.external_id,
                skill_id=skill_id,
                context=record.context,
                references=record.references,
                grounding=record.grounding,
                metadata=record.metadata,
            )
        )
        count += 1
        if len(batch) >= IMPORT_BATCH_SIZE:
            _insert_samples(dataset=dataset, batch=batch, lines=batch_lines)
            batch, batch_lines = [], {}
            if settings.DEBUG:
                # With DEBUG on, Django keeps the SQL of the last 9000 queries; each bulk INSERT
                # carries a whole batch, which would make memory grow with the file after all.
                reset_queries()
    if batch:
        _insert_samples(dataset=dataset, batch=batch, lines=batch_lines)
    return count, skills_seen


def dataset_export_lines(*, dataset: Dataset) -> Iterator[str]:
    """The dataset as generic JSONL, one JSON document per sample (without the newline).

    Importing the lines back with `source_format="jsonl"` gives the same ids, skills, contexts,
    references and grounding. Rows are read in chunks, so any size streams.
    """
    skill_keys = dict(Skill.objects.values_list("id", "key"))
    rows = (
        Sample.objects.filter(dataset=dataset)
        .order_by("index")
        .values_list("external_id", "skill_id", "context", "references", "grounding", "metadata")
        .iterator(chunk_size=EXPORT_CHUNK_SIZE)
    )
    for external_id, skill_id, context, references, grounding, metadata in rows:
        line: dict[str, Any] = {
            "id": external_id,
            "skill": skill_keys[skill_id],
            "context": context,
            "references": references,
            "grounding": grounding,
        }
        if metadata:
            line["metadata"] = metadata
        yield json.dumps(line, ensure_ascii=False)


# --- Participants ---
