"""How many human ratings are still needed: planning, stopping rule, adaptive allocation, evidence.

Planning (before a study)
-------------------------
From a pilot — human scores Y and predictor scores Ŷ on n rated units, Ŷ on the unrated ones —
the variance of each estimator as a function of the number m of human ratings out of N units
(PPI++, Angelopoulos, Duchi & Zrnic 2023, §2, mean case, with N − m unrated units; σ² population
variances, c = Cov(Y, Ŷ), ρ their correlation, k = 1 + m/(N − m)):

* human-only: ``V(m) = σ²_Y / m``;
* prediction-powered at the tuned λ: ``V(m) = min_{λ∈[0,1]} (σ²_Y − 2λc + λ²σ²_Ŷ·k) / m``,
  i.e. ``σ²_Y (1 − ρ²/k) / m`` while the unclipped λ* = c/(k·σ²_Ŷ) lies in [0, 1]; at m = N
  nothing is left unrated and it is the human-only variance.

An interval of level 1 − α is ``2·z_{1−α/2}·sqrt(V(m))`` wide; the ratings needed for a target width
are the smallest m with that width at most the target. ``V(m)`` decreases in m, so a bisection
finds it; for PPI it cannot exceed N (every unit rated), and None says the target is out of reach.

Stopping rule (during a study)
------------------------------
Each system's current estimate has a standard error se from its n human ratings. Assuming the
per-rating variance stays what it is now, ``se(m) = se·sqrt(n/m)`` (exact for the human-only
estimate, and for PPI when n ≪ N), which projects the ratings still needed:

* ``width``: every system's interval at most ``target_width`` wide — system k needs
  ``n_k·(width_k/target)²`` ratings;
* ``separated``: every adjacent pair of systems (ordered by estimate) has disjoint intervals,
  ``z·(se_a + se_b) < |θ̂_a − θ̂_b|`` — both systems of a pair need their ratings multiplied by
  ``(z(se_a + se_b)/gap)²``; a system takes the largest factor of its two pairs. The projection
  assumes the gaps stay as estimated; a zero gap cannot be projected (None);
* ``budget``: at most ``budget`` human ratings in all.

Progress is the share of the projected total already done, ``Σ n_k / Σ max(n_k, needed_k)``
(for ``separated`` with an unprojectable pair, the share of adjacent pairs separated; for
``budget``, ratings spent / budget).

Adaptive allocation (rounds)
----------------------------
Cells are systems, or strata of a system (e.g. judge-confidence bins); a system's variance is the
stratified sum ``Σ_c (N_c/N_k)² σ²_c / n_c`` (+ a fixed part, the PPI imputed term). Greedily, one
rating at a time: take the interval of interest that is widest — the widest system interval
(``width``), or the adjacent pair furthest from separation, largest ``z(se_a + se_b)/gap``
(``separated``) — and give the rating to the cell of that system (pair) whose next rating shrinks
it most (a cell's gain is ``(N_c/N_k)² σ²_c (1/n_c − 1/(n_c + 1))``: greedy Neyman allocation).
It stops at the budget, when every interval of interest is met, or when the cells run out of
unrated units. The next round rates ``m_c`` units drawn uniformly without replacement from the
``R_c = N_c − n_c`` unrated units of each cell: the round's probability is ``m_c / R_c`` and the
cumulative inclusion probability of every rated unit of the cell becomes ``(n_c + m_c)/N_c``
— the π the sampler records and :func:`metrics.analysis.ppi.ppi_mean` takes. Within a cell
the rated units are then a simple random sample, which is what the estimate relies on; the
round sizes depend on earlier ratings, a data-dependent stopping that adds a small bias of
order 1/n to a fixed-n analysis (Zrnic & Candès 2024, §4, treat it exactly with martingale
intervals; at the sample sizes here the simulations below show coverage holds).

Evidence
--------
:func:`coverage_simulation` draws synthetic studies with a known mean and four predictors —
``useless`` (independent noise), ``medium`` (ρ ≈ 0.6), ``near_perfect`` (ρ ≈ 0.99) and ``biased``
(shifted by +0.5 and shrunk, ρ ≈ 0.9) — and reports how often the intervals cover the truth.

Public API
----------
``Pilot.from_ratings(y, yhat, yhat_unlabelled, *, n_units=None) -> Pilot``;
``Pilot.variance_human_only(m)``, ``Pilot.variance_ppi(m)``, ``Pilot.width_human_only(m, alpha)``,
``Pilot.width_ppi(m, alpha)`` (vectorised over m: the width-against-ratings plot)
``ratings_needed(pilot, *, target_width, alpha=0.1) -> RatingsNeeded``
``stopping_status(rule, systems) -> StoppingStatus`` with ``StoppingRule``, ``SystemState``
``allocate_round(cells, *, budget, objective="width", estimates=None, target_width=None,
fixed_variance=None, alpha=0.1) -> Allocation`` with ``Cell``
``coverage_simulation(judge, *, n, n_units, repetitions, alpha=0.1, seed=0, bootstrap_samples=0)
-> Coverage``; ``synthetic_scores(rng, judge, repetitions, n_units)``
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from metrics.analysis.ppi import mean_estimate, mean_lambda, z_value

Objective = Literal["width", "separated"]
RuleKind = Literal["width", "separated", "budget"]
Judge = Literal["useless", "medium", "near_perfect", "biased"]
JUDGES: tuple[Judge, ...] = ("useless", "medium", "near_perfect", "biased")


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pilot:
    """Per-unit variances from a pilot: Var(Y), Cov(Y, Ŷ), Var(Ŷ) and the population size N."""

    var_y: float
    cov: float
    var_yhat: float
    n_units: int

    @classmethod
    def from_ratings(
        cls,
        y: np.ndarray | Sequence[float],
        yhat: np.ndarray | Sequence[float],
        yhat_unlabelled: np.ndarray | Sequence[float],
        *,
        n_units: int | None = None,
    ) -> Pilot:
        """``n_units``: the study's size N when it differs from the pilot's (rated + unrated)."""
        y_, yhat_ = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
        unlabelled = np.asarray(yhat_unlabelled, dtype=float)
        if y_.ndim != 1 or y_.shape != yhat_.shape or y_.size < 2:
            raise ValueError(
                "the pilot needs ≥ 2 rated units with a human and a predictor score each"
            )
        if unlabelled.ndim != 1:
            raise ValueError("yhat_unlabelled: the predictor on the unrated units, 1-D")
        cov = float(np.mean((y_ - y_.mean()) * (yhat_ - yhat_.mean())))
        var_yhat = float(np.concatenate([yhat_, unlabelled]).var())
        return cls(float(y_.var()), cov, var_yhat, n_units or y_.size + unlabelled.size)

    @property
    def rho(self) -> float:
        denominator = math.sqrt(self.var_y * self.var_yhat)
        return self.cov / denominator if denominator > 0 else 0.0

    def variance_human_only(self, m: np.ndarray | float) -> np.ndarray:
        return self.var_y / np.asarray(m, dtype=float)

    def variance_ppi(self, m: np.ndarray | float) -> np.ndarray:
        m_ = np.asarray(m, dtype=float)
        if np.any((m_ < 1) | (m_ > self.n_units)):
            raise ValueError(f"the number of ratings must be in [1, {self.n_units}]")
        unrated = self.n_units - m_
        with np.errstate(divide="ignore", invalid="ignore"):
            inflation = np.where(unrated > 0, 1.0 + m_ / unrated, np.inf)
            lam = np.where(
                (unrated > 0) & (self.var_yhat > 0),
                np.clip(self.cov / (inflation * self.var_yhat), 0.0, 1.0),
                0.0,
            )
            imputed = np.where(lam > 0, lam**2 * self.var_yhat * inflation, 0.0)
        return (self.var_y - 2 * lam * self.cov + imputed) / m_

    def width_human_only(self, m: np.ndarray | float, alpha: float = 0.1) -> np.ndarray:
        return 2 * z_value(alpha) * np.sqrt(self.variance_human_only(m))

    def width_ppi(self, m: np.ndarray | float, alpha: float = 0.1) -> np.ndarray:
        return 2 * z_value(alpha) * np.sqrt(self.variance_ppi(m))


@dataclass(frozen=True)
class RatingsNeeded:
    """Human ratings for the target width: human-only, and with the predictor (None: > N)."""

    human_only: int
    ppi: int | None
    target_width: float
    rho: float

    @property
    def saving(self) -> float | None:
        """Share of the human-only ratings that the predictor saves."""
        return None if self.ppi is None else 1.0 - self.ppi / self.human_only


def ratings_needed(pilot: Pilot, *, target_width: float, alpha: float = 0.1) -> RatingsNeeded:
    if not target_width > 0:
        raise ValueError(f"target_width must be positive, got {target_width}")
    half = target_width / (2 * z_value(alpha))
    human_only = max(2, math.ceil(pilot.var_y / half**2))
    ppi: int | None
    if float(pilot.variance_ppi(pilot.n_units)) > half**2:
        ppi = None
    else:
        low, high = 1, pilot.n_units  # variance_ppi(high) ≤ half² < variance_ppi(low) or low done
        if float(pilot.variance_ppi(low)) <= half**2:
            high = low
        while high - low > 1:
            mid = (low + high) // 2
            if float(pilot.variance_ppi(mid)) <= half**2:
                high = mid
            else:
                low = mid
        ppi = max(2, high)
    return RatingsNeeded(human_only, ppi, target_width, pilot.rho)


# --------------------------------------------------------------------------------------------
# Stopping rule
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemState:
    """A system's current estimate, its standard error and its number of human ratings."""

    system: str
    estimate: float
    se: float
    n: int


