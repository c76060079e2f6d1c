"""A study's pairwise votes, read for the analyses (Bradley–Terry, agreement, accuracy).

Which votes: ``voters`` is ``humans``, ``judge:<key>`` (one judge's votes, any version, or
``judge:<key>-v<N>``) or ``all``; one ``question`` (a rubric question key, "" = overall) or every
question (None); identity-leak votes and votes excluded by quality control are left out unless
asked for, and counted. A judge's votes are stored one per order (A/B and B/A, decision 73);
:func:`metrics.analysis.preference_agreement.conservative_votes` reads them one per pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chat.models import Backend, Vote
from metrics.analysis.preference_agreement import PairwiseVote

OUTCOME_CODES = {
    Vote.Outcome.A: 0,
    Vote.Outcome.B: 1,
    Vote.Outcome.TIE: 2,
    Vote.Outcome.BOTH_BAD: 3,
}


class VoteSelectionError(ValueError):
    """A vote selection that cannot be read (an unknown voter spec)."""


@dataclass(frozen=True)
class StoredVote:
    """A vote for the kernels (systems by backend name) and the dialogues it compared."""

    vote: PairwiseVote
    dialogue_a: int | None
    dialogue_b: int | None


@dataclass
class VoteRows:
    votes: list[StoredVote]
    left_out: dict[str, int] = field(default_factory=dict)


def voter_filter(voters: str) -> dict[str, str]:
    """The queryset filter of a voter spec, or VoteSelectionError naming the accepted forms."""
    if voters == "humans":
        return {"voter_kind": Vote.VoterKind.HUMAN}
    if voters == "all":
        return {}
    name = voters.removeprefix("judge:")
    if voters.startswith("judge:") and name:
        if "-v" in name and name.rsplit("-v", 1)[1].isdigit():
            return {"voter_kind": Vote.VoterKind.JUDGE, "voter": voters}
        return {"voter_kind": Vote.VoterKind.JUDGE, "voter__startswith": f"{voters}-v"}
    raise VoteSelectionError(
        f"unknown voters {voters!r} (expected humans, judge:<key>, judge:<key>-v<N> or all)"
    )


def vote_questions(campaign_ids: Sequence[int]) -> list[str]:
    """The questions the studies' votes answer ("" = overall first), in order."""
    return sorted(
        set(
            Vote.objects.filter(campaign_id__in=campaign_ids)
            .values_list("question", flat=True)
            .distinct()
        )
    )


def judge_voters(campaign_ids: Sequence[int]) -> list[str]:
    """The judges (metric prefixes) that voted in the studies."""
    return sorted(
        set(
            Vote.objects.filter(campaign_id__in=campaign_ids, voter_kind=Vote.VoterKind.JUDGE)
            .values_list("voter", flat=True)
            .distinct()
        )
    )


def study_has_votes(campaign_ids: Sequence[int]) -> bool:
    return Vote.objects.filter(campaign_id__in=campaign_ids).exists()


def vote_rows(
    *,
    campaign_ids: Sequence[int],
    voters: str = "all",
    question: str | None = None,
    include_identity_leaks: bool = False,
    include_excluded: bool = False,
    source_id: int | None = None,
) -> VoteRows:
    """The selected votes in the order they were cast (only one source's, e.g. one rating
    job's, with ``source_id``); ``left_out`` counts the identity-leak and quality-excluded votes
    that matched otherwise but were not read."""
    votes = Vote.objects.filter(campaign_id__in=campaign_ids, **voter_filter(voters))
    if source_id is not None:
        votes = votes.filter(source_id=source_id)
    if question is not None:
        votes = votes.filter(question=question)
    left_out: dict[str, int] = {}
    if not include_identity_leaks:
        left_out["identity_leak"] = votes.exclude(identity_leak="").count()
        votes = votes.filter(identity_leak="")
    if not include_excluded:
        left_out["excluded"] = votes.exclude(excluded_reason="").count()
        votes = votes.filter(excluded_reason="")
    rows = list(
        votes.order_by("voted_at", "pk").values_list(
            "system_a_id",
            "system_b_id",
            "outcome",
            "item",
            "voter",
            "voter_kind",
            "question",
            "turn",
            "dialogue_a_id",
            "dialogue_b_id",
        )
    )
    ids = {row[0] for row in rows} | {row[1] for row in rows}
    names = dict(Backend.objects.filter(pk__in=ids).values_list("pk", "name"))
    return VoteRows(
        votes=[
            StoredVote(
                vote=PairwiseVote(
                    item=item,
                    system_a=names[system_a],
                    system_b=names[system_b],
                    outcome=OUTCOME_CODES[Vote.Outcome(outcome)],
                    voter=voter,
                    voter_kind="judge" if kind == Vote.VoterKind.JUDGE else "human",
                    question=vote_question,
                    turn=turn,
                ),
                dialogue_a=dialogue_a,
                dialogue_b=dialogue_b,
            )
            for (
                system_a,
                system_b,
                outcome,
                item,
                voter,
                kind,
                vote_question,
                turn,
                dialogue_a,
                dialogue_b,
            ) in rows
        ],
        left_out=left_out,
    )


def voted_dialogue_scores(
    *, run_ids: Sequence[int], metrics: Sequence[str], dialogue_ids: Sequence[int]
) -> dict[str, dict[tuple[int, int], float]]:
    """Each metric's scores of the voted dialogues, keyed ``(dialogue, 0)`` for a dialogue-level
    score and ``(dialogue, t)`` for the t-th model reply's turn-level score (t from 1, as a
    vote's ``turn``: MT-Bench's turn 2 is the second answer)."""
    from metrics.models import MetricScore

    out: dict[str, dict[tuple[int, int], float]] = {metric: {} for metric in metrics}
    scores = MetricScore.objects.filter(run_id__in=run_ids, metric__in=metrics)
    for metric, dialogue, value in scores.filter(
        level="dialogue", dialogue_id__in=dialogue_ids
    ).values_list("metric", "dialogue_id", "value"):
        out[metric][(dialogue, 0)] = value
    turn_rows = scores.filter(level="turn", turn__dialogue_id__in=dialogue_ids).values_list(
        "metric", "turn__dialogue_id", "turn__index", "value"
    )
    ordinals = _system_turn_ordinals(dialogue_ids)
    for metric, dialogue, index, value in turn_rows:
        ordinal = ordinals.get((dialogue, index))
        if ordinal is not None:
            out[metric][(dialogue, ordinal)] = value
    return out


def _system_turn_ordinals(dialogue_ids: Sequence[int]) -> dict[tuple[int, int], int]:
    from chat.models import Turn

    ordinals: dict[tuple[int, int], int] = {}
    seen: dict[int, int] = {}
    for dialogue, index in (
        Turn.objects.filter(dialogue_id__in=dialogue_ids, speaker=Turn.Speaker.SYSTEM)
        .order_by("dialogue_id", "index")
        .values_list("dialogue_id", "index")
    ):
        seen[dialogue] = seen.get(dialogue, 0) + 1
        ordinals[(dialogue, index)] = seen[dialogue]
    return ordinals
