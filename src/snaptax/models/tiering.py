"""Tiering misplacement: the IOPS of a two-tier pool from the share of I/O its SSD extents serve.

At a fixed number of outstanding I/Os C, Little's law makes the mean time per I/O C / IOPS. If a share p of the
I/Os is served by SSD extents and 1 − p by HDD extents, and each tier's aggregate time per I/O is its own
(τ_ssd, τ_hdd: µs per I/O at that load, i.e. 10⁶ / the tier's IOPS alone), the pool's time per I/O is the mix

    τ(p) = p · τ_ssd + (1 − p) · τ_hdd          [µs per I/O]
    IOPS(p) = 10⁶ / τ(p)                        [I/O per second]

A snapshot sends new writes — and the reads that then find their data in the delta — to freshly allocated
extents, which Easy Tier places on the HDD tier until a cycle's plan promotes them: p falls, and IOPS with it,
harmonically (a small HDD share costs much: at τ_hdd = 20 τ_ssd, p = 0.9 already halves IOPS). The model is
linear in (τ_ssd, τ_hdd), so the fit is least squares bounded to τ ≥ 0 (the physical range) with
profile-likelihood 95 % intervals, which are the t intervals when no bound is active (stats.bounded_least_squares).

What it predicts that the measurements can refute: (1) IOPS at any measured p (the per-second points of a
timeline lie on one curve, before, with and after the snapshot); (2) τ_hdd, fitted on the tiered pool, is the
SAS-only pool's time per I/O with a snapshot (the same 8-drive RAID5 behind it); (3) what-ifs: flash as a write
cache (write_cache_share) and how long the loss lasts for a given cycle (loss_duration_s).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..stats import bounded_least_squares

MIN_SHARE_SPREAD = 0.3      # the fit needs points across the p range to tell τ_ssd from τ_hdd


def time_per_io_us(p: np.ndarray | float, tau_ssd_us: float, tau_hdd_us: float) -> np.ndarray:
    """τ(p) = p·τ_ssd + (1 − p)·τ_hdd in µs per I/O; p = share of I/Os served by SSD extents (0 … 1)."""
    p = np.asarray(p, dtype=float)
    return p * tau_ssd_us + (1 - p) * tau_hdd_us


def iops(p: np.ndarray | float, tau_ssd_us: float, tau_hdd_us: float) -> np.ndarray:
    """IOPS(p) = 10⁶ / τ(p)  (I/O per second)."""
    return 1e6 / time_per_io_us(p, tau_ssd_us, tau_hdd_us)


def write_cache_share(p_read: np.ndarray | float, read_fraction: float) -> np.ndarray:
    """The SSD-served share if flash caches every write (the seed's remedy): reads keep their share p_read, writes
    are all served by flash: p = f_r · p_read + (1 − f_r), f_r = the workload's read fraction (0 … 1)."""
    return read_fraction * np.asarray(p_read, dtype=float) + (1 - read_fraction)


def loss_duration_s(cycle_s: np.ndarray | float, delta_bytes: float, migration_bytes_per_s: float) -> np.ndarray:
    """Expected time (s) from a snapshot until the tier serves its data from SSD again, for a snapshot taken at a
    uniformly random moment of the cycle: half a cycle until the next plan, plus the time to migrate the delta's
    extents at the pool's migration rate:  D = cycle_s / 2 + delta_bytes / migration_bytes_per_s."""
    return np.asarray(cycle_s, dtype=float) / 2 + delta_bytes / migration_bytes_per_s


@dataclass(frozen=True)
class TierFit:
    tau_ssd_us: float
    tau_hdd_us: float
    ci95: tuple[tuple[float, float], tuple[float, float]]
    r2: float              # on τ (µs per I/O)
    points: int
    at_bound: tuple[bool, ...] = ()     # (τ_ssd, τ_hdd) on their bound 0 (bounded_least_squares)

    def predict_iops(self, p: np.ndarray | float) -> np.ndarray:
        return iops(p, self.tau_ssd_us, self.tau_hdd_us)

    @property
    def ssd_iops(self) -> float:
        return 1e6 / self.tau_ssd_us

    @property
    def hdd_iops(self) -> float:
        return 1e6 / self.tau_hdd_us


def fit(share: np.ndarray, measured_iops: np.ndarray) -> TierFit:
    """Least-squares fit of τ_ssd, τ_hdd (µs per I/O) to IOPS measured at SSD-served shares p (one point per
    second or per run). Raises ValueError when the points do not span at least MIN_SHARE_SPREAD of p."""
    p = np.asarray(share, dtype=float)
    y = 1e6 / np.asarray(measured_iops, dtype=float)
    ok = np.isfinite(p) & np.isfinite(y) & (y > 0)
    p, y = p[ok], y[ok]
    if len(p) < 3 or float(p.max() - p.min()) < MIN_SHARE_SPREAD:
        raise ValueError(f"the tiering model needs at least 3 points whose SSD-served shares span "
                         f"≥ {MIN_SHARE_SPREAD} (got {len(p)} points)")
    ls = bounded_least_squares(np.column_stack([p, 1 - p]), y, 0.0)      # times per I/O are ≥ 0
    return TierFit(ls.beta[0], ls.beta[1], ls.ci, ls.r2, len(y), ls.at_bound)  # type: ignore[arg-type]


__all__ = ["MIN_SHARE_SPREAD", "time_per_io_us", "iops", "write_cache_share", "loss_duration_s", "TierFit", "fit"]