@dataclass(frozen=True)
class StoppingRule:
    kind: RuleKind
    target_width: float | None = None
    budget: int | None = None
    alpha: float = 0.1

    def __post_init__(self) -> None:
        if self.kind == "width" and not (self.target_width and self.target_width > 0):
            raise ValueError("a 'width' stopping rule needs a positive target_width")
        if self.kind == "budget" and not (self.budget and self.budget > 0):
            raise ValueError("a 'budget' stopping rule needs a positive budget")
        if self.kind not in ("width", "separated", "budget"):
            raise ValueError(f"unknown stopping rule {self.kind!r}")


@dataclass(frozen=True)
class StoppingStatus:
    """``still_needed``: projected further ratings in all (None when it cannot be projected);
    ``needed_per_system``: projected further ratings per system."""

    met: bool
    progress: float
    still_needed: int | None
    needed_per_system: dict[str, int | None]


def _separation_factors(systems: Sequence[SystemState], z: float) -> tuple[np.ndarray, int, int]:
    """Per system the factor its ratings must grow by for its adjacent pairs to separate
    (inf when a gap is zero), the number of adjacent pairs and how many are separated."""
    order = sorted(range(len(systems)), key=lambda i: -systems[i].estimate)
    factor = np.ones(len(systems))
    separated = 0
    for a, b in zip(order, order[1:], strict=False):
        gap = abs(systems[a].estimate - systems[b].estimate)
        reach = z * (systems[a].se + systems[b].se)
        if reach < gap:
            separated += 1
        needed = (reach / gap) ** 2 if gap > 0 else math.inf
        factor[a] = max(factor[a], needed)
        factor[b] = max(factor[b], needed)
    return factor, len(systems) - 1, separated


