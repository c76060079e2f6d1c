"""Planning formulas against simulation, the stopping rule, adaptive allocation, coverage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.analysis.ppi import ppi_mean
from metrics.analysis.ppi_planning import (
    JUDGES,
    Cell,
    Pilot,
    StoppingRule,
    SystemState,
    allocate_round,
    coverage_simulation,
    ratings_needed,
    stopping_status,
    synthetic_scores,
)

REPETITIONS = 200


@pytest.mark.parametrize("judge", JUDGES)
def test_90_percent_intervals_cover_the_truth_90_percent_of_the_time(judge: str) -> None:
    result = coverage_simulation(
        judge,  # type: ignore[arg-type]  # JUDGES lists the Literal's values
        n=100,
        n_units=1000,
        repetitions=REPETITIONS,
        seed=5,
    )
    # two-sided 99.9 % binomial acceptance region around 0.9
    low, high = stats.binom.ppf([0.0005, 0.9995], REPETITIONS, 0.9) / REPETITIONS
    assert low <= result.ppi <= high
    assert low <= result.human_only <= high
    if judge == "useless":
        assert result.effective_n_ratio == pytest.approx(1.0, abs=0.05)
    else:
        assert result.width_ppi < result.width_human_only
    if judge == "near_perfect":
        assert result.effective_n_ratio > 5
    if judge == "biased":
        assert result.predictor_bias == pytest.approx(0.5, abs=0.02)


def test_bootstrap_intervals_cover_too() -> None:
    result = coverage_simulation(
        "medium", n=80, n_units=600, repetitions=REPETITIONS, seed=6, bootstrap_samples=200
    )
    assert result.bootstrap is not None
    low, high = stats.binom.ppf([0.0005, 0.9995], REPETITIONS, 0.9) / REPETITIONS
    assert low <= result.bootstrap <= high


def test_simulation_uses_the_same_kernel_as_ppi_mean() -> None:
    rng = np.random.default_rng(0)
    y, yhat = synthetic_scores(rng, "medium", 1, 500)
    direct = ppi_mean(y[0, :60], yhat[0, :60], yhat[0, 60:], bootstrap_samples=0)
    from metrics.analysis.ppi import mean_estimate, mean_lambda

    lam = mean_lambda(y[:, :60], yhat[:, :60], yhat[:, 60:])
    estimate, se = mean_estimate(y[:, :60], yhat[:, :60], yhat[:, 60:], lam)
    assert (float(estimate[0]), float(se[0])) == (direct.ppi.estimate, direct.ppi.se)


# The synthetic study's per-unit moments: Var(Y) = 0.8² + 0.6², Cov(Y, Ŷ), Var(Ŷ).
TRUE_MOMENTS = {"medium": (1.0, 0.64, 0.64 + 0.81), "near_perfect": (1.0, 1.0, 1.0 + 0.15**2)}


@pytest.mark.parametrize("judge", ["medium", "near_perfect"])
def test_planned_widths_match_the_simulated_widths(judge: str) -> None:
    """The variance formula predicts the mean interval width a study with m ratings gets (the
    simulation tunes λ from its own data, which costs a little at small m)."""
    pilot = Pilot(*TRUE_MOMENTS[judge], n_units=2000)
    for m in (100, 400):
        simulated = coverage_simulation(
            judge,  # type: ignore[arg-type]  # JUDGES lists the Literal's values
            n=m,
            n_units=2000,
            repetitions=300,
            seed=m,
        )
        assert float(pilot.width_ppi(m)) == pytest.approx(simulated.width_ppi, rel=0.06)
        assert float(pilot.width_human_only(m)) == pytest.approx(
            simulated.width_human_only, rel=0.03
        )


def test_a_pilot_estimates_the_moments() -> None:
    rng = np.random.default_rng(1)
    y, yhat = synthetic_scores(rng, "medium", 1, 20_000)
    pilot = Pilot.from_ratings(y[0, :5000], yhat[0, :5000], yhat[0, 5000:], n_units=2000)
    np.testing.assert_allclose(
        (pilot.var_y, pilot.cov, pilot.var_yhat), TRUE_MOMENTS["medium"], rtol=0.05
    )
    assert pilot.n_units == 2000
    assert pilot.rho == pytest.approx(0.64 / np.sqrt(1.45), rel=0.05)


def test_ratings_needed_for_a_target_width() -> None:
    pilot = Pilot(var_y=1.0, cov=0.8, var_yhat=1.0, n_units=10_000)  # ρ = 0.8
    z = stats.norm.ppf(0.95)
    needed = ratings_needed(pilot, target_width=0.2)
    assert needed.human_only == int(np.ceil((2 * z / 0.2) ** 2))  # σ²(2z/w)²
    assert needed.ppi is not None
    assert float(pilot.width_ppi(needed.ppi)) <= 0.2 < float(pilot.width_ppi(needed.ppi - 1))
    # while m ≪ N the saving is ρ²: 1 − ρ²/(1 + m/(N − m)) of the human-only ratings remain
    m = needed.ppi
    assert m == pytest.approx(needed.human_only * (1 - 0.64 / (1 + m / (10_000 - m))), abs=2)
    assert needed.saving == pytest.approx(1 - m / needed.human_only)
    assert needed.rho == pytest.approx(0.8)


def test_a_target_out_of_reach_says_so() -> None:
    pilot = Pilot(var_y=1.0, cov=0.0, var_yhat=1.0, n_units=100)
    needed = ratings_needed(pilot, target_width=0.05)
    assert needed.ppi is None
    assert needed.human_only > 100
    with pytest.raises(ValueError, match="target_width"):
        ratings_needed(pilot, target_width=0)


def _states(*rows: tuple[str, float, float, int]) -> list[SystemState]:
    return [SystemState(*row) for row in rows]


def test_width_rule_projects_the_ratings_still_needed() -> None:
    z = stats.norm.ppf(0.95)
    rule = StoppingRule("width", target_width=0.2)
    # A's interval is twice the target (needs 4× its 50 ratings), B's already meets it
    status = stopping_status(rule, _states(("A", 3.0, 0.2 / z, 50), ("B", 2.0, 0.05 / z, 80)))
    assert not status.met
    assert status.needed_per_system == {"A": 150, "B": 0}
    assert status.still_needed == 150
    assert status.progress == pytest.approx(130 / 280)
    done = stopping_status(rule, _states(("A", 3.0, 0.1 / z, 200), ("B", 2.0, 0.05 / z, 80)))
    assert (done.met, done.progress, done.still_needed) == (True, 1.0, 0)


def test_separation_rule_needs_every_adjacent_pair_apart() -> None:
    z = stats.norm.ppf(0.95)
    rule = StoppingRule("separated")
    # C–B apart (gap 1 vs reach 0.2), B–A overlap (gap 0.1 vs reach 0.2: 4× the ratings)
    systems = _states(("A", 3.0, 0.1 / z, 100), ("B", 3.1, 0.1 / z, 100), ("C", 2.0, 0.1 / z, 100))
    status = stopping_status(rule, systems)
    assert not status.met
    assert status.needed_per_system == {"A": 300, "B": 300, "C": 0}
    assert status.progress == pytest.approx(300 / 900)
    apart = _states(("A", 3.0, 0.04 / z, 100), ("B", 3.1, 0.04 / z, 100), ("C", 2.0, 0.1 / z, 9))
    assert stopping_status(rule, apart).met
    tied = _states(("A", 3.0, 0.1 / z, 100), ("B", 3.0, 0.1 / z, 100), ("C", 2.0, 0.1 / z, 100))
    unprojectable = stopping_status(rule, tied)
    assert unprojectable.still_needed is None
    assert unprojectable.needed_per_system["A"] is None
    assert unprojectable.progress == pytest.approx(0.5)  # one of two adjacent pairs separated


def test_budget_rule() -> None:
    rule = StoppingRule("budget", budget=500)
    status = stopping_status(rule, _states(("A", 3.0, 0.1, 100), ("B", 2.0, 0.1, 150)))
    assert (status.met, status.progress, status.still_needed) == (False, 0.5, 250)
    assert stopping_status(rule, _states(("A", 3.0, 0.1, 500), ("B", 2.0, 0.1, 1))).met
    with pytest.raises(ValueError, match="budget"):
        StoppingRule("budget")


def test_allocation_goes_to_the_widest_interval_until_the_target() -> None:
    cells = [Cell("A", 1000, 50, 4.0), Cell("B", 1000, 50, 1.0)]
    allocation = allocate_round(cells, budget=1000, target_width=0.3)
    counts = allocation.counts
    # greedy water-filling: A (4× the variance) gets the ratings until both are equally wide
    assert counts[("A", "")] > 3 * counts[("B", "")]
    assert allocation.projected_met
    assert sum(counts.values()) < 1000  # stops once the target is met
    assert max(allocation.projected_width.values()) <= 0.3
    narrowly = allocate_round(cells, budget=10)
    assert narrowly.counts == {("A", ""): 10, ("B", ""): 0}
    assert narrowly.round_probability[("A", "")] == pytest.approx(10 / 950)
    assert narrowly.inclusion_probability[("A", "")] == pytest.approx(60 / 1000)
    assert narrowly.inclusion_probability[("B", "")] == pytest.approx(50 / 1000)
    assert not narrowly.projected_met


def test_allocation_across_strata_is_neyman() -> None:
    """Within one system, the greedy allocation ends proportional to N_c·σ_c (Neyman 1934)."""
    cells = [Cell("A", 1000, 10, 4.0, "hard"), Cell("A", 1000, 10, 1.0, "easy")]
    allocation = allocate_round(cells, budget=600)
    hard, easy = allocation.counts[("A", "hard")] + 10, allocation.counts[("A", "easy")] + 10
    assert hard / easy == pytest.approx(2.0, rel=0.02)  # σ ratio 2, equal sizes
    assert allocation.inclusion_probability[("A", "hard")] == pytest.approx(hard / 1000)


def test_separation_allocation_targets_the_overlapping_pair() -> None:
    cells = [Cell("A", 1000, 50, 1.0), Cell("B", 1000, 50, 1.0), Cell("C", 1000, 50, 1.0)]
    estimates = {"A": 3.0, "B": 2.7, "C": 1.0}
    allocation = allocate_round(cells, budget=2000, objective="separated", estimates=estimates)
    assert allocation.counts[("C", "")] == 0
    assert allocation.counts[("A", "")] > 0 and allocation.counts[("B", "")] > 0
    assert allocation.projected_met
    assert sum(allocation.counts.values()) < 2000
    with pytest.raises(ValueError, match="estimate for every system"):
        allocate_round(cells, budget=10, objective="separated", estimates={"A": 1.0})


def test_allocation_respects_the_unrated_units_left() -> None:
    cells = [Cell("A", 60, 50, 4.0), Cell("B", 1000, 50, 1.0)]
    allocation = allocate_round(cells, budget=100)
    assert allocation.counts[("A", "")] == 10
    assert allocation.counts[("B", "")] == 90
    assert allocation.inclusion_probability[("A", "")] == 1.0
    with pytest.raises(ValueError, match="rate a pilot first"):
        allocate_round([Cell("A", 60, 0, 1.0)], budget=1)
