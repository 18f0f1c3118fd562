"""The seek-span model of a mechanical drive, and the fits that recover a drive's seek figures from fio data.

Units: seconds unless a name says otherwise (`_ms` milliseconds, `_us` microseconds); offsets and capacities in
bytes; seek distances in cylinders of the real (unscaled) drive.

A drive profile (snaptax.spindle.profiles.DriveProfile) served scaled to `capacity` bytes spreads its LBAs over
the whole stroke as in snaptax.spindle.model.Geometry: the media rate falls linearly from `outer_mb_s` to
`inner_mb_s` with the stroke position x ∈ [0, 1], so the byte fraction f = lba/capacity and x are related by

    f(x) = (x − (1 − k)·x²/2) / ((1 + k)/2),     k = inner/outer     ⇔     x(f) = (1 − √(1 − (1 − k²)·f)) / (1 − k)

The mean QD1 service time of random `bs` reads within the first span s (a fraction of the device) is

    S(s) = overhead + E[seek(|x₁ − x₂|·N)] + T_rev/2 + E[bs / rate(x)]        x₁, x₂ ~ x(uniform LBAs in s)

with seek() the Ruemmler–Wilkes curve through the datasheet's (track_to_track, average, full_stroke) figures
(snaptax.spindle.model.fit_seek_curve), N the drive's cylinders, T_rev = 60/rpm and rate(x) = outer·(1 − (1−k)·x).

Two fits recover the read-seek figures from measurements:
  fit_seek_requests   per request (maximum likelihood on interval-censored seeks; see request_model): uses the
                      rotational position of every request instead of averaging over it. The calibration's fit.
  fit_seek_span       to mean latencies per span (least squares on S(s)); a revolution of rotational noise per
                      request limits it. Kept for comparison.
A failed fit raises FitError; it is never swallowed.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..spindle.model import SeekCurve, fit_seek_curve
from ..spindle.profiles import DriveProfile, SeekSpec

SPANS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
FIGURES = ("track_to_track_ms", "average_ms", "full_stroke_ms")
GRID = 600      # LBA grid points per span for the E[seek] double integral (600² pairs)
OUTLIER = 0.01  # mixture weight of requests the model cannot explain (a descheduled emulator thread, …)
MIN_REQUESTS = 50
# Lower bound of σ, the spread of u (s). The client's turnaround through fio, NBD and the emulator varies by tens of
# µs from request to request (the quick run's fits give σ ≈ 40 µs) and the emulator reports it only in 2 µs bins;
# a σ below 10 µs would claim a precision the harness does not have, and with few requests near their intervals'
# edges the censored likelihood would otherwise grow without bound as σ → 0.
SIGMA_FLOOR_S = 10e-6
# relative steps tried in turn for the observed information: the likelihood is a sum of steep sigmoids, rugged at
# the scale of single requests; a larger step averages over that ruggedness
HESSIAN_STEPS = (2e-3, 1e-2, 3e-2)
# σ is at its floor when its excess exp(s) over SIGMA_FLOOR_S is below this fraction of the floor: −log L's slope
# and curvature in the σ parameter s both scale with exp(s), so its row of the information is zero or rounding
# noise there and the 4×4 matrix is singular. Near the floor (below SIGMA_NEAR_FLOOR) that row is merely tiny: the
# 4×4 matrix is tried first, and the figures' own 3×3 information (σ held) only if no step makes it invertible.
SIGMA_AT_FLOOR = 1e-3
SIGMA_NEAR_FLOOR = 1e-1
# The likelihood works through its requests in blocks of this many (request, turnaround point) values, 256 KiB
# per temporary: whole-array temporaries of a quick run's ~16 000 × 16 values are 2 MB each, which the allocator
# maps and unmaps on every evaluation, and on a virtual machine the page faults cost more than the arithmetic.
NLL_BLOCK_VALUES = 32768
# Φ(z) is 1.0 in double precision from here on (1 − Φ(9) ≈ 1.1e-19, below half an ulp of 1)
PHI_SATURATED = 9.0


class FitError(ValueError):
    """A fit that did not converge or cannot give intervals (never swallowed: the analysis fails with it)."""


# ------------------------------------------------------------------ the model

def x_of(lba: np.ndarray, p: DriveProfile, capacity: int) -> np.ndarray:
    """Stroke position x ∈ [0, 1] (0: outer diameter) of byte offsets `lba` on a drive scaled to `capacity`
    bytes: x(f) = (1 − √(1 − (1 − k²)·f)) / (1 − k), f = lba/capacity, k = inner/outer rate (x = f when k ≥ 1).
    Vectorized snaptax.spindle.model.Geometry.x_of."""
    k = p.inner_mb_s / p.outer_mb_s
    f = np.clip(np.asarray(lba, float) / capacity, 0.0, 1.0)
    if k >= 1:
        return f
    q = 1 - k
    return (1 - np.sqrt(np.maximum(0.0, 1 - 2 * q * (1 + k) / 2 * f))) / q


def seek_ms(d: np.ndarray, c: SeekCurve) -> np.ndarray:
    """Seek time in ms for distances `d` in cylinders: 0 below half a cylinder, a + b·√max(d, 1) below the
    boundary d_b, c + e·d beyond (SeekCurve.ms, vectorized)."""
    d = np.asarray(d, float)
    d1 = np.maximum(d, 1.0)
    t = np.where(d1 < c.d_b, c.a + c.b * np.sqrt(d1), c.c + c.e * d1)
    return np.where(d < 0.5, 0.0, t)


def mean_service_s(span: float, seek: SeekSpec, p: DriveProfile, capacity: int, bs: int = 4096) -> float:
    """S(span) in s: mean QD1 service time of random `bs`-byte reads within the first `span` (fraction of the
    device) of drive `p` scaled to `capacity` bytes, with read-seek figures `seek`:
    overhead + E[seek] + T_rev/2 + E[bs/rate(x)] (E[seek] over a GRID×GRID lattice of LBA pairs)."""
    curve = fit_seek_curve(seek, p.cylinders, p.short_seek_fraction)
    lba = (np.arange(GRID) + 0.5) / GRID * span * capacity
    x = x_of(lba, p, capacity)
    d = np.abs(x[:, None] - x[None, :]) * p.cylinders
    e_seek = float(seek_ms(d, curve).mean()) / 1e3
    k = p.inner_mb_s / p.outer_mb_s
    rate = p.outer_mb_s * 1e6 * (1 - (1 - k) * x)
    return p.overhead_ms / 1e3 + e_seek + p.t_rev_s / 2 + float(np.mean(bs / rate))


def datasheet_qd1_iops(p: DriveProfile, bs: int = 4096) -> float:
    """The datasheet's own arithmetic, in I/O per second: 1 / (overhead + average seek + T_rev/2 + bs/mean_rate),
    mean_rate = (outer + inner)/2 in bytes/s."""
    return 1.0 / (p.overhead_ms / 1e3 + p.seek_read.average_ms / 1e3 + p.t_rev_s / 2 + bs / p.mean_rate_bytes_s)


@dataclass(frozen=True)
class SeekFit:
    """Fitted read-seek figures (ms) with 95 % confidence half-widths (ms), the fit's residual scale (s: the
    client's jitter for the per-request fit, the RMS residual for the span fit) and the points it used."""

    track_to_track_ms: float
    average_ms: float
    full_stroke_ms: float
    ci95_ms: tuple[float, float, float]
    residual_rms_s: float
    points: int

    def as_spec(self) -> SeekSpec:
        return SeekSpec(self.track_to_track_ms, self.average_ms, self.full_stroke_ms)

    def rel_errors(self, truth: SeekSpec) -> dict[str, float]:
        """|fitted − truth| / truth per figure (fractions)."""
        return {name: abs(getattr(self, name) - getattr(truth, name)) / getattr(truth, name) for name in FIGURES}


