"""Benchmark: how many human ratings a predictor saves — prediction-powered vs human-only.

Synthetic study (``synthetic_savings``): 2,000 units, human scores Y = 3 + q + ε (q ~ N(0, 0.8²),
ε ~ N(0, 0.6²)) and four predictors (metrics/analysis/ppi_planning.py: useless, medium ρ ≈ 0.6,
near-perfect ρ ≈ 0.99, biased by +0.5 and shrunk). For n = 50, 100, 200 human ratings on a random
subset: the effective sample size ratio n_eff / n (how many times more human ratings the
human-only estimate would need for the prediction-powered interval's width; mean over the
repetitions) and how often the 90 % intervals cover the true mean (1,000 repetitions).

Rounds (``adaptive_vs_uniform``): six systems (1,000 units each, means 3.4, 3.0, 2.7, 2.5, 2.0,
1.7, a medium judge), a pilot of 30 ratings per system, then rounds of 60 ratings until every
adjacent pair of systems has disjoint 90 % intervals: uniform sampling (10 per system per round)
with human-only and with prediction-powered intervals, and adaptive rounds (the ratings go where
the pair furthest from separation needs them, metrics.analysis.ppi_planning.allocate_round). It
prints the human ratings used, how often the final order is right, and the share of the final
intervals that cover their system's true mean (the rule stops on the data, so this is checked,
not assumed).

Demo study (``demo_savings``, with ``--demo``; needs ``DATABASE_URL`` set to a PostgreSQL
database of your own, which it migrates and loads the demo into): the demo's rated study (four
systems × 24 knowledge replies, every one rated by three simulated raters on the MSDE rubric,
``manage.py load_demo``) has no judge run, so its predictors are lexical metrics scored on it
(F1, BLEU-2, DIST-2, and their mean z-score). The study holds 96 dialogues, so n is 24, 48, 72
(not 50, 100, 200): each repetition takes a random n of the 96 as "rated" and the rest as
unrated, and the truth is the mean human score (``info``, and ``overall``) of all 96 — a finite
population, for which the intervals (which also allow for sampling the population) are
conservative.

Kernels (``kernel_speed``): our mean and logistic (Bradley–Terry) kernels against ``ppi_py``'s
``ppi_mean_ci`` / ``ppi_logistic_ci`` on the same inputs (after ``ppi_py``'s numba warm-up), with
the largest difference of the interval bounds.

Times are printed also in units of the CPU reference (benchmarks/cpu_reference.py).

    .venv/bin/python benchmarks/label_savings.py [--repetitions 1000] [--runs 30] [--demo]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cpu_reference import cpu_reference_s, in_ref, reference_line

from metrics.analysis.ppi import bradley_terry_design, ppi_logistic, ppi_mean
from metrics.analysis.ppi_planning import (
    JUDGES,
    Cell,
    StoppingRule,
    SystemState,
    allocate_round,
    coverage_simulation,
    stopping_status,
    synthetic_scores,
)

SIZES = (50, 100, 200)
UNITS = 2000
SYSTEM_MEANS = (3.4, 3.0, 2.7, 2.5, 2.0, 1.7)
UNITS_PER_SYSTEM = 1000
PILOT = 30
ROUND = 60
STRATEGIES = ("uniform, human-only", "uniform, PPI", "adaptive, PPI")


def synthetic_savings(repetitions: int, seed: int = 0) -> None:
    """Effective sample size ratio and coverage per predictor and n (synthetic study)."""
    print(
        f"\nSynthetic study: {UNITS} units, {repetitions} repetitions per cell, 90 % intervals "
        "(coverage within ±0.019 of 0.90 is 2 binomial standard errors at 1,000 repetitions)"
    )
    print(
        f"{'predictor':<14}{'n':>5}{'n_eff/n':>9}{'PPI cover':>11}{'human cover':>13}"
        f"{'PPI width':>11}{'human width':>13}"
    )
    for judge in JUDGES:
        for n in SIZES:
            result = coverage_simulation(
                judge, n=n, n_units=UNITS, repetitions=repetitions, seed=seed + n
            )
            print(
                f"{judge:<14}{n:>5}{result.effective_n_ratio:>9.2f}{result.ppi:>11.3f}"
                f"{result.human_only:>13.3f}{result.width_ppi:>11.3f}{result.width_human_only:>13.3f}"
            )


@dataclass
class _System:
    y: np.ndarray
    yhat: np.ndarray
    rated: list[int]
    unrated: list[int]


def _state(name: str, system: _System, use_predictor: bool) -> tuple[SystemState, float, float]:
    """The system's stopping state, per-rating variance and fixed (imputed) variance."""
    rated = np.array(system.rated)
    unrated = np.array(system.unrated)
    estimate = ppi_mean(
        system.y[rated], system.yhat[rated], system.yhat[unrated], bootstrap_samples=0
    )
    interval = estimate.ppi if use_predictor else estimate.human_only
    lam = estimate.lam if use_predictor else 0.0
    unit_variance = float(np.var(system.y[rated] - lam * system.yhat[rated]))
    fixed = max(0.0, interval.se**2 - unit_variance / rated.size)
    return SystemState(name, interval.estimate, interval.se, rated.size), unit_variance, fixed