def stopping_status(rule: StoppingRule, systems: Sequence[SystemState]) -> StoppingStatus:
    if not systems:
        raise ValueError("no systems to evaluate the stopping rule on")
    for s in systems:
        if s.n < 1 or not (math.isfinite(s.se) and s.se >= 0):
            raise ValueError(f"system {s.system!r}: needs ≥ 1 rating and a finite standard error")
    spent = sum(s.n for s in systems)
    if rule.kind == "budget":
        assert rule.budget is not None
        left = max(0, rule.budget - spent)
        return StoppingStatus(spent >= rule.budget, min(1.0, spent / rule.budget), left, {})
    z = z_value(rule.alpha)
    if rule.kind == "width":
        assert rule.target_width is not None
        factor = np.array([(2 * z * s.se / rule.target_width) ** 2 for s in systems])
        met = bool(np.all(2 * z * np.array([s.se for s in systems]) <= rule.target_width))
        pairs_done = None
    else:
        if len(systems) < 2:
            return StoppingStatus(True, 1.0, 0, {systems[0].system: 0})
        factor, pairs, separated = _separation_factors(systems, z)
        met = separated == pairs
        pairs_done = separated / pairs
    per_system: dict[str, int | None] = {}
    total_projected = 0.0
    for s, f in zip(systems, factor, strict=True):
        if math.isinf(f):
            per_system[s.system] = None
            continue
        needed = max(s.n, math.ceil(s.n * f - 1e-9))
        per_system[s.system] = needed - s.n
        total_projected += needed
    if met:
        return StoppingStatus(True, 1.0, 0, dict.fromkeys(per_system, 0))
    if any(v is None for v in per_system.values()):
        assert pairs_done is not None
        return StoppingStatus(False, pairs_done, None, per_system)
    still = sum(v for v in per_system.values() if v is not None)
    return StoppingStatus(False, spent / total_projected, still, per_system)


