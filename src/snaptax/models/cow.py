"""Copy-on-write amplification: bytes a snapshot engine moves per guest write, as a function of its grain.

Units: bytes throughout (G grain, B I/O size, M metadata), counts are plain numbers.

After a snapshot, every grain (qcow2 cluster or, with extended L2, subcluster; LVM thin chunk; copy-on-first-write
page) is shared with the snapshot. The first guest write of B bytes into a shared grain of G bytes makes the engine
move old data, in one of three ways:

  copy-out        (SQL Server database snapshots, QEMU copy-before-write, our cofw engine) the source is written
                  in place, so the whole old grain is read and written to the snapshot's file first:
                      read G + write G, then the guest's write B.
  redirect-copy   (dm-thin / LVM thin) the write goes to a newly allocated chunk; unless it covers the whole
                  chunk, the old chunk is copied there first (kcopyd), then the bio lands on the copy:
                      read G + write G + write B;   B ≥ G (whole grains): write B only.
  redirect-merge  (qcow2) the write goes to a newly allocated cluster; the untouched rest of the cluster is read
                  from the backing layer and written together with the guest data in one request. When there is
                  untouched data on both sides and the guest part is ≤ 16 KiB, QEMU reads the whole span in one
                  request (block/qcow2-cluster.c, perform_cow: merge_reads), guest part included, so for writes
                  at uniformly random aligned positions (g = G/B positions, 2 of them at an edge):
                      read G − 2B²/G (expected) + write G;   B ≥ G: write B only.

Plus M bytes of metadata per first write (mappings, reference counts, bitmaps). A write into a grain already broken
moves B. With a fraction f of a measurement's writes being first writes, the mean host-level bytes per guest
write is

    y(f) = B + f · (c · copy(G, B) + M)                                                  (bytes per guest write)

where copy(G, B) is the copy traffic above (read + write, excluding the guest's own B) and c a dimensionless
factor, 1 when the engine moves exactly what its mechanism says. `fit` estimates c and M.

The fraction f after k random writes of B-byte aligned blocks to a volume of n grains of g = G/B blocks each:
fio's random map picks every block at most once per pass (sampling without replacement), so the expected number of
grains hit at least once is

    E[grains hit] = n · (1 − C(N − g, k) / C(N, k)),     N = n·g blocks          (without replacement)
    E[grains hit] = n · (1 − (1 − 1/n)^k)                                         (with replacement)

and f = E[grains hit] / k (each grain's first write is the one that breaks it).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import optimize, special, stats

Mode = Literal["copy-out", "redirect-copy", "redirect-merge"]
MODES: tuple[str, ...] = ("copy-out", "redirect-copy", "redirect-merge")
MERGE_READS_MAX = 16 << 10   # QEMU 7.2 merges the two COW reads around a guest write of at most this many bytes


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")


def copy_bytes(grain: float | np.ndarray, io_size: float | np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(read bytes, write bytes) of the grain copy caused by one first write of `io_size` B into an unbroken
    grain of `grain` G bytes, excluding the guest's own write of B. Writes are aligned to B; B ≤ G or a multiple
    of G (then it covers B/G whole grains)."""
    _check_mode(mode)
    g = np.asarray(grain, dtype=float)
    b = np.asarray(io_size, dtype=float)
    whole = b >= g
    if mode == "copy-out":
        # every grain the write touches is preserved in full, whether the write covers it or not
        n = np.ceil(b / g)
        return n * g, n * g
    if mode == "redirect-copy":
        return np.where(whole, 0.0, g), np.where(whole, 0.0, g)
    # redirect-merge: one merged read of the whole grain unless the write sits at an edge (2 of G/B positions);
    # above 16 KiB of guest data QEMU reads the two sides separately (G − B)
    positions = np.maximum(g / b, 1.0)
    merged = g - 2.0 * b / positions
    read = np.where(whole, 0.0, np.where(b <= MERGE_READS_MAX, merged, g - b))
    return read, np.where(whole, 0.0, g - b)


