"""What a redo log's metadata cache costs: guest throughput with one snapshot as a function of how much of the
overlay's L2 tables the cache holds.

Every guest I/O to a qcow2 overlay looks up its cluster in an L2 table. The cache holds a fraction c (the
coverage, 0 < c ≤ 1) of the tables, in slices; a lookup whose slice is not cached reads it from the device before
the I/O can proceed (and under QEMU's qcow2 lock, so other requests wait too).

Miss model. For I/O placed uniformly over the disk and an LRU cache of whole slices, a lookup hits with probability
c, so the metadata reads per guest I/O are

    m(c) = μ · (1 − c)                                              [reads per guest I/O]

with μ = 1 if every guest I/O looks up an allocated L2 table (true once the overlay has allocated its tables,
which a random workload does within its first I/Os). μ is fitted, and μ = 1 is the model's refutable prediction.

Cost model. With C outstanding I/Os the time per guest I/O grows by a fixed part (allocation and L2 updates, the
snapshot's cost when every lookup hits) and by a part that grows with the metadata reads as a power:

    IOPS(none) / IOPS(one snapshot) = 1 + λ0 + κ · m^α              [dimensionless]
    loss = 1 − IOPS(one) / IOPS(none) = 1 − 1 / (1 + λ0 + κ · m^α)   [fraction]

λ0 (dimensionless) is the slowdown at full coverage; κ (guest-I/O times at one metadata read per I/O) says how dear
misses are; α says how the cost scales with them. α = 1 is a fixed price per miss (each read waited for in turn);
α < 1 means the first misses cost the most (a miss also evicts a dirty slice, whose write-back the cache orders
behind other metadata, so a few misses already stall the queue). The fit tells; α = 1 is the refutable prediction
of the simplest reading. Put together, the loss a given coverage costs, and the coverage a given loss implies,
follow; the latter is how a published loss (seed 001: 65 % on VMFS, 35 % on vSAN) is read as a cache coverage.

Bounded fits (issue 48). Every parameter is held to its physical range: μ ≥ 0 (a count of reads), λ0 ≥ 0 (the
overlay adds work at full coverage and takes none away), κ ≥ 0 (a miss cannot make an I/O cheaper), and α in
[ALPHA_RANGE] (positive; the ends are a search range, not physics: a fit that ends on one raises). A coverage lies in
[0, 1]. The cost fit is bounded nonlinear least squares (scipy.optimize.least_squares) on the slowdown; its 95 %
intervals are profile-likelihood intervals, {v : RSS_v ≤ RSS_min·(1 + F(0.95; 1, dof)/dof)} with RSS_v the least
residual sum of squares with the parameter held at v and the others free within their bounds, so an interval ends
at a bound where the data allow the bound, never by clipping (without an active bound it matches the t interval of
a model linear near its optimum). The same profile, with the model constrained to pass through a given slowdown at
a given read rate, gives a prediction's interval and the coverage a loss implies, searched in [0, 1] only: a loss
the model cannot reach at any coverage (below its full-coverage floor beyond the interval) is reported as such.
μ enters those at its estimate (its interval is a fraction of a per cent wide in the runs: the miss counts are
nearly deterministic).

Reads and writes per miss. μ is per guest I/O of the whole job: seed 001's random job reads and writes half each, and
a read miss and a write miss need not read the same number of slices (a write into a fresh overlay also allocates a
cluster, and updates the L2 entry it looked up, after other requests may have evicted its slice). A read-only job
through an overlay whose L2 tables exist (a read of a cluster the overlay lacks still looks its entry up; a read
through an overlay without tables looks nothing up) reads each guest read's data once, from whichever layer holds it,
plus the slices of its lookup's misses:

    h(c) = 1 + (1 − c) · s_r                                        [host reads per guest read]

with s_r the slices read per read miss [slices per miss]; one slice per miss (s_r = 1) is the prediction (the
calibration study's seed 000 experiment reads the same way, on the same preset at c = 1/8). Given s_r, a mixed
job's metadata reads per guest I/O m, at read share r, give its writes' share:

    m = (1 − c) · (r · s_r + (1 − r) · s_w)  ⇒  s_w = (m / (1 − c) − r · s_r) / (1 − r)   [slices per write miss]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

CONFIDENCE = 0.95


def metadata_reads_per_io(coverage: np.ndarray | float, mu: float = 1.0) -> np.ndarray:
    """m(c) = μ·(1 − c): L2 slice reads per guest I/O at cache coverage c (fraction of the L2 tables cached)."""
    c = np.asarray(coverage, dtype=float)
    return mu * (1.0 - c)


def slowdown(m: np.ndarray | float, lambda0: float, kappa: float, alpha: float = 1.0) -> np.ndarray:
    """IOPS(none) / IOPS(one snapshot) = 1 + λ0 + κ·m^α (dimensionless); m in metadata reads per guest I/O."""
    return 1.0 + lambda0 + kappa * np.power(np.maximum(np.asarray(m, dtype=float), 0.0), alpha)


def loss(m: np.ndarray | float, lambda0: float, kappa: float, alpha: float = 1.0) -> np.ndarray:
    """Loss with one snapshot, 1 − 1/(1 + λ0 + κ·m^α), as a fraction (0 … 1)."""
    return 1.0 - 1.0 / slowdown(m, lambda0, kappa, alpha)


def reads_for_loss(loss_fraction: float, lambda0: float, kappa: float, alpha: float = 1.0) -> float:
    """The metadata reads per guest I/O at which the model's loss equals `loss_fraction` (0 … 1):
    m = ((1/(1 − L) − 1 − λ0) / κ)^(1/α); negative (no reads can be that cheap) below the full-coverage loss."""
    if not 0 <= loss_fraction < 1:
        raise ValueError(f"a loss must be in [0, 1), got {loss_fraction}")
    x = (1.0 / (1.0 - loss_fraction) - 1.0 - lambda0) / kappa
    return float(np.sign(x) * abs(x) ** (1.0 / alpha))


def coverage_for_loss(loss_fraction: float, lambda0: float, kappa: float, mu: float, alpha: float = 1.0) -> float:
    """The cache coverage c at which the loss equals `loss_fraction`: c = 1 − m/μ with m = reads_for_loss(…).
    Above 1 when the loss is below the full-coverage floor (out of the cache's reach: reported, not clipped)."""
    return 1.0 - reads_for_loss(loss_fraction, lambda0, kappa, alpha) / mu


def read_host_reads_per_read(coverage: np.ndarray | float, slices_per_miss: float = 1.0) -> np.ndarray:
    """h(c) = 1 + (1 − c)·s_r: host reads per guest read of a read-only random job at cache coverage c (fraction of
    the L2 tables cached, 0 < c ≤ 1) through an overlay whose L2 tables exist, when a read miss reads s_r slices
    [slices per miss]; s_r = 1 (the default) is one slice per miss."""
    c = np.asarray(coverage, dtype=float)
    return 1.0 + (1.0 - c) * slices_per_miss


def read_slices_per_miss(host_reads_per_read: np.ndarray | float, coverage: np.ndarray | float) -> np.ndarray:
    """s_r = (h − 1)/(1 − c): the slices a read miss read [slices per miss], from a read-only job's host reads per
    guest read h at coverage c < 1 (h(c)'s inverse). Raises at full coverage, where no lookup misses."""
    c = np.asarray(coverage, dtype=float)
    if np.any(c >= 1):
        raise ValueError("slices per miss need a coverage below 1 (with every table cached no lookup misses)")
    return (np.asarray(host_reads_per_read, dtype=float) - 1.0) / (1.0 - c)


def coverage_for_reads_per_read(host_reads_per_read: float, slices_per_miss: np.ndarray | float) -> np.ndarray:
    """c = 1 − (h − 1)/s_r: the coverage at which a read-only job's host reads per guest read equal h, given the
    slices a read miss reads s_r > 0 (h(c)'s inverse in c). Not clipped: below 0 when even no cache gives fewer than
    h host reads per read (s_r < h − 1)."""
    s_r = np.asarray(slices_per_miss, dtype=float)
    if np.any(s_r <= 0):
        raise ValueError("the coverage for a number of reads needs a read miss that reads something (s_r > 0)")
    return 1.0 - (host_reads_per_read - 1.0) / s_r


def write_slices_per_miss(reads_per_io: np.ndarray | float, coverage: np.ndarray | float,
                          read_share: np.ndarray | float, read_slices: np.ndarray | float) -> np.ndarray:
    """s_w = (m/(1 − c) − r·s_r)/(1 − r): the slices a write miss read [slices per miss], from a mixed job's metadata
    reads per guest I/O m at coverage c < 1, its read share r (reads ÷ guest I/Os, 0 ≤ r < 1) and the slices a read
    miss reads s_r (from a read-only job: read_slices_per_miss)."""
    c, r = np.asarray(coverage, dtype=float), np.asarray(read_share, dtype=float)
    if np.any(c >= 1) or np.any((r < 0) | (r >= 1)):
        raise ValueError("slices per write miss need a coverage below 1 and a read share in [0, 1)")
    return (np.asarray(reads_per_io, dtype=float) / (1.0 - c) - r * np.asarray(read_slices, dtype=float)) / (1.0 - r)


@dataclass(frozen=True)
class MissFit:
    """m = μ(1 − c), least squares through the origin, μ ≥ 0 (its interval: the t interval, which the bound cuts
    only if it reaches below 0: for a model linear in μ that is its profile-likelihood interval)."""

    mu: float
    ci95: tuple[float, float]
    se: float
    points: int



def fit_misses(coverage: np.ndarray, reads_per_io: np.ndarray) -> MissFit:
    """Fit μ ≥ 0 of m = μ(1 − c) to measured metadata reads per guest I/O at coverages (repeats as separate points).
    Needs at least two points with c < 1."""
    x = 1.0 - np.asarray(coverage, dtype=float)
    y = np.asarray(reads_per_io, dtype=float)
    if int((x > 0).sum()) < 2:
        raise ValueError("the miss model needs at least two points below full coverage")
    mu = max(float(x @ y / (x @ x)), 0.0)
    dof = len(y) - 1
    resid = y - mu * x
    se = float(np.sqrt(resid @ resid / dof / (x @ x)))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof)) * se
    return MissFit(mu, (max(mu - half, 0.0), mu + half), se, len(y))


