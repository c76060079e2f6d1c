"""Agreement among pairwise voters and position bias (no Django imports).

A pairwise vote (:class:`PairwiseVote`) says which of two systems' replies to one item was
better: ``outcome`` is :data:`A_WINS` (0, the reply shown left/first), :data:`B_WINS` (1),
:data:`TIE` (2) or :data:`BOTH_BAD` (3). ``question`` is the rubric question key ("" for the
overall preference) and ``turn`` the dialogue turn.

Agreement follows FastChat's MT-Bench code (``fastchat/llm_judge/compute_agreement.py``,
Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", Table 2):

* votes are keyed by (item, sorted system pair, turn, question); a vote whose pair is stored
  the other way round has its winner reverted (``revert``), so A/B and B/A votes compare;
* "tie" and "tie (bothbad)" are the same verdict when comparing (``equalvote``);
* "with ties" bans nothing; "without ties" skips a comparison where EITHER vote is a tie or
  both-bad (``convertvote`` maps both to "tie", which is banned);
* judge–human: on every key where both voted, the judge's single vote is compared with every
  human vote; human–human: every pair of human votes on a key, as FastChat does, except a pair
  of two votes by the same person (a person who voted twice on one key would otherwise be
  counted as agreeing with themselves);
* agreement = matched / total comparisons; its interval resamples, with replacement, the keys
  that have a comparison in the variant (with or without ties) and question at hand.

Beyond FastChat: judge–judge agreement, a judge's self-consistency across the two orders
(MT-Bench Table 2's "consistency"), the conservative rule (MT-Bench §3.4), per-question and
pooled results, and percentile bootstrap intervals that resample keys (the items compared) with
replacement. A resample's matched and total comparisons are count-weighted sums over the keys,
so all resamples are one matrix product per chunk.

Position bias (:func:`position_bias`): the shares of first-shown wins, second-shown wins and
ties per voter, with an exact two-sided binomial test of first vs second wins among decisive
votes against 1/2 and a Wilson or Clopper–Pearson interval for the first-shown share.

API (the Django side calls these):

* ``PairwiseVote(item, system_a, system_b, outcome, voter, voter_kind, question="", turn=1)``
* ``vote_from_fastchat(record, *, voter_kind) -> PairwiseVote``
* ``judge_human_agreement(votes, *, judge, samples=1000, confidence=0.95, seed=0)``
* ``human_agreement(votes, *, samples=1000, confidence=0.95, seed=0)``
* ``judge_agreement(votes, *, judge_a, judge_b, samples=1000, confidence=0.95, seed=0)``
* ``self_consistency(votes, *, judge, samples=1000, confidence=0.95, seed=0)``
  — each returns ``list[Agreement]``: per question (sorted) then pooled (``question=None``),
  each "with ties" then "without ties";
* ``conservative_votes(votes) -> list[PairwiseVote]``
* ``position_bias(votes, *, confidence=0.95, method="wilson") -> list[PositionBias]`` and the
  kernel ``position_bias_counts(outcomes, *, voter, confidence, method) -> PositionBias``;
* ``ratio_interval(numerators, denominators, *, samples, confidence, seed)``: the percentile
  bootstrap of Σ num / Σ den over resampled units (shared with
  :mod:`metrics.analysis.pairwise_accuracy`).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

A_WINS = 0
B_WINS = 1
TIE = 2
BOTH_BAD = 3
OUTCOMES = (A_WINS, B_WINS, TIE, BOTH_BAD)

VoterKind = Literal["human", "judge"]
IntervalMethod = Literal["wilson", "exact"]

# Upper bound for the resample-count matrix of one chunk (bytes).
_CHUNK_BYTES = 64 * 1024 * 1024

_FASTCHAT_WINNERS = {"model_a": A_WINS, "model_b": B_WINS, "tie": TIE, "tie (bothbad)": BOTH_BAD}


class PairwiseVote(NamedTuple):
    """One pairwise verdict; ``system_a`` was shown left/first."""

    item: Hashable
    system_a: Hashable
    system_b: Hashable
    outcome: int
    voter: Hashable
    voter_kind: VoterKind
    question: str = ""
    turn: int = 1


@dataclass(frozen=True)
class Agreement:
    """Agreement of two voters (or groups) on one question (``None`` = all pooled)."""

    question: str | None
    with_ties: bool
    matched: int
    total: int
    keys: int
    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class PositionBias:
    """How often a voter preferred the reply shown first; ties include both-bad."""

    voter: Hashable
    votes: int
    a_wins: int
    b_wins: int
    ties: int
    both_bad: int
    a_share: float | None
    b_share: float | None
    tie_share: float | None
    decisive_a_share: float | None
    p_value: float | None
    low: float | None
    high: float | None


def vote_from_fastchat(record: Mapping[str, Any], *, voter_kind: VoterKind) -> PairwiseVote:
    """A vote from a FastChat MT-Bench judgment record (``mt_bench_human_judgments`` layout).

    The judge of a GPT-4 record is a list (``["gpt-4", "pair-v2"]``); it becomes a string.
    """
    winner = record["winner"]
    if winner not in _FASTCHAT_WINNERS:
        raise ValueError(f"winner: unknown verdict {winner!r}")
    judge = record["judge"]
    voter = "/".join(judge) if isinstance(judge, list) else judge
    return PairwiseVote(
        item=record["question_id"],
        system_a=record["model_a"],
        system_b=record["model_b"],
        outcome=_FASTCHAT_WINNERS[winner],
        voter=voter,
        voter_kind=voter_kind,
        turn=int(record["turn"]),
    )


def _order_key(system: Hashable) -> tuple[bool, Any]:
    # FastChat orders a pair with `<` on model names; ints sort before strings so that mixed
    # ids never raise.
    return (isinstance(system, str), system)


def _revert(outcome: int) -> int:
    if outcome == A_WINS:
        return B_WINS
    if outcome == B_WINS:
        return A_WINS
    return outcome


def _is_tie(outcome: int) -> bool:
    return outcome in (TIE, BOTH_BAD)


def _equal(first: int, second: int) -> bool:
    """FastChat's ``equalvote``: a tie equals a both-bad tie."""
    if _is_tie(first) and _is_tie(second):
        return True
    return first == second


