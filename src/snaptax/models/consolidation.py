"""Snapshot consolidation by iterative helper snapshots: when does it converge, and how long does it take?

Units: bytes for sizes, seconds for times, bytes per second for rates, guest writes per second for r.

VMware before vSphere 6.0 (seed 000, Zandboer) deleted a snapshot with delta D_0 like this: take a helper snapshot
(the guest now writes into it), commit the older delta into the base, and repeat with the helper as the new older
delta while the helper has grown past a threshold θ; then stun the guest and commit the small remainder. Let

    c   commit throughput: bytes of delta the device commits per second beside the guest's load (B/s)
    u   the rate at which the guest dirties *new* blocks of the helper (B/s): its write rate times the new
        allocation per write (a cluster the first time a cluster is written, nothing on a rewrite)
    t0  fixed cost of one iteration (helper creation, job start and pivot; s)

Iteration k commits D_k in t_k = t0 + D_k / c seconds, during which the helper grows to

    D_{k+1} = f(D_k) = u · t_k = u·t0 + (u/c)·D_k                                                   (B)

(optionally capped at the guest's working set W: min(W, ·), since a helper can hold at most what the guest
writes). With q = u/c the sizes approach the fixed point D* = u·t0 / (1 − q) geometrically:

    D_k = D* + q^k · (D_0 − D*)

The deletion converges (reaches D_n ≤ θ) if and only if q < 1 (u < c) and D* < θ; then after

    n = ⌈ ln((θ − D*)/(D_0 − D*)) / ln q ⌉   iterations (0 if D_0 ≤ θ)

the total time is T = Σ_{k<n} t_k + s with the stun time s = t0 + D_n / c_idle (the final commit with the guest
stopped, at the idle device's throughput c_idle ≥ c). For u ≥ c the helper never shrinks: the deletion cannot
finish while the load runs (seed 000's saturated test).

Measured dependence on the guest's write rate r (writes/s, fio rate_iops): the commit shares the device with the
guest, c(r) = c0 − b·r, and the guest dirties u(r) = a·r (a: new bytes per guest write). `fit_commit` and
`fit_dirty` estimate (t0, c0, b) and a from measured iterations with t-based 95 % intervals; the critical write
rate above which consolidation cannot converge is r* = c0 / (a + b).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

from ..errors import ConfigError

CONFIDENCE = 0.95


def next_delta(d: ArrayLike, u: float, c: float, t0: float = 0.0, working_set: float = math.inf) -> np.ndarray:
    """D_{k+1} = min(W, u·(t0 + D_k/c)) in bytes: the helper's size after committing D_k bytes (d: bytes; u, c:
    B/s; t0: s; working_set W: bytes)."""
    if c <= 0:
        raise ConfigError("consolidation model", "c", f"commit throughput must be positive, got {c}")
    return np.minimum(working_set, u * (t0 + np.asarray(d, dtype=float) / c))


def commit_time_s(d: ArrayLike, c: ArrayLike, t0: float = 0.0) -> np.ndarray:
    """t = t0 + D/c: seconds to commit D bytes at c B/s plus the fixed cost t0 (s)."""
    return t0 + np.asarray(d, dtype=float) / np.asarray(c, dtype=float)


def fixed_point(u: float, c: float, t0: float = 0.0) -> float:
    """D* = u·t0 / (1 − u/c) in bytes (inf when u ≥ c: no fixed point, the helper grows without bound)."""
    q = u / c
    return u * t0 / (1.0 - q) if q < 1 else math.inf


def converges(u: float, c: float, threshold: float, t0: float = 0.0) -> bool:
    """Convergence condition: u < c and D* = u·t0/(1 − u/c) < θ (bytes)."""
    return u < c and fixed_point(u, c, t0) < threshold


def iterations_needed(d0: float, u: float, c: float, threshold: float, t0: float = 0.0) -> float:
    """n = ⌈ln((θ − D*)/(D_0 − D*)) / ln(u/c)⌉ iterations before the stunned final commit (0 if D_0 ≤ θ;
    inf if the deletion cannot converge)."""
    if d0 <= threshold:
        return 0.0
    if not converges(u, c, threshold, t0):
        return math.inf
    q, ds = u / c, fixed_point(u, c, t0)
    if q == 0:
        return 1.0
    return float(math.ceil(math.log((threshold - ds) / (d0 - ds)) / math.log(q) - 1e-12))


@dataclass(frozen=True)
class Deletion:
    """An iterative deletion, simulated or measured: delta committed per iteration (bytes), each iteration's
    time (s), the helper left over, whether it converged, the stun time and the total (s)."""

    committed: tuple[float, ...]
    seconds: tuple[float, ...]
    remaining: float
    converged: bool
    stun_s: float
    total_s: float

    @property
    def iterations(self) -> int:
        return len(self.committed)


def iterate(d0: float, u: float, c: float, threshold: float, *, t0: float = 0.0, c_idle: float | None = None,
            max_iterations: int = 10, max_stun_s: float = 0.0, working_set: float = math.inf,
            grow: Callable[[float], float] | None = None, load_s: float = math.inf,
            c_later: float | None = None) -> Deletion:
    """Simulate the deletion: iterate D_{k+1} = f(D_k) while D_k > θ, at most `max_iterations` times. The final
    commit (stun) happens if the remainder D is ≤ θ, or if the stun predicted from the last iteration's observed
    commit rate, D · t_k / D_k (s), is ≤ max_stun_s (VMware's snapshot.maxConsolidateTime; the rule the measured
    deletion applies, snaptax.studies.lifecycle.measure); otherwise the deletion is "did not converge" with stun_s =
    nan and the total counts the iterations only. The stun itself takes t0 + D/c_idle (s).

    grow: the helper's size (bytes) after an iteration of t seconds, in place of u·t capped at the working set (a
    write pattern's saturating growth, ApartParameters). load_s: how long the guest's load still runs when the
    deletion starts (s); an iteration that ends after it ends the deletion as the measured one does (not
    converged); with a finite load_s a deletion that does not converge commits its remainder once the load has
    stopped, at c_idle, and its total counts that wait and that commit (as the measured deletion's time does).
    c_later: the commit throughput of every iteration after the first (a helper's layout; None: c)."""
    c_idle = c if c_idle is None else c_idle
    committed: list[float] = []
    seconds: list[float] = []
    d = float(d0)
    while d > threshold and len(committed) < max_iterations and sum(seconds) < load_s:
        t = float(commit_time_s(d, c if not committed or c_later is None else c_later, t0))
        committed.append(d)
        seconds.append(t)
        d = float(grow(t)) if grow is not None else float(next_delta(d, u, c, t0, working_set))
    stun = float(commit_time_s(d, c_idle, t0))
    # the decision uses the rate the last iteration showed (bytes it committed over its time, fixed cost included)
    predicted = d * seconds[-1] / committed[-1] if committed and committed[-1] > 0 else stun
    ok = sum(seconds) < load_s and (d <= threshold or predicted <= max_stun_s)
    if not ok and math.isfinite(load_s):
        # as measured: wait for the load to stop, then commit the remainder (not converged; the time includes it)
        return Deletion(tuple(committed), tuple(seconds), d, False, math.nan, max(sum(seconds), load_s) + stun)
    return Deletion(tuple(committed), tuple(seconds), d, ok, stun if ok else math.nan,
                    sum(seconds) + (stun if ok else 0.0))


# ------------------------------------------------------------------ fitting

@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float


def _estimates(popt: np.ndarray, pcov: np.ndarray, n: int) -> list[Estimate]:
    dof = max(n - len(popt), 1)
    t = float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof))
    se = np.sqrt(np.clip(np.diag(pcov), 0, None))
    if not np.all(np.isfinite(se)):
        raise ValueError("consolidation fit: parameters not identifiable from these iterations")
    return [Estimate(float(p), float(p - t * s), float(p + t * s)) for p, s in zip(popt, se, strict=True)]