# --------------------------------------------------------------------------------------------
# Adaptive allocation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """A system, or one stratum of it: its population N_c, rated n_c, per-rating variance σ²_c.

    σ²_c is the variance of what one rating adds — Var(Y − λŶ) for the prediction-powered
    estimate, Var(Y) for the human-only one — over the cell's rated units.
    """

    system: str
    population: int
    labelled: int
    unit_variance: float
    stratum: str = ""


@dataclass(frozen=True)
class Allocation:
    """Ratings to add per (system, stratum), the round's sampling probability m_c/(N_c − n_c),
    the cumulative inclusion probability (n_c + m_c)/N_c to record for every rated unit of the
    cell, each system's projected interval width, and whether the objective is projected met."""

    counts: dict[tuple[str, str], int]
    round_probability: dict[tuple[str, str], float]
    inclusion_probability: dict[tuple[str, str], float]
    projected_width: dict[str, float]
    projected_met: bool


def allocate_round(
    cells: Sequence[Cell],
    *,
    budget: int,
    objective: Objective = "width",
    estimates: Mapping[str, float] | None = None,
    target_width: float | None = None,
    fixed_variance: Mapping[str, float] | None = None,
    alpha: float = 0.1,
) -> Allocation:
    """Greedy allocation of the next round's ``budget`` human ratings (see the module docstring).

    ``projected_met`` says whether the intervals after the round are projected to meet the
    objective (for ``width``, only with a ``target_width``).

    ``estimates`` (per system) are needed for ``objective="separated"``; ``target_width`` ends a
    ``width`` allocation early once every interval is that narrow (otherwise the whole budget
    goes to the widest intervals).
    """
    if budget < 0:
        raise ValueError(f"budget must be ≥ 0, got {budget}")
    z = z_value(alpha)
    for c in cells:
        if c.labelled < 1 or c.population < c.labelled or not c.unit_variance >= 0:
            raise ValueError(
                f"cell {c.system!r}/{c.stratum!r}: needs 1 ≤ labelled ≤ population and a "
                "non-negative unit variance (rate a pilot first)"
            )
    systems = sorted({c.system for c in cells})
    if objective == "separated":
        if estimates is None or set(systems) - set(estimates):
            raise ValueError("objective 'separated' needs an estimate for every system")
    elif objective != "width":
        raise ValueError(f"unknown objective {objective!r}")
    fixed = dict(fixed_variance or {})
    index = {s: i for i, s in enumerate(systems)}
    sys_of = np.array([index[c.system] for c in cells])
    size = np.array([c.population for c in cells], dtype=float)
    n = np.array([c.labelled for c in cells], dtype=float)
    sigma2 = np.array([c.unit_variance for c in cells])
    share = size / np.bincount(sys_of, weights=size, minlength=len(systems))[sys_of]
    coefficient = share**2 * sigma2
    base = np.array([fixed.get(s, 0.0) for s in systems])
    added = np.zeros(len(cells), dtype=int)

    def system_se(counts: np.ndarray) -> np.ndarray:
        var = np.bincount(sys_of, weights=coefficient / counts, minlength=len(systems)) + base
        return np.sqrt(var)

    order = (
        sorted(range(len(systems)), key=lambda i: -(estimates or {})[systems[i]])
        if objective == "separated"
        else []
    )

    def objective_met(se: np.ndarray) -> bool:
        if objective == "width":
            return target_width is not None and bool(np.all(2 * z * se <= target_width))
        assert estimates is not None
        return all(
            z * (se[a] + se[b]) < abs(estimates[systems[a]] - estimates[systems[b]])
            for a, b in zip(order, order[1:], strict=False)
        )

    for _ in range(budget):
        current = n + added
        open_cell = current < size
        se = system_se(current)
        if objective_met(se):
            break
        gain = np.where(open_cell, coefficient * (1 / current - 1 / (current + 1)), -1.0)
        if objective == "width":
            has_room = np.bincount(sys_of, weights=open_cell, minlength=len(systems)) > 0
            if not has_room.any():
                break
            target = int(np.argmax(np.where(has_room, se, -1.0)))
            candidates = sys_of == target
        else:
            assert estimates is not None
            worst, worst_ratio = None, -1.0
            for a, b in zip(order, order[1:], strict=False):
                gap = abs(estimates[systems[a]] - estimates[systems[b]])
                ratio = z * (se[a] + se[b]) / gap if gap > 0 else math.inf
                pair_open = bool(np.any(open_cell & ((sys_of == a) | (sys_of == b))))
                if ratio >= 1.0 and pair_open and ratio > worst_ratio:
                    worst, worst_ratio = (a, b), ratio
            if worst is None:
                break
            candidates = (sys_of == worst[0]) | (sys_of == worst[1])
            # se_a + se_b shrinks by ≈ gain / (2·se) of the cell's system: d√V = dV / (2√V)
            gain = np.where(gain > 0, gain / (2 * se[sys_of]), gain)
        choice = int(np.argmax(np.where(candidates, gain, -np.inf)))
        if gain[choice] < 0:
            break
        added[choice] += 1
    final_se = system_se(n + added)
    keys = [(c.system, c.stratum) for c in cells]
    return Allocation(
        counts={k: int(m) for k, m in zip(keys, added, strict=True)},
        round_probability={
            k: (float(m / (c.population - c.labelled)) if c.population > c.labelled else 0.0)
            for k, m, c in zip(keys, added, cells, strict=True)
        },
        inclusion_probability={
            k: float((c.labelled + m) / c.population)
            for k, m, c in zip(keys, added, cells, strict=True)
        },
        projected_width={s: float(2 * z * final_se[i]) for s, i in index.items()},
        projected_met=objective_met(final_se),
    )


