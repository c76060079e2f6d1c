"""A rating job in rounds, with a stopping rule chosen up front (issue 28).

The rule (``RatingJob.stopping_rule``) is set while the job is a draft: a target interval width
per system, every adjacent pair of systems separated, or a budget of human ratings; the size of
each round; and optionally the predictor whose prediction-powered estimate the rule watches (else
the human-only estimate). The first round is the job's sample (``sample_size`` dialogues per
system, drawn per system at random when the job opens). Each later round, once the previous one
is rated:

1. the current estimate per system (``metrics.services.ppi``) gives its standard error and the
   per-rating variance — Var(Y − λŶ) with the predictor, Var(Y) without;
2. :func:`metrics.analysis.ppi_planning.stopping_status` says whether the rule is met (then
   nothing more is drawn: the job stops assigning) and projects the ratings still needed;
3. otherwise :func:`metrics.analysis.ppi_planning.allocate_round` splits the round's ratings over
   the systems (greedy: the widest interval, or the pair furthest from separation, first);
4. each system's share is drawn uniformly without replacement from its dialogues not drawn yet
   (``random.Random`` seeded by the job's sample seed and the round number), the cumulative
   inclusion probability (n + m)/N is recorded (``RatingRound``), and the job's assignments are
   generated for the new dialogues by the usual machinery.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import RatingJob, RatingRound
from annotation.scoring import OVERALL
from annotation.selectors.sampling import job_design
from annotation.services.rating_assignments import assignments_generate
from core.errors import ServiceError
from metrics.analysis.ppi import mean_estimate, mean_lambda, z_value
from metrics.analysis.ppi_planning import (
    Cell,
    StoppingRule,
    SystemState,
    allocate_round,
    stopping_status,
)
from metrics.services.ppi import (
    PPIError,
    Predictor,
    SystemData,
    alpha_check,
    job_ppi_data,
    predictor_check,
    question_check,
)

RULE_KINDS = ("width", "separated", "budget")
MAX_ROUND_SIZE = 100_000
MAX_BUDGET = 10_000_000


def stopping_rule_set(
    *,
    job: RatingJob,
    kind: str,
    round_size: int,
    first_round: int,
    target_width: float | None = None,
    budget: int | None = None,
    alpha: float = 0.1,
    question: str = OVERALL,
    run_ids: Sequence[int] = (),
    predictor: Sequence[str] = (),
) -> RatingJob:
    """Make a job run in rounds under a stopping rule (see the module docstring).

    A draft job draws its first round (``first_round`` per system) when it opens. A job that
    already drew a simple random sample per system (equal inclusion probabilities within each
    system, no rule yet) keeps that sample as its first round — the researcher with a random
    20 % rated sets a target and the job goes on from there; ``first_round`` is then ignored."""
    if job.is_pairwise:
        raise PPIError("a pairwise job's answers are votes and cannot run in rounds", field="kind")
    continuing = _continuing_design(job)
    if job.is_live:
        raise PPIError("a live job rates while chatting and cannot run in rounds", field="kind")
    if kind not in RULE_KINDS:
        raise PPIError(f"must be one of {', '.join(RULE_KINDS)}", field="kind")
    for name, value, high in (
        ("round_size", round_size, MAX_ROUND_SIZE),
        ("first_round", first_round, MAX_ROUND_SIZE),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= high:
            raise PPIError(f"must be a whole number from 2 to {high}", field=name)
    try:
        rule = StoppingRule(
            kind=kind,  # type: ignore[arg-type]  # checked against RULE_KINDS above
            target_width=target_width,
            budget=budget,
            alpha=alpha,
        )
    except ValueError as exc:
        raise PPIError(str(exc), field="target_width" if kind == "width" else "budget") from None
    if budget is not None and not 1 <= budget <= MAX_BUDGET:
        raise PPIError(f"must be from 1 to {MAX_BUDGET}", field="budget")
    if target_width is not None and not 0 < target_width < 1e6:
        raise PPIError("must be a positive number", field="target_width")
    alpha = alpha_check(alpha)
    question = question_check(job=job, question=question)
    checked: Predictor | None = None
    if predictor:
        checked = predictor_check(run_ids=run_ids, metrics=list(predictor))
    job.stopping_rule = {
        "kind": rule.kind,
        "target_width": target_width,
        "budget": budget,
        "alpha": alpha,
        "round_size": round_size,
        "question": question,
        "runs": list(checked.run_ids) if checked else [],
        "predictor": list(checked.metrics) if checked else [],
    }
    if continuing is not None:
        job.sample_design = continuing
        job.save(update_fields=["stopping_rule", "sample_design"])
        return job
    job.sample_size = first_round
    job.sample = []
    job.sample_design = {}
    job.save(update_fields=["stopping_rule", "sample_size", "sample", "sample_design"])
    return job


def _continuing_design(job: RatingJob) -> dict[str, Any] | None:
    """None for a draft job (its first round is drawn when it opens); for a job past its
    draft, the sample design its rounds continue from, or PPIError saying why they cannot."""
    if job.status == RatingJob.Status.DRAFT:
        return None
    if job.stopping_rule:
        raise PPIError("the job already runs in rounds; its rule was chosen up front", field="kind")
    design = job_design(job)
    refusal = (
        "the stopping rule is chosen before the job opens, or on a job that drew a simple "
        "random sample per system (which its rounds then continue); "
    )
    if design.kind != "random":
        raise PPIError(
            refusal + f"this job's sampling is {design.kind} {design.reason}".strip(),
            field="kind",
        )
    per_system: dict[str, set[float | None]] = {}
    for pk, system in design.population.items():
        per_system.setdefault(system, set()).add(design.inclusion.get(pk))
    uneven = sorted(system for system, values in per_system.items() if len(values) != 1)
    if uneven or any(None in v or 0.0 in v for v in per_system.values()):
        raise PPIError(
            refusal + "this job's scenario-paired draw gave unequal inclusion probabilities "
            f"within {', '.join(uneven) or 'a system'}",
            field="kind",
        )
    return {
        "kind": "random",
        "seed": design.seed,
        "size": job.sample_size,
        "population": {str(pk): system for pk, system in design.population.items()},
        "inclusion": {str(pk): design.inclusion[pk] for pk in design.population},
    }


def _rule(job: RatingJob) -> StoppingRule:
    spec = job.stopping_rule
    return StoppingRule(
        kind=spec["kind"],
        target_width=spec.get("target_width"),
        budget=spec.get("budget"),
        alpha=float(spec.get("alpha", 0.1)),
    )


def _predictor(job: RatingJob) -> Predictor | None:
    spec = job.stopping_rule
    if not spec.get("predictor"):
        return None
    return Predictor(tuple(spec["runs"]), tuple(spec["predictor"]))


def _system_variances(data: SystemData, use_predictor: bool) -> tuple[float, float, float, float]:
    """(estimate, se, per-rating variance, fixed variance) of one system's current estimate."""
    if use_predictor and data.yhat_unlabelled.size:
        lam = float(mean_lambda(data.y, data.yhat, data.yhat_unlabelled))
        estimate, se = mean_estimate(data.y, data.yhat, data.yhat_unlabelled, lam)
        unit = float(np.var(data.y - lam * data.yhat))
        fixed = float(np.var(lam * data.yhat_unlabelled) / data.yhat_unlabelled.size)
        return float(estimate), float(se), unit, fixed
    unit = float(np.var(data.y))
    return float(data.y.mean()), float(np.sqrt(unit / data.y.size)), unit, 0.0