@dataclass(frozen=True)
class ConsolidationFit:
    """t0 (s), c0 (B/s), b (B/s per guest write/s), a (new bytes per guest write), with 95 % intervals."""

    t0: Estimate
    c0: Estimate
    b: Estimate
    a: Estimate
    n_commit: int
    n_dirty: int
    extras: dict = field(default_factory=dict)

    def c(self, rate: ArrayLike) -> np.ndarray:
        """Commit throughput beside a guest writing `rate` writes/s: c0 − b·r (B/s)."""
        return self.c0.value - self.b.value * np.asarray(rate, dtype=float)

    def u(self, rate: ArrayLike) -> np.ndarray:
        """New bytes the guest dirties per second at `rate` writes/s: a·r (B/s)."""
        return self.a.value * np.asarray(rate, dtype=float)

    @property
    def critical_rate(self) -> float:
        """r* = c0/(a + b): above it u ≥ c and the deletion cannot converge under load (writes/s)."""
        return self.c0.value / (self.a.value + self.b.value)

    def critical_rate_interval(self) -> tuple[float, float]:
        """r* evaluated at the ends of the intervals of c0 and of a + b (a conservative range, writes/s)."""
        lo_c, hi_c = max(self.c0.low, 1e-9), self.c0.high
        lo_ab, hi_ab = max(self.a.low + self.b.low, 1e-9), max(self.a.high + self.b.high, 1e-9)
        return lo_c / hi_ab, hi_c / lo_ab

    def simulate(self, d0: float, rate: float, threshold: float, **kw) -> Deletion:
        c = float(self.c(rate))
        if c <= 0:
            return Deletion((), (), d0, False, math.nan, math.nan)
        return iterate(d0, float(self.u(rate)), c, threshold, t0=self.t0.value, c_idle=self.c0.value, **kw)


