"""How a rating job chose the dialogues it rates: the sampling design a prediction-powered
estimate needs (issue 28, ``metrics.analysis.ppi``).

The estimate is unbiased only when the rated dialogues were drawn at random with known inclusion
probabilities π. The job's sampler (``draw_sample``) records, when it draws, the pool it drew from
and each dialogue's π (:func:`sample_inclusion`); a job that runs in rounds adds each round's
cumulative π per system (``RatingRound``). A job without a sample rates all its dialogues: once
all are rated the human scores are a census (nothing left for a predictor to add), before that
the rated ones are those the raters reached first, not a random subset.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from annotation.models import GoldItem, RatingJob
from annotation.selectors.rating import draw_sample, job_dialogues, job_source_dialogues

DesignKind = Literal["random", "rounds", "census", "unknown"]


def sample_inclusion(
    candidates: Iterable[tuple[int, str, int | None]], *, size: int
) -> dict[int, float | None]:
    """Each candidate's probability of being in ``draw_sample(candidates, size=size, seed=s)``
    over the seed s — None where it has no closed form.

    Per system of N_k dialogues: all of them when N_k ≤ size (π = 1); without scenarios a
    simple random sample (π = size/N_k). With scenarios the draw takes one dialogue per scenario
    in one order shared by every system, scenarios that more systems have first and ties in a
    random order: when each of a system's dialogues is on its own scenario, a scenario in a
    coverage class of k scenarios after b of higher coverage is drawn with π = 1 (b + k ≤ size),
    (size − b)/k (b < size < b + k) or 0 (b ≥ size: never drawn). Other layouts (several
    dialogues on one scenario, dialogues without a scenario beside ones with) are left None.
    """
    rows = sorted(candidates)
    by_system: dict[str, list[tuple[int, int | None]]] = defaultdict(list)
    for pk, system, scenario in rows:
        by_system[system].append((pk, scenario))
    no_scenarios = all(scenario is None for _, _, scenario in rows)
    coverage = Counter(
        scenario
        for dialogues in by_system.values()
        for scenario in {s for _, s in dialogues if s is not None}
    )
    result: dict[int, float | None] = {}
    for dialogues in by_system.values():
        pks = [pk for pk, _ in dialogues]
        if size >= len(pks):
            result.update(dict.fromkeys(pks, 1.0))
            continue
        if no_scenarios:
            result.update(dict.fromkeys(pks, size / len(pks)))
            continue
        scenarios = [s for _, s in dialogues]
        if None in scenarios or len(set(scenarios)) != len(scenarios):
            result.update(dict.fromkeys(pks, None))
            continue
        classes = Counter(coverage[s] for s in scenarios if s is not None)
        before: dict[int, int] = {}
        running = 0
        for cover in sorted(classes, reverse=True):
            before[cover] = running
            running += classes[cover]
        for pk, scenario in dialogues:
            cover = coverage[scenario]  # type: ignore[index]  # checked above: not None
            b, k = before[cover], classes[cover]
            result[pk] = 1.0 if b + k <= size else max(0, size - b) / k
    return result


def sample_design_record(
    candidates: Iterable[tuple[int, str, int | None]], *, size: int, seed: int
) -> dict[str, object]:
    """What ``RatingJob.sample_design`` keeps for a draw from ``candidates``."""
    rows = list(candidates)
    inclusion = sample_inclusion(rows, size=size)
    return {
        "kind": "random",
        "seed": seed,
        "size": size,
        "population": {str(pk): system for pk, system, _ in rows},
        "inclusion": {str(pk): inclusion[pk] for pk, _, _ in rows},
    }


@dataclass(frozen=True)
class JobDesign:
    """A job's sampling design as the estimate reads it.

    ``population``: dialogue pk → system, the pool the rated dialogues stand for; ``inclusion``:
    each population dialogue's π (None: unknown); ``reason`` says why the design is ``unknown``.
    """

    kind: DesignKind
    population: dict[int, str] = field(default_factory=dict)
    inclusion: dict[int, float | None] = field(default_factory=dict)
    seed: int | None = None
    reason: str = ""


def _candidates(job: RatingJob) -> list[tuple[int, str, int | None]]:
    return list(job_source_dialogues(job).values_list("pk", "backend__name", "scenario_id"))


def job_design(job: RatingJob) -> JobDesign:
    """The job's sampling design (see the module docstring)."""
    if job.sample_size is None:
        rows = job_dialogues(job).values_list("pk", "backend__name")
        population = dict(rows)
        return JobDesign("census", population, dict.fromkeys(population, 1.0))
    if not job.sample:
        return JobDesign("unknown", reason="the job's sample has not been drawn yet")
    design = job.sample_design
    if not design:
        # Drawn before the sampler recorded its design: the draw is reproducible from its seed,
        # so when today's pool gives the same sample the pool has not changed and π follows.
        candidates = _candidates(job)
        if draw_sample(candidates, size=job.sample_size, seed=job.sample_seed) != sorted(
            job.sample
        ):
            return JobDesign(
                "unknown",
                reason=(
                    "the sample was drawn before the sampler recorded its design, and the "
                    "job's dialogues have changed since, so the sample's inclusion "
                    "probabilities cannot be recovered"
                ),
            )
        design = sample_design_record(candidates, size=job.sample_size, seed=job.sample_seed)
    gold = set(GoldItem.objects.filter(job=job).values_list("dialogue_id", flat=True))
    population = {int(pk): system for pk, system in design["population"].items()}
    population = {pk: s for pk, s in population.items() if pk not in gold}
    inclusion: dict[int, float | None] = {
        int(pk): (None if p is None else float(p)) for pk, p in design["inclusion"].items()
    }
    rounds = list(job.rounds.order_by("number"))
    if rounds:
        latest: dict[str, float] = {}
        for r in rounds:
            latest.update({system: float(p) for system, p in r.inclusion.items()})
        # Every rated dialogue of a system carries the system's cumulative π (n + m)/N.
        inclusion = {pk: latest.get(system, inclusion.get(pk)) for pk, system in population.items()}
        return JobDesign("rounds", population, inclusion, design.get("seed"))
    return JobDesign("random", population, inclusion, design.get("seed"))