def _curve_or_none(t1: float, ta: float, tf: float, p: DriveProfile) -> SeekCurve | None:
    """The curve through three figures, or None when they give no increasing curve (an infeasible point)."""
    if not 0 < t1 < ta < tf:
        return None
    try:
        return fit_seek_curve(SeekSpec(float(t1), float(ta), float(tf)), p.cylinders, p.short_seek_fraction)
    except (ConfigError, ZeroDivisionError):
        return None


# ------------------------------------------------------------------ the span fit (means)

def fit_seek_span(spans: Sequence[float], latency_s: Sequence[float], se_s: Sequence[float], p: DriveProfile,
                  capacity: int, harness_s: float = 0.0, bs: int = 4096,
                  p0_ms: tuple[float, float, float] = (1.0, 6.0, 12.0)) -> SeekFit:
    """Least-squares fit of (track_to_track, average, full_stroke) in ms to mean QD1 latencies `latency_s` (s,
    standard errors `se_s`) at `spans`: latency − harness_s = S(span). Fitted in log space (all positive); an
    infeasible point (figures not increasing, or no increasing curve through them) scores 1 s per point. The
    start point is generic (p0_ms), not the profile's figures. 95 % half-widths by the delta method
    (d exp(u) = exp(u) du). Raises FitError when the optimizer fails."""
    from scipy.optimize import curve_fit

    s_arr = np.asarray(spans, float)
    y = np.asarray(latency_s, float) - harness_s
    sigma = np.maximum(np.asarray(se_s, float), 1e-7)

    def model(x, lt1, lta, ltf):
        t1, ta, tf = math.exp(lt1), math.exp(lta), math.exp(ltf)
        if _curve_or_none(t1, ta, tf, p) is None:
            return np.full(len(x), 1.0)
        spec = SeekSpec(t1, ta, tf)
        return np.array([mean_service_s(s, spec, p, capacity, bs) for s in x])

    try:
        popt, pcov = curve_fit(model, s_arr, y, p0=np.log(p0_ms), sigma=sigma, absolute_sigma=True, maxfev=4000)
    except (RuntimeError, ValueError) as exc:
        raise FitError(f"seek-span fit of {p.name} did not converge: {exc}") from exc
    est = np.exp(popt)
    var = np.diag(pcov)
    if not np.all(np.isfinite(var)) or np.any(var < 0):
        raise FitError(f"seek-span fit of {p.name}: no covariance at the optimum (figures not identifiable)")
    sd = est * np.sqrt(var)
    resid = y - model(s_arr, *popt)
    return SeekFit(float(est[0]), float(est[1]), float(est[2]), tuple(float(1.96 * v) for v in sd),  # type: ignore[arg-type]
                   float(np.sqrt(np.mean(resid ** 2))), len(s_arr))