# --------------------------------------------------------------------------------------------
# Coverage by simulation
# --------------------------------------------------------------------------------------------

TRUE_MEAN = 3.0


def synthetic_scores(
    rng: np.random.Generator, judge: Judge, repetitions: int, n_units: int, mean: float = TRUE_MEAN
) -> tuple[np.ndarray, np.ndarray]:
    """Human scores Y and predictor scores Ŷ, (repetitions, n_units), with E[Y] = ``mean``.

    Y = mean + q + ε, q ~ N(0, 0.8²) the unit's quality, ε ~ N(0, 0.6²) the rating noise.
    """
    quality = rng.normal(scale=0.8, size=(repetitions, n_units))
    y = mean + quality + rng.normal(scale=0.6, size=(repetitions, n_units))
    if judge == "useless":
        yhat = mean + rng.normal(size=(repetitions, n_units))
    elif judge == "medium":
        yhat = mean + quality + rng.normal(scale=0.9, size=(repetitions, n_units))
    elif judge == "near_perfect":
        yhat = y + rng.normal(scale=0.15, size=(repetitions, n_units))
    elif judge == "biased":
        yhat = mean + 0.5 + 0.6 * (y - mean) + rng.normal(scale=0.2, size=(repetitions, n_units))
    else:
        raise ValueError(f"unknown judge {judge!r}; one of {JUDGES}")
    return y, yhat


