"""A pairwise judge run's verdicts as votes (``chat.Vote``), beside its scores.

A pairwise run has one ``chat.VoteSource`` (kind ``judge``, labelled with the judge's metric
prefix; ``JudgeRun.vote_source``). Each chunk, when its answers are written, replaces the votes of
its pairs with votes derived from those answers, in the same transaction: a chunk run again
(after a crash, a resume) never duplicates a vote, and deleting the run deletes its source and so
its votes (``judges/apps.py``).

One vote per pair, *order asked*, question and (item, turn) key (decision 73): the order "ab"
shows the pair's first dialogue as A, so the vote's ``system_a``/``dialogue_a`` are the first
dialogue's; the order "ba" shows the second dialogue first, so they are the second's. The
verdict is the order's majority over the judge's samples (:func:`judges.scoring.order_verdicts`,
the same the scores use); besides each question, an ``overall`` vote (question "") follows the
order's mean outcome (:func:`judges.scoring.order_overall`), so the judge's votes meet human
votes given overall (Arena, MT-Bench). The MT-Bench conservative rule (inconsistent orders →
tie) is applied when votes are read, not here. An order whose answers have no verdict for a
question (unparseable, refused, failed) writes no vote for it.

The keys: a same-scenario pair votes on the scenario (item = its id, turn 1); a pair that human
votes compared votes on each (item, turn) of those votes, so judge and human votes match on item,
system pair and turn (decision XX).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import reduce
from operator import or_

from django.db.models import Q
from django.utils import timezone

from chat.models import Backend, Campaign, Vote, VoteSource
from chat.services.identity import IdentityMatcher, identity_matcher
from judges.models import JudgeAnswer, JudgeChunk
from judges.scoring import SYSTEM_SPEAKER, DialogueData, JudgeConfig, order_overall, order_verdicts

OUTCOMES = {"A": Vote.Outcome.A, "B": Vote.Outcome.B, "tie": Vote.Outcome.TIE}
OVERALL_QUESTION = ""  # chat.Vote.question: "" is the overall preference


def chunk_votes(
    *,
    source: VoteSource,
    config: JudgeConfig,
    part: JudgeChunk,
    answers: Sequence[JudgeAnswer],
    dialogues: Mapping[int, DialogueData],
) -> list[Vote]:
    """The votes of a chunk's pairs from their stored answers (unsaved)."""
    verdicts = order_verdicts(config, answers)
    by_order: dict[tuple[int, int, str], list[JudgeAnswer]] = defaultdict(list)
    for answer in answers:
        if answer.order and answer.other_dialogue_id is not None:
            by_order[(answer.dialogue_id, answer.other_dialogue_id, answer.order)].append(answer)
    backend_ids = {data.backend_id for data in dialogues.values()}
    names = dict(Backend.objects.filter(pk__in=backend_ids).values_list("pk", "name"))
    study_words = (
        Campaign.objects.filter(pk=source.campaign_id).values_list("identity_words", flat=True)[0]
        or []
    )
    matchers: dict[tuple[int, int], IdentityMatcher] = {}
    now = timezone.now()
    votes: list[Vote] = []
    for (first, second), keys in zip(part.pairs, part.pair_items, strict=True):
        one, two = dialogues.get(first), dialogues.get(second)
        orders = verdicts.get((first, second))
        if one is None or two is None or not orders:
            continue
        systems = (one.backend_id, two.backend_id)
        if systems not in matchers:
            matchers[systems] = identity_matcher(
                study_words=study_words, system_names=[names.get(b, "") for b in systems]
            )
        leak = matchers[systems].find(
            *(
                text
                for data in (one, two)
                for _id, speaker, text, _r in data.turns
                if speaker == SYSTEM_SPEAKER
            )
        )[:120]
        for order, shown in (("ab", (one, two)), ("ba", (two, one))):
            questions = orders.get(order, {})
            asked = sorted(by_order[(first, second, order)], key=lambda a: a.sample)
            overall = order_overall(questions)
            entries = [*questions.items()]
            if overall is not None:
                entries.append((OVERALL_QUESTION, overall))
            for question, verdict in entries:
                if verdict not in OUTCOMES:
                    continue
                reason = next(
                    (
                        a.rationale
                        for a in asked
                        if question == OVERALL_QUESTION or a.values.get(question) == verdict
                    ),
                    "",
                )
                for item, turn in keys:
                    votes.append(
                        Vote(
                            campaign_id=source.campaign_id,
                            source=source,
                            item=str(item)[:200],
                            system_a_id=shown[0].backend_id,
                            system_b_id=shown[1].backend_id,
                            dialogue_a_id=shown[0].id,
                            dialogue_b_id=shown[1].id,
                            outcome=OUTCOMES[verdict],
                            voter_kind=Vote.VoterKind.JUDGE,
                            voter=config.prefix[:200],
                            question=question,
                            turn=int(turn),
                            reason=reason,
                            identity_leak=leak,
                            voted_at=now,
                        )
                    )
    return votes


def replace_chunk_votes(
    *,
    source: VoteSource,
    config: JudgeConfig,
    part: JudgeChunk,
    answers: Sequence[JudgeAnswer],
    dialogues: Mapping[int, DialogueData],
) -> int:
    """Replace the votes of a chunk's pairs (in the caller's transaction); returns how many.

    A chunk owns its pairs (planning puts each pair in one chunk), so deleting the source's votes
    on them and inserting the new ones is the whole of the chunk's share, however often it runs.
    """
    if part.pairs:
        on_pairs = reduce(
            or_,
            (
                Q(dialogue_a_id=a, dialogue_b_id=b) | Q(dialogue_a_id=b, dialogue_b_id=a)
                for a, b in part.pairs
            ),
        )
        Vote.objects.filter(on_pairs, source=source).delete()
    votes = chunk_votes(
        source=source, config=config, part=part, answers=answers, dialogues=dialogues
    )
    Vote.objects.bulk_create(votes, batch_size=2000)
    return len(votes)