# Lower bounds of (t0 s, c0 MiB/s, b MiB/s per write/s) in fit_commit: c0 strictly positive (it divides)
COMMIT_LOWER = (0.0, 1e-6, 0.0)


def commit_at_bound(t0: Estimate, c0: Estimate, b: Estimate, *, tolerance: float = 1e-9) -> tuple[str, ...]:
    """The names of fit_commit's parameters whose estimate lies on its lower bound (c0 in B/s)."""
    mib = float(1 << 20)
    values = (t0.value, c0.value / mib, b.value / mib)
    return tuple(name for name, v, lower in zip(("t0", "c0", "b"), values, COMMIT_LOWER, strict=True)
                 if v <= lower + tolerance)


def fit_commit(delta: ArrayLike, seconds: ArrayLike, rate: ArrayLike) -> tuple[Estimate, Estimate, Estimate]:
    """Fit t = t0 + D / (c0 − b·r) to measured commits (D bytes committed in t seconds beside a guest writing r
    writes/s); returns (t0 s, c0 B/s, b B/s per write/s) with 95 % intervals. Least squares on t within the
    physical range (COMMIT_LOWER; commit_at_bound names a parameter on its bound)."""
    d, t, r = (np.asarray(x, dtype=float) for x in (delta, seconds, rate))
    if len(d) < 4:
        raise ValueError(f"consolidation fit: {len(d)} commits, need at least 4")
    mib = float(1 << 20)

    def model(x, t0, c0m, bm):       # c0, b in MiB/s internally (parameters of order 1)
        dd, rr = x
        return t0 + (dd / mib) / np.maximum(c0m - bm * rr, 1e-6)

    c_guess = float(np.median(d / np.maximum(t, 1e-3))) / mib
    # The physical range: a commit takes no negative time to start (t0 ≥ 0), the helper commits at a positive
    # rate (c0 > 0), and the guest's writes can only slow it (b ≥ 0). Bounded least squares (trust-region
    # reflective); an interval is cut at its bound (COMMIT_LOWER), and a parameter on it is reported as such.
    # tolerances tighter than least_squares' defaults (1e-8), which stop the bounded solver visibly short of the
    # optimum on noise-free commits; x_scale from the Jacobian, as the three parameters differ in scale
    popt, pcov = optimize.curve_fit(model, (d, r), t, p0=(0.1, max(c_guess, 0.1), 1e-3), max_nfev=20000,
                                    bounds=(COMMIT_LOWER, (np.inf, np.inf, np.inf)), x_scale="jac",
                                    ftol=1e-12, xtol=1e-12, gtol=1e-12)
    t0e, c0e, be = (Estimate(e.value, max(e.low, lower), e.high)
                    for e, lower in zip(_estimates(popt, pcov, len(d)), COMMIT_LOWER, strict=True))
    return t0e, Estimate(c0e.value * mib, c0e.low * mib, c0e.high * mib), \
        Estimate(be.value * mib, be.low * mib, be.high * mib)