def synthetic_span_data(p: DriveProfile, capacity: int, spans: Sequence[float] = SPANS, *, noise_s: float = 0.0,
                        seed: int = 0, harness_s: float = 0.0, bs: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Model latencies (s) at `spans`: S(span) + harness_s + Normal(0, noise_s) noise, and their standard errors
    (noise_s, at least 1 µs): known-parameter data for testing fit_seek_span."""
    rng = np.random.default_rng(seed)
    y = np.array([mean_service_s(s, p.seek_read, p, capacity, bs) + harness_s for s in spans])
    return (y + rng.normal(0, noise_s, len(y)) if noise_s else y), np.full(len(y), max(noise_s, 1e-6))


# ------------------------------------------------------------------ the per-request fit

@dataclass(frozen=True)
class Trace:
    """One QD1 random-read run as fio logged it: byte offsets and completion latencies (s) in issue order, and
    the client's turnaround `phase_s` (s; simulated time from a completion to the next arrival, the median from
    the emulator's counters; on a real drive: the block layer's, a few µs, measured with a null device).
    harness_s: fio-visible latency beyond the device's service (s; only used to count revolutions); span: the
    fraction of the device the offsets lie in. phase_quantiles_s: the turnaround's distribution as equally likely
    points (s; the emulator's idle-phase histogram at probabilities (j + ½)/Q), when known: each request's own
    turnaround is not logged, and the turnaround is right-skewed, so a fit that put every request at the median
    would read the rest as seek time (empty: every request at phase_s)."""

    offsets: np.ndarray
    clat_s: np.ndarray
    phase_s: float
    harness_s: float = 0.0
    span: float = 1.0
    phase_quantiles_s: tuple[float, ...] = ()

    @property
    def phase_points_s(self) -> np.ndarray:
        return np.asarray(self.phase_quantiles_s or (self.phase_s,), float)


@dataclass(frozen=True)
class RequestModel:
    """Per-request quantities that do not depend on the seek figures: seek distance (cylinders), the interval
    (lo_s, hi_s] in which u = phase + overhead + seek lies (s), each used request's turnaround as Q equally
    likely points (phase_s, shape requests × Q; Q = 1 when only the median is known) and span; how many requests
    were used and left out."""

    d_cyl: np.ndarray
    lo_s: np.ndarray
    hi_s: np.ndarray
    phase_s: np.ndarray
    span: np.ndarray
    used: int
    excluded: int


def revolutions_per_stroke(p: DriveProfile, capacity: int) -> float:
    """Revolutions a sequential pass over the scaled drive takes: capacity / (mean_rate · T_rev)."""
    return capacity / (p.mean_rate_bytes_s * p.t_rev_s)


def request_model(traces: Sequence[Trace], p: DriveProfile, capacity: int, bs: int = 4096) -> RequestModel:
    """What each request of a QD1 trace says about its seek, independent of the seek figures.

    With nothing else outstanding, request B arrives `phase` after the previous request A completed; the platter
    was then at A's end angle θ(A_end) (a read ends where its data ends). B's transfer begins at the first
    passage of θ(B) after u = phase + overhead + seek(d):  Δ = T·(k + φ), φ = frac(θ(B) − θ(A_end)), k the
    smallest integer with T·(k + φ) ≥ u (T = T_rev, θ in revolutions = R·x with R = revolutions_per_stroke).
    fio's latency of B is Δ − phase + transfer + harness, so the revolution count k follows from the latency
    (harness jitter ≪ T/2), and the observation is interval-censored: u ∈ (T·(k − 1 + φ), T·(k + φ)].
    Rotational position is thus known exactly instead of averaged over: each request pins its seek to within
    the client's jitter, not within a revolution. While idle the head keeps reading ahead, so the seek starts
    from min(x(A_end + read-ahead), x(A_end) + phase/(R·T)).
    Requests served from the read-ahead buffer (B within [A, A + bs + read-ahead)) and those following one are
    left out; so is each trace's first request."""
    revs, T = revolutions_per_stroke(p, capacity), p.t_rev_s
    N = p.cylinders
    ra = p.readahead_bytes
    cols: dict[str, list] = {k: [] for k in ("d", "lo", "hi", "ph", "span")}
    used = excluded = 0
    for tr in traces:
        off = np.asarray(tr.offsets, float)
        lat = np.asarray(tr.clat_s, float)
        if len(off) < 2:
            excluded += len(off)
            continue
        a, b = off[:-1], off[1:]
        media = ~((b >= a) & (b < a + bs + ra))
        ok = media & np.concatenate([[False], media[:-1]])   # A itself was a media read
        x_a_end = x_of(a + bs, p, capacity)
        x_b = x_of(b, p, capacity)
        head = np.minimum(x_of(a + bs + ra, p, capacity), x_a_end + tr.phase_s / (revs * T))
        d = np.abs(x_b - head) * N
        phi = np.mod(revs * x_b - revs * x_a_end, 1.0)
        xfer = (x_of(b + bs, p, capacity) - x_b) * revs * T
        k = np.rint((lat[1:] - tr.harness_s + tr.phase_s - xfer) / T - phi)
        ok &= k >= 0
        used += int(ok.sum())
        excluded += int((~ok).sum()) + 1
        cols["d"].append(d[ok])
        cols["lo"].append(T * (k[ok] - 1 + phi[ok]))
        cols["hi"].append(T * (k[ok] + phi[ok]))
        cols["ph"].append(np.tile(tr.phase_points_s, (int(ok.sum()), 1)))
        cols["span"].append(np.full(int(ok.sum()), tr.span))
    q = max((len(t.phase_points_s) for t in traces), default=1)
    if any(len(t.phase_points_s) != q for t in traces):
        raise FitError(f"seek fit of {p.name}: traces give their turnaround as different numbers of points")
    cat = {k: (np.concatenate(v) if v else np.zeros((0, q) if k == "ph" else 0)) for k, v in cols.items()}
    return RequestModel(cat["d"], cat["lo"], cat["hi"], cat["ph"], cat["span"], used, excluded)


def sigma_of(log_excess: float) -> float:
    """σ (s) from the fitted parameter: σ = SIGMA_FLOOR_S + exp(log_excess)."""
    return SIGMA_FLOOR_S + math.exp(log_excess)


def negative_log_likelihood(params: np.ndarray, rm: RequestModel, p: DriveProfile) -> float:
    """−log L of params = (track_to_track ms, average ms, full_stroke ms, s), σ = SIGMA_FLOOR_S + exp(s) seconds:
    u_i ~ Normal(μ_iq, σ) censored to (lo_i, hi_i], μ_iq = phase_iq + overhead + seek(d_i), averaged over the
    turnaround's Q equally likely points phase_iq and mixed with an outlier floor:
    L_i = (1 − OUTLIER)·(1/Q)·Σ_q [Φ((hi_i − μ_iq)/σ) − Φ((lo_i − μ_iq)/σ)] + OUTLIER·0.1. Infeasible figures
    (not increasing, or no increasing curve through them) score 10¹².
    Computed in blocks of requests, and Φ only where it is not saturated (see _censored_probability): the same
    value, bit for bit, as the whole-array expression, several times faster."""
    t1, ta, tf, log_excess = params
    curve = _curve_or_none(t1, ta, tf, p)
    if curve is None:
        return 1e12
    sigma = sigma_of(log_excess)
    service = p.overhead_ms / 1e3 + seek_ms(rm.d_cyl, curve) / 1e3
    prob = np.empty(len(service))
    rows = max(1, NLL_BLOCK_VALUES // max(1, rm.phase_s.shape[1]))
    for start in range(0, len(service), rows):
        block = slice(start, start + rows)
        prob[block] = _censored_probability(rm.phase_s[block] + service[block, None], rm.lo_s[block],
                                            rm.hi_s[block], sigma)
    lik = (1 - OUTLIER) * prob + OUTLIER * 0.1
    return float(-np.sum(np.log(lik)))


def _censored_probability(mu: np.ndarray, lo: np.ndarray, hi: np.ndarray, sigma: float) -> np.ndarray:
    """Per row i: mean over q of Φ((hi_i − μ_iq)/σ) − Φ((lo_i − μ_iq)/σ) (mu: rows × Q, s; lo, hi: rows, s).
    Φ is evaluated only where it is not saturated: for z ≥ PHI_SATURATED, Φ(z) rounds to 1.0 in double precision
    (1 − Φ(9) ≈ 1.1·10⁻¹⁹ < 2⁻⁵³), so an interval with z_lo ≥ 9 has probability 0.0 and one with z_hi ≥ 9 and
    z_lo ≤ −9 has 1.0 exactly, as ndtr gives them; the rest (z_hi < 9 including both tails below, z_lo in
    (−9, 9), and NaN) is computed. `mu` is overwritten."""
    from scipy.special import ndtr

    z_hi = np.subtract(hi[:, None], mu)
    z_hi /= sigma
    z_lo = np.subtract(lo[:, None], mu, out=mu)
    z_lo /= sigma
    # computed unless known to be saturated (so a NaN is computed, and stays NaN, as in the formula)
    rest = ~((z_hi >= PHI_SATURATED) & ((z_lo >= PHI_SATURATED) | (z_lo <= -PHI_SATURATED)))
    if rest.all():   # nothing saturated (a wide σ, where the fit starts): no masked copies
        return (ndtr(z_hi) - ndtr(z_lo)).mean(axis=1)
    whole = (z_hi >= PHI_SATURATED) & (z_lo <= -PHI_SATURATED)
    diff = whole.astype(float)
    diff[rest] = ndtr(z_hi[rest]) - ndtr(z_lo[rest])
    return diff.mean(axis=1)


def hessian(f: Callable[[np.ndarray], float], x: np.ndarray, rel: float = 2e-3) -> np.ndarray:
    """Numeric Hessian of f at x by central differences, step rel·|x_i| (at least 10⁻⁶) per coordinate."""
    n = len(x)
    h = np.maximum(np.abs(x) * rel, 1e-6)
    H = np.zeros((n, n))
    f0 = f(x)
    for i in range(n):
        ei = np.zeros(n)
        ei[i] = h[i]
        H[i, i] = (f(x + ei) - 2 * f0 + f(x - ei)) / h[i] ** 2
        for j in range(i + 1, n):
            ej = np.zeros(n)
            ej[j] = h[j]
            H[i, j] = H[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) \
                / (4 * h[i] * h[j])
    return H


def fit_seek_requests(traces: Sequence[Trace], p: DriveProfile, capacity: int, bs: int = 4096,
                      p0_ms: tuple[float, float, float] = (1.0, 6.0, 12.0)) -> SeekFit:
    """Maximum-likelihood fit of the read-seek figures (track_to_track, average, full_stroke; ms) to per-request
    QD1 data (see request_model and negative_log_likelihood). Overhead, rpm, zoned rates and the capacity
    scaling are the profile's (known); the start point is generic (p0_ms), not the profile's figures. The search
    runs Nelder–Mead at a fixed wide σ (1 ms, then 0.2 ms: a wide σ smooths the censored likelihood), then frees
    σ (≥ SIGMA_FLOOR_S). 95 % half-widths: 1.96·√diag(H⁻¹), H the observed information (numeric Hessian of
    −log L, with the first of HESSIAN_STEPS that gives a positive-definite H; over the three figures alone, σ held,
    when σ ends at its floor (SIGMA_AT_FLOOR: a bound, where σ's curvature is zero), or near it (SIGMA_NEAR_FLOOR)
    when the four-parameter H is not invertible at any step). residual_rms_s is the fitted σ.
    Raises FitError with fewer than MIN_REQUESTS usable requests, when the optimizer does not converge, or when
    no step gives a positive-definite information matrix (no interval)."""
    from scipy.optimize import minimize

    rm = request_model(traces, p, capacity, bs)
    if rm.used < MIN_REQUESTS:
        raise FitError(f"seek fit of {p.name}: only {rm.used} usable requests (need {MIN_REQUESTS})")

    def nll(v: np.ndarray) -> float:
        return negative_log_likelihood(np.asarray(v, float), rm, p)

    x3 = np.asarray(p0_ms, float)
    for sigma0 in (1e-3, 2e-4):
        le = math.log(sigma0 - SIGMA_FLOOR_S)
        r = minimize(lambda v, le=le: nll(np.array([*v, le])), x3, method="Nelder-Mead",
                     options={"xatol": 1e-4, "fatol": 1e-3, "maxiter": 4000})
        x3 = r.x
    r = minimize(nll, np.array([*x3, math.log(2e-4 - SIGMA_FLOOR_S)]), method="Nelder-Mead",
                 options={"xatol": 1e-5, "fatol": 1e-4, "maxiter": 8000})
    if not r.success or not np.all(np.isfinite(r.x)) or r.fun >= 1e12:
        raise FitError(f"seek fit of {p.name} did not converge: {r.message}")
    x = r.x
    # σ at its floor is an active bound: the interval of the seek figures is then the one with σ held there (the
    # information of the three figures alone), not one that divides by σ's zero curvature
    excess = float(x[3]) - math.log(SIGMA_FLOOR_S)    # log(exp(s) / floor), compared in logs: no overflow
    tried = []
    for free in ((3,) if excess < math.log(SIGMA_AT_FLOOR) else (4, 3) if excess < math.log(SIGMA_NEAR_FLOOR)
                 else (4,)):
        def nll_free(v: np.ndarray, free: int = free) -> float:
            return nll(np.concatenate([v, x[free:]]))

        for rel in HESSIAN_STEPS:
            try:
                var = np.diag(np.linalg.inv(hessian(nll_free, x[:free], rel)))[:3]
            except np.linalg.LinAlgError:
                tried.append(f"{free} parameters, step {rel:g}: singular")
                continue
            if np.all(np.isfinite(var)) and np.all(var > 0):
                half = tuple(float(1.96 * math.sqrt(v)) for v in var)
                return SeekFit(float(x[0]), float(x[1]), float(x[2]), half,  # type: ignore[arg-type]
                               sigma_of(float(x[3])), rm.used)
            tried.append(f"{free} parameters, step {rel:g}: variances {np.round(var, 6).tolist()}")
    raise FitError(f"seek fit of {p.name} ({rm.used} requests): the information matrix is not positive definite at "
                   f"the optimum ({'; '.join(tried)}): no interval; measure longer")
