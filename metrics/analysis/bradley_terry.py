"""Bradley–Terry ratings from pairwise preference votes, with intervals and ranks (no Django).

Votes are integer arrays ``a``, ``b`` (system indices ``0..n-1``; ``a`` was shown left/first)
and ``outcome`` codes :data:`A_WINS` (0), :data:`B_WINS` (1), :data:`TIE` (2) and
:data:`BOTH_BAD` (3). A tie and a "both bad" count as half a win each way, the Chatbot Arena /
FastChat ``compute_mle_elo`` convention (Chiang et al. 2024, "Chatbot Arena", §4–5).

Model. ``P(i beats j) = 1 / (1 + 10^((r_j − r_i) / 400))`` (Bradley & Terry 1952 on the Elo
scale: 400 rating points per factor 10 of odds). With log-strengths ``θ = r · ln10 / 400`` the
log-likelihood of the aggregated win matrix ``W`` (``W[i, j]`` = wins of i over j, ties half) is
``Σ_ij W_ij log σ(θ_i − θ_j)``; it is fitted on the aggregated counts, never per vote, by Newton's
method with a backtracking line search (the log-likelihood is concave), to a step ``|Δθ| < 1e-10``.
Ratings are centred on a mean of 1000, or shifted so that ``anchor = (system, rating)`` holds.

When the maximum likelihood estimate does not exist. It exists (and is unique up to the shift)
iff the directed "wins" graph, an edge i → j when i has at least half a win over j, is strongly
connected (Zermelo 1929; Ford 1957; Hunter 2004, Assumption 1): a system that never loses or
never wins, or a group that always beats another, sends the estimate to infinity. Only then a
Gaussian prior ``θ ~ N(0, 1/prior)`` is added (a ridge penalty ``prior/2 · Σθ²``, default
:data:`DEFAULT_PRIOR`), and the result says so: ``prior`` is the strength used (``None`` when
the plain MLE was fitted), ``prior_groups`` the strongly connected groups of the wins graph
(ordered from the best group), ``never_lost``/``never_won`` the single systems that triggered it.
A battle graph that is not even connected (no vote links two groups of systems) raises
``ValueError`` naming the groups: the prior would place the groups against each other by fiat,
not by data. A bootstrap resample can lose the only decisive vote of a pair; such a round is
fitted with the prior and counted in ``bootstrap_rounds_with_prior`` (never silent).

Intervals.

* Bootstrap over votes (Efron & Tibshirani 1993, percentile interval): a resample of the ``V``
  votes is a multinomial draw of ``V`` over the aggregated cells (unordered pair × {first wins,
  second wins, tie or both bad}: merging the cells of a multinomial gives a multinomial, so this
  is exactly resampling votes). All rounds are fitted at once by Newton's method batched over a
  rounds axis, warm-started at the point estimate; ``np.random.default_rng(seed)``.
* Sandwich (robust, Huber–White) covariance ``Σ̂ = H⁺ Ω H⁺`` (Chatbot Arena §5, the robust
  standard errors of FastChat's ``compute_mle_elo``): ``H = Σ_v p_v(1 − p_v) x_v x_vᵀ`` the
  negated Hessian, ``Ω = Σ_v (y_v − p_v)² x_v x_vᵀ`` the outer product of the per-vote scores,
  ``x_v = e_i − e_j``, ``y_v`` ∈ {1, ½, 0}, summed from the aggregated cells. Identifiability:
  ratings centred (``Σθ = 0``), hence the Moore–Penrose pseudo-inverse ``H⁺`` (with the prior,
  ``(H + prior·I)⁻¹``, which keeps ``Σθ = 0`` too); with an anchor the covariance is that of
  ``θ − θ_anchor`` (the anchor's SE is 0). Normal intervals ``r ± z·se``.
* Ranks (Chatbot Arena's leaderboard rule): ``rank = rank_lower = 1 + #{k : lower_k > upper_i}``
  (best rank compatible with the intervals) and ``rank_upper = n − #{k : upper_k < lower_i}``
  (worst), from the intervals chosen by ``interval`` (bootstrap by default).

API (all arrays are numpy):

* ``pair_counts(a, b, outcome, n_systems) -> PairCounts`` (``.wins`` W, ``.battles`` N, ...);
* ``fit_bradley_terry(wins, *, prior=DEFAULT_PRIOR, anchor=None, mean=1000.0) -> BradleyTerryFit``
  (point fit; ``prior`` is the strength used only when needed);
* ``bradley_terry(counts, *, rounds=1000, confidence=0.95, seed=0, anchor=None,
  prior=DEFAULT_PRIOR, interval="bootstrap") -> BradleyTerryResult``;
* ``sandwich_covariance(counts, log_strengths, *, prior=None) -> np.ndarray`` (θ scale);
* ``rank_intervals(lower, upper) -> (rank, rank_lower, rank_upper)``;
* ``win_rate_matrix(counts)``, ``predicted_win_probability(ratings)``;
* ``online_elo(a, b, outcome, n_systems, *, k=4.0, initial=1000.0) -> np.ndarray``;
* ``votes_to_separate(ratings, se, total_votes, *, confidence=0.95) -> tuple[Separation, ...]``;
* ``active_sampling_weights(counts, ratings) -> (pairs, probabilities)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import sparse, special, stats
from scipy.sparse import csgraph

A_WINS, B_WINS, TIE, BOTH_BAD = 0, 1, 2, 3
SCALE = 400.0 / math.log(10.0)  # Elo points per unit of log-strength
DEFAULT_MEAN = 1000.0
# Prior precision on log-strengths when the MLE does not exist: N(0, 10²), i.e. a prior SD of
# ~1,700 Elo points, small against any data yet enough to keep a never-losing system finite.
DEFAULT_PRIOR = 0.01
_TOLERANCE = 1e-10
_MAX_ITER = 200
_CHUNK_BYTES = 64 * 1024 * 1024

Interval = Literal["bootstrap", "sandwich"]


@dataclass(frozen=True, eq=False)
class PairCounts:
    """Aggregated votes of ``n`` systems.

    ``decisive[i, j]``: votes won by i against j; ``draws[i, j]`` (symmetric): ties and "both bad"
    between i and j; ``wins = decisive + draws / 2`` (W); ``battles = wins + winsᵀ`` (N).
    """

    decisive: np.ndarray
    draws: np.ndarray
    wins: np.ndarray
    battles: np.ndarray
    votes: int

    @property
    def n_systems(self) -> int:
        return int(self.wins.shape[0])


@dataclass(frozen=True, eq=False)
class BradleyTerryFit:
    """A point fit: ratings on the Elo scale and the log-strengths θ (centred, Σθ = 0)."""

    ratings: np.ndarray
    log_strengths: np.ndarray
    iterations: int
    prior: float | None
    prior_groups: tuple[tuple[int, ...], ...]
    never_lost: tuple[int, ...]
    never_won: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class BradleyTerryResult:
    """Ratings, intervals and ranks; see the module docstring for every definition.

    ``lower``/``upper`` are the intervals named by ``interval`` (and the ranks use them);
    ``sandwich_*`` and ``bootstrap_*`` hold both kinds (``bootstrap_*`` is ``None`` with 0
    rounds). ``replicates`` is rounds × n (ratings of each bootstrap round, same centring or
    anchor as ``ratings``), for callers computing e.g. Kendall τ intervals.
    """

    ratings: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    interval: Interval
    confidence: float
    se: np.ndarray
    covariance: np.ndarray
    sandwich_lower: np.ndarray
    sandwich_upper: np.ndarray
    bootstrap_lower: np.ndarray | None
    bootstrap_upper: np.ndarray | None
    replicates: np.ndarray
    rank: np.ndarray
    rank_lower: np.ndarray
    rank_upper: np.ndarray
    votes: np.ndarray
    total_votes: int
    prior: float | None
    prior_groups: tuple[tuple[int, ...], ...]
    never_lost: tuple[int, ...]
    never_won: tuple[int, ...]
    bootstrap_rounds_with_prior: int
    iterations: int
    bootstrap_iterations: int
    anchor: tuple[int, float] | None
    seed: int | None


@dataclass(frozen=True)
class Separation:
    """Two systems adjacent in rating order and the extra votes suggested to separate them."""

    higher: int
    lower: int
    gap: float
    separated: bool
    votes_needed: int | None


def pair_counts(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_systems: int) -> PairCounts:
    """Aggregate votes into win and battle matrices (ties and "both bad" half a win each way)."""
    a = np.asarray(a)
    b = np.asarray(b)
    outcome = np.asarray(outcome)
    if not (a.shape == b.shape == outcome.shape) or a.ndim != 1:
        raise ValueError("a, b and outcome must be 1-D arrays of the same length")
    for name, column in (("a", a), ("b", b)):
        bad = np.flatnonzero((column < 0) | (column >= n_systems))
        if bad.size:
            raise ValueError(
                f"{name}[{bad[0]}] = {column[bad[0]]} is not a system in 0..{n_systems - 1}"
            )
    same = np.flatnonzero(a == b)
    if same.size:
        raise ValueError(f"vote {same[0]} compares system {a[same[0]]} with itself")
    bad = np.flatnonzero((outcome < A_WINS) | (outcome > BOTH_BAD))
    if bad.size:
        raise ValueError(f"outcome[{bad[0]}] = {outcome[bad[0]]} is not one of 0, 1, 2, 3")
    a = a.astype(np.intp)
    b = b.astype(np.intp)
    cells = n_systems * n_systems
    winner = np.where(outcome == A_WINS, a, b)
    loser = np.where(outcome == A_WINS, b, a)
    decisive_votes = outcome <= B_WINS
    decisive = np.bincount(
        winner[decisive_votes] * n_systems + loser[decisive_votes], minlength=cells
    ).reshape(n_systems, n_systems)
    drawn = ~decisive_votes
    draws = np.bincount(a[drawn] * n_systems + b[drawn], minlength=cells).reshape(
        n_systems, n_systems
    )
    draws = draws + draws.T
    wins = decisive + draws / 2.0
    return PairCounts(decisive, draws, wins, wins + wins.T, int(len(a)))


def _battle_groups(battles: np.ndarray) -> list[tuple[int, ...]]:
    count, labels = csgraph.connected_components(sparse.csr_matrix(battles > 0), directed=False)
    return [tuple(int(i) for i in np.flatnonzero(labels == g)) for g in range(count)]


def _wins_groups(wins: np.ndarray) -> tuple[int, np.ndarray]:
    count, labels = csgraph.connected_components(
        sparse.csr_matrix(wins > 0), directed=True, connection="strong"
    )
    return int(count), labels


class DisconnectedVotes(ValueError):
    """No vote links some groups of systems; ``groups`` holds their indices."""

    def __init__(self, message: str, groups: list[tuple[int, ...]]) -> None:
        super().__init__(message)
        self.groups = groups


def _check_connected(battles: np.ndarray) -> None:
    groups = _battle_groups(battles)
    if len(groups) > 1:
        listed = "; ".join("{" + ", ".join(map(str, g)) + "}" for g in groups)
        raise DisconnectedVotes(
            f"the systems fall into {len(groups)} groups with no vote between them ({listed}): "
            "their ratings cannot be compared; add votes linking the groups or rate them apart",
            groups,
        )


def _newton(wins: np.ndarray, theta: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, int]:
    """Maximise the (penalised) log-likelihood for a batch: wins R×n×n, theta R×n, prior R.

    Newton steps solve ``(H + prior·I + 11ᵀ/n) Δ = g``: on zero-sum vectors the added ``11ᵀ/n``
    changes nothing, and it makes the system regular without the prior, so θ stays centred.
    """
    rounds, n = theta.shape
    battles = wins + wins.transpose(0, 2, 1)
    won = wins.sum(axis=2)
    centring = np.full((n, n), 1.0 / n)

    def objective(t: np.ndarray, rows: np.ndarray) -> np.ndarray:
        diff = t[:, :, None] - t[:, None, :]
        fit = (wins[rows] * special.log_expit(diff)).sum(axis=(1, 2))
        return fit - 0.5 * prior[rows] * (t**2).sum(axis=1)

    every = np.arange(rounds)
    current = objective(theta, every)
    for iteration in range(1, _MAX_ITER + 1):
        p = special.expit(theta[:, :, None] - theta[:, None, :])
        gradient = won - (battles * p).sum(axis=2) - prior[:, None] * theta
        weight = battles * p * (1.0 - p)
        hessian = centring - weight
        hessian[:, np.arange(n), np.arange(n)] += weight.sum(axis=2) + prior[:, None]
        step = np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        scale = np.ones(rounds)
        candidate = theta + step
        value = objective(candidate, every)
        # Backtrack where a full step lowers the objective (far from the optimum only; the
        # slack absorbs rounding once the steps are tiny).
        for _ in range(60):
            worse = np.flatnonzero(value < current - 1e-9 * (1.0 + np.abs(current)))
            if not worse.size:
                break
            scale[worse] /= 2.0
            candidate[worse] = theta[worse] + scale[worse, None] * step[worse]
            value[worse] = objective(candidate[worse], worse)
        theta, current = candidate, value
        if np.abs(scale[:, None] * step).max() < _TOLERANCE:
            return theta, iteration
    raise RuntimeError(f"Bradley–Terry fit did not converge in {_MAX_ITER} Newton steps")


def _to_ratings(theta: np.ndarray, anchor: tuple[int, float] | None, mean: float) -> np.ndarray:
    """Log-strengths (R × n) to Elo-scale ratings: centred on ``mean`` or anchored."""
    ratings = SCALE * theta
    if anchor is None:
        return ratings - ratings.mean(axis=1, keepdims=True) + mean
    system, rating = anchor
    return ratings - ratings[:, system : system + 1] + rating


def _check_anchor(anchor: tuple[int, float] | None, n: int) -> None:
    if anchor is not None and not 0 <= anchor[0] < n:
        raise ValueError(f"anchor system {anchor[0]} is not a system in 0..{n - 1}")


def fit_bradley_terry(
    wins: np.ndarray,
    *,
    prior: float = DEFAULT_PRIOR,
    anchor: tuple[int, float] | None = None,
    mean: float = DEFAULT_MEAN,
) -> BradleyTerryFit:
    """Maximum likelihood Bradley–Terry ratings from the win matrix W (ties already halved).

    ``prior`` is the precision of the Gaussian prior on log-strengths, used only when the wins
    graph is not strongly connected (the result's ``prior`` is then that value, else ``None``).
    Raises ``ValueError`` when the battle graph is disconnected.
    """
    wins = np.asarray(wins, dtype=float)
    n = wins.shape[0]
    if wins.shape != (n, n) or (wins < 0).any() or np.diagonal(wins).any():
        raise ValueError("wins must be a square matrix of non-negative counts, zero diagonal")
    if prior <= 0:
        raise ValueError(f"prior must be positive, not {prior}")
    _check_anchor(anchor, n)
    _check_connected(wins + wins.T)
    count, labels = _wins_groups(wins)
    used = prior if count > 1 else None
    theta, iterations = _newton(wins[None], np.zeros((1, n)), np.array([used or 0.0]))
    groups: tuple[tuple[int, ...], ...] = ()
    if count > 1:
        members = [np.flatnonzero(labels == g) for g in range(count)]
        members.sort(key=lambda m: (-theta[0, m].mean(), int(m[0])))
        groups = tuple(tuple(int(i) for i in m) for m in members)
    won, lost = wins.sum(axis=1), wins.sum(axis=0)
    return BradleyTerryFit(
        ratings=_to_ratings(theta, anchor, mean)[0],
        log_strengths=theta[0],
        iterations=iterations,
        prior=used,
        prior_groups=groups,
        never_lost=tuple(int(i) for i in np.flatnonzero(lost == 0)),
        never_won=tuple(int(i) for i in np.flatnonzero(won == 0)),
    )


def _laplacian(weight: np.ndarray) -> np.ndarray:
    return np.diag(weight.sum(axis=1)) - weight


def sandwich_covariance(
    counts: PairCounts, log_strengths: np.ndarray, *, prior: float | None = None
) -> np.ndarray:
    """Robust covariance ``H⁺ Ω H⁺`` of the centred log-strengths θ (module docstring)."""
    theta = np.asarray(log_strengths, dtype=float)
    n = len(theta)
    p = special.expit(theta[:, None] - theta[None, :])
    hessian = _laplacian(counts.battles * p * (1.0 - p))
    meat = _laplacian(
        counts.decisive * (1.0 - p) ** 2 + counts.decisive.T * p**2 + counts.draws * (0.5 - p) ** 2
    )
    # On zero-sum vectors 11ᵀ/n is zero and 1 is an eigenvector: the inverse is H⁺ there.
    bread = np.linalg.inv(hessian + (prior or 0.0) * np.eye(n) + np.full((n, n), 1.0 / n))
    covariance = bread @ meat @ bread
    return (covariance + covariance.T) / 2.0


def _cell_layout(counts: PairCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (i < j) with battles and their cell counts (K × 3: i wins, j wins, draw)."""
    first, second = np.triu_indices(counts.n_systems, k=1)
    seen = counts.battles[first, second] > 0
    first, second = first[seen], second[seen]
    cells = np.stack(
        [
            counts.decisive[first, second],
            counts.decisive[second, first],
            counts.draws[first, second],
        ],
        axis=1,
    )
    return first, second, cells


def _draw_cells(counts: PairCounts, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """Cell counts of ``rounds`` vote resamples (rounds × K × 3): one multinomial draw each."""
    _, _, cells = _cell_layout(counts)
    flat = cells.ravel().astype(float)
    drawn = rng.multinomial(counts.votes, flat / flat.sum(), size=rounds)
    return drawn.reshape(rounds, *cells.shape)


def _resample_wins(first: np.ndarray, second: np.ndarray, drawn: np.ndarray, n: int) -> np.ndarray:
    wins = np.zeros((drawn.shape[0], n, n))
    wins[:, first, second] = drawn[:, :, 0] + 0.5 * drawn[:, :, 2]
    wins[:, second, first] = drawn[:, :, 1] + 0.5 * drawn[:, :, 2]
    return wins


def _bootstrap(
    counts: PairCounts,
    fit: BradleyTerryFit,
    drawn: np.ndarray,
    prior: float,
) -> tuple[np.ndarray, int, int]:
    """Log-strengths of each resample (rounds × n), rounds fitted with the prior, iterations."""
    n = counts.n_systems
    first, second, _ = _cell_layout(counts)
    rounds = drawn.shape[0]
    theta = np.empty((rounds, n))
    with_prior = 0
    iterations = 0
    chunk = max(1, _CHUNK_BYTES // (n * n * 8 * 10))
    for start in range(0, rounds, chunk):
        wins = _resample_wins(first, second, drawn[start : start + chunk], n)
        size = wins.shape[0]
        if fit.prior is not None:
            strengths = np.full(size, fit.prior)
        else:
            # The data's wins graph is strongly connected; a resample's can only break where a
            # cell with wins drew none. Only those rounds need the (slower) graph check.
            lost = (wins[:, first, second] == 0) & (counts.wins[first, second] > 0)
            lost |= (wins[:, second, first] == 0) & (counts.wins[second, first] > 0)
            strengths = np.zeros(size)
            for r in np.flatnonzero(lost.any(axis=1)):
                if _wins_groups(wins[r])[0] > 1:
                    strengths[r] = prior
        with_prior += int((strengths > 0).sum())
        start_theta = np.broadcast_to(fit.log_strengths, (size, n)).copy()
        theta[start : start + size], steps = _newton(wins, start_theta, strengths)
        iterations = max(iterations, steps)
    return theta, with_prior, iterations


def rank_intervals(
    lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chatbot Arena's ranks from intervals: (rank, best rank, worst rank), 1 = best.

    ``rank = best = 1 + #{k : lower_k > upper_i}``; ``worst = n − #{k : upper_k < lower_i}``.
    """
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    n = len(lower)
    best = 1 + (lower[None, :] > upper[:, None]).sum(axis=1)
    worst = n - (upper[None, :] < lower[:, None]).sum(axis=1)
    return best.copy(), best, worst


def bradley_terry(
    counts: PairCounts,
    *,
    rounds: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    anchor: tuple[int, float] | None = None,
    prior: float = DEFAULT_PRIOR,
    interval: Interval = "bootstrap",
    mean: float = DEFAULT_MEAN,
) -> BradleyTerryResult:
    """Point fit, sandwich and bootstrap intervals, and ranks (see the module docstring)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if rounds < 0:
        raise ValueError(f"rounds must be non-negative, not {rounds}")
    if interval == "bootstrap" and rounds == 0:
        raise ValueError("bootstrap intervals need rounds > 0 (or interval='sandwich')")
    n = counts.n_systems
    fit = fit_bradley_terry(counts.wins, prior=prior, anchor=anchor, mean=mean)
    covariance = sandwich_covariance(counts, fit.log_strengths, prior=fit.prior)
    if anchor is not None:
        shift = np.eye(n)
        shift[:, anchor[0]] -= 1.0
        covariance = shift @ covariance @ shift.T
    covariance = SCALE**2 * covariance
    se = np.sqrt(np.clip(np.diagonal(covariance), 0.0, None))
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    sandwich_lower, sandwich_upper = fit.ratings - z * se, fit.ratings + z * se

    replicates = np.empty((0, n))
    boot_lower = boot_upper = None
    with_prior = boot_iterations = 0
    if rounds:
        drawn = _draw_cells(counts, rounds, np.random.default_rng(seed))
        theta, with_prior, boot_iterations = _bootstrap(counts, fit, drawn, prior)
        replicates = _to_ratings(theta, anchor, mean)
        tail = (1.0 - confidence) / 2.0 * 100.0
        boot_lower, boot_upper = np.percentile(replicates, [tail, 100.0 - tail], axis=0)

    if interval == "bootstrap":
        assert boot_lower is not None and boot_upper is not None
        lower, upper = boot_lower, boot_upper
    else:
        lower, upper = sandwich_lower, sandwich_upper
    rank, rank_lower, rank_upper = rank_intervals(lower, upper)
    return BradleyTerryResult(
        ratings=fit.ratings,
        lower=lower,
        upper=upper,
        interval=interval,
        confidence=confidence,
        se=se,
        covariance=covariance,
        sandwich_lower=sandwich_lower,
        sandwich_upper=sandwich_upper,
        bootstrap_lower=boot_lower,
        bootstrap_upper=boot_upper,
        replicates=replicates,
        rank=rank,
        rank_lower=rank_lower,
        rank_upper=rank_upper,
        votes=counts.battles.sum(axis=1).round().astype(np.int64),
        total_votes=counts.votes,
        prior=fit.prior,
        prior_groups=fit.prior_groups,
        never_lost=fit.never_lost,
        never_won=fit.never_won,
        bootstrap_rounds_with_prior=with_prior,
        iterations=fit.iterations,
        bootstrap_iterations=boot_iterations,
        anchor=anchor,
        seed=seed,
    )


def win_rate_matrix(counts: PairCounts) -> np.ndarray:
    """Share of i's wins over j among their battles (ties half); NaN where they never met."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts.battles > 0, counts.wins / counts.battles, np.nan)


def predicted_win_probability(ratings: np.ndarray) -> np.ndarray:
    """``P[i, j] = 1 / (1 + 10^((r_j − r_i) / 400))``, the model's chance that i beats j."""
    ratings = np.asarray(ratings, dtype=float)
    return special.expit((ratings[:, None] - ratings[None, :]) / SCALE)


def online_elo(
    a: np.ndarray,
    b: np.ndarray,
    outcome: np.ndarray,
    n_systems: int,
    *,
    k: float = 4.0,
    initial: float = DEFAULT_MEAN,
) -> np.ndarray:
    """Plain online Elo in vote order, FastChat's ``compute_online_elo`` (K=4, 400, base 10).

    Each vote moves ``r_a += k (s_a − e_a)`` and ``r_b += k (1 − s_a − e_b)`` with
    ``e_a = 1 / (1 + 10^((r_b − r_a) / 400))`` and ``s_a`` = 1, 0 or ½ (tie, both bad). It
    depends on the order of the votes, unlike Bradley–Terry; shown for comparison only.
    """
    ratings = [float(initial)] * n_systems
    score = {A_WINS: 1.0, B_WINS: 0.0, TIE: 0.5, BOTH_BAD: 0.5}
    for left, right, code in zip(
        np.asarray(a).tolist(), np.asarray(b).tolist(), np.asarray(outcome).tolist(), strict=True
    ):
        ra, rb = ratings[left], ratings[right]
        expected_a = 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0))
        expected_b = 1.0 / (1.0 + 10.0 ** ((ra - rb) / 400.0))
        s = score[code]
        ratings[left] = ra + k * (s - expected_a)
        ratings[right] = rb + k * (1.0 - s - expected_b)
    return np.array(ratings)


def votes_to_separate(
    ratings: np.ndarray, se: np.ndarray, total_votes: int, *, confidence: float = 0.95
) -> tuple[Separation, ...]:
    """For each pair adjacent in rating order, how many more votes would separate their intervals.

    The normal intervals ``r ± z·se`` of systems h (higher) and l separate when
    ``r_h − r_l > z (se_h + se_l)``. The sandwich SE of an asymptotically normal MLE shrinks as
    ``1/sqrt(V)`` in the number of votes V (Huber 1967; the Chatbot Arena paper's §5 intervals),
    so with more votes spread as the current ones, ``V' = V · (z (se_h + se_l) / gap)²`` votes in
    all are needed: ``votes_needed = ⌊V' − V⌋ + 1`` (0 when already separated, ``None`` when
    the gap is 0, which no number of votes separates).
    """
    ratings = np.asarray(ratings, dtype=float)
    se = np.asarray(se, dtype=float)
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    order = np.argsort(-ratings, kind="stable")
    out = []
    for high, low in zip(order[:-1].tolist(), order[1:].tolist(), strict=True):
        gap = float(ratings[high] - ratings[low])
        width = z * float(se[high] + se[low])
        separated = gap > width
        needed: int | None
        if separated:
            needed = 0
        elif gap <= 0:
            needed = None
        else:
            needed = math.floor(total_votes * (width / gap) ** 2 - total_votes) + 1
        out.append(Separation(high, low, gap, separated, needed))
    return tuple(out)


def active_sampling_weights(
    counts: PairCounts, ratings: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Chatbot Arena's active sampling (Chiang et al. 2024, §5, eq. 9) over all pairs i < j.

    ``P(a) ∝ sqrt(Σ_aa / n_a) − sqrt(Σ_aa / (n_a + 1))``: the drop in pair a's standard error
    from one more battle. ``n_a`` is the pair's battle count and ``Σ_aa`` the sandwich variance
    term of its win-rate per battle, the mean squared residual ``(y − p_a)²`` of its outcomes
    (y ∈ {1, ½, 0}) around the Bradley–Terry probability ``p_a`` from ``ratings`` (the pair's
    share of the meat Ω). An unseen pair (``n_a = 0``, where eq. 9 is infinite) takes
    ``Σ_aa = p_a (1 − p_a)``, the variance of one decisive battle, and the weight ``sqrt(Σ_aa)``
    — its first battle takes the standard error from undefined to ``sqrt(Σ_aa)`` — which is
    above every seen pair of the same variance, so unseen pairs come first, closest-matched
    first. When every weight is 0 (all outcomes exactly predicted) the pairs are uniform.

    Returns ``pairs`` (K × 2, i < j, row-major) and their probabilities (K,).
    """
    n = counts.n_systems
    first, second = np.triu_indices(n, k=1)
    p = predicted_win_probability(ratings)[first, second]
    battles = counts.battles[first, second]
    residual = (
        counts.decisive[first, second] * (1.0 - p) ** 2
        + counts.decisive[second, first] * p**2
        + counts.draws[first, second] * (0.5 - p) ** 2
    )
    seen = battles > 0
    variance = np.where(seen, residual / np.where(seen, battles, 1.0), p * (1.0 - p))
    weights = np.where(
        seen,
        np.sqrt(variance / np.where(seen, battles, 1.0)) - np.sqrt(variance / (battles + 1.0)),
        np.sqrt(variance),
    )
    total = weights.sum()
    if total > 0:
        probabilities = weights / total
    else:
        probabilities = np.full(len(weights), 1.0 / max(len(weights), 1))
    return np.stack([first, second], axis=1), probabilities