# --- a pairwise job's comparisons --------------------------------------------------------------


@dataclass(frozen=True)
class PairDesign:
    """How a pairwise job chose the comparisons people vote on, as the prediction-powered
    Bradley–Terry estimate reads it: ``population`` every comparison (a dialogue pair, in the
    pairing's order: the first has the smaller system), ``drawn`` those people were asked about,
    ``inclusion`` each drawn one's π (equal: a simple random sample); ``reason`` says why a
    design is ``census`` or ``unknown``."""

    kind: DesignKind
    population: list[tuple[int, int]] = field(default_factory=list)
    drawn: list[tuple[int, int]] = field(default_factory=list)
    inclusion: float | None = None
    seed: int | None = None
    reason: str = ""


def _keys(rows: Iterable[Iterable[int]]) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in rows]


def pair_design(job: RatingJob) -> PairDesign:
    """A pairwise job's design: ``random`` when it drew a subset of its comparisons
    (``pair_sample_size``, recorded by ``annotation.services.pairwise.pair_sample_draw``),
    ``census`` when it asks about every comparison, ``unknown`` before the draw."""
    if job.pair_sample_size is None:
        return PairDesign(
            "census",
            reason="the job asks people about every comparison (no pair_sample_size), so "
            "there are no unrated comparisons for a judge to add",
        )
    design = job.pair_design
    if not design:
        return PairDesign("unknown", reason="the job's comparisons have not been drawn yet")
    population, drawn = _keys(design["population"]), _keys(design["drawn"])
    inclusion = design.get("inclusion")
    if len(drawn) >= len(population):
        return PairDesign(
            "census",
            population,
            drawn,
            1.0,
            design.get("seed"),
            reason=f"the draw took all {len(population)} comparisons (pair_sample_size "
            f"{design.get('size')}), so there are no unrated comparisons for a judge to add",
        )
    return PairDesign(
        "random",
        population,
        drawn,
        None if inclusion is None else float(inclusion),
        design.get("seed"),
    )
