"""Prediction-powered estimates: human ratings on a random subset + a predictor on every unit.

A predictor (an LLM judge, an automatic metric, a combination) scores all N units; people rate a
random subset of n of them. Prediction-powered inference (Angelopoulos et al., *Science* 2023)
uses the predictor everywhere and the human subset to measure and remove its bias, which gives an
unbiased estimate whose interval is valid whatever the predictor's quality and narrower the better
it is. Everything here is the *power-tuned* form, PPI++ (Angelopoulos, Duchi & Zrnic 2023,
"PPI++: Efficient Prediction-Powered Inference", arXiv:2311.01453), with the formulas, variance
conventions and tuning rule of the authors' ``ppi-python`` package (``ppi_py`` 0.2.3), which the
tests compare against on shared inputs.

Conventions
-----------
* The predictor's scores come in two parts, as ``ppi_py`` takes them: ``yhat`` on the n rated
  units and ``yhat_unlabelled`` on the other N − n units (not rated by anyone). The two parts
  are disjoint, so the estimate's two averages are independent and ``ppi_py``'s variance
  formula is exact. (Passing all N units as "unlabelled", rated ones included, would count the
  rated units twice and leave a covariance term ``2λ·Cov(Ŷ, Y − λŶ)/N`` out of the variance;
  in simulation it cost a few points of coverage with a near-perfect judge.)
* One human score per unit (the caller averages several raters of a unit first).
* Intervals are two-sided at level 1 − α, α = 0.1 by default (90 %), as ``ppi_py``.

Mean (per system, per question)
-------------------------------
With λ ∈ [0, 1], n rated and m = N − n unrated units:

* estimate ``θ̂_λ = mean_m(λŶ) + mean_n(Y − λŶ)``;
* variance ``Var(λŶ)/m + Var(Y − λŶ)/n`` (population variances: ``ppi_py``'s ``np.std``);
* λ̂ = Cov(Y, Ŷ) / ((1 + n/m)·Var(Ŷ)) — the minimiser of that variance (PPI++ §2, mean case,
  eq. for λ*), computed exactly as ``ppi_py.ppi_mean_ci(lam=None)``: the covariance over the
  rated units with divisor n, Var(Ŷ) over the rated and unrated scores pooled (divisor N − 1),
  clipped to [0, 1]. λ = 0 is the human-only (classical) estimate, λ = 1 plain PPI.

Unequal inclusion probabilities
-------------------------------
When the rated units were drawn with known unequal probabilities π_i (strata sampled at
different rates, adaptive rounds), the plain estimator is biased: the unrated units are then not
a sample of the population. The estimator is instead the inverse-probability-weighted one of
Zrnic & Candès (2024, "Active Statistical Inference", eq. (2), power-tuned as their §3),
``θ̂ = λ·mean_N(Ŷ) + mean_n(w·(Y − λŶ))`` over all N units, with w_i ∝ 1/π_i normalised to
mean 1 on the rated units (the self-normalised, Hájek, form: for stratified sampling with
π = n_k/N_k the normalisation changes nothing, Σ 1/π_i = N). Split into its independent
unrated and rated parts, with f = n/N and λ' = λ(1 − f), it is

    ``θ̂ = λ'·mean_m(Ŷ) + mean_n(Y* − λ'·Ŷ*)``,  Y* = w·Y,  Ŷ* = (w − f)/(1 − f)·Ŷ,

i.e. the plain estimator applied to (Y*, Ŷ*): its variance and its λ' follow from the same
formulas. The rated part's variance is the with-replacement (Hansen–Hurwitz) approximation, as
``ppi_py``'s weighted intervals: it ignores that a stratified design fixed each stratum's count,
so there the interval is conservative (98 % instead of 90 % in the test's two-strata design).
Equal π gives w ≡ 1, Y* = Y, Ŷ* = Ŷ: the plain estimator, to the last bit.
:func:`inclusion_probabilities` turns a recorded sampling design into π and refuses a subset that
was not drawn at random.

Bradley–Terry ratings
---------------------
Boyeau et al. 2024 ("AutoEval Done Right: Using Synthetic Data for Model Evaluation",
arXiv:2403.07008), §3.2: a comparison of systems a and b is a logistic-regression row x with +1
at a, −1 at b; the label is 1 when a won. The BT coefficients ζ (P(a beats b) = σ(ζ_a − ζ_b))
are the PPI++ logistic-regression estimate from human votes on a subset of the comparisons and
judge votes (0/1, ½, or the judge's probability) on all of them (again split into the
voted and not-voted comparisons; with unequal π the judge term of the voted rows is weighted by
(w − f)/(1 − f) as above). The first system is the
reference (its column dropped, ζ = 0) so that the coefficients are identified. **Ties** count as
half a win for each side (label ½) — the Chatbot Arena Bradley–Terry convention that AutoEval
builds on; the logistic loss is defined for labels in [0, 1]. Ratings are reported on the Elo
scale, ``1000 + 400/ln 10 · (ζ_j − mean ζ)``, with delta-method intervals from the full covariance.

The logistic kernel follows ``ppi_py.ppi_logistic_ci(lam=None)`` step by step: fit with λ = 1,
tune λ at that fit, refit, tune λ again at the refit, refit, and take the interval there
(``Σ = H⁻¹(n/N·Cov(λ∇ℓ̂_N) + Cov(∇ℓ − λ∇ℓ̂))H⁻¹ / n``). Each fit is Newton's method on the
strictly convex rectified loss (``ppi_py`` uses L-BFGS from a scikit-learn start; the optimum is
the same).

Public API
----------
``inclusion_probabilities(sampling, *, n_labelled, n_units) -> np.ndarray``
``ppi_mean(y, yhat, yhat_unlabelled, *, pi=None, alpha=0.1, bootstrap_samples=1000, seed=0)
-> MeanEstimate``
``ppi_logistic(x, y, yhat, x_unlabelled, yhat_unlabelled, *, w=None, w_hat=None, alpha=0.1,
lam=None) -> LogisticEstimate``
``mean_lambda(y, yhat, yhat_unlabelled)``, ``mean_estimate(y, yhat, yhat_unlabelled, lam)``:
the plain mean kernel batched over leading axes (the bootstrap and the simulations use it)
``bradley_terry_ppi(n_systems, pairs_all, judge_all, labelled, human, *, pi=None, alpha=0.1)
-> BradleyTerryEstimate``
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import special, stats

SamplingKind = Literal["random", "stratified", "adaptive", "unknown"]

# Elo points per unit of the BT log-odds: P(a beats b) = 1 / (1 + 10^(−(R_a − R_b)/400)).
ELO_SCALE = 400.0 / np.log(10.0)
ELO_CENTRE = 1000.0

# Bootstrap resamples are drawn in chunks of this many, so the index arrays stay small.
_BOOTSTRAP_CHUNK = 200


def z_value(alpha: float) -> float:
    """z_{1−α/2}, the normal quantile of a two-sided 1 − α interval."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(stats.norm.ppf(1.0 - alpha / 2.0))