def copy_total(grain, io_size, mode: str) -> np.ndarray:
    """copy(G, B): read + write bytes of the grain copy per first write (bytes)."""
    r, w = copy_bytes(grain, io_size, mode)
    return r + w


def first_write_bytes(grain, io_size, mode: str, metadata_bytes: float = 0.0) -> np.ndarray:
    """Bytes moved by one first write into an unbroken grain: B + copy(G, B) + M (bytes)."""
    return np.asarray(io_size, dtype=float) + copy_total(grain, io_size, mode) + metadata_bytes


def mechanism_table(grains: list[int], io_size: int) -> dict[str, list[int]]:
    """Host bytes moved by one first write of `io_size` bytes, per copy mode and grain (no metadata)."""
    g = np.asarray(grains, dtype=float)
    return {mode: [int(v) for v in np.atleast_1d(first_write_bytes(g, io_size, mode))] for mode in MODES}


def bytes_per_write(first_fraction, grain, io_size, mode: str, copy_factor: float = 1.0,
                    metadata_bytes: float = 0.0) -> np.ndarray:
    """y(f) = B + f·(c·copy(G, B) + M): mean host-level bytes per guest write when a fraction f of the writes
    are first writes into unbroken grains (bytes per guest write)."""
    f = np.asarray(first_fraction, dtype=float)
    return (np.asarray(io_size, dtype=float)
            + f * (copy_factor * copy_total(grain, io_size, mode) + metadata_bytes))


def expected_grains_hit(writes: float | np.ndarray, volume_bytes: float, grain: float, io_size: float,
                        replacement: bool = False) -> np.ndarray:
    """Expected number of distinct grains written at least once by `writes` k random aligned writes of
    `io_size` B to a volume of `volume_bytes` (count). Without replacement (fio's random map) unless told; with
    replacement for fio's norandommap (uniform offsets, a block may be hit twice). A grain smaller than B counts
    as B (one write breaks all the grains it covers at once)."""
    k = np.asarray(writes, dtype=float)
    if grain <= 0 or io_size <= 0 or volume_bytes < grain:
        raise ValueError("grain, io_size and volume_bytes must be positive, volume_bytes ≥ grain")
    # A write covering whole grains breaks them all at once: count it as one first write of its own block.
    grain = max(grain, io_size)
    n = volume_bytes // grain
    if replacement:
        return n * (1.0 - (1.0 - 1.0 / n) ** k)
    g = grain // io_size                      # blocks per grain
    blocks = n * g
    if np.any(k > blocks):
        raise ValueError(f"writes: {float(k.max()):.0f} exceeds the {blocks:.0f} blocks of one pass")
    # C(N−g, k)/C(N, k) via log-gamma: the chance that a given grain received none of the k writes
    # (zero once k exceeds the N − g blocks outside the grain)
    room = blocks - g - k
    safe = np.maximum(room, 0.0)
    miss = np.where(room >= 0, np.exp(special.gammaln(blocks - g + 1) - special.gammaln(safe + 1)
                                      - special.gammaln(blocks + 1) + special.gammaln(blocks - k + 1)), 0.0)
    return n * (1.0 - miss)


def first_write_fraction(writes, volume_bytes: float, grain: float, io_size: float,
                         replacement: bool = False) -> np.ndarray:
    """Expected fraction of k random writes that are first writes into an unbroken grain: E[grains hit]/k
    (dimensionless, ≤ 1)."""
    k = np.asarray(writes, dtype=float)
    return expected_grains_hit(k, volume_bytes, grain, io_size, replacement) / np.where(k > 0, k, np.nan)


