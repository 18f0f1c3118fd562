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
behind other metadata, so a few misses already stall the queue). The fit (nonlinear least squares, t-based 95 %
intervals from its covariance) tells; α = 1 is the refutable prediction of the simplest reading. Put together,
the loss a given coverage costs, and the coverage a given loss implies, follow; the latter is how a published loss
(seed 001: 65 % on VMFS, 35 % on vSAN) is read as a cache coverage, with an interval from the fits' parameter
uncertainty.
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


@dataclass(frozen=True)
class MissFit:
    """m = μ(1 − c), least squares through the origin."""

    mu: float
    ci95: tuple[float, float]
    se: float
    points: int


@dataclass(frozen=True)
class CostFit:
    """IOPS(none)/IOPS(one) = 1 + λ0 + κ·m^α, nonlinear least squares."""

    lambda0: float
    kappa: float
    alpha: float
    ci95: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]    # (λ0, κ, α)
    cov: tuple[tuple[float, ...], ...]                                            # covariance of (λ0, κ, α)
    r2: float
    points: int

    def predict_loss(self, m: np.ndarray | float) -> np.ndarray:
        return loss(m, self.lambda0, self.kappa, self.alpha)

    def predict_slowdown(self, m: np.ndarray | float) -> np.ndarray:
        return slowdown(m, self.lambda0, self.kappa, self.alpha)


def fit_misses(coverage: np.ndarray, reads_per_io: np.ndarray) -> MissFit:
    """Fit μ of m = μ(1 − c) to measured metadata reads per guest I/O at coverages (repeats as separate points).
    Needs at least two points with c < 1."""
    x = 1.0 - np.asarray(coverage, dtype=float)
    y = np.asarray(reads_per_io, dtype=float)
    if int((x > 0).sum()) < 2:
        raise ValueError("the miss model needs at least two points below full coverage")
    mu = float(x @ y / (x @ x))
    dof = len(y) - 1
    resid = y - mu * x
    se = float(np.sqrt(resid @ resid / dof / (x @ x)))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof)) * se
    return MissFit(mu, (mu - half, mu + half), se, len(y))


def fit_cost(reads_per_io: np.ndarray, slowdowns: np.ndarray) -> CostFit:
    """Fit λ0, κ and α of IOPS(none)/IOPS(one) = 1 + λ0 + κ·m^α to measured pairs (one point per pair: its m and
    its slowdown), least squares on the slowdown. Needs at least four points at three or more distinct m > 0 or
    m = 0 (λ0 is pinned by the pairs at full coverage). Raises if the fit does not converge."""
    m = np.maximum(np.asarray(reads_per_io, dtype=float), 0.0)
    y = np.asarray(slowdowns, dtype=float)
    if len(y) < 4 or len(np.unique(np.round(m, 6))) < 3:
        raise ValueError("the cost model needs at least four points at three or more metadata read rates")

    def f(x: np.ndarray, lambda0: float, kappa: float, alpha: float) -> np.ndarray:
        return slowdown(x, lambda0, kappa, alpha)

    # start from the straight line through the points (α = 1)
    k0 = max(float(np.polyfit(m, y, 1)[0]), 1e-3)
    popt, pcov = optimize.curve_fit(f, m, y, p0=(max(float(y[m == m.min()].mean()) - 1, 0.0), k0, 1.0),
                                    bounds=((-1.0, 0.0, 0.05), (np.inf, np.inf, 5.0)), maxfev=20000)
    if not np.all(np.isfinite(pcov)):
        raise ValueError("the cost model's fit has no finite covariance (too few distinct read rates)")
    resid = y - f(m, *popt)
    dof = len(y) - 3
    ss_res = float(resid @ resid)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof)) * np.sqrt(np.diag(pcov))
    ci = tuple((float(b - h), float(b + h)) for b, h in zip(popt, half, strict=True))
    return CostFit(float(popt[0]), float(popt[1]), float(popt[2]), ci,  # type: ignore[arg-type]
                   tuple(tuple(float(x) for x in row) for row in pcov), 1 - ss_res / ss_tot if ss_tot > 0 else 1.0,
                   len(y))


def coverage_for_loss_interval(loss_fraction: float, cost: CostFit, misses: MissFit, draws: int = 20000,
                               seed: int = 20261123) -> tuple[float, float, float]:
    """(estimate, low, high): the coverage implied by a loss, with a 95 % interval from the fits' parameter
    uncertainty (λ0, κ, α drawn jointly normal with the cost fit's covariance, μ normal with its standard error;
    percentile interval; a fixed seed, so the numbers are deterministic)."""
    est = coverage_for_loss(loss_fraction, cost.lambda0, cost.kappa, misses.mu, cost.alpha)
    rng = np.random.default_rng(seed)
    p = rng.multivariate_normal([cost.lambda0, cost.kappa, cost.alpha], np.asarray(cost.cov), size=draws)
    mu = rng.normal(misses.mu, misses.se, size=draws)
    ok = (p[:, 1] > 0) & (p[:, 2] > 0) & (mu > 0)
    x = (1.0 / (1.0 - loss_fraction) - 1.0 - p[ok, 0]) / p[ok, 1]
    c = 1.0 - np.sign(x) * np.abs(x) ** (1.0 / p[ok, 2]) / mu[ok]
    lo, hi = np.percentile(c, [50 * (1 - CONFIDENCE), 50 * (1 + CONFIDENCE)])
    return float(est), float(lo), float(hi)


__all__ = ["metadata_reads_per_io", "slowdown", "loss", "reads_for_loss", "coverage_for_loss", "MissFit", "CostFit",
           "fit_misses", "fit_cost", "coverage_for_loss_interval"]
