"""Dialogues as JSON Lines: export (any campaign, streamed) and import (all-or-nothing).

The export format is a superset of the import format (docs/dialogues.md): an exported file
imports into another instance unchanged, keeping systems, skills, languages, grounding, turns
and, for static answers, each turn's references, prompt and latency.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from chat.importers import DatasetImportError, check_size
from chat.importers.fields import as_text, as_text_list, type_name
from chat.importers.jsonl import parse_grounding
from chat.importers.reader import iter_json_lines
from chat.models import (
    Backend,
    Campaign,
    CampaignBackend,
    Dialogue,
    Language,
    Skill,
    StaticRun,
    Turn,
)
from chat.selectors.dialogues import dialogue_export_queryset
from chat.services.campaigns import campaign_create, default_alias

# Dialogues read per query (with their turns, ~10 each): a chunk is what the web process holds
# while it streams, and the first bytes wait for the first chunk.
EXPORT_CHUNK_SIZE = 200
IMPORT_BATCH_SIZE = 500
DIALOGUE_ID_MAX_LENGTH = 200  # chat.Dialogue.external_id
SYSTEM_NAME_MAX_LENGTH = 120  # chat.Backend.name
CAMPAIGN_NAME_MAX_LENGTH = 160  # chat.Campaign.name

# Fields an import reads, and the extra fields of an export that an import accepts and ignores
# (they describe where the dialogue came from on the exporting instance). Anything else is
# refused: a misspelt "turn" or "grounding" would otherwise import silently without its data.
LINE_FIELDS = ("id", "system", "skill", "language", "grounding", "turns")
EXPORT_ONLY_FIELDS = (
    "scenario",
    "campaign",
    "alias",
    "worker",
    "status",
    "review",
    "grounding_used",
    "created_at",
    "submitted_at",
    "cannot_continue",  # seed 001: the worker ended the chat early, it could not go on
    "opening",  # seed 001: the first user turn is a campaign opening drawn from a dataset
)
TURN_FIELDS = ("speaker", "text", "references", "prompt", "latency_ms")
EXPORT_ONLY_TURN_FIELDS = ("created_at",)


class DialogueImportError(DatasetImportError):
    """A dialogue file (or an import argument) was refused; names the line and field."""


@dataclass
class ImportResult:
    campaign: Campaign
    dialogues: int = 0
    turns: int = 0
    systems_created: list[str] = field(default_factory=list)


# --- Export ---


def worker_pseudonym(*, campaign_id: int, user_id: int) -> str:
    """A stable id for a worker within a campaign that reveals neither username nor email.

    Keyed with SECRET_KEY, so it cannot be recomputed from guessed user ids outside the instance.
    """
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"{campaign_id}:{user_id}".encode(), hashlib.sha256
    )
    return f"w{digest.hexdigest()[:12]}"


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _review(dialogue: Dialogue) -> dict[str, str] | None:
    if dialogue.status in (Dialogue.Status.ACCEPTED, Dialogue.Status.REJECTED):
        return {"status": dialogue.status, "rejection_reason": dialogue.rejection_reason}
    if dialogue.status == Dialogue.Status.SUBMITTED:
        return {"status": "pending", "rejection_reason": ""}
    return None


def _turn_json(turn: Turn) -> dict[str, Any]:
    data: dict[str, Any] = {
        "speaker": turn.speaker,
        "text": turn.text,
        "created_at": _iso(turn.created_at),
        "latency_ms": turn.latency_ms,
    }
    if turn.references:
        data["references"] = turn.references
    if turn.prompt:
        data["prompt"] = turn.prompt
    return data


def _dialogue_json(
    dialogue: Dialogue, turns: list[Turn], *, campaign: Campaign, aliases: dict[int, str]
) -> dict[str, Any]:
    scenario = dialogue.scenario
    return {
        "id": dialogue.external_id or f"d{dialogue.pk}",
        "system": dialogue.backend.name,
        "skill": dialogue.skill.key,
        "language": dialogue.language,
        "grounding": dialogue.grounding,
        "turns": [_turn_json(turn) for turn in turns],
        "scenario": (
            {"dataset": scenario.dataset.name, "sample": scenario.external_id}
            if scenario is not None
            else None
        ),
        "campaign": campaign.name,
        "alias": aliases.get(dialogue.backend_id),
        "worker": (
            worker_pseudonym(campaign_id=campaign.pk, user_id=dialogue.worker_id)
            if dialogue.worker_id is not None
            else None
        ),
        "status": dialogue.status,
        "review": _review(dialogue),
        "grounding_used": dialogue.grounding_used,
        "created_at": _iso(dialogue.created_at),
        "submitted_at": _iso(dialogue.submitted_at),
        "cannot_continue": dialogue.cannot_continue,
        "opening": (
            {
                "dataset": campaign.opening_dataset.name if campaign.opening_dataset else None,
                "sample": dialogue.opening.sample.external_id,
                "topic": dialogue.opening.topic,
            }
            if dialogue.opening is not None
            else None
        ),
    }


def dialogue_export_lines(
    *,
    campaign: Campaign,
    static_run: StaticRun | None = None,
    statuses: Iterable[str] | None = None,
) -> Iterator[str]:
    """The dialogues as JSON documents, one per dialogue (without the newline), oldest first.

    Dialogues are read in chunks of `EXPORT_CHUNK_SIZE` with their turns, so any size streams.
    """
    aliases = dict(
        CampaignBackend.objects.filter(campaign=campaign).values_list("backend_id", "alias")
    )
    dialogues = dialogue_export_queryset(
        campaign=campaign, static_run=static_run, statuses=statuses
    ).select_related("backend", "skill", "scenario__dataset", "opening__sample")
    last_pk = 0
    while True:
        chunk = list(dialogues.filter(pk__gt=last_pk)[:EXPORT_CHUNK_SIZE])
        if not chunk:
            return
        last_pk = chunk[-1].pk
        turns: dict[int, list[Turn]] = {dialogue.pk: [] for dialogue in chunk}
        for turn in Turn.objects.filter(dialogue_id__in=turns).order_by("dialogue_id", "index"):
            turns[turn.dialogue_id].append(turn)
        for dialogue in chunk:
            yield json.dumps(
                _dialogue_json(dialogue, turns[dialogue.pk], campaign=campaign, aliases=aliases),
                ensure_ascii=False,
            )


# --- Import ---


@dataclass
class _ParsedTurn:
    speaker: str
    text: str
    references: list[str]
    prompt: str
    latency_ms: int | None


@dataclass
class _ParsedDialogue:
    line: int
    external_id: str
    system: str
    skill: str
    language: str
    grounding: dict[str, Any]
    turns: list[_ParsedTurn]


def _refuse_unknown(
    obj: dict[str, Any], allowed: tuple[str, ...], *, line: int, prefix: str
) -> None:
    for key in obj:
        if key not in allowed:
            raise DialogueImportError(
                f"unknown field (expected one of: {', '.join(allowed)})",
                line=line,
                field=f"{prefix}{key}",
            )


def _required(obj: dict[str, Any], key: str, *, line: int, prefix: str = "") -> Any:
    if key not in obj:
        raise DialogueImportError("missing field", line=line, field=f"{prefix}{key}")
    return obj[key]


def _dialogue_id(value: object, *, line: int) -> str:
    # bool is an int subclass; `true` as an id is a mistake, not the number 1.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise DialogueImportError(
            f"expected a string or an integer, got {type_name(value)}", line=line, field="id"
        )
    text = as_text(value, line=line, field="id").strip()
    if not text:
        raise DialogueImportError("must not be empty", line=line, field="id")
    if len(text) > DIALOGUE_ID_MAX_LENGTH:
        raise DialogueImportError(
            f"longer than {DIALOGUE_ID_MAX_LENGTH} characters", line=line, field="id"
        )
    return text


def _turn(value: object, *, line: int, index: int) -> _ParsedTurn:
    prefix = f"turns[{index}]"
    if not isinstance(value, dict):
        raise DialogueImportError(
            f"expected an object with speaker and text, got {type_name(value)}",
            line=line,
            field=prefix,
        )
    _refuse_unknown(value, TURN_FIELDS + EXPORT_ONLY_TURN_FIELDS, line=line, prefix=f"{prefix}.")
    speaker = _required(value, "speaker", line=line, prefix=f"{prefix}.")
    if speaker not in Turn.Speaker.values:
        shown = json.dumps(speaker, ensure_ascii=False)
        raise DialogueImportError(
            f'expected "user" or "system", got {shown}', line=line, field=f"{prefix}.speaker"
        )
    text = as_text(
        _required(value, "text", line=line, prefix=f"{prefix}."), line=line, field=f"{prefix}.text"
    )
    if not text.strip():
        raise DialogueImportError("must not be empty", line=line, field=f"{prefix}.text")
    latency = value.get("latency_ms")
    if latency is not None and (
        not isinstance(latency, int) or isinstance(latency, bool) or latency < 0
    ):
        raise DialogueImportError(
            f"expected a non-negative integer or null, got {json.dumps(latency)}",
            line=line,
            field=f"{prefix}.latency_ms",
        )
    return _ParsedTurn(
        speaker=speaker,
        text=text,
        references=as_text_list(
            value.get("references", []), line=line, field=f"{prefix}.references"
        ),
        prompt=as_text(value.get("prompt", ""), line=line, field=f"{prefix}.prompt"),
        latency_ms=latency,
    )


def _parse_line(line: int, obj: dict[str, Any], *, skills: Iterable[str]) -> _ParsedDialogue:
    _refuse_unknown(obj, LINE_FIELDS + EXPORT_ONLY_FIELDS, line=line, prefix="")
    external_id = _dialogue_id(_required(obj, "id", line=line), line=line)
    system = as_text(_required(obj, "system", line=line), line=line, field="system").strip()
    if not system:
        raise DialogueImportError("must not be empty", line=line, field="system")
    if len(system) > SYSTEM_NAME_MAX_LENGTH:
        raise DialogueImportError(
            f"longer than {SYSTEM_NAME_MAX_LENGTH} characters", line=line, field="system"
        )
    skill = as_text(_required(obj, "skill", line=line), line=line, field="skill")
    if skill not in skills:
        raise DialogueImportError(
            f"unknown skill '{skill}' (known: {', '.join(skills)})", line=line, field="skill"
        )
    language = as_text(_required(obj, "language", line=line), line=line, field="language")
    if language not in Language.values:
        raise DialogueImportError(
            f"unknown language '{language}' (expected one of: {', '.join(Language.values)})",
            line=line,
            field="language",
        )
    raw_turns = _required(obj, "turns", line=line)
    if not isinstance(raw_turns, list):
        raise DialogueImportError(
            f"expected a list of turns, got {type_name(raw_turns)}", line=line, field="turns"
        )
    if not raw_turns:
        raise DialogueImportError("a dialogue needs at least one turn", line=line, field="turns")
    return _ParsedDialogue(
        line=line,
        external_id=external_id,
        system=system,
        skill=skill,
        language=language,
        grounding=parse_grounding(obj.get("grounding", {}), line=line),
        turns=[_turn(turn, line=line, index=i) for i, turn in enumerate(raw_turns)],
    )


def _campaign_for_import(
    *, name: str, created_by: User | None, static_answers: bool = False
) -> Campaign:
    name = name.strip()
    if not name:
        raise DialogueImportError("a campaign name is required", field="campaign")
    if len(name) > CAMPAIGN_NAME_MAX_LENGTH:
        raise DialogueImportError(
            f"longer than {CAMPAIGN_NAME_MAX_LENGTH} characters", field="campaign"
        )
    campaign = Campaign.objects.select_for_update().filter(name=name).first()
    if campaign is None:
        campaign = campaign_create(
            name=name,
            mode=Campaign.Mode.IMPORTED,
            skills=[],
            backends=[],
            datasets=[],
            created_by=created_by,
        )
        if static_answers:
            Campaign.objects.filter(pk=campaign.pk).update(static_answers=True)
            campaign.static_answers = True
        return campaign
    if campaign.mode != Campaign.Mode.IMPORTED:
        raise DialogueImportError(
            f"the campaign '{name}' is a {campaign.mode} campaign; dialogues can only be "
            "imported into a new campaign or an imported one",
            field="campaign",
        )
    if campaign.static_answers != static_answers:
        held = "static answers" if campaign.static_answers else "whole dialogues"
        raise DialogueImportError(
            f"the campaign '{name}' holds {held}; import {held} into it, or use another campaign",
            field="static_answers",
        )
    return campaign


def _add_backends(campaign: Campaign, backends: Iterable[Backend]) -> None:
    """Add the imported systems to the campaign; each new one gets the next free blind alias."""
    existing = CampaignBackend.objects.filter(campaign=campaign)
    present = set(existing.values_list("backend_id", flat=True))
    taken = set(existing.values_list("alias", flat=True))
    position = 0
    for backend in backends:
        if backend.pk in present:
            continue
        while default_alias(position) in taken:
            position += 1
        taken.add(default_alias(position))
        CampaignBackend.objects.create(
            campaign=campaign, backend=backend, alias=default_alias(position)
        )


def imported_system(
    name: str,
    *,
    known: dict[str, Backend],
    created: list[str],
    description: str,
    created_by: User | None,
) -> Backend:
    """The backend an imported file names (adapter `imported`, inactive), made when new; `known`
    caches them for the import and `created` collects the names of the new ones."""
    if name not in known:
        backend, is_new = Backend.objects.get_or_create(
            name=name,
            defaults={
                "adapter": Backend.Adapter.IMPORTED,
                "active": False,
                "description": description,
                "created_by": created_by,
            },
        )
        if is_new:
            created.append(name)
        known[name] = backend
    return known[name]


class _Importer:
    """Holds the state of one import: systems seen, ids seen, the batch being filled."""

    def __init__(self, campaign: Campaign, created_by: User | None) -> None:
        self.campaign = campaign
        self.created_by = created_by
        self.result = ImportResult(campaign=campaign)
        self.skills = dict(Skill.objects.values_list("key", "id"))
        self.backends: dict[str, Backend] = {}
        self.skills_used: set[int] = set()
        self.id_lines: dict[str, int] = {}
        self.batch: list[_ParsedDialogue] = []

    def backend(self, name: str) -> Backend:
        return imported_system(
            name,
            known=self.backends,
            created=self.result.systems_created,
            description=f"Imported with the dialogues of '{self.campaign.name}'.",
            created_by=self.created_by,
        )

    def add(self, parsed: _ParsedDialogue) -> None:
        first = self.id_lines.get(parsed.external_id)
        if first is not None:
            raise DialogueImportError(
                f"duplicate id '{parsed.external_id}' (first used on line {first})",
                line=parsed.line,
                field="id",
            )
        self.id_lines[parsed.external_id] = parsed.line
        self.batch.append(parsed)
        if len(self.batch) >= IMPORT_BATCH_SIZE:
            self.flush()

    def flush(self) -> None:
        if not self.batch:
            return
        ids = [parsed.external_id for parsed in self.batch]
        taken = set(
            Dialogue.objects.filter(campaign=self.campaign, external_id__in=ids).values_list(
                "external_id", flat=True
            )
        )
        for parsed in self.batch:
            if parsed.external_id in taken:
                raise DialogueImportError(
                    f"duplicate id '{parsed.external_id}' (the campaign already has a "
                    "dialogue with this id)",
                    line=parsed.line,
                    field="id",
                )
        now = timezone.now()
        dialogues = Dialogue.objects.bulk_create(
            Dialogue(
                campaign=self.campaign,
                backend=self.backend(parsed.system),
                skill_id=self.skills[parsed.skill],
                language=parsed.language,
                external_id=parsed.external_id,
                grounding=parsed.grounding,
                # Imported dialogues were collected (and judged) elsewhere: they go to rating.
                status=Dialogue.Status.ACCEPTED,
                submitted_at=now,
            )
            for parsed in self.batch
        )
        turns = [
            Turn(
                dialogue=dialogue,
                index=i,
                speaker=turn.speaker,
                text=turn.text,
                references=turn.references,
                prompt=turn.prompt,
                latency_ms=turn.latency_ms,
            )
            for dialogue, parsed in zip(dialogues, self.batch, strict=True)
            for i, turn in enumerate(parsed.turns)
        ]
        Turn.objects.bulk_create(turns)
        self.skills_used.update(self.skills[parsed.skill] for parsed in self.batch)
        self.result.dialogues += len(dialogues)
        self.result.turns += len(turns)
        self.batch = []

    def finish(self) -> ImportResult:
        self.flush()
        _add_backends(self.campaign, self.backends.values())
        self.campaign.skills.add(*self.skills_used)
        return self.result


@transaction.atomic
def dialogues_import(
    *,
    fileobj: IO[bytes],
    campaign_name: str,
    created_by: User | None = None,
    static_answers: bool = False,
) -> ImportResult:
    """Import a dialogue JSONL file (opened in binary mode) into a campaign, all-or-nothing.

    The campaign is created (mode `imported`) when new. With `static_answers` each dialogue is a
    static answer (a dataset context, then the system's one reply as its last turn): metric runs
    score, raters rate and judges judge only that last turn, as in a static campaign. Each
    line's `system` becomes a backend with adapter `imported` unless one of that name exists.
    Any bad line raises `DialogueImportError` naming the line and field, and the transaction
    leaves nothing behind.
    """
    try:
        campaign = _campaign_for_import(
            name=campaign_name, created_by=created_by, static_answers=static_answers
        )
        check_size(fileobj, max_bytes=settings.DATASET_UPLOAD_MAX_BYTES)
        importer = _Importer(campaign, created_by)
        skills = list(importer.skills)
        for line, obj in iter_json_lines(fileobj, max_bytes=settings.DATASET_UPLOAD_MAX_BYTES):
            importer.add(_parse_line(line, obj, skills=skills))
        return importer.finish()
    except DialogueImportError:
        raise
    except DatasetImportError as exc:  # from the shared JSON Lines reader and field helpers
        raise DialogueImportError(exc.message, line=exc.line, field=exc.field) from None