def rounds_status(*, job: RatingJob) -> dict[str, Any]:
    """Where a job in rounds stands: each system's estimate, the rule's progress and projection,
    the rounds so far, and what blocks the next round (rating still going on, the rule met)."""
    if not job.stopping_rule:
        raise PPIError("this job does not run in rounds (it has no stopping rule)", field="job")
    rule = _rule(job)
    predictor = _predictor(job)
    rounds = [
        {"number": r.number, "counts": r.counts, "inclusion": r.inclusion, "at": r.created_at}
        for r in job.rounds.order_by("number")
    ]
    status: dict[str, Any] = {
        "rule": job.stopping_rule,
        "rounds": rounds,
        "drawn": len(job.sample),
        "systems": [],
        "met": False,
        "progress": 0.0,
        "still_needed": None,
        "blocked": "",
    }
    if not job.sample:
        status["blocked"] = "the first round is drawn when the job opens"
        return status
    if predictor is None:
        predictor = Predictor((), ())
    design, systems, refusal = job_ppi_data(
        job=job,
        question=job.stopping_rule["question"],
        predictor=predictor,
    )
    pending = sum(d.sampled_unrated for d in systems)
    states, cells, fixed, estimates = [], [], {}, {}
    for data in systems:
        if data.y.size < 2:
            status["systems"].append({"system": data.system, "n": int(data.y.size)})
            continue
        estimate, se, unit, fixed_var = _system_variances(data, bool(predictor.metrics))
        states.append(SystemState(data.system, estimate, se, int(data.y.size)))
        sampled = data.y.size + data.sampled_unrated
        cells.append(Cell(data.system, data.population, int(sampled), unit))
        fixed[data.system] = fixed_var
        estimates[data.system] = estimate
        status["systems"].append(
            {
                "system": data.system,
                "n": int(data.y.size),
                "drawn": int(sampled),
                "population": data.population,
                "estimate": estimate,
                "se": se,
                "width": 2 * se * z_value(rule.alpha),
            }
        )
    status["pending"] = pending
    status["refused"] = refusal
    if not states or len(states) < len(systems):
        status["blocked"] = (
            f"{pending} drawn dialogue(s) are still being rated"
            if pending
            else "every system needs at least 2 rated dialogues before the next round"
        )
        return status
    result = stopping_status(rule, states)
    status.update(
        met=result.met,
        progress=result.progress,
        still_needed=result.still_needed,
        needed_per_system=result.needed_per_system,
    )
    status["_cells"], status["_fixed"], status["_estimates"] = cells, fixed, estimates
    if result.met:
        status["blocked"] = "the stopping rule is met: no more ratings are needed"
    elif pending:
        status["blocked"] = f"{pending} drawn dialogue(s) are still being rated"
    return status