# --------------------------------------------------------------------------------------------
# Sampling designs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sampling:
    """How the rated subset was drawn, as the sampler recorded it.

    * ``random``: a simple random sample; ``seed`` is the seed it was drawn with.
    * ``stratified``: a simple random sample inside each stratum; ``strata`` gives the stratum of
      each labelled unit (in the order of ``y``) and ``stratum_weights`` each stratum's share of
      the population (N_k / N, normalised here).
    * ``adaptive``: ``probabilities`` is each labelled unit's inclusion probability π_i, as the
      rounds recorded it.
    * ``unknown``: chosen by hand, by convenience, by the raters — refused.
    """

    kind: SamplingKind
    seed: int | None = None
    strata: Sequence[str] | None = None
    stratum_weights: Mapping[str, float] | None = None
    probabilities: Sequence[float] | None = None


_NOT_RANDOM = (
    "the prediction-powered estimate is only unbiased when the rated units were drawn at random "
    "with known probabilities (a seeded random sample, a stratified sample with known stratum "
    "weights, or adaptive rounds that recorded each unit's inclusion probability); "
)


def inclusion_probabilities(sampling: Sampling, *, n_labelled: int, n_units: int) -> np.ndarray:
    """π for each labelled unit (in the order of ``y``), or ``ValueError`` saying why not.

    Only the ratios between the π matter to the estimate (the weights are normalised), so a
    stratified design's π_k = n_k / (W_k·N) is enough, W_k the stratum's population share.
    """
    if not 0 < n_labelled <= n_units:
        raise ValueError(f"need 0 < n_labelled ≤ n_units, got {n_labelled} and {n_units}")
    if sampling.kind == "unknown":
        raise ValueError(
            _NOT_RANDOM + "this subset's sampling is unknown, so its human ratings may differ "
            "systematically from the other units' and no interval can be given. Draw a random "
            "subset (the rating job's seeded sampler records it) and rate that."
        )
    if sampling.kind == "random":
        if sampling.seed is None:
            raise ValueError(
                _NOT_RANDOM + "'random' sampling must record the seed it was drawn with; "
                "without it the subset cannot be shown to be random."
            )
        return np.full(n_labelled, n_labelled / n_units)
    if sampling.kind == "stratified":
        if sampling.strata is None or not sampling.stratum_weights:
            raise ValueError(
                _NOT_RANDOM + "'stratified' sampling needs each labelled unit's stratum and "
                "every stratum's population share (stratum_weights)."
            )
        weights = dict(sampling.stratum_weights)
        if any(not np.isfinite(v) or v <= 0 for v in weights.values()):
            raise ValueError("stratum_weights: every share must be a positive number")
        missing = sorted(set(sampling.strata) - set(weights))
        if missing:
            raise ValueError(f"stratum_weights: no population share for strata {missing}")
        total = sum(weights.values())
        labels = list(sampling.strata)
        if len(labels) != n_labelled:
            raise ValueError(
                f"strata: expected one stratum per labelled unit ({n_labelled}), got {len(labels)}"
            )
        counts = {s: labels.count(s) for s in set(labels)}
        return np.array([counts[s] / (weights[s] / total * n_units) for s in labels])
    if sampling.kind == "adaptive":
        if sampling.probabilities is None:
            raise ValueError(
                _NOT_RANDOM + "'adaptive' sampling needs the inclusion probability each round "
                "recorded for every labelled unit."
            )
        pi = np.asarray(sampling.probabilities, dtype=float)
        if pi.shape != (n_labelled,):
            raise ValueError(
                f"probabilities: expected one per labelled unit ({n_labelled}), got {len(pi)}"
            )
        bad = np.flatnonzero(~((pi > 0) & (pi <= 1)))
        if bad.size:
            raise ValueError(
                f"probabilities: labelled unit {int(bad[0])} has inclusion probability "
                f"{pi[bad[0]]}, outside (0, 1]"
            )
        return pi
    raise ValueError(f"unknown sampling kind {sampling.kind!r}")