Key = tuple[Hashable, Hashable, Hashable, int, str]


def _canonical(vote: PairwiseVote) -> tuple[Key, int, bool]:
    """The vote's key, its outcome in the key's order, and whether it was shown swapped."""
    if vote.outcome not in OUTCOMES:
        raise ValueError(f"outcome: {vote.outcome!r} is not one of {OUTCOMES}")
    swapped = _order_key(vote.system_b) < _order_key(vote.system_a)
    low, high = (vote.system_b, vote.system_a) if swapped else (vote.system_a, vote.system_b)
    outcome = _revert(vote.outcome) if swapped else vote.outcome
    return (vote.item, low, high, vote.turn, vote.question), outcome, swapped


def _by_key(
    votes: Iterable[PairwiseVote], keep: Callable[[PairwiseVote], bool]
) -> dict[Key, list[tuple[Hashable, int, bool]]]:
    grouped: dict[Key, list[tuple[Hashable, int, bool]]] = defaultdict(list)
    for vote in votes:
        if keep(vote):
            key, outcome, swapped = _canonical(vote)
            grouped[key].append((vote.voter, outcome, swapped))
    return grouped


def _single(key: Key, voter: Hashable, entries: list[tuple[Hashable, int, bool]]) -> int:
    if len(entries) != 1:
        raise ValueError(
            f"voter {voter!r} voted {len(entries)} times on item {key[0]!r}, systems "
            f"{key[1]!r}/{key[2]!r}, turn {key[3]}, question {key[4]!r}; combine the two "
            "orders with conservative_votes first"
        )
    return entries[0][1]


@dataclass
class _Comparisons:
    """Flat comparisons: the key of each, whether the verdicts matched, whether one is a tie.

    The comparisons of one key are added one after another, so a new key is one not last seen.
    """

    keys: list[Key]
    key_index: list[int]
    matched: list[bool]
    tied: list[bool]

    @classmethod
    def empty(cls) -> _Comparisons:
        return cls([], [], [], [])

    def add(self, key: Key, first: int, second: int) -> None:
        if not self.keys or self.keys[-1] != key:
            self.keys.append(key)
        self.key_index.append(len(self.keys) - 1)
        self.matched.append(_equal(first, second))
        self.tied.append(_is_tie(first) or _is_tie(second))


def _summarise(
    comparisons: _Comparisons, *, samples: int, confidence: float, seed: int
) -> list[Agreement]:
    questions = np.array([key[4] for key in comparisons.keys], dtype=object)
    key_index = np.asarray(comparisons.key_index, dtype=np.intp)
    matched = np.asarray(comparisons.matched, dtype=bool)
    tied = np.asarray(comparisons.tied, dtype=bool)
    out: list[Agreement] = []
    groups: list[str | None] = [*sorted(set(questions.tolist())), None]
    for question in groups:
        for with_ties in (True, False):
            counted = np.ones_like(matched) if with_ties else ~tied
            in_group = np.ones(len(questions), dtype=bool)
            if question is not None:
                in_group = questions == question
            counted &= in_group[key_index]
            totals = np.bincount(key_index[counted], minlength=len(questions))
            hits = np.bincount(key_index[counted & matched], minlength=len(questions))
            present = totals > 0
            total, hit = int(totals.sum()), int(hits.sum())
            low, high = ratio_interval(
                hits[present], totals[present], samples=samples, confidence=confidence, seed=seed
            )
            out.append(
                Agreement(
                    question=question,
                    with_ties=with_ties,
                    matched=hit,
                    total=total,
                    keys=int(present.sum()),
                    value=hit / total if total else None,
                    low=low,
                    high=high,
                )
            )
    return out


