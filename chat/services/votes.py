"""Pairwise votes: import (all-or-nothing) and export, in the formats the field publishes in.

Two layouts, as CSV or JSON Lines (docs/votes.md):

* **FastChat** — Chatbot Arena battles and MT-Bench human judgments (``lmsys/chatbot_arena_
  conversations``, ``lmsys/mt_bench_human_judgments``): ``model_a``, ``model_b``, ``winner`` ∈
  ``model_a`` / ``model_b`` / ``tie`` / ``tie (bothbad)``; optional ``judge``, ``question_id``,
  ``turn``, ``tstamp``, ``language`` and ``conversation_a`` / ``conversation_b`` as lists of
  ``{role, content}``. Arena files carry more metadata (``anony``, ``openai_moderation``, …):
  fields we do not read are listed in the result, never an error.
* **Plain** — ``left``, ``right``, ``winner`` ∈ ``left`` / ``right`` / ``tie`` / ``both_bad``.

Both take the optional ``item``/``question_id``, ``voter``/``judge``, ``voter_kind``
(``human``/``judge``), ``question`` (a rubric question key), ``turn`` and ``reason``. The first
system (``model_a``/``left``) is the one shown left or first. Conversations that come with the
votes become dialogues of the study (one per system, item and distinct conversation), so metric
and judge runs score them and the meta-evaluation compares their scores with the votes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from chat.importers import DatasetImportError, check_size
from chat.importers.fields import type_name
from chat.importers.reader import iter_json_lines
from chat.models import Backend, Campaign, Dialogue, Language, Skill, Turn, Vote, VoteSource
from chat.services.dialogue_io import (
    SYSTEM_NAME_MAX_LENGTH,
    DialogueImportError,
    _add_backends,
    _campaign_for_import,
    imported_system,
)
from chat.services.identity import clean_identity_words, identity_matcher
from core.errors import ServiceError

ITEM_MAX_LENGTH = 200  # chat.Vote.item
VOTER_MAX_LENGTH = 200  # chat.Vote.voter
QUESTION_MAX_LENGTH = 60  # chat.Vote.question
REASON_MAX_LENGTH = 2000
MAX_TURN = 1000
BATCH_SIZE = 2000

FASTCHAT_WINNERS = {
    "model_a": Vote.Outcome.A,
    "model_b": Vote.Outcome.B,
    "tie": Vote.Outcome.TIE,
    "tie (bothbad)": Vote.Outcome.BOTH_BAD,
}
PLAIN_WINNERS = {
    "left": Vote.Outcome.A,
    "right": Vote.Outcome.B,
    "tie": Vote.Outcome.TIE,
    "both_bad": Vote.Outcome.BOTH_BAD,
}
FORMATS = ("fastchat", "plain")
# Arena's language names (the `language` field) → ours.
LANGUAGE_NAMES = {"chinese": "zh", "english": "en", "japanese": "ja", "zh": "zh", "en": "en"}
LANGUAGE_NAMES["ja"] = "ja"
ROLES = {"user": Turn.Speaker.USER, "human": Turn.Speaker.USER, "assistant": Turn.Speaker.SYSTEM}
ROLES["gpt"] = Turn.Speaker.SYSTEM


class VoteImportError(DialogueImportError):
    """A vote file (or an import argument) was refused; names the line and field."""


@dataclass
class VoteImportResult:
    campaign: Campaign
    source: VoteSource
    votes: int = 0
    dialogues: int = 0
    identity_leaks: int = 0
    systems_created: list[str] = field(default_factory=list)
    ignored_fields: list[str] = field(default_factory=list)


@dataclass
class _Conversation:
    turns: list[tuple[str, str]]  # (speaker, text)

    def digest(self) -> str:
        payload = json.dumps(self.turns, ensure_ascii=False).encode()
        return hashlib.sha256(payload).hexdigest()[:16]


@dataclass
class _ParsedVote:
    line: int
    item: str
    system_a: str
    system_b: str
    outcome: str
    voter: str
    voter_kind: str
    question: str
    turn: int
    reason: str
    voted_at: datetime | None
    language: str
    conversation_a: _Conversation | None
    conversation_b: _Conversation | None


# --- reading -------------------------------------------------------------------------------------


def _records(fileobj: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) from a JSON Lines or CSV file, told apart by the first non-blank byte."""
    head = fileobj.read(4096)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    stream = io.BufferedReader(_Chain(head, fileobj))
    if stripped.startswith(b"{"):
        yield from iter_json_lines(stream, max_bytes=settings.DATASET_UPLOAD_MAX_BYTES)
    elif not stripped:
        raise VoteImportError("the file is empty")
    else:
        yield from _csv_records(stream)


