"""Human + predictor: prediction-powered estimates and planning for a rating job (issue 28).

For one question of a rating job (or ``overall``) and each system, the human scores of the rated
dialogues (the mean over raters, ``annotation.selectors.human_scores``), a predictor's score on
those dialogues and on every other dialogue of the job's pool (``metrics.selectors.ppi``) and the
job's sampling design (``annotation.selectors.sampling``) go to the kernels of
:mod:`metrics.analysis.ppi` (PPI++ mean) and :mod:`metrics.analysis.ppi_planning` (widths,
ratings needed). The predictor's scores are split as the kernel takes them: ``yhat`` on the rated
dialogues, ``yhat_unlabelled`` on the others only (never all N).

The sampling design decides what can be said:

* a seeded random sample (``random``) or rounds (``rounds``): the estimate, with each rated
  dialogue's recorded inclusion probability (weighted only where they differ within a system);
* every dialogue rated (``census``): the human mean is the answer, a predictor adds nothing;
* anything else (the job rates all its dialogues and only some are rated so far, a sample drawn
  before the sampler recorded its design and whose pool has changed, imported ratings): refused
  with the kernel's explanation. Planning still runs on such ratings (it projects variances,
  which needs no random sample), with the caveat in its result.

Rated dialogues of the sample that are not rated yet are counted (``sampled_unrated``): the
estimate then assumes that which of them were rated first does not depend on their scores
(each rater's items come in a random order).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.models import GoldItem, RatingJob
from annotation.scoring import OVERALL
from annotation.selectors.rating import job_source_dialogues
from annotation.selectors.sampling import JobDesign, job_design
from core.errors import ServiceError
from metrics.analysis.ppi import Sampling, inclusion_probabilities, ppi_mean, z_value
from metrics.analysis.ppi_planning import Pilot, ratings_needed
from metrics.models import JobStatus, MetricRun
from metrics.selectors.ppi import job_question_scores, predictor_values
from metrics.selectors.reports import job_dimensions, scored_metric_names

MAX_PREDICTOR_METRICS = 10
MAX_BOOTSTRAP = 10_000
ALPHA_RANGE = (0.001, 0.5)
CURVE_POINTS = 30


class PPIError(ServiceError):
    """Options or data a prediction-powered estimate cannot use; the message says why."""

    location_style = "prefix"


@dataclass(frozen=True)
class Predictor:
    """One metric of the runs, or the mean of several metrics' z-scores."""

    run_ids: tuple[int, ...]
    metrics: tuple[str, ...]

    @property
    def label(self) -> str:
        if len(self.metrics) == 1:
            return self.metrics[0]
        return "mean z(" + ", ".join(self.metrics) + ")"

    def as_dict(self) -> dict[str, Any]:
        return {"runs": list(self.run_ids), "metrics": list(self.metrics), "label": self.label}


def predictor_check(*, run_ids: Sequence[int], metrics: Sequence[str] | str) -> Predictor:
    """The predictor, checked: finished runs, 1–10 metrics they scored."""
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    names = list(dict.fromkeys(n.strip() for n in names if isinstance(n, str) and n.strip()))
    if not names:
        raise PPIError("choose a predictor: one metric name, or a list of them", field="predictor")
    if len(names) > MAX_PREDICTOR_METRICS:
        raise PPIError(
            f"at most {MAX_PREDICTOR_METRICS} metrics can be combined, got {len(names)}",
            field="predictor",
        )
    runs = list(MetricRun.objects.filter(pk__in=list(run_ids)))
    missing = sorted(set(run_ids) - {r.pk for r in runs})
    if missing:
        raise PPIError(f"metric run {missing[0]} does not exist", field="runs")
    if not runs:
        raise PPIError("choose the metric run(s) the predictor comes from", field="runs")
    unfinished = [r for r in runs if r.status != JobStatus.DONE]
    if unfinished:
        raise PPIError(
            f"metric run {unfinished[0].pk} is not finished (status: {unfinished[0].status})",
            field="runs",
        )
    available = scored_metric_names(runs=runs)
    bad = [n for n in names if n not in available]
    if bad:
        raise PPIError(
            f"unknown metric {bad[0]!r} (the runs scored: {', '.join(available) or 'nothing'})",
            field="predictor",
        )
    return Predictor(tuple(sorted(r.pk for r in runs)), tuple(names))


def question_check(*, job: RatingJob, question: str | None) -> str:
    key = (question or OVERALL).strip()
    dimensions = job_dimensions(jobs=[job])
    if key not in dimensions:
        raise PPIError(
            f"the job's rubric has no scored question {key!r} (it has: {', '.join(dimensions)})",
            field="question",
        )
    return key