def fit_dirty(seconds: ArrayLike, grown: ArrayLike, rate: ArrayLike) -> Estimate:
    """Fit D_{k+1} = a·r·t_k (the helper grew to `grown` bytes in `seconds` while the guest wrote r writes/s):
    a = mean of D_{k+1}/(r·t_k) over the iterations, with its t interval (the scatter is relative, so each
    iteration's ratio weighs alike); returns a (new bytes per guest write)."""
    t, g, r = (np.asarray(x, dtype=float) for x in (seconds, grown, rate))
    x = r * t
    keep = x > 0
    x, g = x[keep], g[keep]
    if len(x) < 2:
        raise ValueError(f"consolidation fit: {len(x)} helper growths under load, need at least 2")
    ratios = g / x      # the helper's growth varies in proportion to its size: average the per-iteration ratios
    a = float(ratios.mean())
    dof = len(ratios) - 1
    se = float(ratios.std(ddof=1)) / math.sqrt(len(ratios))
    tq = float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof))
    return Estimate(a, a - tq * se, a + tq * se)


def fit(delta: ArrayLike, seconds: ArrayLike, rate: ArrayLike, grown: ArrayLike) -> ConsolidationFit:
    """Both fits on one table of iterations: each row an iteration that committed `delta` bytes in `seconds`
    beside a guest at `rate` writes/s, while its helper grew to `grown` bytes."""
    t0, c0, b = fit_commit(delta, seconds, rate)
    a = fit_dirty(seconds, grown, rate)
    return ConsolidationFit(t0, c0, b, a, len(np.atleast_1d(delta)), len(np.atleast_1d(grown)))