class _Chain(io.RawIOBase):
    """A binary stream that first returns ``head`` (read already, to tell the format)."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        chunk = self._rest.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _csv_records(fileobj: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    limit = settings.DATASET_UPLOAD_MAX_BYTES
    raw = fileobj.read(limit + 1)
    if len(raw) > limit:
        raise VoteImportError(f"the file is larger than {limit} bytes (DATASET_UPLOAD_MAX_BYTES)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise VoteImportError("not valid UTF-8 (save the CSV as UTF-8)", line=line) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        raise VoteImportError("the file is empty (expected a header row)", line=1) from None
    except csv.Error as exc:
        raise VoteImportError(f"malformed CSV: {exc}", line=1) from None
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise VoteImportError(f"column(s) given twice: {', '.join(repeated)}", line=1)
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise VoteImportError(f"malformed CSV: {exc}", line=line) from None
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise VoteImportError(
                f"{len(cells)} cells, but the header has {len(header)} columns", line=line
            )
        record: dict[str, Any] = {}
        for name, cell in zip(header, cells, strict=True):
            if name in ("conversation_a", "conversation_b") and cell.strip():
                try:
                    record[name] = json.loads(cell)
                except json.JSONDecodeError as exc:
                    raise VoteImportError(
                        f"not a JSON list of messages: {exc.msg}", line=line, field=name
                    ) from None
            elif cell.strip():
                record[name] = cell.strip()
        yield line, record


# --- parsing one record -------------------------------------------------------------------------

_KNOWN = {
    "fastchat": {"model_a", "model_b", "winner", "judge", "question_id", "tstamp"},
    "plain": {"left", "right", "winner", "item", "voter"},
}
_COMMON = {"voter_kind", "question", "turn", "reason", "language"}
_CONVERSATIONS = {"conversation_a", "conversation_b"}


def detect_format(record: dict[str, Any], *, line: int) -> str:
    if "model_a" in record or "model_b" in record:
        return "fastchat"
    if "left" in record or "right" in record:
        return "plain"
    raise VoteImportError(
        "neither model_a/model_b (FastChat) nor left/right (plain) fields: not a vote file",
        line=line,
    )


def _text(record: dict[str, Any], key: str, *, line: int, max_length: int, required: bool) -> str:
    value = record.get(key)
    if value is None or value == "":
        if required:
            raise VoteImportError("missing or empty", line=line, field=key)
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise VoteImportError(f"expected a string, got {type_name(value)}", line=line, field=key)
    text = str(value).strip()
    if required and not text:
        raise VoteImportError("empty", line=line, field=key)
    if len(text) > max_length:
        raise VoteImportError(f"longer than {max_length} characters", line=line, field=key)
    return text


def _turn(record: dict[str, Any], *, line: int) -> int:
    value = record.get("turn", 1)
    try:
        turn = int(value) if not isinstance(value, bool) else -1
        if isinstance(value, float) and value != turn:
            turn = -1
    except (TypeError, ValueError):
        turn = -1
    if not 1 <= turn <= MAX_TURN:
        raise VoteImportError(
            f"expected a whole number from 1 to {MAX_TURN}, got {value!r}", line=line, field="turn"
        )
    return turn


def _timestamp(record: dict[str, Any], *, line: int) -> datetime | None:
    value = record.get("tstamp")
    if value in (None, ""):
        return None
    try:
        seconds = float(value)
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        raise VoteImportError(
            f"expected Unix seconds, got {value!r}", line=line, field="tstamp"
        ) from None


def _conversation(record: dict[str, Any], key: str, *, line: int) -> _Conversation | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise VoteImportError(
            "expected a non-empty list of {role, content} messages", line=line, field=key
        )
    turns: list[tuple[str, str]] = []
    for position, message in enumerate(value):
        where = f"{key}[{position}]"
        if not isinstance(message, dict):
            raise VoteImportError(
                f"expected an object, got {type_name(message)}", line=line, field=where
            )
        role = message.get("role")
        content = message.get("content")
        if role not in ROLES:
            raise VoteImportError(
                f"role {role!r} is not one of user, assistant", line=line, field=f"{where}.role"
            )
        if not isinstance(content, str):
            raise VoteImportError(
                f"expected a string, got {type_name(content)}", line=line, field=f"{where}.content"
            )
        turns.append((ROLES[role], content))
    if not any(speaker == Turn.Speaker.SYSTEM for speaker, _ in turns):
        raise VoteImportError("no assistant message", line=line, field=key)
    return _Conversation(turns)


def parse_vote(
    record: dict[str, Any], *, line: int, fmt: str, voter_kind: str, language: str
) -> _ParsedVote:
    """One record of either layout as a vote, or VoteImportError naming the line and field."""
    if fmt == "fastchat":
        first, second, winners, item_key, voter_key = (
            "model_a",
            "model_b",
            FASTCHAT_WINNERS,
            "question_id",
            "judge",
        )
    else:
        first, second, winners, item_key, voter_key = (
            "left",
            "right",
            PLAIN_WINNERS,
            "item",
            "voter",
        )
    system_a = _text(record, first, line=line, max_length=SYSTEM_NAME_MAX_LENGTH, required=True)
    system_b = _text(record, second, line=line, max_length=SYSTEM_NAME_MAX_LENGTH, required=True)
    if system_a == system_b:
        raise VoteImportError(
            f"a system cannot be compared with itself ({system_a!r} on both sides)",
            line=line,
            field=second,
        )
    winner = _text(record, "winner", line=line, max_length=40, required=True)
    if winner not in winners:
        raise VoteImportError(
            f"unknown winner {winner!r} (expected one of {', '.join(winners)})",
            line=line,
            field="winner",
        )
    item = _text(record, item_key, line=line, max_length=ITEM_MAX_LENGTH, required=False)
    voter = _text(record, voter_key, line=line, max_length=VOTER_MAX_LENGTH, required=False)
    kind = _text(record, "voter_kind", line=line, max_length=10, required=False) or voter_kind
    if kind not in Vote.VoterKind.values:
        raise VoteImportError(
            f"unknown voter kind {kind!r} (expected human or judge)", line=line, field="voter_kind"
        )
    language_name = _text(record, "language", line=line, max_length=40, required=False)
    vote_language = language
    if language_name:
        vote_language = LANGUAGE_NAMES.get(language_name.casefold(), "")
    return _ParsedVote(
        line=line,
        item=item or f"line-{line}",
        system_a=system_a,
        system_b=system_b,
        outcome=winners[winner],
        voter=voter or "anonymous",
        voter_kind=kind,
        question=_text(
            record, "question", line=line, max_length=QUESTION_MAX_LENGTH, required=False
        ),
        turn=_turn(record, line=line),
        reason=_text(record, "reason", line=line, max_length=REASON_MAX_LENGTH, required=False),
        voted_at=_timestamp(record, line=line),
        language=vote_language or language_name,
        conversation_a=_conversation(record, "conversation_a", line=line),
        conversation_b=_conversation(record, "conversation_b", line=line),
    )


# --- storing --------------------------------------------------------------------------------------


class _VoteImporter:
    def __init__(
        self,
        campaign: Campaign,
        source: VoteSource,
        *,
        created_by: User | None,
        skill: Skill,
        language: str,
        voter_kind: str,
    ) -> None:
        self.campaign = campaign
        self.source = source
        self.created_by = created_by
        self.skill = skill
        self.language = language
        self.voter_kind = voter_kind
        self.result = VoteImportResult(campaign=campaign, source=source)
        self.backends: dict[str, Backend] = {}
        self.fmt: str | None = None
        self.ignored: set[str] = set()
        self.dialogues: dict[str, Dialogue] = {
            dialogue.external_id: dialogue
            for dialogue in Dialogue.objects.filter(
                campaign=campaign, external_id__startswith="vote:"
            )
        }
        self.pending_turns: list[Turn] = []
        self.batch: list[Vote] = []
        self.system_matchers: dict[tuple[str, str], Any] = {}

    def backend(self, name: str) -> Backend:
        return imported_system(
            name,
            known=self.backends,
            created=self.result.systems_created,
            description=f"Imported with the votes of '{self.campaign.name}'.",
            created_by=self.created_by,
        )

    def dialogue(self, parsed: _ParsedVote, system: str, conversation: _Conversation) -> Dialogue:
        external_id = f"vote:{parsed.item}:{system}:{conversation.digest()}"
        if len(external_id) > 200:
            digest = hashlib.sha256(f"{parsed.item}\0{system}".encode()).hexdigest()[:24]
            external_id = f"vote:{digest}:{conversation.digest()}"
        dialogue = self.dialogues.get(external_id)
        if dialogue is None:
            language = parsed.language or self.language
            if language not in Language.values:
                raise VoteImportError(
                    "the votes come with conversations but no known language: add a language "
                    "field (Chinese, English, Japanese) or choose the import's language",
                    line=parsed.line,
                    field="language",
                )
            now = timezone.now()
            dialogue = Dialogue.objects.create(
                campaign=self.campaign,
                backend=self.backend(system),
                skill=self.skill,
                language=language,
                external_id=external_id,
                status=Dialogue.Status.ACCEPTED,
                submitted_at=now,
            )
            self.pending_turns.extend(
                Turn(dialogue=dialogue, index=index, speaker=speaker, text=text)
                for index, (speaker, text) in enumerate(conversation.turns)
            )
            self.dialogues[external_id] = dialogue
            self.result.dialogues += 1
        return dialogue

    def leak(self, parsed: _ParsedVote) -> str:
        key = (parsed.system_a, parsed.system_b)
        if key not in self.system_matchers:
            self.system_matchers[key] = identity_matcher(
                study_words=self.campaign.identity_words, system_names=key
            )
        matcher = self.system_matchers[key]
        texts = [
            text
            for conversation in (parsed.conversation_a, parsed.conversation_b)
            if conversation is not None
            for speaker, text in conversation.turns
            if speaker == Turn.Speaker.SYSTEM
        ]
        return str(matcher.find(*texts))[:120]

    def add(self, line: int, record: dict[str, Any]) -> None:
        fmt = detect_format(record, line=line)
        if self.fmt is None:
            self.fmt = fmt
        elif fmt != self.fmt:
            raise VoteImportError(
                f"a {fmt} record in a {self.fmt} file (one layout per file)", line=line
            )
        self.ignored.update(set(record) - _KNOWN[fmt] - _COMMON - _CONVERSATIONS)
        parsed = parse_vote(
            record, line=line, fmt=fmt, voter_kind=self.voter_kind, language=self.language
        )
        dialogue_a = dialogue_b = None
        if (parsed.conversation_a is None) != (parsed.conversation_b is None):
            missing = "conversation_b" if parsed.conversation_b is None else "conversation_a"
            raise VoteImportError("one conversation without the other", line=line, field=missing)
        if parsed.conversation_a is not None and parsed.conversation_b is not None:
            dialogue_a = self.dialogue(parsed, parsed.system_a, parsed.conversation_a)
            dialogue_b = self.dialogue(parsed, parsed.system_b, parsed.conversation_b)
        leak = self.leak(parsed)
        self.result.identity_leaks += bool(leak)
        self.batch.append(
            Vote(
                campaign=self.campaign,
                source=self.source,
                item=parsed.item,
                system_a=self.backend(parsed.system_a),
                system_b=self.backend(parsed.system_b),
                dialogue_a=dialogue_a,
                dialogue_b=dialogue_b,
                outcome=parsed.outcome,
                voter_kind=parsed.voter_kind,
                voter=parsed.voter,
                question=parsed.question,
                turn=parsed.turn,
                reason=parsed.reason,
                identity_leak=leak,
                voted_at=parsed.voted_at,
            )
        )
        if len(self.batch) >= BATCH_SIZE:
            self.flush()

    def flush(self) -> None:
        Turn.objects.bulk_create(self.pending_turns)
        self.pending_turns = []
        Vote.objects.bulk_create(self.batch)
        self.result.votes += len(self.batch)
        self.batch = []

    def finish(self) -> VoteImportResult:
        self.flush()
        if self.result.votes == 0:
            raise VoteImportError("no votes in the file")
        _add_backends(self.campaign, self.backends.values())
        if self.result.dialogues:
            self.campaign.skills.add(self.skill)
        self.result.ignored_fields = sorted(self.ignored)
        return self.result


@transaction.atomic
def votes_import(
    *,
    fileobj: IO[bytes],
    campaign_name: str,
    label: str = "",
    created_by: User | None = None,
    voter_kind: str = Vote.VoterKind.HUMAN,
    language: str = "",
    skill: str = "chitchat",
) -> VoteImportResult:
    """Import a vote file (CSV or JSON Lines, FastChat or plain layout; opened in binary mode)
    into a study, all-or-nothing; the study is created (an imported campaign) when new.

    ``voter_kind`` applies to records without a ``voter_kind`` field. Conversations become
    dialogues of ``skill`` in the record's ``language`` (Arena's names) or ``language``.
    Any bad record raises ``VoteImportError`` naming the line and field; nothing is kept.
    """
    if voter_kind not in Vote.VoterKind.values:
        raise VoteImportError(f"unknown voter kind {voter_kind!r}", field="voter_kind")
    if language and language not in Language.values:
        raise VoteImportError(
            f"unknown language {language!r} (expected one of {', '.join(Language.values)})",
            field="language",
        )
    skill_row = Skill.objects.filter(key=skill).first()
    if skill_row is None:
        raise VoteImportError(f"unknown skill {skill!r}", field="skill")
    try:
        campaign = _campaign_for_import(name=campaign_name, created_by=created_by)
        check_size(fileobj, max_bytes=settings.DATASET_UPLOAD_MAX_BYTES)
        source = VoteSource.objects.create(
            campaign=campaign,
            kind=VoteSource.Kind.IMPORT,
            label=label[:200],
            created_by=created_by,
        )
        importer = _VoteImporter(
            campaign,
            source,
            created_by=created_by,
            skill=skill_row,
            language=language,
            voter_kind=voter_kind,
        )
        for line, record in _records(fileobj):
            importer.add(line, record)
        return importer.finish()
    except VoteImportError:
        raise
    except DatasetImportError as exc:
        raise VoteImportError(exc.message, line=exc.line, field=exc.field) from None


# --- export ---------------------------------------------------------------------------------------

_WINNER_NAMES: dict[str, dict[str, str]] = {
    "fastchat": {value: key for key, value in FASTCHAT_WINNERS.items()},
    "plain": {value: key for key, value in PLAIN_WINNERS.items()},
}
EXPORT_COLUMNS = {
    "fastchat": [
        "question_id",
        "model_a",
        "model_b",
        "winner",
        "judge",
        "voter_kind",
        "question",
        "turn",
        "tstamp",
        "reason",
        "identity_leak",
    ],
    "plain": [
        "item",
        "left",
        "right",
        "winner",
        "voter",
        "voter_kind",
        "question",
        "turn",
        "reason",
    ],
}


def _conversation_json(dialogue: Dialogue | None) -> list[dict[str, str]] | None:
    if dialogue is None:
        return None
    roles: dict[str, str] = {Turn.Speaker.USER: "user", Turn.Speaker.SYSTEM: "assistant"}
    return [{"role": roles[turn.speaker], "content": turn.text} for turn in dialogue.turns.all()]


def vote_record(vote: Vote, *, fmt: str, conversations: bool) -> dict[str, Any]:
    winner = _WINNER_NAMES[fmt][vote.outcome]
    if fmt == "fastchat":
        record: dict[str, Any] = {
            "question_id": vote.item,
            "model_a": vote.system_a.name,
            "model_b": vote.system_b.name,
            "winner": winner,
            "judge": vote.voter,
            "voter_kind": vote.voter_kind,
            "question": vote.question,
            "turn": vote.turn,
            "tstamp": vote.voted_at.timestamp() if vote.voted_at else None,
            "reason": vote.reason,
            "identity_leak": vote.identity_leak,
        }
        if conversations and vote.dialogue_a is not None and vote.dialogue_b is not None:
            record["conversation_a"] = _conversation_json(vote.dialogue_a)
            record["conversation_b"] = _conversation_json(vote.dialogue_b)
            # The conversations' language, so that the file imports without --language.
            record["language"] = vote.dialogue_a.language
        return record
    return {
        "item": vote.item,
        "left": vote.system_a.name,
        "right": vote.system_b.name,
        "winner": winner,
        "voter": vote.voter,
        "voter_kind": vote.voter_kind,
        "question": vote.question,
        "turn": vote.turn,
        "reason": vote.reason,
    }


def _export_queryset(campaign: Campaign) -> QuerySet[Vote]:
    return (
        Vote.objects.filter(campaign=campaign)
        .select_related("system_a", "system_b", "dialogue_a", "dialogue_b")
        .prefetch_related("dialogue_a__turns", "dialogue_b__turns")
        .order_by("pk")
    )


def votes_export_lines(*, campaign: Campaign, fmt: str, as_csv: bool) -> Iterator[str]:
    """The study's votes as CSV rows or JSON Lines (FastChat layout with its conversations, or
    plain), streamed in chunks; a file exported here imports unchanged."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown vote format {fmt!r}")
    queryset = _export_queryset(campaign)
    columns = EXPORT_COLUMNS[fmt]
    if as_csv:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        yield buffer.getvalue()
    last = 0
    while True:
        chunk = list(queryset.filter(pk__gt=last)[:500])
        if not chunk:
            return
        last = chunk[-1].pk
        out = io.StringIO()
        if as_csv:
            writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
            for vote in chunk:
                record = vote_record(vote, fmt=fmt, conversations=False)
                writer.writerow(
                    {key: "" if value is None else value for key, value in record.items()}
                )
        else:
            for vote in chunk:
                record = vote_record(vote, fmt=fmt, conversations=True)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        yield out.getvalue()


# --- a study's identity words ---------------------------------------------------------------------


class IdentityWordsError(ServiceError):
    """A study's identity-word list was refused (``field`` is ``identity_words``)."""

    location_style = "prefix"


@transaction.atomic
def campaign_set_identity_words(*, campaign: Campaign, words: object) -> Campaign:
    """Store a study's own identity-word list (``[]`` = the default list). The flags of votes
    already imported are left as they are: they were found with the list of their import."""
    try:
        cleaned = clean_identity_words(words)
    except ValueError as exc:
        raise IdentityWordsError(str(exc), field="identity_words") from None
    Campaign.objects.filter(pk=campaign.pk).update(identity_words=cleaned)
    campaign.identity_words = cleaned
    return campaign