def _run(strategy: str, rng: np.random.Generator) -> tuple[int, bool, float]:
    """Human ratings used until every adjacent pair separated; order right; share covered."""
    systems = {}
    for k, mean in enumerate(SYSTEM_MEANS):
        y, yhat = synthetic_scores(rng, "medium", 1, UNITS_PER_SYSTEM, mean=mean)
        order = list(rng.permutation(UNITS_PER_SYSTEM))
        systems[f"S{k}"] = _System(y[0], yhat[0], order[:PILOT], order[PILOT:])
    use_predictor = strategy != "uniform, human-only"
    rule = StoppingRule("separated")
    while True:
        states = {name: _state(name, s, use_predictor) for name, s in systems.items()}
        status = stopping_status(rule, [state for state, _, _ in states.values()])
        if status.met or all(not s.unrated for s in systems.values()):
            break
        if strategy == "adaptive, PPI":
            cells = [
                Cell(name, UNITS_PER_SYSTEM, len(s.rated), states[name][1])
                for name, s in systems.items()
            ]
            allocation = allocate_round(
                cells,
                budget=ROUND,
                objective="separated",
                estimates={name: state.estimate for name, (state, _, _) in states.items()},
                fixed_variance={name: fixed for name, (_, _, fixed) in states.items()},
            )
            counts = {name: allocation.counts[(name, "")] for name in systems}
            if not any(counts.values()):  # projected met: take one uniform round to confirm
                counts = dict.fromkeys(systems, ROUND // len(systems))
        else:
            counts = dict.fromkeys(systems, ROUND // len(systems))
        for name, m in counts.items():
            s = systems[name]
            take = min(m, len(s.unrated))  # the unrated list is already in random order
            s.rated.extend(s.unrated[:take])
            del s.unrated[:take]
    final = [state for state, _, _ in states.values()]
    used = sum(state.n for state in final)
    ranked = [state.system for state in sorted(final, key=lambda s: -s.estimate)]
    right_order = ranked == [f"S{k}" for k in range(len(SYSTEM_MEANS))]
    z = 1.6448536269514722
    covered = float(
        np.mean(
            [
                abs(state.estimate - mean) <= z * state.se
                for state, mean in zip(final, SYSTEM_MEANS, strict=True)
            ]
        )
    )
    return used, right_order, covered


def adaptive_vs_uniform(runs: int, seed: int = 0) -> None:
    """Human ratings needed to separate all adjacent systems: uniform vs adaptive rounds."""
    print(
        f"\nRounds: {len(SYSTEM_MEANS)} systems × {UNITS_PER_SYSTEM} units, means "
        f"{', '.join(map(str, SYSTEM_MEANS))}, medium judge, pilot {PILOT}/system, rounds of "
        f"{ROUND}, stop when every adjacent pair's 90 % intervals are disjoint; {runs} runs"
    )
    print(f"{'strategy':<22}{'mean ratings':>14}{'median':>9}{'order right':>13}{'covered':>9}")
    baseline = None
    for strategy in STRATEGIES:
        rng = np.random.default_rng(seed)  # the same studies for every strategy
        results = [_run(strategy, rng) for _ in range(runs)]
        used = np.array([r[0] for r in results])
        if baseline is None:
            baseline = used.mean()
        print(
            f"{strategy:<22}{used.mean():>14.0f}{np.median(used):>9.0f}"
            f"{np.mean([r[1] for r in results]):>13.2f}{np.mean([r[2] for r in results]):>9.2f}"
            f"   ({used.mean() / baseline:.0%} of uniform human-only)"
        )


def _per_call(call: Callable[[], object], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat


def kernel_speed(ref: float) -> None:
    """Our kernels against ppi_py's on shared inputs: seconds per call and the largest gap."""
    import ppi_py  # a development dependency: the reference the kernels are tested against

    rng = np.random.default_rng(0)
    y, yhat = synthetic_scores(rng, "medium", 1, UNITS)
    labelled, unlabelled = (y[0, :200], yhat[0, :200]), yhat[0, 200:]
    systems, comparisons = 8, 5000
    pairs = np.array([rng.choice(systems, 2, replace=False) for _ in range(comparisons)])
    human = (rng.uniform(size=comparisons) < 0.5).astype(float)
    judge = np.where(rng.uniform(size=comparisons) < 0.8, human, 1 - human)
    x = bradley_terry_design(systems, pairs)
    args = (x[:500], human[:500], judge[:500], x[500:], judge[500:])
    ppi_py.ppi_logistic_ci(*args)  # numba compiles on the first call
    ours_mean = ppi_mean(*labelled, unlabelled, bootstrap_samples=0)
    low, high = ppi_py.ppi_mean_ci(*labelled, unlabelled, alpha=0.1)
    mean_gap = max(abs(ours_mean.ppi.low - low[0]), abs(ours_mean.ppi.high - high[0]))
    ours_logistic = ppi_logistic(*args)
    low_l, high_l = ppi_py.ppi_logistic_ci(*args, alpha=0.1)
    logistic_gap = max(
        np.abs(ours_logistic.low - low_l).max(), np.abs(ours_logistic.high - high_l).max()
    )
    print(f"\nKernels against ppi-python {metadata.version('ppi-python')} (same inputs)")
    rows = [
        (
            f"mean, n = 200 of {UNITS}",
            _per_call(lambda: ppi_mean(*labelled, unlabelled, bootstrap_samples=0), 200),
            _per_call(lambda: ppi_py.ppi_mean_ci(*labelled, unlabelled, alpha=0.1), 200),
            mean_gap,
        ),
        (
            f"BT logistic, {systems} systems, 500 of {comparisons} votes",
            _per_call(lambda: ppi_logistic(*args), 10),
            _per_call(lambda: ppi_py.ppi_logistic_ci(*args, alpha=0.1), 10),
            logistic_gap,
        ),
    ]
    for name, ours, theirs, gap in rows:
        print(
            f"  {name}: ours {ours * 1e3:.2f} ms {in_ref(ours, ref)}, ppi_py {theirs * 1e3:.2f} ms "
            f"{in_ref(theirs, ref)} ({theirs / ours:.1f}×); largest bound difference {gap:.1e}"
        )


DEMO_SIZES = (24, 48, 72)
DEMO_METRICS = ("f1", "bleu-2", "dist-2")
DEMO_QUESTIONS = ("info", "overall")


def _demo_data() -> tuple[dict[str, dict[int, float]], dict[str, dict[int, float]]]:
    """Human scores per question and predictor values per predictor on the demo's rated study
    (loads the demo and scores the lexical metrics once)."""
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("--demo: set DATABASE_URL to a PostgreSQL database of your own")
    import logging

    import django

    logging.getLogger("axes").setLevel(logging.WARNING)
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import RatingJob
    from chat.models import Campaign
    from core.access import workspace_scope
    from core.commands import command_workspace
    from core.models import JobStatus
    from metrics.models import MetricRun
    from metrics.selectors.ppi import job_question_scores, predictor_values
    from metrics.services import metric_run_scoring, metric_runs
    from workspace.demo import RATED_STUDY, demo_load

    with workspace_scope(command_workspace(None)):
        demo_load()
        study = Campaign.objects.get(name=RATED_STUDY)
        job = RatingJob.objects.get(campaign=study)
        run = MetricRun.objects.filter(
            campaign=study, name="label-savings lexical", status=JobStatus.DONE
        ).first()
        if run is None:
            run = metric_runs.metric_run_create(
                name="label-savings lexical", metrics=list(DEMO_METRICS), campaign=study
            )
            for chunk_id in run.chunks.values_list("pk", flat=True):
                metric_run_scoring.metric_run_score_chunk(chunk_id=chunk_id)
        human = {q: job_question_scores(job=job, question=q) for q in DEMO_QUESTIONS}
        units = sorted(set.intersection(*(set(h) for h in human.values())))
        predictors = {
            m: predictor_values(run_ids=[run.pk], metrics=[m], dialogue_ids=units)
            for m in DEMO_METRICS
        }
        predictors["mean z(all three)"] = predictor_values(
            run_ids=[run.pk], metrics=list(DEMO_METRICS), dialogue_ids=units
        )
    return human, predictors


def demo_savings(repetitions: int, seed: int = 0) -> None:
    """Effective sample size ratio and coverage per predictor and n on the demo's rated study."""
    human, predictors = _demo_data()
    print(
        f"\nDemo rated study: {len(next(iter(human.values())))} dialogues, {repetitions} random "
        "subsets per cell, 90 % intervals, truth = the mean over all dialogues"
    )
    print(
        f"{'question':<10}{'predictor':<20}{'r':>6}{'n':>5}{'n_eff/n':>9}{'PPI cover':>11}"
        f"{'human cover':>13}"
    )
    rng = np.random.default_rng(seed)
    for question, scores in human.items():
        for name, values in predictors.items():
            units = np.array(sorted(set(scores) & set(values)))
            y_all = np.array([scores[u] for u in units])
            yhat_all = np.array([values[u] for u in units])
            truth = y_all.mean()
            r = float(np.corrcoef(y_all, yhat_all)[0, 1])
            for n in DEMO_SIZES:
                ratios, ppi_cover, human_cover = [], 0, 0
                for _ in range(repetitions):
                    order = rng.permutation(units.size)
                    rated, unrated = order[:n], order[n:]
                    est = ppi_mean(
                        y_all[rated], yhat_all[rated], yhat_all[unrated], bootstrap_samples=0
                    )
                    ratios.append(est.effective_n / n)
                    ppi_cover += est.ppi.low <= truth <= est.ppi.high
                    human_cover += est.human_only.low <= truth <= est.human_only.high
                print(
                    f"{question:<10}{name:<20}{r:>6.2f}{n:>5}{np.mean(ratios):>9.2f}"
                    f"{ppi_cover / repetitions:>11.3f}{human_cover / repetitions:>13.3f}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--demo", action="store_true", help="also the demo's rated study (needs DATABASE_URL)"
    )
    args = parser.parse_args()
    ref = cpu_reference_s()
    print(reference_line(ref))
    start = time.perf_counter()
    synthetic_savings(args.repetitions)
    middle = time.perf_counter()
    adaptive_vs_uniform(args.runs)
    end = time.perf_counter()
    kernel_speed(ref)
    if args.demo:
        demo_start = time.perf_counter()
        demo_savings(args.repetitions)
        print(f"demo study {time.perf_counter() - demo_start:.1f} s")
    print(
        f"\nsynthetic study {middle - start:.1f} s {in_ref(middle - start, ref)}; "
        f"rounds {end - middle:.1f} s {in_ref(end - middle, ref)}"
    )


if __name__ == "__main__":
    main()