def public_status(status: dict[str, Any]) -> dict[str, Any]:
    """The status without the allocation's working data (for pages and the API)."""
    return {k: v for k, v in status.items() if not k.startswith("_")}


@transaction.atomic
def round_draw(*, job: RatingJob, created_by: User | None = None) -> RatingRound:
    """Draw the next round (see the module docstring) and generate its assignments."""
    job = RatingJob.objects.select_for_update().get(pk=job.pk)
    if job.status != RatingJob.Status.OPEN:
        raise PPIError("the job is not open", field="job")
    status = rounds_status(job=job)
    if status["blocked"]:
        raise PPIError(status["blocked"], field="job")
    rule = _rule(job)
    size = int(job.stopping_rule["round_size"])
    if rule.kind == "budget":
        assert rule.budget is not None
        size = min(size, max(0, rule.budget - sum(s["n"] for s in status["systems"])))
    allocation = allocate_round(
        status["_cells"],
        budget=size,
        objective="separated" if rule.kind == "separated" else "width",
        estimates=status["_estimates"],
        target_width=rule.target_width,
        fixed_variance=status["_fixed"],
        alpha=rule.alpha,
    )
    if not any(allocation.counts.values()):
        raise PPIError(
            "every system's dialogues are all drawn: nothing is left to rate", field="job"
        )
    population: dict[str, list[int]] = {}
    for pk, system in {int(k): v for k, v in job.sample_design["population"].items()}.items():
        population.setdefault(system, []).append(pk)
    number = job.rounds.count() + 1
    rng = random.Random(f"{job.sample_seed}:{job.pk}:round {number}")
    sampled = set(job.sample)
    added: list[int] = []
    counts, sizes, inclusion = {}, {}, {}
    for (system, _stratum), m in sorted(allocation.counts.items()):
        left = sorted(pk for pk in population[system] if pk not in sampled)
        drawn = sorted(rng.sample(left, min(m, len(left))))
        added += drawn
        counts[system] = len(drawn)
        sizes[system] = len(population[system])
        inclusion[system] = (
            len([pk for pk in population[system] if pk in sampled]) + len(drawn)
        ) / len(population[system])
    job.sample = sorted(sampled | set(added))
    job.save(update_fields=["sample"])
    created = RatingRound.objects.create(
        job=job,
        number=number,
        counts=counts,
        population=sizes,
        inclusion=inclusion,
        dialogues=sorted(added),
        projection={
            "projected_width": allocation.projected_width,
            "projected_met": allocation.projected_met,
            "still_needed": status["still_needed"],
            "progress": status["progress"],
        },
        created_by=created_by,
    )
    assignments_generate(job=job)
    return created


def rounds_panel(job: RatingJob) -> dict[str, Any]:
    """The job page's panel of a job in rounds: the status, or why it cannot be computed."""
    try:
        return {"job": job, "rounds": public_status(rounds_status(job=job)), "error": ""}
    except ServiceError as exc:
        return {"job": job, "rounds": None, "error": str(exc)}
