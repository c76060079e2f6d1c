"""Human + judge Bradley–Terry ratings of a pairwise rating job (issue 28).

A pairwise job that rates a seeded random subset of its comparisons (``pair_sample_size``,
``annotation.selectors.sampling.pair_design``) and an LLM judge that voted on every comparison
give the prediction-powered Bradley–Terry ratings of :func:`metrics.analysis.ppi.
bradley_terry_ppi` (AutoEval Done Right, Boyeau et al. 2024, §3.2):

* the comparisons (``pairs_all``) are the job's recorded population: every (scenario, system
  pair) of its dialogues, as a pair of dialogues, the first by the system with the smaller name;
* the judge's vote on each is one vote per comparison by MT-Bench's conservative rule
  (``conservative_votes``: both orders must name the winner, otherwise a tie), as a value for the
  first system: 1 a win, 0 a loss, ½ a tie or "both bad";
* the labelled comparisons are the drawn ones people voted on; several raters on one comparison
  are averaged into one value in [0, 1] (the share of raters preferring the first system, a tie
  counting half): the kernel takes one outcome per comparison, and the mean of the raters is
  the comparison's expected vote, so the estimating equation stays unbiased;
* π = n/N from the recorded draw (equal for every comparison, so no weighting).

The effective sample size follows :func:`metrics.analysis.ppi.ppi_mean`: the number of human
comparisons the human-only estimate would need for the PPI interval's width,
n · (human-only width / PPI width)², per system.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from annotation.models import RatingJob
from annotation.pairwise import comparative_questions
from annotation.rubric_spec import as_spec
from annotation.selectors.sampling import pair_design
from chat.models import Dialogue, Vote
from metrics.analysis import preference_agreement as agreement
from metrics.analysis.ppi import bradley_terry_ppi
from metrics.selectors import votes as vote_selectors
from metrics.services.ppi import PPIError, alpha_check

Key = tuple[int, int]


def job_judges(job: RatingJob) -> list[str]:
    """The judges (voter prefixes, ``judge:key-vN``) that voted in the job's campaign."""
    return vote_selectors.judge_voters([job.campaign_id])


def job_questions(job: RatingJob) -> list[str]:
    """The job's comparative question keys."""
    return [q.key for q in comparative_questions(as_spec(job.rubric.spec))]


def _value(outcome: int, first_is_a: bool) -> float:
    """A vote as the first system's share of the win: 1, 0, or ½ (a tie, both bad)."""
    if outcome == agreement.A_WINS:
        return 1.0 if first_is_a else 0.0
    if outcome == agreement.B_WINS:
        return 0.0 if first_is_a else 1.0
    return 0.5


def _judge_voter(job: RatingJob, judge: str) -> str:
    try:
        selector = vote_selectors.voter_filter(judge)
    except vote_selectors.VoteSelectionError as exc:
        raise PPIError(str(exc), field="judge") from exc
    if not judge.startswith("judge:"):
        raise PPIError(f"not a judge: {judge!r} (expected judge:<key> or judge:<key>-v<N>)")
    voters = sorted(
        set(
            Vote.objects.filter(campaign_id=job.campaign_id, **selector)
            .values_list("voter", flat=True)
            .distinct()
        )
    )
    if not voters:
        known = ", ".join(job_judges(job)) or "none"
        raise PPIError(
            f"the judge {judge!r} has no votes in the job's campaign (judges with votes: {known})",
            field="judge",
        )
    if len(voters) > 1:
        raise PPIError(
            f"{judge!r} matches several judge versions ({', '.join(voters)}): name one",
            field="judge",
        )
    return voters[0]


def _by_comparison(
    rows: Sequence[vote_selectors.StoredVote], population: set[Key]
) -> dict[Key, list[tuple[agreement.PairwiseVote, bool]]]:
    """The votes on each comparison of the population, with whether the vote's A side is the
    comparison's first dialogue."""
    out: dict[Key, list[tuple[agreement.PairwiseVote, bool]]] = defaultdict(list)
    for row in rows:
        if row.dialogue_a is None or row.dialogue_b is None:
            continue
        key = (row.dialogue_a, row.dialogue_b)
        if key in population:
            out[key].append((row.vote, True))
        elif key[::-1] in population:
            out[key[::-1]].append((row.vote, False))
    return out