def judge_human_agreement(
    votes: Iterable[PairwiseVote],
    *,
    judge: Hashable,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Agreement]:
    """FastChat's judge–human agreement: the judge's vote against every human vote on a key.

    The judge must have one vote per key (FastChat asserts it): combine a judge's two orders
    with :func:`conservative_votes` first.
    """
    votes = list(votes)
    judged = _by_key(votes, lambda v: v.voter == judge)
    human = _by_key(votes, lambda v: v.voter_kind == "human" and v.voter != judge)
    comparisons = _Comparisons.empty()
    for key, entries in judged.items():
        if key not in human:
            continue
        verdict = _single(key, judge, entries)
        for _, outcome, _ in human[key]:
            comparisons.add(key, verdict, outcome)
    return _summarise(comparisons, samples=samples, confidence=confidence, seed=seed)


def human_agreement(
    votes: Iterable[PairwiseVote], *, samples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> list[Agreement]:
    """FastChat's human–human agreement: every pair of human votes on a key.

    Unlike FastChat, two votes by the same person on one key are not a pair.
    """
    human = _by_key(votes, lambda v: v.voter_kind == "human")
    comparisons = _Comparisons.empty()
    for key, entries in human.items():
        for i in range(len(entries) - 1):
            for j in range(i + 1, len(entries)):
                if entries[i][0] != entries[j][0]:
                    comparisons.add(key, entries[i][1], entries[j][1])
    return _summarise(comparisons, samples=samples, confidence=confidence, seed=seed)


def judge_agreement(
    votes: Iterable[PairwiseVote],
    *,
    judge_a: Hashable,
    judge_b: Hashable,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Agreement]:
    """Agreement of two voters with one vote each per key, on the keys both voted on."""
    votes = list(votes)
    first = _by_key(votes, lambda v: v.voter == judge_a)
    second = _by_key(votes, lambda v: v.voter == judge_b)
    comparisons = _Comparisons.empty()
    for key, entries in first.items():
        if key in second:
            comparisons.add(key, _single(key, judge_a, entries), _single(key, judge_b, second[key]))
    return _summarise(comparisons, samples=samples, confidence=confidence, seed=seed)


def self_consistency(
    votes: Iterable[PairwiseVote],
    *,
    judge: Hashable,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Agreement]:
    """A judge's agreement with itself across the two orders (MT-Bench Table 2 "consistency").

    Only keys the judge voted on in both orders count; the verdicts are compared after the
    swapped one is reverted.
    """
    judged = _by_key(votes, lambda v: v.voter == judge)
    comparisons = _Comparisons.empty()
    for key, entries in judged.items():
        in_order = [entry for entry in entries if not entry[2]]
        swapped = [entry for entry in entries if entry[2]]
        if in_order and swapped:
            comparisons.add(key, _single(key, judge, in_order), _single(key, judge, swapped))
    return _summarise(comparisons, samples=samples, confidence=confidence, seed=seed)


def conservative_votes(votes: Iterable[PairwiseVote]) -> list[PairwiseVote]:
    """One vote per voter and pair by MT-Bench's conservative rule (Zheng et al. 2023, §3.4).

    A voter who judged a pair in both orders keeps a winner only if both orders name it;
    otherwise the pair is a tie (FastChat's ``play_a_match_pair``: any disagreement, a win
    against a tie included, is "inconsistent" and counts as a tie; two both-bad verdicts stay
    both-bad). A pair judged in one order only keeps that vote. The combined vote is stored in
    the key's order (the pair sorted as FastChat sorts it); a single vote keeps its own order.
    Two votes by one voter in the same order are an error.
    """
    grouped: dict[tuple[Hashable, Key], list[tuple[PairwiseVote, int, bool]]] = defaultdict(list)
    for vote in votes:
        key, outcome, reverted = _canonical(vote)
        grouped[(vote.voter, key)].append((vote, outcome, reverted))
    out: list[PairwiseVote] = []
    for (voter, key), entries in grouped.items():
        in_order = [entry for entry in entries if not entry[2]]
        swapped = [entry for entry in entries if entry[2]]
        if len(in_order) > 1 or len(swapped) > 1:
            raise ValueError(
                f"voter {voter!r} voted more than once in one order on item {key[0]!r}, "
                f"systems {key[1]!r}/{key[2]!r}, turn {key[3]}, question {key[4]!r}"
            )
        if len(entries) == 1:
            out.append(entries[0][0])
            continue
        first, second = in_order[0][1], swapped[0][1]
        outcome = first if first == second else TIE
        out.append(in_order[0][0]._replace(system_a=key[1], system_b=key[2], outcome=outcome))
    return out


def position_bias_counts(
    outcomes: Sequence[int] | np.ndarray,
    *,
    voter: Hashable = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> PositionBias:
    """Position bias of one voter's outcome codes (in the order shown).

    ``p_value`` is the exact two-sided binomial test of first-shown wins among decisive votes
    against 1/2 (``scipy.stats.binomtest``); ``low``/``high`` bound the first-shown share of
    decisive votes (Wilson score or Clopper–Pearson "exact" interval).
    """
    from scipy import stats

    codes = np.asarray(outcomes, dtype=np.int64)
    if codes.size and not np.isin(codes, OUTCOMES).all():
        raise ValueError(f"outcome: codes must be in {OUTCOMES}")
    counts = np.bincount(codes, minlength=4)
    a_wins, b_wins, tie, both_bad = (int(c) for c in counts[:4])
    n = int(codes.size)
    decisive = a_wins + b_wins
    p_value = low = high = None
    if decisive:
        test = stats.binomtest(a_wins, decisive, 0.5)
        interval = test.proportion_ci(confidence_level=confidence, method=method)
        p_value, low, high = float(test.pvalue), float(interval.low), float(interval.high)
    return PositionBias(
        voter=voter,
        votes=n,
        a_wins=a_wins,
        b_wins=b_wins,
        ties=tie + both_bad,
        both_bad=both_bad,
        a_share=a_wins / n if n else None,
        b_share=b_wins / n if n else None,
        tie_share=(tie + both_bad) / n if n else None,
        decisive_a_share=a_wins / decisive if decisive else None,
        p_value=p_value,
        low=low,
        high=high,
    )


def position_bias(
    votes: Iterable[PairwiseVote],
    *,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> list[PositionBias]:
    """:func:`position_bias_counts` per voter, in the order voters first appear.

    Use the votes as shown (before :func:`conservative_votes`), since the rule hides the order.
    """
    by_voter: dict[Hashable, list[int]] = defaultdict(list)
    for vote in votes:
        by_voter[vote.voter].append(vote.outcome)
    return [
        position_bias_counts(codes, voter=voter, confidence=confidence, method=method)
        for voter, codes in by_voter.items()
    ]


def resample_counts(rng: np.random.Generator, n: int, samples: int) -> np.ndarray:
    """How often each of n units is drawn in each of ``samples`` resamples of size n."""
    draws = rng.integers(0, n, size=(samples, n))
    draws += np.arange(samples)[:, None] * n
    return np.bincount(draws.ravel(), minlength=samples * n).reshape(samples, n)


def percentile_interval(
    replicates: np.ndarray, confidence: float
) -> tuple[float | None, float | None]:
    """Percentile bootstrap bounds over the defined (non-NaN) replicates; None if none are."""
    defined = replicates[~np.isnan(replicates)]
    if not defined.size:
        return None, None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(defined, [tail, 100.0 - tail])
    return float(low), float(high)


def ratio_replicates(
    numerators: np.ndarray, denominators: np.ndarray, *, samples: int, seed: int
) -> np.ndarray:
    """Bootstrap replicates of Σ num / Σ den, resampling units with replacement (NaN if 0/0)."""
    numerators = np.asarray(numerators, dtype=float)
    denominators = np.asarray(denominators, dtype=float)
    n = len(numerators)
    if n == 0:
        return np.full(samples, np.nan)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_BYTES // (8 * n))
    parts = []
    for start in range(0, samples, chunk):
        counts = resample_counts(rng, n, min(chunk, samples - start)).astype(float)
        top, bottom = counts @ numerators, counts @ denominators
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            parts.append(np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan))
    return np.concatenate(parts) if parts else np.empty(0)  # samples=0: no interval


def ratio_interval(
    numerators: np.ndarray,
    denominators: np.ndarray,
    *,
    samples: int,
    confidence: float,
    seed: int,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of Σ num / Σ den over units resampled with replacement."""
    replicates = ratio_replicates(numerators, denominators, samples=samples, seed=seed)
    return percentile_interval(replicates, confidence)