@dataclass(frozen=True)
class Coverage:
    """Share of repetitions whose 1 − α interval covers the truth, mean widths, mean n_eff/n."""

    judge: str
    repetitions: int
    n: int
    n_units: int
    ppi: float
    human_only: float
    bootstrap: float | None
    width_ppi: float
    width_human_only: float
    effective_n_ratio: float
    predictor_bias: float


def coverage_simulation(
    judge: Judge,
    *,
    n: int,
    n_units: int,
    repetitions: int,
    alpha: float = 0.1,
    seed: int = 0,
    bootstrap_samples: int = 0,
) -> Coverage:
    """Repeatedly draw a study, rate a random n of its N units, and check the intervals.

    The units are exchangeable, so the first n of each draw are the random subset. The PPI
    figures come from the same kernel :func:`metrics.analysis.ppi.ppi_mean` runs, batched.
    """
    if not 2 <= n < n_units:
        raise ValueError(f"need 2 ≤ n < n_units, got {n} and {n_units}")
    z = z_value(alpha)
    rng = np.random.default_rng(seed)
    y_all, yhat_all = synthetic_scores(rng, judge, repetitions, n_units)
    y, yhat, unlabelled = y_all[:, :n], yhat_all[:, :n], yhat_all[:, n:]
    lam = mean_lambda(y, yhat, unlabelled)
    estimate, se = mean_estimate(y, yhat, unlabelled, lam)
    classical, classical_se = mean_estimate(y, yhat, unlabelled, np.zeros(repetitions))
    covered = np.abs(estimate - TRUE_MEAN) <= z * se
    classical_covered = np.abs(classical - TRUE_MEAN) <= z * classical_se
    boot: float | None = None
    if bootstrap_samples > 0:
        hits = 0
        for r in range(repetitions):
            drawn = rng.integers(0, n, size=(bootstrap_samples, n))
            drawn_u = rng.integers(0, n_units - n, size=(bootstrap_samples, n_units - n))
            yb, yhb, ub = y[r][drawn], yhat[r][drawn], unlabelled[r][drawn_u]
            reps = mean_estimate(yb, yhb, ub, mean_lambda(yb, yhb, ub))[0]
            low, high = np.percentile(reps, [50 * alpha, 100 - 50 * alpha])
            hits += int(low <= TRUE_MEAN <= high)
        boot = hits / repetitions
    return Coverage(
        judge=judge,
        repetitions=repetitions,
        n=n,
        n_units=n_units,
        ppi=float(covered.mean()),
        human_only=float(classical_covered.mean()),
        bootstrap=boot,
        width_ppi=float(np.mean(2 * z * se)),
        width_human_only=float(np.mean(2 * z * classical_se)),
        effective_n_ratio=float(np.mean(classical_se**2 / se**2)),
        predictor_bias=float(np.mean(yhat_all.mean(1)) - TRUE_MEAN),
    )
