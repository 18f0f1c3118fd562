"""Service-time model of a snapshot chain.

At a fixed number of outstanding I/Os C (fio: iodepth × numjobs), Little's law gives the mean time per I/O as
C / IOPS. The model splits the aggregate time per I/O, τ(n) = 1/IOPS(n) in µs per I/O, into

    τ(n) = τ0 + τ1 · [n ≥ 1] + τL · max(n − 1, 0)

  τ0  µs per I/O without snapshots (the base disk through the harness),
  τ1  µs per I/O added by the first snapshot (a redo log appears: lookups, allocation, metadata writes),
  τL  µs per I/O added by each further layer (lookups that fall through one more layer's metadata).

It is linear in its parameters. The fit is least squares bounded to the physical range (τ0, τ1, τL ≥ 0: a layer
adds work, it cannot remove it) with profile-likelihood 95 % intervals (stats.bounded_least_squares): the t intervals
where no bound is active, ending at 0 where one is (at_bound says which), never clipped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..stats import bounded_least_squares


def time_per_io_us(n: np.ndarray | int, tau0_us: float, tau1_us: float, tau_layer_us: float) -> np.ndarray:
    """τ(n) in µs per I/O (aggregate over all outstanding I/Os); n = chain length (0, 1, 2, …)."""
    n = np.asarray(n, dtype=float)
    return tau0_us + tau1_us * (n >= 1) + tau_layer_us * np.maximum(n - 1, 0)


def iops(n: np.ndarray | int, tau0_us: float, tau1_us: float, tau_layer_us: float) -> np.ndarray:
    """IOPS(n) = 10⁶ / τ(n)  (I/O per second)."""
    return 1e6 / time_per_io_us(n, tau0_us, tau1_us, tau_layer_us)


@dataclass(frozen=True)
class ChainFit:
    tau0_us: float
    tau1_us: float
    tau_layer_us: float
    ci95: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]
    r2: float
    points: int
    at_bound: tuple[bool, ...] = ()     # (τ0, τ1, τL) on their bound 0

    def predict_iops(self, n: np.ndarray | int) -> np.ndarray:
        return iops(n, self.tau0_us, self.tau1_us, self.tau_layer_us)


def fit(chain_length: np.ndarray, measured_iops: np.ndarray) -> ChainFit:
    """Bounded least-squares fit of τ0, τ1, τL ≥ 0 to measured IOPS at chain lengths (repeats as separate points).

    Needs points at n = 0, n = 1 and some n ≥ 2; with only three points the fit is exact and has no CIs.
    """
    n = np.asarray(chain_length, dtype=float)
    y = 1e6 / np.asarray(measured_iops, dtype=float)
    if not ((n == 0).any() and (n == 1).any() and (n >= 2).any()):
        raise ValueError("the chain model needs points at n = 0, n = 1 and some n ≥ 2")
    X = np.column_stack([np.ones_like(n), (n >= 1).astype(float), np.maximum(n - 1, 0)])
    ls = bounded_least_squares(X, y, 0.0)
    return ChainFit(ls.beta[0], ls.beta[1], ls.beta[2], ls.ci, ls.r2, len(y), ls.at_bound)  # type: ignore[arg-type]