def _weights_from_pi(pi: np.ndarray | Sequence[float] | None, n: int) -> np.ndarray | None:
    """w ∝ 1/π normalised to mean 1 (``ppi_py``'s normalisation), or None for equal π."""
    if pi is None:
        return None
    p = np.asarray(pi, dtype=float)
    if p.shape != (n,):
        raise ValueError(
            f"pi: expected one inclusion probability per labelled unit ({n}), got {p.shape}"
        )
    bad = np.flatnonzero(~((p > 0) & (p <= 1)))
    if bad.size:
        raise ValueError(f"pi: labelled unit {int(bad[0])} has inclusion probability {p[bad[0]]}")
    inverse = 1.0 / p
    return inverse / inverse.sum() * n


# --------------------------------------------------------------------------------------------
# Mean
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    estimate: float
    se: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class MeanEstimate:
    """One system's (question's) mean: human + predictor, human-only, predictor-only.

    ``ppi`` is the prediction-powered estimate with its normal interval, ``bootstrap_low/high``
    its percentile bootstrap interval (rated and unrated units resampled independently, λ
    re-tuned on each resample; NaN when ``bootstrap_samples`` = 0). ``human_only`` is the
    classical estimate from the same labelled units. ``predictor_only`` is the plain mean of the
    predictor over all units: no interval, because it estimates the predictor's mean, which may
    be biased away from the humans' by any amount. ``effective_n`` = n · Var(human-only) /
    Var(PPI): the number of human ratings the human-only estimate would need for the PPI
    interval's width. ``pearson`` is the predictor's correlation with the humans on the labelled
    units (NaN when either side is constant). ``lam`` is the tuned λ — ``ppi_py``'s, the weight of
    the unrated units' predictor mean (λ' with unequal π) — 0: predictor unused, 1: plain PPI.
    """

    ppi: Interval
    bootstrap_low: float
    bootstrap_high: float
    human_only: Interval
    predictor_only: float
    lam: float
    n: int
    n_units: int
    effective_n: float
    pearson: float
    weighted: bool


