"""Memory-dump timing: how long a lazy checkpoint's page-walker takes to write a VM's memory.

Units: bytes for sizes (M memory, B block), seconds for times unless a name ends in _ms; a page is 4 KiB.

VMware's lazy checkpoint (seed 003, Lavallee 2013) walks the VM's memory in iterations: each writes
mainMem.ioBlockPages pages (B = ioBlockPages × 4 KiB) and then waits mainMem.ioWait milliseconds (w). A memory of
M bytes takes n = ⌈M/B⌉ iterations. With s(B) the device's service time for one B-byte write at queue depth 1,

    s(B) = s0 + B/bw                                         (s0: per-write cost in s, bw: bytes per second)

the models below are the competing explanations of a dump time T(M, B, w):

  after          the wait starts when the write has completed (what fio's thinktime does):
                     T = n · (s(B) + w)
  overlap        the wait is counted from the write's start (a periodic timer; the write runs inside the wait):
                     T = n · max(s(B), w)
  oversleep      the timer does not wait exactly w but w + δ whenever it waits (w > 0): timer granularity,
                 scheduling latency (δ > 0) or a coarse tick that fires early (δ < 0):
                     T = n · (s(B) + w + δ·[w > 0])
  zero_skip      a fraction z of the blocks is all-zero and skipped, with its wait, so only (1 − z)·n iterations
                 happen:
                     T = (1 − z) · n · (s(B) + w)

The seed's own estimate is the wait alone, n·w (16384 × 25 ms = 409.6 s for 4 GiB in 256 KiB blocks), against a
measured 333.95 s: `after` and `overlap` can never go below n·w, so only a wait shorter than asked (δ < 0) or
skipped blocks (z > 0) can explain a dump faster than its own waits. On a walker that writes every block and
waits as asked (fio), the fits must give δ ≈ 0 and z ≈ 0; note that in `zero_skip` z is identified only through
the coefficient of the wait (z scales s0 and 1/bw as well, which then absorb it), so it is equally a model of a
wait shortened by a factor (1 − z).

`fit` estimates a model's parameters from a grid of measured dump times by least squares on log times (relative
errors: the grid spans two orders of magnitude) within their physical range (physical_bounds: s0 ≥ 0, bw > 0,
δ ≥ −w, 0 ≤ z < 1), with t-based 95 % intervals from the Jacobian where no bound is active and profile-likelihood
ones within the range where one is (or where the t interval would cross it), and its AIC for comparing the
models on the same points. `DumpFit.predict_interval` carries the fit's uncertainty into a prediction: the delta
method on log T where the parameters' intervals are t intervals, the profile likelihood of the prediction itself
where they are profile ones. An inner fit of a profile that does not converge raises stats.ProfileFitError (a
ValueError) instead of supplying a profile point.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

from ..errors import ConfigError
from ..stats import ProfileFitError, profile_end
from .dumpprofile import Residuals, cut, parameter_interval, rss_predicting

PAGE = 4096
MiB = 1 << 20
Model = Literal["after", "overlap", "oversleep", "zero_skip"]
MODELS: tuple[Model, ...] = ("after", "overlap", "oversleep", "zero_skip")
# Internal parameter vector per model (units chosen so that all are of order 1): s0 in ms, tau in ms per MiB
# (1/bw), delta in ms, z dimensionless.
_PARAMS: dict[str, tuple[str, ...]] = {"after": ("s0_ms", "tau_ms_per_mib"), "overlap": ("s0_ms", "tau_ms_per_mib"),
                                       "oversleep": ("s0_ms", "tau_ms_per_mib", "delta_ms"),
                                       "zero_skip": ("s0_ms", "tau_ms_per_mib", "z")}
# A prediction's profile still inside the cut e^30 (10^13) times above (or below) the estimate puts no end on that
# side: the walk (stats.profile_end) stops there and reports the end as open (±inf on the log scale).
_OPEN_LOG = 30.0


@dataclass(frozen=True)
class WalkerPoint:
    """One setting of the page-walker: mainMem.ioBlockPages (4 KiB pages per write) and mainMem.ioWait (ms
    between writes). An impossible setting is refused with one ConfigError naming the field."""

    block_pages: int
    wait_ms: float

    def __post_init__(self) -> None:
        src = "memory-dump grid point"
        p = self.block_pages
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise ConfigError(src, "ioBlockPages", f"must be a whole number of 4 KiB pages ≥ 1, got {p!r}")
        w = self.wait_ms
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)) or not math.isfinite(w) \
                or w < 0:
            raise ConfigError(src, "ioWait", f"must be a finite number of milliseconds ≥ 0, got {w!r}")

    @property
    def block_bytes(self) -> int:
        return int(self.block_pages) * PAGE

    @property
    def wait_s(self) -> float:
        return float(self.wait_ms) / 1e3

    @property
    def label(self) -> str:
        """'p64-w25' (a '.' in a fractional wait becomes 'p': labels are parts of value keys)."""
        return f"p{int(self.block_pages)}-w{self.wait_ms:g}".replace(".", "p")


def iterations(memory_bytes: ArrayLike, block_bytes: ArrayLike) -> np.ndarray:
    """n = ⌈M/B⌉: the page-walker's iterations (count)."""
    m, b = np.asarray(memory_bytes, dtype=float), np.asarray(block_bytes, dtype=float)
    if np.any(b <= 0) or np.any(m <= 0):
        raise ValueError("memory_bytes and block_bytes must be positive")
    return np.ceil(m / b)


