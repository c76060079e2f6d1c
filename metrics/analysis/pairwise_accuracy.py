"""How well a metric (or a judge's scores) predicts human pairwise votes (no Django imports).

Vote level. Each human vote compares two replies; the metric scored both (``score_a`` for the
reply shown first, ``score_b``). With ``diff = score_a − score_b`` the metric votes A if
``diff > ε``, B if ``diff < −ε`` and tie if ``|diff| ≤ ε``. A human both-bad verdict is a tie.
Each vote is one pair in the sense of Deutsch, Foster & Freitag (2023), "Ties Matter:
Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie Calibration", §3:

* Con: both decisive and the same side; Dis: both decisive, opposite sides; T_h: only the human
  tied; T_m: only the metric tied; T_hm: both tied;
* ``acc23 = (Con + T_hm) / (Con + Dis + T_h + T_m + T_hm)`` (mt-metrics-eval
  ``KendallVariants(variant="acc23")``, ``TauSufficientStats.acc_23``);
* tie calibration (§5; mt-metrics-eval ``tau_optimization``): ε is chosen among 0 and every
  distinct ``|diff|`` to maximise acc23; of equal maxima the first, i.e. the smallest ε, wins
  (``np.nanargmax`` over thresholds in increasing order). Sorting ``|diff|`` once and taking
  cumulative counts makes the search O(n log n): with the L smallest ``|diff|`` tied, acc23 has
  numerator (human ties among those L) + (concordant votes among the rest);
* the interval of the calibrated acc23 re-calibrates ε on every resample, as mt-metrics-eval's
  significance test does for ``KendallWithTiesOpt`` (it calls the optimisation on each
  permuted sample): ε is fitted on the data it is scored on, so its choice is part of the
  variability;
* accuracy without ties: Con / (Con + Dis), the votes on which neither the human nor the metric
  (at the given ε, 0 by default) tied; the numbers excluded are reported.

System level: the pairwise ranking accuracy (:func:`metrics.analysis.ranking.pairwise_accuracy`)
and Kendall τ-b between the humans' system ratings (e.g. Bradley–Terry) and the metric's means;
:func:`kendall_tau_interval` takes paired bootstrap replicates (rows = rounds) of the ratings
and, optionally, of the scores and returns the percentile interval of τ-b.

API:

* ``metric_outcomes(score_a, score_b, epsilon=0.0) -> ndarray`` (0 = A, 1 = B, 2 = tie)
* ``pair_stats(human, score_a, score_b, epsilon=0.0) -> PairStats`` (``.acc23``,
  ``.accuracy_without_ties``)
* ``accuracy_without_ties(human, score_a, score_b, *, epsilon=0.0, samples=1000,
  confidence=0.95, seed=0) -> TieFreeAccuracy``
* ``tie_calibration(human, score_a, score_b) -> TieCalibration``
* ``calibrated_acc23(human, score_a, score_b, *, samples=1000, confidence=0.95, seed=0)
  -> CalibratedAcc23``
* ``system_agreement(human_ratings, metric_means) -> SystemAgreement``
* ``kendall_tau_interval(rating_replicates, scores, confidence=0.95) -> TauInterval``
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metrics.analysis.preference_agreement import (
    A_WINS,
    B_WINS,
    OUTCOMES,
    TIE,
    percentile_interval,
    ratio_interval,
    resample_counts,
)
from metrics.analysis.ranking import pairwise_accuracy

# Upper bound for the cumulative-count arrays of one chunk of resamples (bytes).
_CHUNK_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class PairStats:
    """Deutsch et al. (2023) sufficient statistics of the votes."""

    con: int
    dis: int
    ties_human: int
    ties_metric: int
    ties_both: int

    @property
    def votes(self) -> int:
        return self.con + self.dis + self.ties_human + self.ties_metric + self.ties_both

    @property
    def acc23(self) -> float | None:
        return (self.con + self.ties_both) / self.votes if self.votes else None

    @property
    def accuracy_without_ties(self) -> float | None:
        decisive = self.con + self.dis
        return self.con / decisive if decisive else None


@dataclass(frozen=True)
class TieFreeAccuracy:
    """Con / (Con + Dis) with its interval; ``excluded`` = votes where either side tied."""

    value: float | None
    low: float | None
    high: float | None
    used: int
    excluded: int
    excluded_human_ties: int
    excluded_metric_ties: int
    epsilon: float


@dataclass(frozen=True)
class TieCalibration:
    """The ε maximising acc23, and acc23 at every candidate threshold (increasing)."""

    epsilon: float
    acc23: float
    stats: PairStats
    thresholds: np.ndarray
    accuracies: np.ndarray


@dataclass(frozen=True)
class CalibratedAcc23:
    """Tie-calibrated acc23 and its interval (ε re-calibrated per resample)."""

    value: float
    epsilon: float
    stats: PairStats
    low: float | None
    high: float | None
    replicates: np.ndarray
    epsilon_replicates: np.ndarray


@dataclass(frozen=True)
class SystemAgreement:
    """System-level pairwise ranking accuracy and Kendall τ-b over systems with both values."""

    pairwise_accuracy: float | None
    pairs: int
    kendall_tau_b: float | None
    systems: int


@dataclass(frozen=True)
class TauInterval:
    """Percentile interval of Kendall τ-b over bootstrap rounds; NaN rounds are undefined."""

    low: float | None
    high: float | None
    replicates: np.ndarray
    defined: int


def _votes(
    human: np.ndarray, score_a: np.ndarray, score_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Human sign (+1 A, −1 B, 0 tie or both-bad) and the metric's score difference."""
    codes = np.asarray(human, dtype=np.int64)
    diff = np.asarray(score_a, dtype=float) - np.asarray(score_b, dtype=float)
    if codes.shape != diff.shape or codes.ndim != 1:
        raise ValueError("human, score_a and score_b must be vectors of one length")
    if codes.size and not np.isin(codes, OUTCOMES).all():
        raise ValueError(f"human: outcome codes must be in {OUTCOMES}")
    if not np.isfinite(diff).all():
        raise ValueError("score_a, score_b: every vote needs two finite scores")
    sign = np.where(codes == A_WINS, 1, np.where(codes == B_WINS, -1, 0))
    return sign, diff