def synthetic_iterations(d0: float, rates: ArrayLike, *, t0: float, c0: float, b: float, a: float,
                         threshold: float, max_iterations: int = 6, noise: float = 0.0,
                         seed: int = 0) -> dict[str, np.ndarray]:
    """Iteration tables as a measurement would give them, from known parameters (for tests): columns rate,
    delta, seconds, grown; relative Gaussian noise `noise` on the times and sizes."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[float]] = {"rate": [], "delta": [], "seconds": [], "grown": []}
    for r in np.atleast_1d(np.asarray(rates, dtype=float)):
        c, u = c0 - b * r, a * r
        tr = iterate(d0, u, c, threshold, t0=t0, c_idle=c0, max_iterations=max_iterations)
        for dk, tk in zip(tr.committed, tr.seconds, strict=True):
            t_meas = tk * (1 + noise * rng.standard_normal())
            rows["rate"].append(r)
            rows["delta"].append(dk)
            rows["seconds"].append(t_meas)
            rows["grown"].append(max(u * t_meas * (1 + noise * rng.standard_normal()), 0.0))
    return {k: np.asarray(v) for k, v in rows.items()}


# ------------------------------------------------------------------ parameters measured apart (issue 48.3)

def dirty_bytes(writes: ArrayLike, *, bs: float, cluster: float, region: float, random_fraction: float,
                metadata: float = 0.0) -> np.ndarray:
    """Expected bytes a fresh overlay allocates for `writes` guest writes of `bs` bytes into a region of `region`
    bytes, `random_fraction` of them at uniformly random offsets and the rest sequential (fio percentage_random):
    a random write touches one of N = region/cluster clusters at random; a sequential write continues from the
    previous one and reaches the next cluster once per cluster/bs writes. With m = writes·(f + (1 − f)·bs/cluster)
    such touches the expected number of distinct clusters is N·(1 − (1 − 1/N)^m), each `cluster` bytes, plus
    `metadata` bytes once anything is written (the L2 table the first allocation adds). Pure: no fitted parameter,
    only the write pattern and the image's cluster size."""
    w = np.asarray(writes, dtype=float)
    if not (bs > 0 and cluster > 0 and region >= cluster and 0 <= random_fraction <= 1 and metadata >= 0):
        raise ConfigError("consolidation model", "write pattern",
                          f"bs {bs}, cluster {cluster}, region {region}, random fraction {random_fraction}")
    n = region / cluster
    m = np.maximum(w, 0.0) * (random_fraction + (1 - random_fraction) * min(bs / cluster, 1.0))
    touched = n * -np.expm1(m * math.log1p(-1 / n)) if n > 1 else np.minimum(m, 1.0)
    return np.where(w > 0, cluster * touched + metadata, 0.0)


@dataclass(frozen=True)
class WritePattern:
    """The guest writer's pattern as the plan sets it (bytes): write size, the image's cluster size, the region it
    writes, the random fraction, and the metadata a fresh overlay's first allocation adds."""

    bs: float
    cluster: float
    region: float
    random_fraction: float
    metadata: float = 0.0

    def grown(self, writes: ArrayLike) -> np.ndarray:
        return dirty_bytes(writes, bs=self.bs, cluster=self.cluster, region=self.region,
                           random_fraction=self.random_fraction, metadata=self.metadata)


ApartValues = tuple[float, float, float, float]      # (t0 s, c0 B/s, r_max writes/s, c_helper B/s)


def beside_writer(rate: ArrayLike, c: float, r_max: float) -> np.ndarray:
    """Commit throughput beside a writer at `rate` writes/s for a layout committed at `c` alone (B/s; 0 at or above
    r_max): c(r) = c·(1 − r/r_max), the writer taking the device's time in proportion to its rate."""
    return c * np.maximum(1 - np.asarray(rate, dtype=float) / r_max, 0.0)