def service_s(block_bytes: ArrayLike, s0_s: float, bw_bytes_s: float) -> np.ndarray:
    """s(B) = s0 + B/bw: the device's service time for one B-byte write at queue depth 1 (s)."""
    return s0_s + np.asarray(block_bytes, dtype=float) / bw_bytes_s


def seed_estimate_s(memory_bytes: ArrayLike, block_bytes: ArrayLike, wait_s: ArrayLike) -> np.ndarray:
    """The seed's own arithmetic: iterations × wait, n·w (s)."""
    return iterations(memory_bytes, block_bytes) * np.asarray(wait_s, dtype=float)


def dump_time_s(model: str, memory_bytes: ArrayLike, block_bytes: ArrayLike, wait_s: ArrayLike, *, s0_s: float,
                bw_bytes_s: float, delta_s: float = 0.0, z: float = 0.0) -> np.ndarray:
    """T(M, B, w) in seconds under `model` (see the module docstring) with device parameters s0 (s) and bw
    (bytes/s), and the model's own parameter: δ (s, oversleep) or z (fraction, zero_skip)."""
    _check_model(model)
    n = iterations(memory_bytes, block_bytes)
    s = service_s(block_bytes, s0_s, bw_bytes_s)
    w = np.asarray(wait_s, dtype=float)
    if model == "after":
        return n * (s + w)
    if model == "overlap":
        return n * np.maximum(s, w)
    if model == "oversleep":
        return n * (s + w + delta_s * (w > 0))
    return (1.0 - z) * n * (s + w)


def _check_model(model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"model: {model!r} is not one of {', '.join(MODELS)}")


def _residuals(model: str, m: np.ndarray, b: np.ndarray, w: np.ndarray, t: np.ndarray) -> Residuals:
    """θ → ln T_measured − ln T_model(θ), the residuals every fit here minimises (internal units), with their
    Jacobian (dumpprofile.Residuals)."""
    return Residuals(model, m, b, w, t)


def _exp(x: float) -> float:
    """e^x, inf beyond the floats (an open end of a profile walked on a log scale)."""
    return math.exp(x) if x < 709 else math.inf


