"""Cost model of database snapshots (seed 004): how long a write-heavy statement takes with k copy-on-first-write
snapshots, and why the second snapshot adds less than the first.

Units: seconds (s) for durations and per-page costs, pages as plain counts.

A statement that first-writes P pages (8 KiB; SQL Server's SELECT INTO fills a fresh table's extents) takes

    T(k) = T0 + P · τ(k),      τ(k) = τ1 · [k ≥ 1] + τ2 · max(k − 1, 0)                          (s)

  T0  s without snapshots (the statement's own I/O and CPU),
  τ1  s per first-written page added by the first snapshot: the old page is read from the source, written into the
      snapshot's file and made durable before the source write may proceed (SQL Server: PREEMPTIVE_OS_WRITEFILE,
      WRITE_COMPLETION), plus the engine's per-fault bookkeeping;
  τ2  s per page added by each further snapshot: only its own copy write and commit (the old page is read once for
      all snapshots; SQL Server: FCB_REPLICA_WRITE), partly overlapped with the first snapshot's work by the
      statement's other outstanding writes.

Linear in (T0, τ1, τ2) given P, so the fit is ordinary least squares with t-based 95 % intervals.

The mechanism makes two predictions the measurements can refute:
  * τ2 < τ1 (the second snapshot adds less than the first) whenever the source read and the per-fault bookkeeping
    cost anything: `second_over_first` < 1;
  * the overlap ω = 1 − τ2 / c, where c is the second snapshot's own copy time per page (write + commit, from the
    engine's per-snapshot time counters divided by the outstanding copies), lies in [0, 1]: 0 when the second copy
    adds its whole time, 1 when it is hidden entirely. On a device whose copies queue behind each other (a RAID5
    doing read-modify-write for every 8 KiB copy) ω is smaller than on one that serves them in parallel (SSD).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..stats import least_squares


def time_per_page_s(k: np.ndarray | int, tau1_s: float, tau2_s: float) -> np.ndarray:
    """τ(k) in s per first-written page; k = number of snapshots (0, 1, 2, …)."""
    k = np.asarray(k, dtype=float)
    return tau1_s * (k >= 1) + tau2_s * np.maximum(k - 1, 0)


def duration_s(k: np.ndarray | int, pages: np.ndarray | float, t0_s: float, tau1_s: float,
               tau2_s: float) -> np.ndarray:
    """T(k) = T0 + P · τ(k) in s."""
    return t0_s + np.asarray(pages, dtype=float) * time_per_page_s(k, tau1_s, tau2_s)


def overlap(tau2_s: float, copy_s_per_page: float) -> float:
    """ω = 1 − τ2 / c: the fraction of the second snapshot's own copy time (c, s per page) that the statement did
    not wait for (dimensionless; 0 = not overlapped at all, 1 = hidden)."""
    if copy_s_per_page <= 0:
        raise ValueError("the copy time per page must be positive")
    return 1.0 - tau2_s / copy_s_per_page


@dataclass(frozen=True)
class DbSnapshotFit:
    t0_s: float
    tau1_s: float
    tau2_s: float
    ci95: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]
    points: int

    @property
    def second_over_first(self) -> float:
        """τ2 / τ1: below 1 when the second snapshot adds less than the first."""
        return self.tau2_s / self.tau1_s

    def predict_s(self, k: np.ndarray | int, pages: np.ndarray | float) -> np.ndarray:
        return duration_s(k, pages, self.t0_s, self.tau1_s, self.tau2_s)


def fit(snapshots: np.ndarray, pages: np.ndarray, durations_s: np.ndarray) -> DbSnapshotFit:
    """Least squares of T0, τ1, τ2 on measured durations with k snapshots and P first-written pages per run
    (repeats as separate points; P of a run without snapshots is irrelevant: its column is zero).

    Needs runs at k = 0, 1 and 2 and more points than parameters for intervals.
    """
    k = np.asarray(snapshots, dtype=float)
    p = np.asarray(pages, dtype=float)
    y = np.asarray(durations_s, dtype=float)
    if not (len(k) == len(p) == len(y)):
        raise ValueError("snapshots, pages and durations must have the same length")
    if not ((k == 0).any() and (k == 1).any() and (k >= 2).any()):
        raise ValueError("the database-snapshot model needs runs with 0, 1 and 2 snapshots")
    ls = least_squares(np.column_stack([np.ones_like(k), p * (k >= 1), p * np.maximum(k - 1, 0)]), y)
    return DbSnapshotFit(ls.beta[0], ls.beta[1], ls.beta[2], ls.ci, len(y))  # type: ignore[arg-type]