@dataclass(frozen=True)
class ApartParameters:
    """The consolidation model with every parameter measured apart from the deletions it predicts:
    t0 (s) from commits of an empty overlay; c0 (B/s) from commits of a sequentially filled one (the layout of the
    delta a deletion starts with: the test files written again after the snapshot) beside the reader alone;
    c_helper (B/s) from commits of an overlay the writer alone filled (the layout of every helper: 64 KiB clusters
    allocated in the order random writes reach them, so the commit seeks per cluster); r_max (writes/s) the writer's
    saturated rate beside the same reader; and the growth from the write pattern. The commit shares the device with
    the writer by time: a writer at r writes/s takes r/r_max of the time the reader leaves, so
    c(r) = c·(1 − r/r_max) for either layout (b = c/r_max, not fitted). The first iteration commits the delta
    (c0), every later one and the stun a helper (c_helper). c_helper None: a run that measured one layout only
    (c_helper = c0). Each Estimate carries its 95 % interval over the repeats; `dof` are their degrees of freedom
    (repeats − 1)."""

    t0: Estimate
    c0: Estimate
    r_max: Estimate
    pattern: WritePattern
    dof: int
    c_helper: Estimate | None = None

    @property
    def estimates(self) -> tuple[Estimate, Estimate, Estimate, Estimate]:
        return self.t0, self.c0, self.r_max, self.c_helper or self.c0

    @property
    def values(self) -> ApartValues:
        t0, c0, rm, ch = (e.value for e in self.estimates)
        return t0, c0, rm, ch

    def commit_s(self, delta: float, rate: float, helper: bool = False, values: ApartValues | None = None) -> float:
        """t = t0 + D/c(r) (s; inf when the writer leaves the commit nothing) for the delta (helper False) or a
        helper's layout, at `values`."""
        t0, c0, rm, ch = values or self.values
        c = float(beside_writer(rate, ch if helper else c0, rm))
        return t0 + delta / c if c > 0 else math.inf

    def simulate(self, d0: float, rate: float, threshold: float, values: ApartValues | None = None,
                 **kw) -> Deletion:
        """The deletion of a d0-byte delta beside a writer at `rate` writes/s (iterate: the first commit at the
        delta's throughput, the later ones and the stun at a helper's, the helper growing as the write pattern says
        over each iteration's writes)."""
        t0, c0, rm, ch = values or self.values
        c, c_later = float(beside_writer(rate, c0, rm)), float(beside_writer(rate, ch, rm))
        if c <= 0 or c_later <= 0:
            return Deletion((), (), d0, False, math.nan, math.nan)
        return iterate(d0, 0.0, c, threshold, t0=t0, c_idle=ch, c_later=c_later,
                       grow=lambda seconds: float(self.pattern.grown(rate * seconds)), **kw)

    def log_se(self, f: Callable[[ApartValues], float], at: float | None = None) -> tuple[float, float]:
        """The standard error of ln f(t0, c0, r_max, c_helper) from the measured parameters' standard errors (the
        delta method with central differences; each parameter's se from its 95 % interval with `dof`), and its
        degrees of freedom (dof: all come from the same repeats). nan when f is not positive and finite. `at`: f at
        the measured values when the caller has it already (a deletion's simulation is not run twice)."""
        base = self.values
        y = f(base) if at is None else at
        if not (y > 0 and math.isfinite(y)) or self.dof < 1:
            return math.nan, 0.0
        tq = float(stats.t.ppf(0.5 + CONFIDENCE / 2, self.dof))
        var = 0.0
        estimates = self.estimates if self.c_helper is not None else self.estimates[:3]
        for i, e in enumerate(estimates):
            se = (e.high - e.low) / (2 * tq)
            if not (se > 0 and math.isfinite(se)):
                continue
            h = max(abs(e.value), 1e-12) * 1e-4
            up, down = list(base), list(base)
            up[i], down[i] = e.value + h, max(e.value - h, 0.0)
            if self.c_helper is None and i == 1:      # one layout measured: c_helper is c0
                up[3], down[3] = up[1], down[1]
            hi, lo = f((up[0], up[1], up[2], up[3])), f((down[0], down[1], down[2], down[3]))
            if not (hi > 0 and lo > 0 and math.isfinite(hi) and math.isfinite(lo)):
                return math.nan, 0.0
            var += ((math.log(hi) - math.log(lo)) / (up[i] - down[i]) * se) ** 2
        return math.sqrt(var), float(self.dof)


def mean_estimate(samples: ArrayLike) -> Estimate:
    """The mean of independent repeats with its t-based 95 % interval (nan ends from fewer than two)."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return Estimate(math.nan, math.nan, math.nan)
    m = float(x.mean())
    if len(x) < 2:
        return Estimate(m, math.nan, math.nan)
    h = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(x) - 1)) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return Estimate(m, m - h, m + h)


__all__ = ["CONFIDENCE", "next_delta", "commit_time_s", "fixed_point", "converges", "iterations_needed", "Deletion",
           "iterate", "Estimate", "ConsolidationFit", "fit_commit", "fit_dirty", "fit", "synthetic_iterations",
           "dirty_bytes", "WritePattern", "ApartValues", "beside_writer", "ApartParameters", "mean_estimate"]