ALPHA_RANGE = (0.05, 5.0)          # α's search range (a fit ending on either end raises: not a physical bound)
LOWER = (0.0, 0.0, ALPHA_RANGE[0])            # λ0, κ, α
UPPER = (np.inf, np.inf, ALPHA_RANGE[1])
NAMES = ("lambda0", "kappa", "alpha")
_ALPHA_STARTS = (0.3, 1.0, 2.0)


def _threshold(rss_min: float, dof: int) -> float:
    """The profile's cut: RSS ≤ RSS_min·(1 + F(0.95; 1, dof)/dof)."""
    return rss_min * (1 + float(stats.f.ppf(CONFIDENCE, 1, dof)) / dof)


def _best(resid, starts: list[np.ndarray], lower, upper) -> tuple[np.ndarray, float]:
    """Bounded least squares from several starts: the parameters and RSS of the best."""
    best_x, best = np.asarray(starts[0], float), np.inf
    for x0 in starts:
        x0 = np.clip(np.asarray(x0, float), np.asarray(lower) + 1e-12, np.asarray(upper) - 1e-12)
        res = optimize.least_squares(resid, x0, bounds=(lower, upper), xtol=1e-12, ftol=1e-12, gtol=1e-12,
                                     max_nfev=5000)
        rss = float(res.fun @ res.fun)
        if rss < best:
            best_x, best = res.x, rss
    return best_x, best


