"""Pairwise preferences: Bradley–Terry leaderboards, agreement among voters, and how well each
metric and judge predicts the human votes (issue 26).

The statistics are the Django-free kernels in :mod:`metrics.analysis.bradley_terry`,
:mod:`metrics.analysis.preference_agreement` and :mod:`metrics.analysis.pairwise_accuracy`;
this module reads the votes and scores (:mod:`metrics.selectors.votes`), calls them and returns
JSON-ready sections for the ``rank_pairwise`` command, the API, the study page and the
"Pairwise" section of a correlation report (``config["pairwise"]``, registered as the report
extension ``pairwise`` in :class:`metrics.apps.MetricsConfig`).

Conventions (cited where they are implemented): ties and "both bad" count as half a win each
way (Chatbot Arena); ratings are on the Elo scale (400 points per factor 10 of odds, mean 1000,
or anchored); a judge's per-order votes are combined by MT-Bench's conservative rule wherever
one vote per judge and pair is needed (agreement) and when ``judge_rule`` says so (rankings).
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, Literal

import numpy as np

from annotation.models import RatingJob
from core.errors import ServiceError
from metrics.analysis import bradley_terry as bt
from metrics.analysis import pairwise_accuracy as accuracy
from metrics.analysis import preference_agreement as agreement
from metrics.analysis.preference_agreement import PairwiseVote
from metrics.reporting.pairwise import LEADERBOARD_COLUMNS
from metrics.selectors import votes as vote_selectors

JUDGE_RULES = ("per_order", "conservative")
INTERVALS = ("bootstrap", "sandwich")
MAX_ROUNDS = 10_000
MAX_RATING = 100_000.0
PAIRWISE_DEFAULTS: dict[str, Any] = {
    "voters": "humans",
    "include_identity_leaks": False,
    "include_excluded": False,
    "judge_rule": "per_order",
    "interval": "bootstrap",
    "anchor": None,
}


class PairwiseConfigError(ServiceError):
    """Pairwise options that cannot be used; the message names the option."""


class PairwiseDataError(ServiceError):
    """Votes that cannot be ranked (none, one system, or groups no vote links)."""


# --- options ----------------------------------------------------------------------------------


def pairwise_config_check(value: object, *, campaign_ids: Sequence[int]) -> dict[str, Any]:
    """A report's ``pairwise`` options, complete and checked against the studies' votes."""
    if value is True:
        value = {}
    if not isinstance(value, Mapping):
        raise PairwiseConfigError("must be an object of pairwise options (or true)")
    unknown = sorted(set(value) - set(PAIRWISE_DEFAULTS))
    if unknown:
        raise PairwiseConfigError(
            f"unknown option {unknown[0]!r} (known: {', '.join(PAIRWISE_DEFAULTS)})"
        )
    options = {**PAIRWISE_DEFAULTS, **value}
    if not vote_selectors.study_has_votes(campaign_ids):
        raise PairwiseConfigError(
            "the studies of the chosen metric runs and rating jobs have no pairwise votes"
        )
    try:
        vote_selectors.voter_filter(str(options["voters"]))
    except vote_selectors.VoteSelectionError as exc:
        raise PairwiseConfigError(f"voters: {exc}") from None
    for flag in ("include_identity_leaks", "include_excluded"):
        if not isinstance(options[flag], bool):
            raise PairwiseConfigError(f"{flag}: must be true or false")
    if options["judge_rule"] not in JUDGE_RULES:
        raise PairwiseConfigError(f"judge_rule: must be one of {', '.join(JUDGE_RULES)}")
    if options["interval"] not in INTERVALS:
        raise PairwiseConfigError(f"interval: must be one of {', '.join(INTERVALS)}")
    options["anchor"] = _anchor_check(options["anchor"])
    return options


def _anchor_check(anchor: object) -> dict[str, Any] | None:
    if anchor is None:
        return None
    if not isinstance(anchor, Mapping) or set(anchor) != {"system", "rating"}:
        raise PairwiseConfigError('anchor: must be {"system": name, "rating": number} or null')
    system, rating = anchor["system"], anchor["rating"]
    if not isinstance(system, str) or not system.strip() or len(system) > 120:
        raise PairwiseConfigError("anchor: the system must be a system name")
    if isinstance(rating, bool) or not isinstance(rating, int | float):
        raise PairwiseConfigError("anchor: the rating must be a number")
    if not math.isfinite(rating) or abs(rating) > MAX_RATING:
        raise PairwiseConfigError(f"anchor: the rating must be within ±{MAX_RATING:g}")
    return {"system": system.strip(), "rating": float(rating)}


# --- rankings -----------------------------------------------------------------------------------


def _ranking_votes(votes: list[PairwiseVote], judge_rule: str) -> list[PairwiseVote]:
    if judge_rule != "conservative":
        return votes
    humans = [vote for vote in votes if vote.voter_kind != "judge"]
    judges = [vote for vote in votes if vote.voter_kind == "judge"]
    return humans + agreement.conservative_votes(judges)


def _signature(
    result: bt.BradleyTerryResult, systems: list[str], options: Mapping[str, Any]
) -> str:
    """What the numbers depend on, in one line (the prior is never silent)."""
    parts = [
        "bradley-terry",
        "ties:half-win",
        "scale:400/log10",
        f"voters:{options['voters']}",
        f"judge_rule:{options['judge_rule']}",
        f"leaks:{'in' if options['include_identity_leaks'] else 'out'}",
        f"interval:{result.interval}",
        f"conf:{result.confidence:g}",
    ]
    if result.interval == "bootstrap" or len(result.replicates):
        parts.append(f"rounds:{len(result.replicates)}|seed:{result.seed}")
    if result.anchor is not None:
        parts.append(f"anchor:{systems[result.anchor[0]]}={result.anchor[1]:g}")
    else:
        parts.append("mean:1000")
    if result.prior is None:
        parts.append("prior:none")
    else:
        triggers = [systems[i] for i in (*result.never_lost, *result.never_won)]
        parts.append(f"prior:{result.prior:g}({', '.join(triggers) or 'disconnected wins'})")
    return "|".join(parts)


def leaderboard(
    votes: list[PairwiseVote],
    *,
    options: Mapping[str, Any],
    rounds: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    question: str | None = None,
) -> dict[str, Any]:
    """The Bradley–Terry leaderboard of ``votes`` (JSON-ready), best first, with the win-rate,
    battle-count and predicted-probability matrices, online Elo, and per adjacent pair whether
    their intervals separate and how many more votes would separate them."""
    votes = _ranking_votes(votes, options["judge_rule"])
    systems = sorted({str(v.system_a) for v in votes} | {str(v.system_b) for v in votes})
    if len(systems) < 2:
        raise PairwiseDataError(
            "no votes to rank" if not votes else f"only one system ({systems[0]}) was voted on"
        )
    index = {name: i for i, name in enumerate(systems)}
    a = np.array([index[str(v.system_a)] for v in votes], dtype=np.int64)
    b = np.array([index[str(v.system_b)] for v in votes], dtype=np.int64)
    outcome = np.array([v.outcome for v in votes], dtype=np.int8)
    counts = bt.pair_counts(a, b, outcome, len(systems))
    anchor = None
    if options.get("anchor"):
        name = options["anchor"]["system"]
        if name not in index:
            raise PairwiseDataError(f"the anchor system {name!r} has no votes here")
        anchor = (index[name], options["anchor"]["rating"])
    interval: Literal["bootstrap", "sandwich"] = (
        "bootstrap" if rounds and options["interval"] == "bootstrap" else "sandwich"
    )
    try:
        result = bt.bradley_terry(
            counts,
            rounds=rounds,
            confidence=confidence,
            seed=seed,
            anchor=anchor,
            interval=interval,
        )
    except bt.DisconnectedVotes as exc:
        listed = "; ".join("{" + ", ".join(systems[i] for i in group) + "}" for group in exc.groups)
        raise PairwiseDataError(
            f"no vote links these groups of systems, so their ratings cannot be compared: "
            f"{listed}; add votes between the groups or rank them apart"
        ) from None
    elo = bt.online_elo(a, b, outcome, len(systems))
    order = np.argsort(-result.ratings, kind="stable")
    rows = [
        {
            "system": systems[i],
            "rating": float(result.ratings[i]),
            "lower": float(result.lower[i]),
            "upper": float(result.upper[i]),
            "se": float(result.se[i]),
            "rank": int(result.rank[i]),
            "rank_lower": int(result.rank_lower[i]),
            "rank_upper": int(result.rank_upper[i]),
            "votes": int(result.votes[i]),
            "elo": float(elo[i]),
        }
        for i in order
    ]
    ordered = [systems[i] for i in order]
    matrix_order = order.tolist()

    def matrix(values: np.ndarray) -> list[list[float | None]]:
        return [
            [None if np.isnan(values[i, j]) else float(values[i, j]) for j in matrix_order]
            for i in matrix_order
        ]

    win_rate = bt.win_rate_matrix(counts)
    np.fill_diagonal(win_rate, np.nan)
    predicted = bt.predicted_win_probability(result.ratings)
    np.fill_diagonal(predicted, np.nan)
    separation = [
        {
            "higher": systems[s.higher],
            "lower": systems[s.lower],
            "gap": s.gap,
            "separated": s.separated,
            "votes_needed": s.votes_needed,
        }
        for s in bt.votes_to_separate(
            result.ratings, result.se, result.total_votes, confidence=confidence
        )
    ]
    notes = []
    if result.prior is not None:
        triggers = ", ".join(systems[i] for i in (*result.never_lost, *result.never_won))
        notes.append(
            f"A Gaussian prior (strength {result.prior:g}) keeps the ratings finite: "
            f"{triggers or 'a group of systems'} never lost or never won against the rest."
        )
    if result.bootstrap_rounds_with_prior:
        notes.append(
            f"{result.bootstrap_rounds_with_prior} bootstrap rounds needed the prior "
            "(a resample lost a pair's only decisive vote)."
        )
    return {
        "question": question,
        "votes": int(result.total_votes),
        "systems": rows,
        "matrix_systems": ordered,
        "win_rate": matrix(win_rate),
        "battles": matrix(counts.battles.astype(float)),
        "predicted": matrix(predicted),
        "separation": separation,
        "confidence": confidence,
        "interval": result.interval,
        "prior": result.prior,
        "signature": _signature(result, systems, options),
        "notes": notes,
        # Bootstrap ratings (rounds × systems, best first) for the τ intervals; not JSON:
        # callers drop it before storing or answering.
        "replicates": result.replicates[:, order],
    }


def rank_pairwise(
    *,
    campaign_ids: Sequence[int],
    voters: str = "humans",
    question: str | None = None,
    rounds: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    include_identity_leaks: bool = False,
    include_excluded: bool = False,
    judge_rule: str = "per_order",
    interval: str = "bootstrap",
    anchor: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One leaderboard of a study's votes (the command, the API and the study page)."""
    if not 0 <= rounds <= MAX_ROUNDS:
        raise PairwiseConfigError(f"bootstrap: must be from 0 to {MAX_ROUNDS}", field="bootstrap")
    if not 0.5 <= confidence < 1:
        raise PairwiseConfigError("confidence: must be from 0.5 to below 1", field="confidence")
    options = {
        "voters": voters,
        "include_identity_leaks": include_identity_leaks,
        "include_excluded": include_excluded,
        "judge_rule": judge_rule,
        "interval": interval,
        "anchor": _anchor_check(anchor),
    }
    if judge_rule not in JUDGE_RULES:
        raise PairwiseConfigError(f"judge_rule: must be one of {', '.join(JUDGE_RULES)}")
    if interval not in INTERVALS:
        raise PairwiseConfigError(f"interval: must be one of {', '.join(INTERVALS)}")
    question = _one_question(campaign_ids, question)
    try:
        rows = vote_selectors.vote_rows(
            campaign_ids=campaign_ids,
            voters=voters,
            question=question,
            include_identity_leaks=include_identity_leaks,
            include_excluded=include_excluded,
        )
    except vote_selectors.VoteSelectionError as exc:
        raise PairwiseConfigError(str(exc), field="voters") from None
    board = leaderboard(
        [row.vote for row in rows.votes],
        options=options,
        rounds=rounds,
        seed=seed,
        confidence=confidence,
        question=question,
    )
    board.pop("replicates")
    return {**board, "left_out": rows.left_out, "options": options}