def _internal(model: str, theta: np.ndarray, m: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    s0, tau = theta[0] / 1e3, theta[1] / 1e3 / MiB          # s, s per byte
    extra = {"delta_s": theta[2] / 1e3} if model == "oversleep" else {"z": theta[2]} if model == "zero_skip" else {}
    bw = 1.0 / tau if tau > 0 else math.inf
    return dump_time_s(model, m, b, w, s0_s=s0, bw_bytes_s=bw, **extra)


@dataclass(frozen=True)
class DumpFit:
    """A model fitted to a grid of dump times.

    params / ci95 (95 % intervals, t or profile likelihood; nan without degrees of freedom, and nan where the fit is
    profiled but was made with fit(parameter_intervals=False), which only predicts): s0_ms (per-write cost,
    ms), bw_mib_s (write bandwidth, MiB/s, from 1/bw's interval: its upper end is inf, no upper end, where 1/bw's
    profile reaches the floor that stands for 1/bw > 0, and its lower end 0, the physical limit, where 1/bw's has no
    upper end), and delta_ms (oversleep) or z (zero_skip). rss: sum of squared log residuals; rms_pct: their root
    mean square in per cent (≈ relative error); aic = N·ln(rss/N) + 2k. profiled: the intervals are the profile
    likelihood's (a bound active, or a t interval that would cross one); data and bounds: the fitted points (memory,
    block, wait, dump time) and the physical range, which the prediction's profile refits."""

    model: str
    params: dict[str, float]
    ci95: dict[str, tuple[float, float]]
    points: int
    dof: int
    rss: float
    rms_pct: float
    aic: float
    theta: tuple[float, ...] = field(repr=False)
    cov: tuple[tuple[float, ...], ...] = field(repr=False)
    at_bound: tuple[str, ...] = ()      # the internal parameters on their physical bound (physical_bounds)
    profiled: bool = False
    data: tuple[tuple[float, ...], ...] = field(default=(), repr=False)
    bounds: tuple[tuple[float, ...], ...] = field(default=(), repr=False)

    @property
    def s0_s(self) -> float:
        return self.params["s0_ms"] / 1e3

    @property
    def bw_bytes_s(self) -> float:
        return self.params["bw_mib_s"] * MiB

    def service_ms(self, block_bytes: ArrayLike) -> np.ndarray:
        """The fitted s(B) in ms."""
        return 1e3 * service_s(block_bytes, self.s0_s, self.bw_bytes_s)

    def predict(self, memory_bytes: ArrayLike, block_bytes: ArrayLike, wait_s: ArrayLike) -> np.ndarray:
        """T in seconds with the fitted parameters."""
        return _internal(self.model, np.asarray(self.theta), np.asarray(memory_bytes, dtype=float),
                         np.asarray(block_bytes, dtype=float), np.asarray(wait_s, dtype=float))

    def predict_interval(self, memory_bytes: float, block_bytes: float, wait_s: float, *,
                         how: Literal["auto", "delta", "profile"] = "auto") -> tuple[float, float, float]:
        """(T, low, high) in seconds: the prediction with its 95 % interval (nan ends without degrees of freedom).

        delta    the delta method on ln T with the parameters' covariance, t quantile with the fit's degrees of
                 freedom: right where the parameters lie inside their physical range with their t intervals.
        profile  the profile likelihood of the prediction itself, {T′ : RSS_T(T′) ≤ RSS·(1 + F(0.95; 1, dof)/dof)}
                 with RSS_T(T′) the least RSS of the parameters within their physical range that predict T′ here:
                 the predictions of every bounded parameter vector the data do not reject, at the cut of the
                 parameters' own profile intervals. Its ends are where the data put them, never clipped, and never
                 outside what the bounded model can predict at this point (each is some bounded fit's prediction);
                 an end the data leave open is inf (above) or the least time the model can predict (below).
        auto     profile where the fit's intervals are profile ones (`profiled`: a bound active, or a t interval
                 that would cross one) or where the delta interval would reach below the least time the bounded
                 model can predict here; delta elsewhere, where the two agree to first order.

        Why the profile and not the covariance of the free parameters with the bounded one fixed, or a parametric
        bootstrap: fixing a parameter on its bound drops its uncertainty (too narrow wherever the truth lies off the
        bound the estimate landed on), and a delta interval can still cross the range; a bootstrap is not consistent
        where the truth lies on a bound (its refits pile up there) and costs a bounded fit per draw, in every
        held-out fit. The profile is what the parameters' intervals already are, so a prediction's interval and its
        parameters' agree. stats.ProfileFitError (a ValueError) where an inner fit of the profile does not
        converge."""
        if how not in ("auto", "delta", "profile"):
            raise ValueError(f"how: {how!r} is not auto, delta or profile")
        theta = np.asarray(self.theta)
        args = (np.asarray([memory_bytes], float), np.asarray([block_bytes], float), np.asarray([wait_s], float))
        t0 = float(_internal(self.model, theta, *args)[0])
        if self.dof <= 0:
            return t0, math.nan, math.nan
        half = math.nan
        if np.all(np.isfinite(self.cov)):
            grad = np.zeros(len(theta))
            for i in range(len(theta)):
                h = 1e-6 * max(1.0, abs(theta[i]))
                up, dn = theta.copy(), theta.copy()
                up[i] += h
                dn[i] -= h
                grad[i] = (math.log(float(_internal(self.model, up, *args)[0]))
                           - math.log(float(_internal(self.model, dn, *args)[0]))) / (2 * h)
            half = float(stats.t.ppf(0.975, self.dof)) * math.sqrt(max(float(grad @ np.asarray(self.cov) @ grad),
                                                                        0.0))
        least = self.least_s(memory_bytes, block_bytes, wait_s)
        delta = (t0, t0 * math.exp(-half), t0 * math.exp(half)) if math.isfinite(half) else (t0, math.nan, math.nan)
        if how == "delta" or how == "auto" and not self.profiled and not delta[1] < least:
            return delta
        return (t0, *self._profile_prediction(memory_bytes, block_bytes, wait_s, t0, least, half))

    def least_s(self, memory_bytes: float, block_bytes: float, wait_s: float) -> float:
        """The least dump time (s) the model can predict at a point with its parameters within the physical range
        (the fit's physical_bounds): its infimum, n times the least time per iteration."""
        lower, upper = (np.asarray(x) for x in self.bounds)
        return float(iterations(memory_bytes, block_bytes)) * _least_iteration_ms(
            self.model, block_bytes / MiB, wait_s * 1e3, lower, upper) / 1e3

    def _profile_prediction(self, memory_bytes: float, block_bytes: float, wait_s: float, t0: float, least: float,
                            half: float) -> tuple[float, float]:
        """The prediction's profile-likelihood interval (predict_interval, profile): walked on ln T from the estimate
        by stats.profile_end, down to the least prediction and up without a bound."""
        m, b, w, t = (np.asarray(x, dtype=float) for x in self.data)
        resid = _residuals(self.model, m, b, w, t)
        lower, upper = (np.asarray(x) for x in self.bounds)
        n, nb, wms = float(iterations(memory_bytes, block_bytes)), block_bytes / MiB, wait_s * 1e3
        level = cut(self.rss, self.dof)
        theta = np.asarray(self.theta)

        def excess(v: float) -> float:
            return rss_predicting(resid, theta, 1e3 * math.exp(v) / n, nb, wms, lower, upper) - level

        v0 = math.log(t0)
        step = half if math.isfinite(half) and half > 0 else 0.1
        open_after = max(1, math.ceil(math.log2(_OPEN_LOG / step)) + 1)   # the last probe e^30 from the estimate
        limit = math.log(least) if least > 0 else -math.inf
        lo = profile_end(excess, v0, step, -1, limit, 60 if math.isfinite(limit) else open_after)
        hi = profile_end(excess, v0, step, +1, math.inf, open_after)
        return (least if lo == limit else _exp(lo)), _exp(hi)


def fit(model: str, memory_bytes: ArrayLike, block_bytes: ArrayLike, wait_s: ArrayLike,
        dump_s: ArrayLike, *, parameter_intervals: bool = True) -> DumpFit:
    """Least-squares fit of `model` to measured dump times (one entry per measurement, repeats as separate
    points) on log times: minimises Σ (ln T_measured − ln T_model)². Needs at least two block sizes, and for
    oversleep and zero_skip points with and without a wait. Raises ValueError when a fit cannot be made, and
    stats.ProfileFitError (a ValueError) when an inner fit of a profile interval does not converge.
    parameter_intervals=False leaves the parameters' profile intervals uncomputed where the fit is `profiled` (its
    ci95 ends are then nan): a fit that only predicts (the held-out test) needs its prediction's interval alone,
    which predict_interval profiles itself, and the parameters' profiles were 57 % of a memory-dump analysis
    (2026-12-02)."""
    _check_model(model)
    t = np.asarray(dump_s, dtype=float)
    m = np.broadcast_to(np.asarray(memory_bytes, dtype=float), t.shape)
    b = np.broadcast_to(np.asarray(block_bytes, dtype=float), t.shape)
    w = np.broadcast_to(np.asarray(wait_s, dtype=float), t.shape)
    ok = np.isfinite(t) & (t > 0) & np.isfinite(b) & np.isfinite(w)
    t, m, b, w = t[ok], m[ok], b[ok], w[ok]
    names = _PARAMS[model]
    if len(np.unique(b)) < 2:
        raise ValueError(f"{model}: needs dump times at two block sizes or more to separate s0 from bw")
    if len(names) == 3 and not ((w > 0).any() and (w == 0).any()):
        raise ValueError(f"{model}: needs points with and without a wait")
    if len(t) < len(names):
        raise ValueError(f"{model}: {len(t)} points for {len(names)} parameters")
    # Start from ordinary least squares of the per-iteration time less the wait: s0 + B/bw.
    n = iterations(m, b)
    x = np.column_stack([np.ones_like(b), b / MiB])
    y = (t / n - w) * 1e3
    if model == "overlap" and len(np.unique(b[w == 0])) >= 2:     # without a wait the iteration is s(B) alone
        x, y = x[w == 0], y[w == 0]
    (s0_init, tau_init), *_ = np.linalg.lstsq(x, y, rcond=None)
    tau_init = max(float(tau_init), 1e-3)
    theta0 = [float(s0_init), tau_init] + ([0.0] if len(names) == 3 else [])

    resid = _residuals(model, m, b, w, t)
    lower, upper = physical_bounds(model, w)
    theta0 = list(np.clip(theta0, lower + 1e-9, upper - 1e-9))
    theta = _solve(resid, theta0, lower, upper, model)
    r = resid(theta)
    rss = float(r @ r)
    npts, k = len(t), len(names)
    dof = npts - k
    jac = _jacobian(resid, theta)
    cov = np.full((k, k), np.nan)
    if dof > 0:
        try:
            cov = (rss / dof) * np.linalg.inv(jac.T @ jac)
        except np.linalg.LinAlgError:
            pass
    half = (stats.t.ppf(0.975, dof) * np.sqrt(np.clip(np.diag(cov), 0, None)) if dof > 0
            else np.full(k, np.nan))
    ends = [(float(theta[j] - half[j]), float(theta[j] + half[j])) for j in range(k)]
    at_bound = tuple(bool(np.isfinite(lower[j]) and math.isclose(theta[j], lower[j], abs_tol=1e-6)
                          or np.isfinite(upper[j]) and math.isclose(theta[j], upper[j], abs_tol=1e-6))
                     for j in range(k))
    crosses = [ends[j][0] < lower[j] or ends[j][1] > upper[j] or not np.isfinite(half[j]) for j in range(k)]
    profiled = dof > 0 and (any(at_bound) or any(crosses))
    if profiled and not parameter_intervals:
        ends = [(math.nan, math.nan)] * k
    elif profiled:
        # where a bound is active (or a t interval would cross one), every parameter's interval is the profile
        # likelihood's within the physical range: no clipping of t ends, and the others' intervals account for the
        # bound as well (a parameter held on its bound moves the estimates of those it trades off with)
        try:
            ends = [parameter_interval(resid, theta, rss, dof, lower, upper, j, half[j]) for j in range(k)]
        except ProfileFitError as e:
            raise ProfileFitError(f"{model}: {e}") from e
    params: dict[str, float] = {"s0_ms": float(theta[0])}
    ci: dict[str, tuple[float, float]] = {"s0_ms": ends[0]}
    tau, (tau_lo, tau_hi) = float(theta[1]), ends[1]
    params["bw_mib_s"] = bandwidth_estimate(tau, float(lower[1]))
    ci["bw_mib_s"] = bandwidth_interval(tau_lo, tau_hi, float(lower[1]))
    if k == 3:
        name = names[2]
        params[name] = float(theta[2])
        ci[name] = ends[2]
    aic = npts * math.log(max(rss, 1e-300) / npts) + 2 * k
    return DumpFit(model, params, ci, npts, dof, rss, 100 * math.sqrt(rss / npts), aic, tuple(map(float, theta)),
                   tuple(tuple(map(float, row)) for row in cov),
                   tuple(n for n, b in zip(names, at_bound, strict=True) if b), profiled,
                   tuple(tuple(map(float, x)) for x in (m, b, w, t)), (tuple(map(float, lower)),
                                                                      tuple(map(float, upper))))


def bandwidth_estimate(tau: float, floor: float) -> float:
    """The bandwidth (MiB/s) from 1/bw (ms per MiB): 1e3/(1/bw), MiB per ms⁻¹ → MiB/s; inf where 1/bw's estimate sits
    on its floor (the data put no time on a block's bytes: no finite bandwidth, not 10^12 MiB/s as if measured)."""
    return math.inf if tau <= floor * (1 + 1e-6) else 1e3 / tau


def bandwidth_interval(tau_lo: float, tau_hi: float, floor: float) -> tuple[float, float]:
    """The bandwidth's interval (MiB/s) from 1/bw's (ms per MiB), bw = 1e3/(1/bw) with the ends swapped. 1/bw's
    floor (physical_bounds) stands for 1/bw > 0, not for a fastest device: where 1/bw's interval reaches it the
    bandwidth has no upper end (inf), where 1e3/floor would print 10^12 MiB/s as if measured; where 1/bw's has no
    upper end (inf) the bandwidth's lower end is its physical limit 0 (bw > 0), as s0's interval ends at its bound
    0. nan ends (no interval) stay nan."""
    low = 1e3 / tau_hi if tau_hi > 0 else math.nan
    return low, (math.inf if tau_lo <= floor * (1 + 1e-6) else 1e3 / tau_lo)


def physical_bounds(model: str, wait_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parameters' physical range, internal units (s0 ms, 1/bw ms per MiB, δ ms, z): a write costs no less
    than nothing (s0 ≥ 0, 1/bw > 0); a timer cannot wait less than no time (δ ≥ −w for the shortest wait w > 0
    of the points fitted); a share of skipped blocks is one (0 ≤ z < 1)."""
    lower, upper = [0.0, 1e-9], [np.inf, np.inf]
    if model == "oversleep":
        waits = np.asarray(wait_s, dtype=float)
        lower.append(-1e3 * float(waits[waits > 0].min()))
        upper.append(np.inf)
    elif model == "zero_skip":
        lower.append(0.0)
        upper.append(0.99)
    return np.asarray(lower), np.asarray(upper)


def _solve(resid: Callable[[np.ndarray], np.ndarray], theta0: Sequence[float], lower: np.ndarray,
           upper: np.ndarray, model: str) -> np.ndarray:
    res = optimize.least_squares(resid, theta0, bounds=(lower, upper), x_scale="jac", xtol=1e-12, ftol=1e-12,
                                 gtol=1e-12, max_nfev=20000)
    if not res.success:
        raise ValueError(f"{model}: least squares did not converge ({res.message})")
    return np.asarray(res.x, dtype=float)


def _jacobian(resid: Callable[[np.ndarray], np.ndarray], theta: np.ndarray) -> np.ndarray:
    """Central differences of the residuals at θ (the solver's own Jacobian is one-sided at a bound)."""
    cols = []
    for i in range(len(theta)):
        h = 1e-6 * max(1.0, abs(theta[i]))
        up, dn = theta.copy(), theta.copy()
        up[i] += h
        dn[i] -= h
        cols.append((resid(up) - resid(dn)) / (2 * h))
    return np.column_stack(cols)


def _least_iteration_ms(model: str, nb: float, w: float, lower: np.ndarray, upper: np.ndarray) -> float:
    """The least time per iteration (ms) the model gives at block nb MiB and wait w ms with its parameters within
    [lower, upper] (internal units): the service time at its least (s0 and 1/bw on their lower bounds), the wait,
    the oversleep at its least (δ = −the shortest fitted wait) or the share of skipped blocks at its largest."""
    smin = float(lower[0] + lower[1] * nb)
    if model == "overlap":
        return max(smin, w)
    if model == "oversleep":
        return smin + (w + float(lower[2]) if w > 0 else 0.0)
    if model == "zero_skip":
        return (1.0 - float(upper[2])) * (smin + w)
    return smin + w


def fit_all(memory_bytes: ArrayLike, block_bytes: ArrayLike, wait_s: ArrayLike, dump_s: ArrayLike,
            models: tuple[str, ...] = MODELS) -> dict[str, DumpFit]:
    """Every model fitted to the same points (raises if one cannot be: the paper quotes every one)."""
    return {mod: fit(mod, memory_bytes, block_bytes, wait_s, dump_s) for mod in models}


def delta_aic(fits: dict[str, DumpFit]) -> dict[str, float]:
    """AIC of each model minus the smallest (0 for the best; > 2 is noticeably worse, > 10 essentially ruled
    out). Only models fitted to the same points are comparable."""
    best = min(f.aic for f in fits.values())
    return {k: f.aic - best for k, f in fits.items()}


# ------------------------------------------------------------------ what a measured timing implies

def implied_oversleep_ms(dump_s: float, memory_bytes: float, block_bytes: float, wait_s: float,
                         service_ms: float) -> float:
    """δ (ms) that makes the oversleep model give `dump_s` for a device whose s(B) is `service_ms`:
    δ = T/n − s(B) − w. Negative: each wait ends that much early."""
    n = float(iterations(memory_bytes, block_bytes))
    return dump_s / n * 1e3 - service_ms - wait_s * 1e3


def implied_zero_fraction(dump_s: float, memory_bytes: float, block_bytes: float, wait_s: float,
                          service_ms: float) -> float:
    """z that makes the zero_skip model give `dump_s` for a device whose s(B) is `service_ms`:
    z = 1 − T / (n·(s(B) + w))."""
    n = float(iterations(memory_bytes, block_bytes))
    return 1.0 - dump_s / (n * (service_ms / 1e3 + wait_s))


def two_point_after(memory_bytes: float, first: tuple[float, float, float],
                    second: tuple[float, float, float]) -> tuple[float, float]:
    """The `after` model solved exactly through two timings (block bytes, wait s, dump s) of one memory size:
    (s0 in ms, 1/bw in ms per MiB). A negative value means no device can explain both timings under `after`."""
    (b1, w1, t1), (b2, w2, t2) = first, second
    y1 = (t1 / float(iterations(memory_bytes, b1)) - w1) * 1e3
    y2 = (t2 / float(iterations(memory_bytes, b2)) - w2) * 1e3
    tau = (y2 - y1) / ((b2 - b1) / MiB)
    return y1 - tau * b1 / MiB, tau


def duty_cycle(block_bytes: ArrayLike, wait_s: ArrayLike, s0_s: float, bw_bytes_s: float) -> np.ndarray:
    """Fraction of the dump during which the device is busy with the walker under `after`: s(B) / (s(B) + w).
    The VM's own I/O competes with the dump for the rest; a given duty cycle u is kept by w = s(B)·(1 − u)/u."""
    s = service_s(block_bytes, s0_s, bw_bytes_s)
    return s / (s + np.asarray(wait_s, dtype=float))


def wait_for_duty_s(block_bytes: ArrayLike, duty: float, s0_s: float, bw_bytes_s: float) -> np.ndarray:
    """The wait (s) after each B-byte write that keeps the device's busy fraction at `duty` (0 < duty ≤ 1); the
    dump then takes n·s(B)/duty, shortest with the largest B: the best (ioBlockPages, ioWait) curve."""
    if not 0 < duty <= 1:
        raise ValueError(f"duty: {duty} not in (0, 1]")
    return service_s(block_bytes, s0_s, bw_bytes_s) * (1 - duty) / duty


__all__ = ["PAGE", "MODELS", "WalkerPoint", "iterations", "service_s", "seed_estimate_s", "dump_time_s",
           "DumpFit", "fit", "fit_all", "delta_aic", "physical_bounds", "bandwidth_estimate", "bandwidth_interval",
           "implied_oversleep_ms", "implied_zero_fraction", "two_point_after", "duty_cycle", "wait_for_duty_s"]