@dataclass(frozen=True)
class CostFit:
    """IOPS(none)/IOPS(one) = 1 + λ0 + κ·m^α, bounded nonlinear least squares (λ0, κ ≥ 0, α in ALPHA_RANGE);
    ci95: profile-likelihood intervals of (λ0, κ, α); at_bound: the parameters whose estimate lies on a bound; m, y:
    the points it was fitted to (for the profiles of predictions and implied coverages)."""

    lambda0: float
    kappa: float
    alpha: float
    ci95: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]    # (λ0, κ, α)
    rss: float
    dof: int
    r2: float
    points: int
    at_bound: tuple[str, ...]
    m: tuple[float, ...]
    y: tuple[float, ...]

    def predict_loss(self, m: np.ndarray | float) -> np.ndarray:
        return loss(m, self.lambda0, self.kappa, self.alpha)

    def predict_slowdown(self, m: np.ndarray | float) -> np.ndarray:
        return slowdown(m, self.lambda0, self.kappa, self.alpha)

    @property
    def threshold(self) -> float:
        return _threshold(self.rss, self.dof)

    def constrained_rss(self, m: float, target: float) -> float:
        """The least RSS of the model made to pass through slowdown `target` at `m` reads per I/O, within the
        bounds (inf where no parameters within the bounds do): target = 1 + λ0 + κ·m^α, so for m > 0
        λ0 = (target − 1)(1 − u), κ = (target − 1)·u / m^α with u in [0, 1]; for m = 0, λ0 = target − 1."""
        x, y = np.asarray(self.m), np.asarray(self.y)
        g = target - 1.0
        if g < 0 or not np.isfinite(g):
            return np.inf
        if m <= 0:
            def r0(p: np.ndarray) -> np.ndarray:
                return y - slowdown(x, g, p[0], p[1])
            _, rss = _best(r0, [np.array([max(self.kappa, 1e-3), a]) for a in _ALPHA_STARTS],
                           (0.0, ALPHA_RANGE[0]), (np.inf, ALPHA_RANGE[1]))
            return rss

        def r(p: np.ndarray) -> np.ndarray:
            u, a = p
            return y - slowdown(x, g * (1 - u), g * u / m ** a, a)
        _, rss = _best(r, [np.array([0.5, a]) for a in _ALPHA_STARTS],
                       (0.0, ALPHA_RANGE[0]), (1.0, ALPHA_RANGE[1]))
        return rss

    def slowdown_interval(self, m: float) -> tuple[float, float, float]:
        """(slowdown, low, high) at `m` reads per I/O: the prediction with its 95 % profile-likelihood interval
        (the slowdowns the model can pass through at m without its RSS exceeding the cut)."""
        s = float(self.predict_slowdown(m))
        cut = self.threshold

        def excess(t: float) -> float:
            return self.constrained_rss(m, t) - cut

        lo = 1.0 if excess(1.0) <= 0 else float(optimize.brentq(excess, 1.0, s, xtol=1e-6))
        hi_end = s * 1.5 + 0.1
        while excess(hi_end) <= 0:
            hi_end = s + 2 * (hi_end - s)
        return s, lo, float(optimize.brentq(excess, s, hi_end, xtol=1e-6))