def alpha_check(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PPIError("must be a number", field="alpha")
    if not ALPHA_RANGE[0] <= float(value) <= ALPHA_RANGE[1]:
        raise PPIError(
            f"must be from {ALPHA_RANGE[0]} to {ALPHA_RANGE[1]} (0.1: 90 % intervals)",
            field="alpha",
        )
    return float(value)


# --- the data, per system ------------------------------------------------------------------


@dataclass
class SystemData:
    """One system's inputs to the kernels; ``refused`` says why it has no estimate."""

    system: str
    y: np.ndarray
    yhat: np.ndarray
    yhat_unlabelled: np.ndarray
    pi: np.ndarray | None
    population: int
    sampled_unrated: int = 0
    missing_predictor: int = 0
    refused: str = ""
    notes: list[str] = field(default_factory=list)


def _not_random(reason: str) -> str:
    try:
        inclusion_probabilities(Sampling("unknown"), n_labelled=1, n_units=1)
    except ValueError as exc:
        return f"{reason}: {exc}"
    raise AssertionError("the kernel accepts an unknown sampling design")  # pragma: no cover


def _population(job: RatingJob, design: JobDesign) -> dict[int, str]:
    if design.population:
        return design.population
    gold = GoldItem.objects.filter(job=job).values("dialogue")
    return dict(job_source_dialogues(job).exclude(pk__in=gold).values_list("pk", "backend__name"))


def job_ppi_data(
    *, job: RatingJob, question: str, predictor: Predictor
) -> tuple[JobDesign, list[SystemData], str]:
    """The design, each system's data and, for a design that cannot give an unbiased estimate,
    why not ("" when it can)."""
    if job.is_pairwise:
        raise PPIError(
            "a pairwise job's answers are votes between systems, not scores of dialogues: "
            "its ranking is on the job's pairwise panel",
            field="job",
        )
    design = job_design(job)
    population = _population(job, design)
    human = job_question_scores(job=job, question=question)
    if predictor.metrics:
        yhat = predictor_values(
            run_ids=predictor.run_ids, metrics=predictor.metrics, dialogue_ids=population
        )
    else:  # no predictor: a constant one, which the tuning gives no weight (λ = 0)
        yhat = dict.fromkeys(population, 0.0)
    refusal = ""
    if predictor.metrics and population and not yhat:
        refusal = (
            f"the predictor ({predictor.label}) scored none of the job's {len(population)} "
            "dialogues: its runs scored another campaign's dialogues, or not these"
        )
    elif design.kind == "unknown":
        refusal = _not_random(design.reason)
    elif design.kind == "census":
        n_unrated = sum(1 for pk in population if pk not in human)
        if n_unrated:
            refusal = _not_random(
                f"the job rates all {len(population)} of its dialogues and {n_unrated} are not "
                "rated yet, so the rated ones are those the raters reached first, not a "
                "random sample (once all are rated the human scores need no predictor)"
            )
    units: dict[str, list[int]] = defaultdict(list)
    for pk, system in population.items():
        units[system].append(pk)
    sampled = set(job.sample)
    result = []
    for system in sorted(units):
        pks = sorted(units[system])
        rated = [pk for pk in pks if pk in human and pk in yhat]
        unrated = [pk for pk in pks if pk not in human and pk in yhat]
        data = SystemData(
            system=system,
            y=np.array([human[pk] for pk in rated]),
            yhat=np.array([yhat[pk] for pk in rated]),
            yhat_unlabelled=np.array([yhat[pk] for pk in unrated]),
            pi=None,
            population=len(pks),
            sampled_unrated=sum(1 for pk in pks if pk in sampled and pk not in human),
            missing_predictor=sum(1 for pk in pks if pk not in yhat),
        )
        if design.kind in ("random", "rounds"):
            probabilities = [design.inclusion.get(pk) for pk in pks]
            if any(p is None for p in probabilities):
                data.refused = _not_random(
                    "the scenario-paired draw gave this system's dialogues inclusion "
                    "probabilities with no closed form (several dialogues on one scenario, or "
                    "dialogues without a scenario beside ones with)"
                )
            elif any(p == 0 for p in probabilities):
                data.refused = _not_random(
                    "the scenario-paired draw could never pick some of this system's "
                    "dialogues (scenarios that fewer systems share came after the sample was "
                    "full), so the rated ones do not stand for them"
                )
            else:
                pi = np.array([design.inclusion[pk] for pk in rated], dtype=float)
                if pi.size and not np.allclose(pi, pi[0]):
                    data.pi = inclusion_probabilities(
                        Sampling("adaptive", probabilities=pi.tolist()),
                        n_labelled=pi.size,
                        n_units=len(rated) + len(unrated),
                    )
        if not data.refused and data.y.size < 2:
            data.refused = f"{data.y.size} rated dialogue(s) with a predictor score: need ≥ 2"
        if data.missing_predictor:
            data.notes.append(
                f"{data.missing_predictor} dialogue(s) have no score from the predictor and are "
                "left out"
            )
        if data.sampled_unrated:
            data.notes.append(
                f"{data.sampled_unrated} sampled dialogue(s) are not rated yet; the estimate "
                "assumes the order they were rated in does not depend on their scores"
            )
        result.append(data)
    return design, result, refusal


# --- estimates -----------------------------------------------------------------------------


def _interval(estimate: float, se: float, low: float, high: float) -> dict[str, float]:
    return {"estimate": estimate, "se": se, "low": low, "high": high}


def _clean(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def width_curve(data: SystemData, alpha: float) -> dict[str, list[float]]:
    """Interval width against the number of human ratings, human-only and prediction-powered,
    projected from the system's current ratings (``Pilot.width_*``)."""
    pilot = Pilot.from_ratings(data.y, data.yhat, data.yhat_unlabelled)
    m = np.unique(np.linspace(2, max(2, pilot.n_units), CURVE_POINTS).round().astype(int))
    m = m[(m >= 1) & (m <= pilot.n_units)]
    # A pilot whose covariance exceeds what the pooled predictor variance allows (a handful of
    # rated units) can project a negative variance: no width there (None).
    with np.errstate(invalid="ignore"):
        human_only = pilot.width_human_only(m, alpha).tolist()
        ppi = pilot.width_ppi(m, alpha).tolist()
    return {
        "m": m.tolist(),
        "human_only": [_clean(v) for v in human_only],
        "ppi": [_clean(v) for v in ppi],
    }


def _census_row(data: SystemData, z: float) -> dict[str, Any]:
    y = data.y
    se = float(y.std() / math.sqrt(y.size))
    mean = float(y.mean())
    return {
        "system": data.system,
        "n": int(y.size),
        "n_units": data.population,
        "human": _interval(mean, se, mean - z * se, mean + z * se),
        "ppi": None,
        "predictor_only": None,
        "lam": None,
        "effective_n": None,
        "pearson": None,
        "weighted": False,
        "refused": "",
        "notes": [*data.notes, "every dialogue is rated: the human mean needs no predictor"],
        "curve": None,
    }


def _system_row(data: SystemData, *, alpha: float, bootstrap: int, seed: int) -> dict[str, Any]:
    base: dict[str, Any] = {
        "system": data.system,
        "n": int(data.y.size),
        "n_units": data.population,
        "sampled_unrated": data.sampled_unrated,
        "missing_predictor": data.missing_predictor,
        "notes": list(data.notes),
        "refused": data.refused,
    }
    if data.refused:
        return {**base, "human": None, "ppi": None, "curve": None}
    if data.yhat_unlabelled.size == 0:
        return {**base, **_census_row(data, z_value(alpha))}
    est = ppi_mean(
        data.y,
        data.yhat,
        data.yhat_unlabelled,
        pi=data.pi,
        alpha=alpha,
        bootstrap_samples=bootstrap,
        seed=seed,
    )
    return {
        **base,
        "n_units": est.n_units,
        "human": _interval(
            est.human_only.estimate, est.human_only.se, est.human_only.low, est.human_only.high
        ),
        "ppi": {
            **_interval(est.ppi.estimate, est.ppi.se, est.ppi.low, est.ppi.high),
            "bootstrap_low": _clean(est.bootstrap_low),
            "bootstrap_high": _clean(est.bootstrap_high),
        },
        "predictor_only": est.predictor_only,
        "lam": est.lam,
        "effective_n": _clean(est.effective_n),
        "pearson": _clean(est.pearson),
        "weighted": est.weighted,
        "curve": width_curve(data, alpha),
    }


def ppi_estimates(
    *,
    job: RatingJob,
    question: str,
    predictor: Predictor,
    alpha: float = 0.1,
    bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per system: human-only and human + predictor (PPI++) estimates with intervals, the
    predictor-only mean, effective sample size, λ and the predictor's Pearson r with the humans
    on the rated dialogues. JSON-ready. ``refused`` (with an empty ``systems``) when the job's
    sampling design cannot give an unbiased estimate."""
    design, systems, refusal = job_ppi_data(job=job, question=question, predictor=predictor)
    section: dict[str, Any] = {
        "job": job.pk,
        "job_name": job.name,
        "question": question,
        "predictor": predictor.as_dict(),
        "alpha": alpha,
        "confidence": 1.0 - alpha,
        "bootstrap": bootstrap,
        "design": {"kind": design.kind, "seed": design.seed},
        "refused": refusal,
        "census": design.kind == "census" and not refusal,
        "systems": [],
    }
    if refusal:
        return section
    z = z_value(alpha)
    for data in systems:
        if section["census"] and not data.refused:
            section["systems"].append(_census_row(data, z))
        else:
            section["systems"].append(
                _system_row(data, alpha=alpha, bootstrap=bootstrap, seed=seed)
            )
    return section


# --- planning ------------------------------------------------------------------------------


def ratings_plan(
    *,
    job: RatingJob,
    question: str,
    predictor: Predictor,
    target_width: float,
    alpha: float = 0.1,
) -> dict[str, Any]:
    """Per system, the human ratings needed for ``target_width``-wide intervals, human-only vs
    prediction-powered, with the job's current ratings as the pilot (``ratings_needed``)."""
    if isinstance(target_width, bool) or not isinstance(target_width, (int, float)):
        raise PPIError("must be a number", field="target_width")
    if not 0 < target_width < 1e6:
        raise PPIError("must be a positive number", field="target_width")
    design, systems, refusal = job_ppi_data(job=job, question=question, predictor=predictor)
    rows = []
    for data in systems:
        row: dict[str, Any] = {"system": data.system, "rated": int(data.y.size)}
        if data.y.size < 2:
            rows.append({**row, "refused": f"{data.y.size} rated dialogue(s): need ≥ 2"})
            continue
        pilot = Pilot.from_ratings(data.y, data.yhat, data.yhat_unlabelled)
        needed = ratings_needed(pilot, target_width=float(target_width), alpha=alpha)
        rows.append(
            {
                **row,
                "refused": "",
                "n_units": pilot.n_units,
                "rho": _clean(pilot.rho),
                "current_width_human_only": _clean(
                    float(pilot.width_human_only(data.y.size, alpha))
                ),
                "human_only": needed.human_only,
                "ppi": needed.ppi,
                "saving": _clean(needed.saving) if needed.saving is not None else None,
                "still_needed_human_only": max(0, needed.human_only - int(data.y.size)),
                "still_needed_ppi": (
                    None if needed.ppi is None else max(0, needed.ppi - int(data.y.size))
                ),
                "human_only_exceeds_pool": needed.human_only > pilot.n_units,
            }
        )
    return {
        "job": job.pk,
        "question": question,
        "predictor": predictor.as_dict(),
        "target_width": float(target_width),
        "alpha": alpha,
        "design": design.kind,
        "caveat": refusal,
        "systems": rows,
    }


# --- the report section ----------------------------------------------------------------------

PPI_DEFAULTS: dict[str, Any] = {"predictor": None, "question": OVERALL, "job": None, "alpha": 0.1}


def ppi_config_check(
    value: object, *, run_ids: Sequence[int], job_ids: Sequence[int]
) -> dict[str, Any]:
    """A report's ``ppi`` options, complete and checked against its runs and jobs."""
    if not isinstance(value, Mapping):
        raise PPIError("must be an object: {predictor, question, job, alpha}")
    unknown = sorted(set(value) - set(PPI_DEFAULTS))
    if unknown:
        raise PPIError(f"unknown option {unknown[0]!r} (known: {', '.join(PPI_DEFAULTS)})")
    options = {**PPI_DEFAULTS, **value}
    predictor = options["predictor"]
    if isinstance(predictor, str):
        predictor = [predictor]
    if not isinstance(predictor, list) or not all(isinstance(p, str) for p in predictor):
        raise PPIError("predictor: a metric name of the report's runs, or a list of them")
    checked = predictor_check(run_ids=list(run_ids), metrics=predictor)
    job_id = options["job"]
    if job_id is None:
        if len(job_ids) != 1:
            raise PPIError("job: name the rating job (one of the report's rating jobs)")
        job_id = job_ids[0]
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id not in job_ids:
        raise PPIError(f"job: must be one of the report's rating jobs ({list(job_ids)})")
    job = RatingJob.objects.select_related("rubric").get(pk=job_id)
    if not isinstance(options["question"], str) or len(options["question"]) > 80:
        raise PPIError("question: a question key of the job's rubric, or overall")
    try:
        question = question_check(job=job, question=options["question"])
        alpha = alpha_check(options["alpha"])
    except PPIError as exc:
        raise PPIError(f"{exc.field}: {exc.message}") from None
    return {
        "predictor": list(checked.metrics),
        "question": question,
        "job": job_id,
        "alpha": alpha,
    }


def ppi_report_section(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The report's "Human + judge" section (None when the report has no ``ppi`` options)."""
    options = config.get("ppi")
    if not options:
        return None
    job = RatingJob.objects.select_related("rubric").get(pk=options["job"])
    predictor = Predictor(
        tuple(sorted(config.get("metric_runs") or [])), tuple(options["predictor"])
    )
    return ppi_estimates(
        job=job,
        question=options["question"],
        predictor=predictor,
        alpha=float(options["alpha"]),
        bootstrap=min(int(config.get("bootstrap", 1000)), MAX_BOOTSTRAP),
        seed=int(config.get("seed", 0)),
    )