def mean_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray) -> np.ndarray:
    """λ̂ of ``ppi_py.ppi_mean_ci(lam=None)`` along the last axis, batched over leading axes
    (the bootstrap and the simulations run many studies at once)."""
    n = y.shape[-1]
    m = yhat_unlabelled.shape[-1]
    # ppi_py centres the gradients at the λ = 1 estimate; the covariance and variance below do
    # not depend on it except through floating-point rounding, kept for bit-equality.
    theta1 = yhat_unlabelled.mean(-1, keepdims=True) + (y - yhat).mean(-1, keepdims=True)
    grads = y - theta1
    grads_hat = yhat - theta1
    cov = (
        (grads - grads.mean(-1, keepdims=True)) * (grads_hat - grads_hat.mean(-1, keepdims=True))
    ).sum(-1) / n
    var = np.concatenate([grads_hat, yhat_unlabelled - theta1], axis=-1).var(-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1.0 + n / m) * var)
    # A constant predictor carries no information: the human-only estimate (λ = 0).
    return np.clip(np.where(var > 0, lam, 0.0), 0.0, 1.0)


def mean_estimate(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, lam: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """(θ̂_λ, its standard error) along the last axis; ``lam`` has the leading shape."""
    lam_ = np.asarray(lam)[..., None]
    imputed = lam_ * yhat_unlabelled
    rectifier = y - lam_ * yhat
    estimate = imputed.mean(-1) + rectifier.mean(-1)
    se = np.sqrt(imputed.var(-1) / yhat_unlabelled.shape[-1] + rectifier.var(-1) / y.shape[-1])
    return estimate, se


def _ipw_transform(
    y: np.ndarray, yhat: np.ndarray, w: np.ndarray, n_units: int
) -> tuple[np.ndarray, np.ndarray]:
    """(Y*, Ŷ*) of the weighted estimator (module docstring); w has mean 1 along the last axis."""
    f = y.shape[-1] / n_units
    return w * y, (w - f) / (1.0 - f) * yhat


def _check_mean_inputs(y: np.ndarray, yhat: np.ndarray, unlabelled: np.ndarray) -> None:
    if y.ndim != 1 or yhat.shape != y.shape:
        raise ValueError(
            "y and yhat must be 1-D and aligned (one per labelled unit), "
            f"got {y.shape} and {yhat.shape}"
        )
    if y.size < 2:
        raise ValueError(f"at least 2 human-rated units are needed, got {y.size}")
    if unlabelled.ndim != 1 or unlabelled.size < 1:
        raise ValueError(
            "yhat_unlabelled must be 1-D with the predictor on every unit nobody rated (≥ 1), "
            f"got {unlabelled.shape}"
        )
    for name, values in (("y", y), ("yhat", yhat), ("yhat_unlabelled", unlabelled)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(
                f"{name}: value {int(bad[0])} is not a finite number ({values[bad[0]]})"
            )


def ppi_mean(
    y: np.ndarray | Sequence[float],
    yhat: np.ndarray | Sequence[float],
    yhat_unlabelled: np.ndarray | Sequence[float],
    *,
    pi: np.ndarray | Sequence[float] | None = None,
    alpha: float = 0.1,
    bootstrap_samples: int = 1000,
    seed: int = 0,
) -> MeanEstimate:
    """PPI++ mean of the human score, with the human-only and predictor-only figures beside it.

    ``y``: human scores of the n rated units; ``yhat``: the predictor on the same units;
    ``yhat_unlabelled``: the predictor on the N − n units nobody rated; ``pi``: the rated units'
    inclusion probabilities when they were unequal (None: a simple random subset).
    Without ``pi`` the estimate and normal interval equal ``ppi_py.ppi_mean_pointestimate`` /
    ``ppi_mean_ci(Y, Yhat, Yhat_unlabeled)``.
    """
    y_ = np.asarray(y, dtype=float)
    yhat_ = np.asarray(yhat, dtype=float)
    unlabelled = np.asarray(yhat_unlabelled, dtype=float)
    _check_mean_inputs(y_, yhat_, unlabelled)
    z = z_value(alpha)
    n, big_n = y_.size, y_.size + unlabelled.size
    weights = _weights_from_pi(pi, n)
    w = np.ones(n) if weights is None else weights
    y_star, yhat_star = _ipw_transform(y_, yhat_, w, big_n)

    lam = mean_lambda(y_star, yhat_star, unlabelled)
    estimate, se = mean_estimate(y_star, yhat_star, unlabelled, lam)
    classical, classical_se = mean_estimate(y_star, yhat_star, unlabelled, 0.0)

    boot_low = boot_high = float("nan")
    if bootstrap_samples > 0:
        rng = np.random.default_rng(seed)
        replicates = []
        for start in range(0, bootstrap_samples, _BOOTSTRAP_CHUNK):
            b = min(_BOOTSTRAP_CHUNK, bootstrap_samples - start)
            drawn = rng.integers(0, n, size=(b, n))
            drawn_unlabelled = rng.integers(0, unlabelled.size, size=(b, unlabelled.size))
            wb = w[drawn]
            yb, yhb = _ipw_transform(
                y_[drawn], yhat_[drawn], wb / wb.mean(-1, keepdims=True), big_n
            )
            ub = unlabelled[drawn_unlabelled]
            replicates.append(mean_estimate(yb, yhb, ub, mean_lambda(yb, yhb, ub))[0])
        boot_low, boot_high = np.percentile(
            np.concatenate(replicates), [50.0 * alpha, 100.0 - 50.0 * alpha]
        )

    if np.std(y_) > 0 and np.std(yhat_) > 0:
        pearson = float(np.corrcoef(y_, yhat_)[0, 1])
    else:
        pearson = float("nan")
    ppi_var, classical_var = float(se) ** 2, float(classical_se) ** 2
    effective_n = n * classical_var / ppi_var if ppi_var > 0 else float("inf")
    return MeanEstimate(
        ppi=Interval(
            float(estimate), float(se), float(estimate - z * se), float(estimate + z * se)
        ),
        bootstrap_low=float(boot_low),
        bootstrap_high=float(boot_high),
        human_only=Interval(
            float(classical),
            float(classical_se),
            float(classical - z * classical_se),
            float(classical + z * classical_se),
        ),
        predictor_only=float(np.concatenate([yhat_, unlabelled]).mean()),
        lam=float(lam),
        n=n,
        n_units=big_n,
        effective_n=float(effective_n),
        pearson=pearson,
        weighted=weights is not None,
    )


# --------------------------------------------------------------------------------------------
# Logistic regression (Bradley–Terry)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogisticEstimate:
    """PPI++ logistic-regression coefficients; ``cov`` is the estimate's covariance (Σ̂/n)."""

    coef: np.ndarray
    cov: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lam: float


def _rectified_loss_parts(
    theta: np.ndarray, data: _LogisticData, lam: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss, gradient and Hessian of ``ppi_py``'s rectified logistic loss.

    ``λ/m Σ_unl (−Ŷ x'θ + log(1+e^{x'θ})) − λ/n Σ_lab v(−Ŷ x'θ + …) + 1/n Σ_lab w(−Y x'θ + …)``
    (v = w in ``ppi_py``; v = (w − f)/(1 − f) for the weighted estimator). Its Hessian is
    positive semi-definite for λ ∈ [0, 1] and v = w, and near it otherwise.
    """
    x, y, yhat, xu, yhat_u, w, v = data
    n, m = y.size, yhat_u.size
    eta, eta_u = x @ theta, xu @ theta
    soft, soft_u = np.logaddexp(0.0, eta), np.logaddexp(0.0, eta_u)
    loss = (
        lam / m * np.sum(-yhat_u * eta_u + soft_u)
        - lam / n * np.sum(v * (-yhat * eta + soft))
        + 1.0 / n * np.sum(w * (-y * eta + soft))
    )
    mu, mu_u = special.expit(eta), special.expit(eta_u)
    grad = (
        lam / m * xu.T @ (mu_u - yhat_u)
        - lam / n * x.T @ (v * (mu - yhat))
        + 1.0 / n * x.T @ (w * (mu - y))
    )
    curvature, curvature_u = mu * (1 - mu), mu_u * (1 - mu_u)
    hess = lam / m * (xu.T * curvature_u) @ xu + (x.T * ((w - lam * v) * curvature)) @ x / n
    return float(loss), grad, hess


_LogisticData = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]


def _fit_rectified(data: _LogisticData, lam: float) -> np.ndarray:
    """Minimiser of the rectified loss by damped Newton steps (to a gradient ≤ 1e-12)."""
    theta = np.zeros(data[0].shape[1])
    loss, grad, hess = _rectified_loss_parts(theta, data, lam)
    for _ in range(200):
        if np.max(np.abs(grad)) <= 1e-12:
            break
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                "the logistic regression is not identified: some system is never compared "
                "(or always wins or always loses) in the comparisons given"
            ) from exc
        t = 1.0
        while True:
            candidate = theta - t * step
            new = _rectified_loss_parts(candidate, data, lam)
            if new[0] <= loss - 1e-4 * t * float(grad @ step) or t < 1e-10:
                break
            t /= 2.0
        if t < 1e-10:
            break  # no descent left at machine precision
        theta = candidate
        loss, grad, hess = new
    return theta


def _logistic_stats(
    theta: np.ndarray, data: _LogisticData, use_unlabelled: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-unit gradients and the inverse Hessian, as ``ppi_py._logistic_get_stats``."""
    x, y, yhat, xu, yhat_u, w, v = data
    n, m = y.size, yhat_u.size
    mu, mu_u = special.expit(x @ theta), special.expit(xu @ theta)
    curvature = (x.T * (w * mu * (1 - mu))) @ x
    if use_unlabelled:
        hessian = ((xu.T * (mu_u * (1 - mu_u))) @ xu + curvature) / (m + n)
        grads_u = xu * (mu_u - yhat_u)[:, None]
    else:
        hessian = curvature / n
        grads_u = np.zeros_like(xu)
    grads = x * (w * (mu - y))[:, None]
    grads_hat = x * (v * (mu - yhat))[:, None]
    return grads, grads_hat, grads_u, np.linalg.inv(hessian)


def _glm_lambda(
    grads: np.ndarray, grads_hat: np.ndarray, grads_u: np.ndarray, inv_hessian: np.ndarray
) -> float:
    """``ppi_py._calc_lam_glm(clip=True)``: the λ minimising the trace of the covariance."""
    n, m = grads.shape[0], grads_u.shape[0]
    centred = grads - grads.mean(0)
    centred_hat = grads_hat - grads_hat.mean(0)
    cov = (centred.T @ centred_hat + centred_hat.T @ centred) / n
    var = np.atleast_2d(np.cov(np.concatenate([grads_hat, grads_u]).T))
    numerator = np.trace(inv_hessian @ cov @ inv_hessian)
    denominator = 2.0 * (1.0 + n / m) * np.trace(inv_hessian @ var @ inv_hessian)
    if denominator <= 0:
        return 0.0
    return float(np.clip(numerator / denominator, 0.0, 1.0))


def ppi_logistic(
    x: np.ndarray,
    y: np.ndarray,
    yhat: np.ndarray,
    x_unlabelled: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    w: np.ndarray | None = None,
    w_hat: np.ndarray | None = None,
    alpha: float = 0.1,
    lam: float | None = None,
) -> LogisticEstimate:
    """PPI++ logistic regression without intercept: ``ppi_py.ppi_logistic_ci``'s procedure.

    ``x``/``y``/``yhat``: the labelled rows, their human labels in [0, 1] and the predictor's;
    ``x_unlabelled``/``yhat_unlabelled``: the rows nobody labelled and the predictor on them;
    ``w``: weights of the labelled rows' human term (normalised to mean 1), ``w_hat`` of their
    predictor term (default ``w``, as ``ppi_py``). ``lam=None`` tunes λ — twice, as ``ppi_py``
    does for an interval — and the estimate is the interval's centre.
    """
    z = z_value(alpha)
    x_ = np.asarray(x, dtype=float)
    y_ = np.asarray(y, dtype=float)
    n, m = y_.size, len(yhat_unlabelled)
    w_ = np.ones(n) if w is None else np.asarray(w, dtype=float) / np.sum(w) * n
    v_ = w_ if w_hat is None else np.asarray(w_hat, dtype=float)
    data: _LogisticData = (
        x_,
        y_,
        np.asarray(yhat, dtype=float),
        np.asarray(x_unlabelled, dtype=float),
        np.asarray(yhat_unlabelled, dtype=float),
        w_,
        v_,
    )
    if lam is None:
        theta = _fit_rectified(data, 1.0)
        lam = _glm_lambda(*_logistic_stats(theta, data, True))
        theta = _fit_rectified(data, lam)
        lam = _glm_lambda(*_logistic_stats(theta, data, True))
    theta = _fit_rectified(data, lam)
    grads, grads_hat, grads_u, inv_hessian = _logistic_stats(theta, data, lam != 0)
    d = x_.shape[1]
    var_u = np.atleast_2d(np.cov((lam * grads_u).T)).reshape(d, d)
    var = np.atleast_2d(np.cov((grads - lam * grads_hat).T)).reshape(d, d)
    cov = inv_hessian @ (n / m * var_u + var) @ inv_hessian / n
    se = np.sqrt(np.diag(cov))
    return LogisticEstimate(theta, cov, theta - z * se, theta + z * se, float(lam))


@dataclass(frozen=True)
class BradleyTerryEstimate:
    """Elo-scale ratings (mean 1000) per system with intervals, and the raw BT coefficients.

    ``coef`` are ζ with system 0 as the reference (ζ_0 = 0) and ``coef_cov`` their covariance
    (row/column 0 zero). ``human_only`` holds the same ratings from the human votes alone.
    """

    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    coef: np.ndarray
    coef_cov: np.ndarray
    lam: float
    human_only_rating: np.ndarray
    human_only_low: np.ndarray
    human_only_high: np.ndarray
    n: int
    n_comparisons: int
    notes: tuple[str, ...] = field(default=())


def bradley_terry_design(n_systems: int, pairs: np.ndarray) -> np.ndarray:
    """Rows +1 at the first system, −1 at the second, with system 0's column dropped."""
    pairs_ = np.asarray(pairs, dtype=int)
    if pairs_.ndim != 2 or pairs_.shape[1] != 2:
        raise ValueError(f"pairs must be (comparisons, 2) system indices, got {pairs_.shape}")
    bad = np.flatnonzero(
        (pairs_ < 0).any(1) | (pairs_ >= n_systems).any(1) | (pairs_[:, 0] == pairs_[:, 1])
    )
    if bad.size:
        raise ValueError(
            f"pairs: comparison {int(bad[0])} ({pairs_[bad[0]].tolist()}) is not two distinct "
            f"systems of {n_systems}"
        )
    rows = np.arange(len(pairs_))
    design = np.zeros((len(pairs_), n_systems))
    design[rows, pairs_[:, 0]] = 1.0
    design[rows, pairs_[:, 1]] = -1.0
    return design[:, 1:]


def _elo(coef: np.ndarray, cov: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Elo ratings centred at 1000 and their delta-method intervals from ζ's covariance."""
    k = coef.size
    centring = np.eye(k) - 1.0 / k  # ζ_j − mean ζ
    rating = ELO_CENTRE + ELO_SCALE * centring @ coef
    se = ELO_SCALE * np.sqrt(np.clip(np.diag(centring @ cov @ centring.T), 0.0, None))
    return rating, rating - z * se, rating + z * se


def bradley_terry_ppi(
    n_systems: int,
    pairs_all: np.ndarray,
    judge_all: np.ndarray,
    labelled: np.ndarray,
    human: np.ndarray,
    *,
    pi: np.ndarray | Sequence[float] | None = None,
    alpha: float = 0.1,
) -> BradleyTerryEstimate:
    """Prediction-powered Bradley–Terry ratings (AutoEval Done Right, §3.2).

    ``pairs_all``: (N, 2) system indices of every comparison (first vs second);
    ``judge_all``: the judge's vote on each, P(first wins) ∈ [0, 1] (1, 0, ½ for a tie, or a
    probability); ``labelled``: indices into ``pairs_all`` of the comparisons people voted on;
    ``human``: their votes (1 first wins, 0 second wins, ½ tie); ``pi``: inclusion probabilities
    of the labelled comparisons when unequal.
    """
    if n_systems < 2:
        raise ValueError(f"at least 2 systems are needed, got {n_systems}")
    z = z_value(alpha)
    x_all = bradley_terry_design(n_systems, pairs_all)
    judge = np.asarray(judge_all, dtype=float)
    index = np.asarray(labelled, dtype=int)
    votes = np.asarray(human, dtype=float)
    if judge.shape != (x_all.shape[0],):
        raise ValueError(f"judge_all: expected {x_all.shape[0]} votes, got {judge.shape}")
    if index.shape != votes.shape or index.ndim != 1:
        raise ValueError(
            f"labelled and human must be aligned 1-D arrays, got {index.shape}, {votes.shape}"
        )
    if index.size and (index.min() < 0 or index.max() >= x_all.shape[0]):
        raise ValueError("labelled: an index is outside the comparisons given")
    if np.unique(index).size != index.size:
        raise ValueError("labelled: a comparison is listed twice")
    for name, values in (("judge_all", judge), ("human", votes)):
        bad = np.flatnonzero(~((values >= 0) & (values <= 1)))
        if bad.size:
            raise ValueError(f"{name}: vote {int(bad[0])} is {values[bad[0]]}, not in [0, 1]")
    if not 2 <= index.size < x_all.shape[0]:
        raise ValueError(
            f"need at least 2 human votes and at least 1 comparison without one, got "
            f"{index.size} of {x_all.shape[0]}"
        )
    weights = _weights_from_pi(pi, index.size)
    w = np.ones(index.size) if weights is None else weights
    f = index.size / x_all.shape[0]
    unlabelled = np.setdiff1d(np.arange(x_all.shape[0]), index)
    parts = (x_all[index], votes, judge[index], x_all[unlabelled], judge[unlabelled])
    w_hat = (w - f) / (1.0 - f)
    fit = ppi_logistic(*parts, w=w, w_hat=w_hat, alpha=alpha)
    classical = ppi_logistic(*parts, w=w, w_hat=w_hat, alpha=alpha, lam=0.0)
    coef = np.concatenate([[0.0], fit.coef])
    cov = np.zeros((n_systems, n_systems))
    cov[1:, 1:] = fit.cov
    classical_cov = np.zeros((n_systems, n_systems))
    classical_cov[1:, 1:] = classical.cov
    rating, low, high = _elo(coef, cov, z)
    h_rating, h_low, h_high = _elo(np.concatenate([[0.0], classical.coef]), classical_cov, z)
    notes: tuple[str, ...] = ()
    if np.any((votes > 0) & (votes < 1)):
        notes = ("ties counted as half a win for each side",)
    return BradleyTerryEstimate(
        rating=rating,
        low=low,
        high=high,
        coef=coef,
        coef_cov=cov,
        lam=fit.lam,
        human_only_rating=h_rating,
        human_only_low=h_low,
        human_only_high=h_high,
        n=index.size,
        n_comparisons=x_all.shape[0],
        notes=notes,
    )