def _one_question(campaign_ids: Sequence[int], question: str | None) -> str:
    """The question to rank on: the one asked, or the votes' only one; several need a choice."""
    questions = vote_selectors.vote_questions(campaign_ids)
    if not questions:
        raise PairwiseDataError("the study has no pairwise votes")
    if question is None:
        if len(questions) == 1:
            return questions[0]
        if "" in questions:
            return ""
        raise PairwiseConfigError(
            "the votes answer several questions; choose one of: " + ", ".join(questions),
            field="question",
        )
    if question not in questions:
        shown = ", ".join(q or '"" (overall)' for q in questions)
        raise PairwiseConfigError(
            f"no votes on question {question!r} (the study's: {shown})", field="question"
        )
    return question


def leaderboard_csv(board: Mapping[str, Any]) -> str:
    """``system,rating,lower,upper,rank,rank_lower,rank_upper,votes,se,elo`` (best first)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=LEADERBOARD_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in board["systems"]:
        writer.writerow({key: _csv_value(row[key]) for key in LEADERBOARD_COLUMNS})
    return out.getvalue()


def _csv_value(value: Any) -> Any:
    return f"{value:.4f}" if isinstance(value, float) else value


# --- a pairwise rating job's page -------------------------------------------------------------


def job_pairwise_summary(
    *, campaign_id: int, source_id: int, include_excluded: bool = False, rounds: int = 200
) -> dict[str, Any]:
    """A pairwise (ACUTE-style) rating job's votes: a leaderboard per question and the raters'
    agreement (MT-Bench's, with and without ties); votes of raters excluded by quality control
    are left out (and counted) unless ``include_excluded``."""
    rows = vote_selectors.vote_rows(
        campaign_ids=[campaign_id],
        voters="humans",
        include_excluded=include_excluded,
        include_identity_leaks=True,
        source_id=source_id,
    )
    by_question: dict[str, list[PairwiseVote]] = defaultdict(list)
    for row in rows.votes:
        by_question[row.vote.question].append(row.vote)
    options = {**PAIRWISE_DEFAULTS, "include_excluded": include_excluded}
    boards, problems = [], []
    for question in sorted(by_question):
        try:
            board = leaderboard(
                by_question[question], options=options, rounds=rounds, question=question
            )
        except PairwiseDataError as exc:
            problems.append(f"{question or 'overall'}: {exc}")
            continue
        board.pop("replicates", None)
        boards.append(board)
    plain = [row.vote for row in rows.votes]
    return {
        "votes": len(plain),
        "left_out": rows.left_out,
        "leaderboards": boards,
        "notes": problems,
        "agreement": _agreement_rows(agreement.human_agreement(plain, samples=rounds)),
    }


# --- the report section -------------------------------------------------------------------------


def pairwise_report_section(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The report's "Pairwise" section (None when the report has no pairwise options)."""
    options = config.get("pairwise")
    if not options:
        return None
    from metrics.models import MetricRun

    run_ids = list(config.get("metric_runs") or [])
    job_ids = list(config.get("rating_jobs") or [])
    campaign_ids = sorted(
        set(MetricRun.objects.filter(pk__in=run_ids).values_list("campaign_id", flat=True))
        | set(RatingJob.objects.filter(pk__in=job_ids).values_list("campaign_id", flat=True))
    )
    rounds, seed = int(config.get("bootstrap", 1000)), int(config.get("seed", 0))
    everything = vote_selectors.vote_rows(
        campaign_ids=campaign_ids,
        voters="all",
        include_identity_leaks=options["include_identity_leaks"],
        include_excluded=options["include_excluded"],
    )
    ranked = vote_selectors.vote_rows(
        campaign_ids=campaign_ids,
        voters=options["voters"],
        include_identity_leaks=options["include_identity_leaks"],
        include_excluded=options["include_excluded"],
    )
    by_question: dict[str, list[PairwiseVote]] = defaultdict(list)
    for row in ranked.votes:
        by_question[row.vote.question].append(row.vote)
    leaderboards = []
    problems = []
    for question in sorted(by_question):
        try:
            leaderboards.append(
                leaderboard(
                    by_question[question],
                    options=options,
                    rounds=rounds,
                    seed=seed,
                    question=question,
                )
            )
        except PairwiseDataError as exc:
            problems.append(f"{question or 'overall'}: {exc}")
    human = [row for row in everything.votes if row.vote.voter_kind == "human"]
    judges = sorted(
        {str(row.vote.voter) for row in everything.votes if row.vote.voter_kind == "judge"}
    )
    judge_results = _judge_human(everything.votes, judges, rounds=rounds, seed=seed)
    section: dict[str, Any] = {
        "options": dict(options),
        "left_out": ranked.left_out,
        "leaderboards": leaderboards,
        "notes": problems,
        "agreement": _agreement(everything.votes, judge_results, rounds=rounds, seed=seed),
        "position_bias": _position_bias(everything.votes),
        "accuracy": _accuracy(
            human,
            judge_results,
            leaderboards,
            run_ids=run_ids,
            metrics=list(config.get("metrics") or []),
            rounds=rounds,
            seed=seed,
        ),
        "vs_absolute": _vs_absolute(leaderboards, config, run_ids=run_ids, job_ids=job_ids),
    }
    for board in leaderboards:
        board.pop("replicates", None)  # used above for the τ intervals; too big to store
    return section


def _agreement_rows(results: list[agreement.Agreement], **extra: Any) -> list[dict[str, Any]]:
    """The kernel's rows; the pooled ones (``question`` None) only when there are several
    questions to pool (with one they repeat it)."""
    questions = {result.question for result in results if result.question is not None}
    return [
        {**extra, **asdict(result)}
        for result in results
        if result.question is not None or len(questions) > 1
    ]


def _judge_human(
    votes: list[vote_selectors.StoredVote], judges: list[str], *, rounds: int, seed: int
) -> dict[str, list[agreement.Agreement]]:
    """Each judge's MT-Bench agreement with the humans, its votes one per pair by the
    conservative rule as MT-Bench's GPT-4 pair judgments are (read by the agreement table and
    the judge's row of the accuracy table)."""
    plain = [row.vote for row in votes]
    humans = [vote for vote in plain if vote.voter_kind == "human"]
    return {
        judge: agreement.judge_human_agreement(
            humans + agreement.conservative_votes([v for v in plain if v.voter == judge]),
            judge=judge,
            samples=rounds,
            seed=seed,
        )
        for judge in judges
    }


def _agreement(
    votes: list[vote_selectors.StoredVote],
    judge_results: Mapping[str, list[agreement.Agreement]],
    *,
    rounds: int,
    seed: int,
) -> dict[str, Any]:
    """MT-Bench agreement (with and without ties, per question and pooled): human–human and
    each judge–human; and each judge's consistency across the two orders."""
    plain = [row.vote for row in votes]
    humans = [vote for vote in plain if vote.voter_kind == "human"]
    out: dict[str, Any] = {
        "human_human": _agreement_rows(
            agreement.human_agreement(humans, samples=rounds, seed=seed)
        ),
        "judge_human": [],
        "self_consistency": [],
    }
    for judge, results in judge_results.items():
        own = [vote for vote in plain if vote.voter == judge]
        out["judge_human"] += _agreement_rows(results, judge=judge)
        out["self_consistency"] += _agreement_rows(
            agreement.self_consistency(own, judge=judge, samples=rounds, seed=seed), judge=judge
        )
    return out


def _position_bias(votes: list[vote_selectors.StoredVote]) -> list[dict[str, Any]]:
    """Each voter's share of first-shown wins, judges first, then all humans pooled, then each
    person by number of votes."""
    plain = [row.vote for row in votes]
    rows = [
        {**asdict(bias), "voter": str(bias.voter), "kind": kind}
        for bias, kind in (
            (bias, "judge" if str(bias.voter).startswith("judge:") else "human")
            for bias in agreement.position_bias(plain)
        )
    ]
    humans = np.array([v.outcome for v in plain if v.voter_kind == "human"], dtype=np.int64)
    pooled = []
    if len(humans):
        bias = agreement.position_bias_counts(humans, voter="humans (all)")
        pooled = [{**asdict(bias), "voter": "humans (all)", "kind": "humans"}]
    judges = [row for row in rows if row["kind"] == "judge"]
    people = sorted((row for row in rows if row["kind"] == "human"), key=lambda row: -row["votes"])
    return judges + pooled + people


def _accuracy(
    human: list[vote_selectors.StoredVote],
    judge_results: Mapping[str, list[agreement.Agreement]],
    leaderboards: list[dict[str, Any]],
    *,
    run_ids: list[int],
    metrics: list[str],
    rounds: int,
    seed: int,
) -> list[dict[str, Any]]:
    """Per metric (and judge) and question: vote-level accuracy without ties and tie-calibrated
    acc23 (WMT 2023), with intervals; system-level ranking agreement with the leaderboard."""
    with_dialogues = [row for row in human if row.dialogue_a and row.dialogue_b]
    dialogue_ids = sorted(
        {row.dialogue_a for row in with_dialogues if row.dialogue_a is not None}
        | {row.dialogue_b for row in with_dialogues if row.dialogue_b is not None}
    )
    scores = vote_selectors.voted_dialogue_scores(
        run_ids=run_ids, metrics=metrics, dialogue_ids=dialogue_ids
    )
    boards = {board["question"]: board for board in leaderboards}
    questions = sorted({row.vote.question for row in with_dialogues})
    out: list[dict[str, Any]] = []
    for metric in metrics:
        by_unit = scores.get(metric, {})
        if not by_unit:
            continue
        for question in questions:
            picked: list[tuple[vote_selectors.StoredVote, float, float]] = []
            for row in with_dialogues:
                if row.vote.question != question:
                    continue
                x = _score(by_unit, row.dialogue_a, row.vote.turn)
                y = _score(by_unit, row.dialogue_b, row.vote.turn)
                if x is not None and y is not None:
                    picked.append((row, x, y))
            if not picked:
                continue
            outcome = np.array([row.vote.outcome for row, _, _ in picked], dtype=np.int64)
            score_a = np.array([x for _, x, _ in picked], dtype=float)
            score_b = np.array([y for _, _, y in picked], dtype=float)
            tie_free = accuracy.accuracy_without_ties(
                outcome, score_a, score_b, samples=rounds, seed=seed
            )
            calibrated = accuracy.calibrated_acc23(
                outcome, score_a, score_b, samples=rounds, seed=seed
            )
            entry = {
                "predictor": metric,
                "kind": "metric",
                "question": question,
                "votes": len(picked),
                "accuracy": tie_free.value,
                "accuracy_low": tie_free.low,
                "accuracy_high": tie_free.high,
                "excluded": tie_free.excluded,
                "acc23": calibrated.value,
                "acc23_low": calibrated.low,
                "acc23_high": calibrated.high,
                "epsilon": calibrated.epsilon,
            }
            entry.update(_system_level(picked, boards.get(question)))
            out.append(entry)
    for judge, results in judge_results.items():
        for question in sorted({r.question for r in results if r.question is not None}):
            tied = next(r for r in results if r.question == question and r.with_ties)
            untied = next(r for r in results if r.question == question and not r.with_ties)
            out.append(
                {
                    "predictor": judge,
                    "kind": "judge",
                    "question": question,
                    "votes": tied.total,
                    "accuracy": untied.value,
                    "accuracy_low": untied.low,
                    "accuracy_high": untied.high,
                    "excluded": tied.total - untied.total,
                    "acc23": tied.value,
                    "acc23_low": tied.low,
                    "acc23_high": tied.high,
                    "epsilon": None,
                }
            )
    return out


def _score(
    by_unit: Mapping[tuple[int, int], float], dialogue: int | None, turn: int
) -> float | None:
    """The metric's score of the compared reply: its dialogue-level score, else the turn-level
    score of the vote's turn (the t-th model reply)."""
    if dialogue is None:
        return None
    value = by_unit.get((dialogue, 0))
    return value if value is not None else by_unit.get((dialogue, turn))


def _system_level(
    picked: list[tuple[vote_selectors.StoredVote, float, float]], board: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The metric's system means over the voted replies against the leaderboard's ratings:
    pairwise ranking accuracy and Kendall τ-b, with τ's interval over the bootstrap ratings."""
    if board is None:
        return {}
    sums: dict[str, list[float]] = defaultdict(list)
    for row, x, y in picked:
        sums[str(row.vote.system_a)].append(x)
        sums[str(row.vote.system_b)].append(y)
    systems = board["matrix_systems"]
    ratings = np.array([row["rating"] for row in board["systems"]], dtype=float)
    means = np.array([np.mean(sums[s]) if sums.get(s) else np.nan for s in systems])
    agreed = accuracy.system_agreement(ratings, means)
    result = {
        "system_pairwise_accuracy": agreed.pairwise_accuracy,
        "system_pairs": agreed.pairs,
        "system_tau": agreed.kendall_tau_b,
    }
    if len(board["replicates"]) and agreed.systems >= 2:
        low, high = _tau_interval(board["replicates"], means)
        result.update(system_tau_low=low, system_tau_high=high)
    return result


def _tau_interval(replicates: np.ndarray, values: np.ndarray) -> tuple[float | None, float | None]:
    """τ-b's interval over the systems that have a value (the others are left out of every
    round, as they are of the point estimate)."""
    keep = ~np.isnan(values)
    interval = accuracy.kendall_tau_interval(replicates[:, keep], values[keep])
    return interval.low, interval.high


def _vs_absolute(
    leaderboards: list[dict[str, Any]],
    config: Mapping[str, Any],
    *,
    run_ids: list[int],
    job_ids: list[int],
) -> list[dict[str, Any]]:
    """Kendall τ-b (with its bootstrap interval) between the first leaderboard's ranking and each
    absolute ranking of the same systems: the rating jobs' human scores per dimension and each
    metric's system means."""
    if not leaderboards:
        return []
    board = leaderboards[0]
    systems = board["matrix_systems"]
    ratings = np.array([row["rating"] for row in board["systems"]], dtype=float)
    replicates = board["replicates"] if len(board["replicates"]) else None
    from metrics.selectors.reports import human_score_rows, metric_score_rows

    absolute: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    if job_ids and config.get("dimensions"):
        for row in human_score_rows(
            jobs=list(RatingJob.objects.filter(pk__in=job_ids)),
            dimensions=config["dimensions"],
            level="system",
            grouping="none",
        ):
            absolute[("human", row.name)][row.unit].append(row.value)
    if run_ids and config.get("metrics"):
        for row in metric_score_rows(
            run_ids=run_ids,
            metrics=config["metrics"],
            level="system",
            grouping="none",
            system_scores=config.get("system_scores", "mean"),
        ):
            absolute[("metric", row.name)][row.unit].append(row.value)
    out = []
    for (kind, name), by_system in sorted(absolute.items()):
        values = np.array([np.mean(by_system[s]) if by_system.get(s) else np.nan for s in systems])
        agreed = accuracy.system_agreement(ratings, values)
        entry = {
            "kind": kind,
            "against": name,
            "question": board["question"],
            "systems": agreed.systems,
            "tau": agreed.kendall_tau_b,
            "tau_low": None,
            "tau_high": None,
        }
        if replicates is not None and agreed.systems >= 2:
            entry["tau_low"], entry["tau_high"] = _tau_interval(replicates, values)
        out.append(entry)
    return out