def _profile(fit_resid, theta: np.ndarray, j: int, rss_min: float, cut: float) -> tuple[float, float]:
    """The profile-likelihood interval of parameter j (ends at a bound where the RSS there is within the cut; an
    unbounded side that never reaches the cut within 10⁶ times the estimate's size ends at inf)."""
    def prof(v: float) -> float:
        others = [i for i in range(3) if i != j]
        lo, hi = [LOWER[i] for i in others], [UPPER[i] for i in others]

        def r(p: np.ndarray) -> np.ndarray:
            full = np.empty(3)
            full[j], full[others] = v, p
            return fit_resid(full)
        starts = [theta[others]]
        if 2 in others:      # α free: from each of its starts too (the profile may have several minima)
            starts += [np.array([theta[others[0]], a]) for a in _ALPHA_STARTS]
        return _best(r, starts, lo, hi)[1] - cut

    ends = []
    for side, bound in ((-1, LOWER[j]), (+1, UPPER[j])):
        v0 = float(theta[j])
        if np.isfinite(bound):
            ends.append(bound if prof(bound) <= 0 else float(optimize.brentq(prof, *sorted((v0, bound)),
                                                                              xtol=1e-9)))
            continue
        step = max(abs(v0), 1e-3) * 0.5
        far = v0 + side * step
        while prof(far) <= 0 and step < 1e6 * max(abs(v0), 1.0):
            step *= 2
            far = v0 + side * step
        ends.append(float(optimize.brentq(prof, *sorted((v0, far)), xtol=1e-9)) if prof(far) > 0 else side * np.inf)
    if j == 2:   # α's search range is not a bound of physics: an end there is α > 0 (below) or unbounded (above)
        ends = [0.0 if ends[0] <= ALPHA_RANGE[0] else ends[0], np.inf if ends[1] >= ALPHA_RANGE[1] else ends[1]]
    return ends[0], ends[1]