def pairwise_ppi(
    *, job: RatingJob, judge: str, question: str, alpha: float = 0.1
) -> dict[str, Any]:
    """Human-only and human + judge Bradley–Terry ratings of the job's systems on ``question``.

    Refused (``PPIError``, saying why): a job that is not pairwise, a design that is not a
    random subset (every comparison rated: a judge adds nothing; not drawn yet), an unknown
    question, a judge without votes, a judge that did not vote on a comparison people voted on,
    fewer than 2 comparisons with human votes.
    """
    if not job.is_pairwise or not job.vote_source_id:
        raise PPIError(f"job {job.name!r} is not a pairwise job", field="job")
    alpha = alpha_check(alpha)
    questions = job_questions(job)
    if question not in questions:
        raise PPIError(
            f"the job asks no question {question!r} (it asks: {', '.join(questions)})",
            field="question",
        )
    design = pair_design(job)
    if design.kind != "random":
        raise PPIError(
            "the prediction-powered ratings need comparisons drawn at random with known "
            f"inclusion probabilities: {design.reason}",
            field="job",
        )
    voter = _judge_voter(job, judge)
    population = design.population
    members = set(population)
    systems_of = dict(
        Dialogue.objects.filter(pk__in={d for key in population for d in key}).values_list(
            "pk", "backend__name"
        )
    )
    judge_rows = vote_selectors.vote_rows(
        campaign_ids=[job.campaign_id],
        voters=voter,
        question=question,
        include_identity_leaks=True,
        include_excluded=True,
    ).votes
    human_rows = vote_selectors.vote_rows(
        campaign_ids=[job.campaign_id],
        voters="humans",
        question=question,
        include_identity_leaks=True,
        source_id=job.vote_source_id,
    )
    judged: dict[Key, float] = {}
    for key, entries in _by_comparison(judge_rows, members).items():
        (combined,) = agreement.conservative_votes([vote for vote, _ in entries])
        judged[key] = _value(combined.outcome, combined.system_a == systems_of[key[0]])
    drawn = set(design.drawn)
    human: dict[Key, float] = {}
    raters: dict[Key, int] = {}
    for key, entries in _by_comparison(human_rows.votes, drawn).items():
        human[key] = float(np.mean([_value(v.outcome, first) for v, first in entries]))
        raters[key] = len(entries)
    uncovered = sorted(key for key in human if key not in judged)
    if uncovered:
        raise PPIError(
            f"the judge {voter} did not vote on {len(uncovered)} of the {len(human)} "
            f"comparisons people voted on (first: dialogues {uncovered[0][0]} and "
            f"{uncovered[0][1]}); run it on the job's campaign in pairwise mode",
            field="judge",
        )
    if len(human) < 2:
        raise PPIError(
            f"need human votes on at least 2 drawn comparisons, got {len(human)} "
            f"(of {len(drawn)} drawn)",
            field="job",
        )
    # The population the estimate stands for: every comparison the judge voted on.
    compared = [key for key in population if key in judged]
    systems = sorted({systems_of[d] for key in compared for d in key})
    index = {system: i for i, system in enumerate(systems)}
    pairs_all = np.array([[index[systems_of[a]], index[systems_of[b]]] for a, b in compared])
    judge_all = np.array([judged[key] for key in compared])
    position = {key: i for i, key in enumerate(compared)}
    labelled_keys = sorted(human, key=position.__getitem__)
    labelled = np.array([position[key] for key in labelled_keys])
    votes = np.array([human[key] for key in labelled_keys])
    pi = [design.inclusion] * len(labelled_keys) if design.inclusion is not None else None
    try:
        estimate = bradley_terry_ppi(
            len(systems), pairs_all, judge_all, labelled, votes, pi=pi, alpha=alpha
        )
    except ValueError as exc:
        raise PPIError(str(exc), field="job") from exc
    judge_labelled = judge_all[labelled]
    same_side = np.sign(judge_labelled - 0.5) == np.sign(votes - 0.5)
    rows = []
    n = estimate.n
    for i, system in enumerate(systems):
        width = float(estimate.high[i] - estimate.low[i])
        human_width = float(estimate.human_only_high[i] - estimate.human_only_low[i])
        rows.append(
            {
                "system": system,
                "ppi": {
                    "rating": float(estimate.rating[i]),
                    "low": float(estimate.low[i]),
                    "high": float(estimate.high[i]),
                    "width": width,
                },
                "human_only": {
                    "rating": float(estimate.human_only_rating[i]),
                    "low": float(estimate.human_only_low[i]),
                    "high": float(estimate.human_only_high[i]),
                    "width": human_width,
                },
                "effective_n": n * (human_width / width) ** 2 if width > 0 else None,
            }
        )
    missing_judge = len(population) - len(compared)
    notes = list(estimate.notes)
    if missing_judge:
        notes.append(
            f"{missing_judge} comparisons without a judge vote are left out: the ratings stand "
            "for the comparisons the judge voted on"
        )
    unrated = len(drawn) - len(human)
    if unrated:
        notes.append(
            f"{unrated} drawn comparisons have no human vote yet: the estimate assumes that "
            "which were voted on first does not depend on the votes"
        )
    return {
        "job": job.name,
        "judge": voter,
        "question": question,
        "alpha": alpha,
        "design": {
            "kind": design.kind,
            "seed": design.seed,
            "population": len(population),
            "drawn": len(drawn),
            "inclusion": design.inclusion,
        },
        "n_labelled": n,
        "n_comparisons": estimate.n_comparisons,
        "human_votes": sum(raters.values()),
        "lam": float(estimate.lam),
        "agreement": {
            "value": float(np.mean(same_side)),
            "matched": int(same_side.sum()),
            "total": int(same_side.size),
        },
        "systems": rows,
        "notes": notes,
    }


def pairwise_ppi_panel(
    *, job: RatingJob, judge: str | None, question: str | None
) -> dict[str, Any]:
    """The job page's panel: the judges and questions to choose from, and the ratings of the
    chosen (default: the first judge with votes, the first question) or why they are refused."""
    judges = job_judges(job)
    questions = job_questions(job)
    chosen_judge = judge or (judges[0] if judges else "")
    chosen_question = question or (questions[0] if questions else "")
    context: dict[str, Any] = {
        "job": job,
        "judges": judges,
        "questions": questions,
        "judge": chosen_judge,
        "question": chosen_question,
        "result": None,
        "error": "",
    }
    if not chosen_judge:
        context["error"] = "no judge has voted in the job's campaign yet"
        return context
    try:
        context["result"] = pairwise_ppi(job=job, judge=chosen_judge, question=chosen_question)
    except PPIError as exc:
        context["error"] = exc.message
    return context