def metric_outcomes(score_a: np.ndarray, score_b: np.ndarray, epsilon: float = 0.0) -> np.ndarray:
    """The metric's vote per pair: A if score_a − score_b > ε, B if < −ε, else tie."""
    diff = np.asarray(score_a, dtype=float) - np.asarray(score_b, dtype=float)
    return np.where(diff > epsilon, A_WINS, np.where(diff < -epsilon, B_WINS, TIE))


def _stats(sign: np.ndarray, diff: np.ndarray, epsilon: float) -> PairStats:
    metric = np.where(np.abs(diff) <= epsilon, 0, np.sign(diff)).astype(np.int64)
    human_tie, metric_tie = sign == 0, metric == 0
    decisive = ~human_tie & ~metric_tie
    return PairStats(
        con=int((decisive & (sign == metric)).sum()),
        dis=int((decisive & (sign != metric)).sum()),
        ties_human=int((human_tie & ~metric_tie).sum()),
        ties_metric=int((~human_tie & metric_tie).sum()),
        ties_both=int((human_tie & metric_tie).sum()),
    )


def pair_stats(
    human: np.ndarray, score_a: np.ndarray, score_b: np.ndarray, epsilon: float = 0.0
) -> PairStats:
    """Con, Dis, T_h, T_m, T_hm of the votes with the metric tying at ``|diff| ≤ ε``."""
    if epsilon < 0:
        raise ValueError("epsilon must be non-negative")
    sign, diff = _votes(human, score_a, score_b)
    return _stats(sign, diff, epsilon)