@dataclass(frozen=True)
class CowFit:
    """Fitted c (copy factor, dimensionless) and M (metadata bytes per first write), with 95 % intervals.

    copy_factor_fixed: the points could not tell c from M (a single grain, or no copy at any point), so c was
    held at 1 and only M was fitted. ci95 entries are (nan, nan) when there are no degrees of freedom left.
    """

    mode: str
    copy_factor: float
    metadata_bytes: float
    ci95: tuple[tuple[float, float], tuple[float, float]]
    r2: float
    points: int
    copy_factor_fixed: bool

    def predict(self, first_fraction, grain, io_size) -> np.ndarray:
        return bytes_per_write(first_fraction, grain, io_size, self.mode, self.copy_factor, self.metadata_bytes)


def fit(first_fraction, grain, io_size, measured_bytes_per_write, mode: str) -> CowFit:
    """Least-squares fit (scipy.optimize.curve_fit) of c and M in y(f) = B + f·(c·copy(G, B) + M) to measured
    host-level bytes per guest write y at known first-write fractions f, grains G and I/O sizes B (arrays of
    equal length, one entry per measurement; repeats as separate points). Only points with f > 0 are used
    (`points` counts them); with no more of them than parameters the fit is exact and has no intervals."""
    _check_mode(mode)
    f = np.asarray(first_fraction, dtype=float)
    g = np.broadcast_to(np.asarray(grain, dtype=float), f.shape)
    b = np.broadcast_to(np.asarray(io_size, dtype=float), f.shape)
    y = np.asarray(measured_bytes_per_write, dtype=float)
    # Points without first writes predict y = B whatever c and M are: they carry no information about the
    # parameters and would only shrink the residual variance (and the intervals), so they are left out.
    ok = np.isfinite(f) & np.isfinite(y) & (f > 0)
    f, g, b, y = f[ok], g[ok], b[ok], y[ok]
    if not len(f):
        raise ValueError("first_fraction: no measurement had first writes; nothing to fit")
    cp = copy_total(g, b, mode)
    x1, x2 = f * cp, f
    # c and M are separable only if f·copy is not proportional to f across the points (≥ 2 copy sizes).
    fixed = np.linalg.matrix_rank(np.column_stack([x1, x2]), tol=1e-9 * max(1.0, float(np.abs(x1).max()))) < 2
    idx = np.arange(len(y))
    model: Callable[..., Any]   # the fit function: (i, m) when c is fixed at 1, else (i, c, m)
    if fixed:
        def model(i, m):
            i = np.asarray(i, dtype=int)      # curve_fit passes the point indices as floats
            return b[i] + x1[i] + m * x2[i]
        p0 = [0.0]
    else:
        def model(i, c, m):
            i = np.asarray(i, dtype=int)
            return b[i] + c * x1[i] + m * x2[i]
        p0 = [1.0, 0.0]
    dof = len(y) - len(p0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # an exact fit (no residual) has no covariance; the intervals are then reported as nan
        warnings.simplefilter("ignore", optimize.OptimizeWarning)
        popt, pcov = optimize.curve_fit(model, idx, y, p0=p0)
    resid = y - model(idx, *popt)
    ss_res = float(resid @ resid)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    if dof > 0 and np.all(np.isfinite(pcov)):
        half = stats.t.ppf(0.975, dof) * np.sqrt(np.diag(pcov))
    else:
        half = np.full(len(popt), np.nan)
    if fixed:
        c, m = 1.0, float(popt[0])
        ci = ((1.0, 1.0), (m - half[0], m + half[0]))
    else:
        c, m = float(popt[0]), float(popt[1])
        ci = ((c - half[0], c + half[0]), (m - half[1], m + half[1]))
    return CowFit(mode, c, m, ci, 1 - ss_res / ss_tot if ss_tot > 0 else 1.0, len(y), bool(fixed))


__all__ = ["MODES", "copy_bytes", "copy_total", "first_write_bytes", "bytes_per_write", "expected_grains_hit",
           "first_write_fraction", "CowFit", "fit"]