def fit_cost(reads_per_io: np.ndarray, slowdowns: np.ndarray) -> CostFit:
    """Fit λ0, κ and α of IOPS(none)/IOPS(one) = 1 + λ0 + κ·m^α to measured pairs (one point per pair: its m and
    its slowdown), bounded least squares on the slowdown with profile-likelihood intervals. Needs at least four
    points at three or more distinct m. Raises if α ends on its search range."""
    m = np.maximum(np.asarray(reads_per_io, dtype=float), 0.0)
    y = np.asarray(slowdowns, dtype=float)
    if len(y) < 4 or len(np.unique(np.round(m, 6))) < 3:
        raise ValueError("the cost model needs at least four points at three or more metadata read rates")

    def resid(theta: np.ndarray) -> np.ndarray:
        return y - slowdown(m, *theta)

    k0 = max(float(np.polyfit(m, y, 1)[0]), 1e-3)
    l0 = max(float(y[m == m.min()].mean()) - 1, 0.0)
    theta, rss = _best(resid, [np.array([l0, k0, a]) for a in _ALPHA_STARTS], LOWER, UPPER)
    dof = len(y) - 3
    if dof < 1:
        raise ValueError("the cost model needs more points than its three parameters")
    for end in ALPHA_RANGE:
        if abs(theta[2] - end) < 1e-6:
            raise ValueError(f"the cost model's α ended on its search range ({end}): the fit is not identified")
    cut = _threshold(rss, dof)
    ci = tuple(_profile(resid, theta, j, rss, cut) for j in range(3))
    at_bound = tuple(n for n, v, lo in zip(NAMES, theta, LOWER, strict=True) if v <= lo + 1e-9)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return CostFit(float(theta[0]), float(theta[1]), float(theta[2]), ci, rss, dof,  # type: ignore[arg-type]
                   1 - rss / ss_tot if ss_tot > 0 else 1.0, len(y), at_bound, tuple(map(float, m)),
                   tuple(map(float, y)))


@dataclass(frozen=True)
class ImpliedCoverage:
    """The coverage c in [0, 1] at which the model loses `loss_fraction`: estimate (the c whose constrained fit is
    best) and its 95 % profile interval; reachable False (all nan) when no c in [0, 1] is within the cut."""

    loss_fraction: float
    coverage: float
    low: float
    high: float
    reachable: bool


def implied_coverage(loss_fraction: float, cost: CostFit, misses: MissFit, step: float = 0.02) -> ImpliedCoverage:
    """The coverage a loss implies, searched in [0, 1] only. The estimate is the fitted model's inverse
    (coverage_for_loss) where it lies in [0, 1], else the nearest end of [0, 1] if the model constrained to lose
    `loss_fraction` there stays within the profile's cut (else: not reachable). The interval: the coverages at which
    the cost model constrained to lose `loss_fraction` at m = μ(1 − c) keeps its RSS within the cut, walked outwards
    from the estimate in steps of `step` and refined between the last step inside and the first outside."""
    if not 0 <= loss_fraction < 1:
        raise ValueError(f"a loss must be in [0, 1), got {loss_fraction}")
    target = 1.0 / (1.0 - loss_fraction)
    cut = cost.threshold

    def excess(c: float) -> float:
        return cost.constrained_rss(misses.mu * (1.0 - c), target) - cut

    c_hat = coverage_for_loss(loss_fraction, cost.lambda0, cost.kappa, misses.mu, cost.alpha)
    est = float(min(max(c_hat, 0.0), 1.0)) if np.isfinite(c_hat) else 1.0
    if est != c_hat and excess(est) > 0:
        return ImpliedCoverage(loss_fraction, np.nan, np.nan, np.nan, False)
    ends = []
    for side, limit in ((-1, 0.0), (+1, 1.0)):
        inside = est
        while inside != limit:
            nxt = min(max(inside + side * step, 0.0), 1.0)
            if excess(nxt) > 0:
                # the estimate itself outside the region (a fit with as many parameters as coverages can put it
                # there): the interval ends at it rather than at a root that does not exist
                ends.append(inside if excess(inside) >= 0 else
                            float(optimize.brentq(excess, *sorted((inside, nxt)), xtol=1e-6)))
                break
            inside = nxt
        else:
            ends.append(limit)
    return ImpliedCoverage(loss_fraction, est, ends[0], ends[1], True)


__all__ = ["metadata_reads_per_io", "slowdown", "loss", "reads_for_loss", "coverage_for_loss",
           "read_host_reads_per_read", "read_slices_per_miss", "coverage_for_reads_per_read",
           "write_slices_per_miss", "MissFit", "CostFit",
           "fit_misses", "fit_cost", "ImpliedCoverage", "implied_coverage", "ALPHA_RANGE", "LOWER", "UPPER",
           "NAMES"]