def accuracy_without_ties(
    human: np.ndarray,
    score_a: np.ndarray,
    score_b: np.ndarray,
    *,
    epsilon: float = 0.0,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> TieFreeAccuracy:
    """Share of agreeing verdicts over votes where neither the human nor the metric tied.

    The interval resamples all votes (ties included, as they were drawn) and takes the
    tie-free accuracy of each resample.
    """
    sign, diff = _votes(human, score_a, score_b)
    stats = _stats(sign, diff, epsilon)
    metric = np.where(np.abs(diff) <= epsilon, 0, np.sign(diff))
    used = (sign != 0) & (metric != 0)
    hits = used & (sign == metric)
    low, high = ratio_interval(
        hits.astype(float), used.astype(float), samples=samples, confidence=confidence, seed=seed
    )
    return TieFreeAccuracy(
        value=stats.accuracy_without_ties,
        low=low,
        high=high,
        used=stats.con + stats.dis,
        excluded=stats.ties_human + stats.ties_metric + stats.ties_both,
        excluded_human_ties=stats.ties_human + stats.ties_both,
        excluded_metric_ties=stats.ties_metric + stats.ties_both,
        epsilon=epsilon,
    )


class _Calibrator:
    """Votes sorted by |diff| once; scores every candidate ε for count-weighted resamples."""

    def __init__(self, sign: np.ndarray, diff: np.ndarray) -> None:
        magnitude = np.abs(diff)
        self.order = np.argsort(magnitude, kind="stable")
        ordered = magnitude[self.order]
        # Candidates as mt-metrics-eval: 0 first, then each distinct |diff| in increasing order.
        self.thresholds = np.unique(np.r_[0.0, ordered])
        # How many of the smallest |diff| each candidate ties (|diff| ≤ ε).
        self.tied = np.searchsorted(ordered, self.thresholds, side="right")
        self.human_tie = (sign == 0)[self.order].astype(np.int64)
        self.concordant = ((sign != 0) & (sign == np.sign(diff)))[self.order].astype(np.int64)

    def numerators(self, counts: np.ndarray) -> np.ndarray:
        """Con + T_hm at every candidate (resamples × candidates) for counts in input order."""
        weights = counts[:, self.order]
        rows = weights.shape[0]
        zero = np.zeros((rows, 1), dtype=np.int64)
        tied_human = np.hstack([zero, np.cumsum(weights * self.human_tie, axis=1)])
        concordant = np.hstack([zero, np.cumsum(weights * self.concordant, axis=1)])
        return tied_human[:, self.tied] + (concordant[:, -1:] - concordant[:, self.tied])


def tie_calibration(human: np.ndarray, score_a: np.ndarray, score_b: np.ndarray) -> TieCalibration:
    """The ε in {0} ∪ {|diff|} maximising acc23 (smallest of equal maxima), O(n log n)."""
    sign, diff = _votes(human, score_a, score_b)
    if not sign.size:
        raise ValueError("tie calibration needs at least one vote")
    calibrator = _Calibrator(sign, diff)
    numerators = calibrator.numerators(np.ones((1, sign.size), dtype=np.int64))[0]
    best = int(np.argmax(numerators))
    epsilon = float(calibrator.thresholds[best])
    return TieCalibration(
        epsilon=epsilon,
        acc23=float(numerators[best] / sign.size),
        stats=_stats(sign, diff, epsilon),
        thresholds=calibrator.thresholds,
        accuracies=numerators / sign.size,
    )


def calibrated_acc23(
    human: np.ndarray,
    score_a: np.ndarray,
    score_b: np.ndarray,
    *,
    samples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CalibratedAcc23:
    """Tie-calibrated acc23 with a percentile bootstrap interval over resampled votes.

    Every resample is calibrated afresh; its ε and acc23 equal :func:`tie_calibration` on the
    materialised resample (undrawn votes add candidates that only repeat the value of a
    smaller one, which the first-maximum rule never picks).
    """
    point = tie_calibration(human, score_a, score_b)
    sign, diff = _votes(human, score_a, score_b)
    n = sign.size
    calibrator = _Calibrator(sign, diff)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_BYTES // (8 * 4 * (n + 1)))
    values, epsilons = [], []
    for start in range(0, samples, chunk):
        counts = resample_counts(rng, n, min(chunk, samples - start))
        numerators = calibrator.numerators(counts)
        best = np.argmax(numerators, axis=1)
        values.append(numerators[np.arange(len(best)), best] / n)
        epsilons.append(calibrator.thresholds[best])
    replicates = np.concatenate(values) if values else np.empty(0)  # samples=0: no interval
    low, high = percentile_interval(replicates, confidence)
    return CalibratedAcc23(
        value=point.acc23,
        epsilon=point.epsilon,
        stats=point.stats,
        low=low,
        high=high,
        replicates=replicates,
        epsilon_replicates=np.concatenate(epsilons) if epsilons else np.empty(0),
    )


def system_agreement(human_ratings: np.ndarray, metric_means: np.ndarray) -> SystemAgreement:
    """Pairwise ranking accuracy and Kendall τ-b of systems with both values (NaN = missing)."""
    from scipy import stats

    human = np.asarray(human_ratings, dtype=float)
    metric = np.asarray(metric_means, dtype=float)
    accuracy, pairs = pairwise_accuracy(human, metric)
    keep = ~np.isnan(human) & ~np.isnan(metric)
    tau: float | None = None
    if keep.sum() >= 2:
        statistic = float(stats.kendalltau(human[keep], metric[keep], variant="b").statistic)
        tau = None if np.isnan(statistic) else statistic
    return SystemAgreement(
        pairwise_accuracy=accuracy, pairs=pairs, kendall_tau_b=tau, systems=int(keep.sum())
    )


def kendall_tau_interval(
    rating_replicates: np.ndarray, scores: np.ndarray, confidence: float = 0.95
) -> TauInterval:
    """Percentile interval of Kendall τ-b between rating replicates and scores, row by row.

    ``rating_replicates`` is rounds × systems (e.g. Bradley–Terry bootstrap ratings);
    ``scores`` is either one vector over the systems (fixed values) or rounds × systems
    replicates drawn in the same rounds (paired). A round with a missing (NaN) value or with
    all systems tied on either side gives no τ. τ-b is as ``scipy.stats.kendalltau``:
    (C − D) / sqrt((P − T_x)(P − T_y)) over the P system pairs.
    """
    ratings = np.asarray(rating_replicates, dtype=float)
    values = np.asarray(scores, dtype=float)
    if ratings.ndim != 2:
        raise ValueError("rating_replicates must be rounds × systems")
    if values.ndim == 1:
        values = np.broadcast_to(values, ratings.shape)
    if values.shape != ratings.shape:
        raise ValueError("scores must be one vector over the systems or rounds × systems")
    upper = np.triu_indices(ratings.shape[1], k=1)
    sign_x = np.sign(ratings[:, :, None] - ratings[:, None, :])[:, upper[0], upper[1]]
    sign_y = np.sign(values[:, :, None] - values[:, None, :])[:, upper[0], upper[1]]
    pairs = sign_x.shape[1]
    untied_x = pairs - (sign_x == 0).sum(axis=1)
    untied_y = pairs - (sign_y == 0).sum(axis=1)
    denominator = np.sqrt(untied_x.astype(float) * untied_y)
    complete = ~np.isnan(ratings).any(axis=1) & ~np.isnan(values).any(axis=1)
    defined = complete & (denominator > 0)
    replicates = np.full(ratings.shape[0], np.nan)
    replicates[defined] = (sign_x * sign_y).sum(axis=1)[defined] / denominator[defined]
    low, high = percentile_interval(replicates, confidence)
    return TauInterval(low=low, high=high, replicates=replicates, defined=int(defined.sum()))
