"""Rigs and calibration: what the emulated spindles (or a real HDD) do, and the seek-span model fitted to it.

The study (`python -m snaptax run calibration`), for every drive profile in rigs/spindles/ (served one at a time
by snaptax.spindle.serve, a scaled CAPACITY each):
  * random 4 KiB read and write IOPS versus queue depth (1…32) over the whole device;
  * random 4 KiB reads at queue depth 1 versus span (fraction of the device from LBA 0), with fio's per-request
    latency log (offset, latency), to which the seek curve is fitted (fit_seek_requests) with 95 % intervals;
  * QD1 IOPS compared with the datasheet's own arithmetic (datasheet_qd1_iops);
  * the harness round trip on the zero-latency device;
and seed 000's "reads double": seed 000's redo log stood in for by a qcow2 overlay with a small L2 cache
(chain_length.qcow2_configs()[0]) on the emulated 10K RAID1 of the rig, random reads with and without the
snapshot, host-level reads (the array's counters) per VM-level read (fio's).

Model (the seek-span model; units: seconds unless named _ms). Mean QD1 service time of a random `bs` read
within span s of a drive whose LBAs are spread over the stroke as in snaptax.spindle.model:

    S(s) = overhead + E[seek(|x₁ − x₂|·N)] + T_rev/2 + E[bs / rate(x)]        x₁, x₂ ~ positions of uniform LBAs in s

seek() is the Ruemmler–Wilkes curve through (track_to_track, average, full_stroke) (model.fit_seek_curve);
overhead, T_rev and the zoned rate come from the profile (on a real drive: from its datasheet). S(s) draws the
model line of the span figure; the parameters are recovered per request (fit_seek_requests), which uses the
rotational position of every request instead of averaging over it. fit_seek_span() is the older mean-based fit
(kept for comparison: a revolution of rotational noise per request limits it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..spindle.model import SeekCurve, fit_seek_curve
from ..spindle.profiles import DriveProfile, SeekSpec

SPANS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
QUEUE_DEPTHS = (1, 2, 4, 8, 16, 32)
_GRID = 600    # LBA grid points per span for the E[seek] double integral (600² pairs)


# ------------------------------------------------------------------ the model (pure)

def _x_of(lba: np.ndarray, p: DriveProfile, capacity: int) -> np.ndarray:
    """model.Geometry.x_of, vectorized."""
    k = p.inner_mb_s / p.outer_mb_s
    f = np.clip(lba / capacity, 0.0, 1.0)
    if k >= 1:
        return f
    q = 1 - k
    return (1 - np.sqrt(np.maximum(0.0, 1 - 2 * q * (1 + k) / 2 * f))) / q


def _seek_ms(d: np.ndarray, c: SeekCurve) -> np.ndarray:
    """SeekCurve.ms, vectorized (same rules: 0 below half a cylinder, s(1) up to one cylinder)."""
    d1 = np.maximum(d, 1.0)
    t = np.where(d1 < c.d_b, c.a + c.b * np.sqrt(d1), c.c + c.e * d1)
    return np.where(d < 0.5, 0.0, t)


def mean_service_s(span: float, seek: SeekSpec, p: DriveProfile, capacity: int, bs: int = 4096) -> float:
    """S(span): mean QD1 service time of random `bs` reads within the first `span` of the device."""
    curve = fit_seek_curve(seek, p.cylinders, p.short_seek_fraction)
    lba = (np.arange(_GRID) + 0.5) / _GRID * span * capacity
    x = _x_of(lba, p, capacity)
    d = np.abs(x[:, None] - x[None, :]) * p.cylinders
    e_seek = float(_seek_ms(d, curve).mean()) / 1e3
    k = p.inner_mb_s / p.outer_mb_s
    rate = p.outer_mb_s * 1e6 * (1 - (1 - k) * x)
    return p.overhead_ms / 1e3 + e_seek + p.t_rev_s / 2 + float(np.mean(bs / rate))


def datasheet_qd1_iops(p: DriveProfile, bs: int = 4096) -> float:
    """The datasheet's own arithmetic: 1 / (overhead + average seek + half a revolution + transfer at mean rate)."""
    return 1.0 / (p.overhead_ms / 1e3 + p.seek_read.average_ms / 1e3 + p.t_rev_s / 2 + bs / p.mean_rate_bytes_s)


@dataclass(frozen=True)
class SeekFit:
    """Fitted read-seek figures (ms) with 95 % confidence half-widths, and the fit's residual scale."""

    track_to_track_ms: float
    average_ms: float
    full_stroke_ms: float
    ci95_ms: tuple[float, float, float]
    residual_rms_s: float
    points: int

    def as_spec(self) -> SeekSpec:
        return SeekSpec(self.track_to_track_ms, self.average_ms, self.full_stroke_ms)

    def rel_errors(self, truth: SeekSpec) -> dict[str, float]:
        return {name: abs(getattr(self, name) - getattr(truth, name)) / getattr(truth, name)
                for name in ("track_to_track_ms", "average_ms", "full_stroke_ms")}


def fit_seek_span(spans, latency_s, se_s, p: DriveProfile, capacity: int, harness_s: float = 0.0,
                  bs: int = 4096, p0_ms: tuple[float, float, float] = (1.0, 6.0, 12.0)) -> SeekFit:
    """Fit (track_to_track, average, full_stroke) to measured QD1 mean latencies at `spans`.

    The start point is generic (p0_ms), not the profile's figures, so recovering them is a real test. The
    parameters are fitted in log space (all positive), the bounds keep t1 < avg < full only softly (a
    non-increasing curve is rejected by fit_seek_curve and scored as a huge residual)."""
    from scipy.optimize import curve_fit

    spans = np.asarray(spans, float)
    y = np.asarray(latency_s, float) - harness_s
    sigma = np.maximum(np.asarray(se_s, float), 1e-7)

    def model(s_arr, lt1, lta, ltf):
        t1, ta, tf = math.exp(lt1), math.exp(lta), math.exp(ltf)
        if not t1 < ta < tf:
            return np.full(len(s_arr), 1.0)
        try:
            spec = SeekSpec(t1, ta, tf)
            return np.array([mean_service_s(s, spec, p, capacity, bs) for s in s_arr])
        except Exception:   # non-increasing curve: make the point unattractive
            return np.full(len(s_arr), 1.0)

    popt, pcov = curve_fit(model, spans, y, p0=np.log(p0_ms), sigma=sigma, absolute_sigma=True,
                           maxfev=4000)
    est = np.exp(popt)
    # delta method: d exp(u) = exp(u) du
    sd = est * np.sqrt(np.clip(np.diag(pcov), 0, None))
    resid = y - model(spans, *popt)
    return SeekFit(float(est[0]), float(est[1]), float(est[2]), tuple(float(1.96 * v) for v in sd),
                   float(np.sqrt(np.mean(resid ** 2))), len(spans))


def synthetic_span_data(p: DriveProfile, capacity: int, spans=SPANS, *, noise_s: float = 0.0, seed: int = 0,
                        harness_s: float = 0.0, bs: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Model latencies at `spans` (+ Gaussian noise of sd noise_s): for testing the fit on known parameters."""
    rng = np.random.default_rng(seed)
    y = np.array([mean_service_s(s, p.seek_read, p, capacity, bs) + harness_s for s in spans])
    return y + rng.normal(0, noise_s, len(y)) if noise_s else y, np.full(len(y), max(noise_s, 1e-6))


# ------------------------------------------------------------------ the per-request fit (pure)

@dataclass(frozen=True)
class Trace:
    """One QD1 random-read run as fio logged it: offsets and completion latencies (s) in issue order, and the
    client's turnaround `phase_s` (simulated time from a completion to the next arrival, median, from the
    emulator's counters; on a real drive: the block layer's, a few µs, measured with a null device)."""

    offsets: np.ndarray
    clat_s: np.ndarray
    phase_s: float
    harness_s: float = 0.0     # fio-visible latency beyond the device's service (only used to find revolutions)
    span: float = 1.0


@dataclass(frozen=True)
class RequestModel:
    """Per-request quantities that do not depend on the seek parameters."""

    d_cyl: np.ndarray      # seek distance of each used request (cylinders)
    lo_s: np.ndarray       # the arrival-to-transfer time u = phase + overhead + seek lies in (lo, hi]
    hi_s: np.ndarray
    phase_s: np.ndarray
    span: np.ndarray
    used: int
    excluded: int


def _geometry(p: DriveProfile, capacity: int):
    revs = capacity / (p.mean_rate_bytes_s * p.t_rev_s)
    return revs, p.t_rev_s


def request_model(traces: list[Trace], p: DriveProfile, capacity: int, bs: int = 4096) -> RequestModel:
    """What each request of a QD1 trace says about its seek, independent of the seek parameters.

    With nothing else outstanding, request B arrives `phase` after the previous request A completed; the platter
    was then at A's end angle θ(A_end) (a read ends where its data ends). B's transfer begins at the first
    passage of θ(B) after u = phase + overhead + seek(d):  Δ = T·(k + φ), φ = frac(θ(B) − θ(A_end)), k the
    smallest integer with T·(k + φ) ≥ u. fio's latency of B is Δ − phase + transfer + harness, so the
    revolution count k follows from the latency (harness jitter ≪ T/2), and the observation is interval-censored:
    u ∈ (T·(k − 1 + φ), T·(k + φ)]. Rotational position is thus known exactly instead of averaged over: each
    request pins its seek to within the client's jitter, not within a revolution.
    Requests served from the read-ahead buffer (B within [A, A + bs + read-ahead)) and those following one are
    left out; so is each trace's first request."""
    revs, T = _geometry(p, capacity)
    N = p.cylinders
    ra = p.readahead_bytes
    cols: dict[str, list] = {k: [] for k in ("d", "lo", "hi", "ph", "span")}
    used = excluded = 0
    for tr in traces:
        off = np.asarray(tr.offsets, float)
        lat = np.asarray(tr.clat_s, float)
        if len(off) < 2:
            continue
        a, b = off[:-1], off[1:]
        media = ~((b >= a) & (b < a + bs + ra))
        ok = media & np.concatenate([[False], media[:-1]])   # A itself was a media read
        x_a_end = _x_of(a + bs, p, capacity)
        x_b = _x_of(b, p, capacity)
        # while idle after a read the head keeps reading ahead: it has moved on when B arrives
        head = np.minimum(_x_of(a + bs + ra, p, capacity), x_a_end + tr.phase_s / (revs * T))
        d = np.abs(x_b - head) * N
        phi = np.mod(revs * x_b - revs * x_a_end, 1.0)
        xfer = (_x_of(b + bs, p, capacity) - x_b) * revs * T
        lat_b = lat[1:]
        k = np.rint((lat_b - tr.harness_s + tr.phase_s - xfer) / T - phi)
        ok &= k >= 0
        used += int(ok.sum())
        excluded += int((~ok).sum()) + 1
        cols["d"].append(d[ok])
        cols["lo"].append(T * (k[ok] - 1 + phi[ok]))
        cols["hi"].append(T * (k[ok] + phi[ok]))
        cols["ph"].append(np.full(int(ok.sum()), tr.phase_s))
        cols["span"].append(np.full(int(ok.sum()), tr.span))
    cat = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    return RequestModel(cat["d"], cat["lo"], cat["hi"], cat["ph"], cat["span"], used, excluded)


OUTLIER = 0.01   # mixture weight of requests the model cannot explain (a descheduled emulator thread, …)


def _nll(params: np.ndarray, rm: RequestModel, p: DriveProfile) -> float:
    from scipy.special import ndtr

    t1, ta, tf, log_sigma = params   # ms, ms, ms, log(seconds)
    if not (0 < t1 < ta < tf):
        return 1e12
    try:
        curve = fit_seek_curve(SeekSpec(float(t1), float(ta), float(tf)), p.cylinders, p.short_seek_fraction)
    except Exception:   # a non-increasing curve
        return 1e12
    sigma = math.exp(log_sigma)
    mu = rm.phase_s + p.overhead_ms / 1e3 + _seek_ms(rm.d_cyl, curve) / 1e3
    prob = ndtr((rm.hi_s - mu) / sigma) - ndtr((rm.lo_s - mu) / sigma)
    lik = (1 - OUTLIER) * prob + OUTLIER * 0.1
    return float(-np.sum(np.log(lik)))


def _hessian(f, x: np.ndarray, rel: float = 2e-3) -> np.ndarray:
    n = len(x)
    h = np.maximum(np.abs(x) * rel, 1e-6)
    H = np.zeros((n, n))
    f0 = f(x)
    for i in range(n):
        for j in range(i, n):
            if i == j:
                e = np.zeros(n); e[i] = h[i]
                H[i, i] = (f(x + e) - 2 * f0 + f(x - e)) / h[i] ** 2
            else:
                ei = np.zeros(n); ei[i] = h[i]
                ej = np.zeros(n); ej[j] = h[j]
                H[i, j] = H[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (4 * h[i] * h[j])
    return H


def fit_seek_requests(traces: list[Trace], p: DriveProfile, capacity: int, bs: int = 4096,
                      p0_ms: tuple[float, float, float] = (1.0, 6.0, 12.0)) -> SeekFit:
    """Maximum-likelihood fit of the read-seek figures (track_to_track, average, full_stroke) to per-request QD1
    data (see request_model): u ~ Normal(phase + overhead + seek(d), σ) censored to its interval, with a 1 %
    outlier floor. Overhead, rpm, zoned rates and capacity scaling are the profile's (known); the start point is
    generic (p0_ms), not the profile's figures. 95 % intervals from the observed information (numeric Hessian)."""
    from scipy.optimize import minimize

    rm = request_model(traces, p, capacity, bs)
    if rm.used < 50:
        raise ValueError(f"only {rm.used} usable requests")

    def f_ms(v):   # v = (t1 ms, average ms, full stroke ms, log σ[s])
        return _nll(np.asarray(v, float), rm, p)

    best = None
    # coarse-to-fine in σ: a wide σ smooths the censored likelihood for the search, then σ is freed
    for sigma0 in (1e-3, 2e-4):
        starts = [np.array([*p0_ms, math.log(sigma0)])] if best is None else [best.x]
        for x0 in starts:
            r = minimize(lambda v: f_ms(np.array([*v, math.log(sigma0)])), x0[:3], method="Nelder-Mead",
                         options={"xatol": 1e-4, "fatol": 1e-3, "maxiter": 4000})
            cand = np.array([*r.x, math.log(sigma0)])
            best = type("R", (), {"x": cand})()
    r = minimize(f_ms, best.x, method="Nelder-Mead", options={"xatol": 1e-5, "fatol": 1e-4, "maxiter": 8000})
    x = r.x
    try:
        cov = np.linalg.inv(_hessian(f_ms, x))
        half = tuple(float(1.96 * math.sqrt(max(cov[i, i], 0.0))) for i in range(3))
    except np.linalg.LinAlgError:
        half = (math.nan, math.nan, math.nan)
    return SeekFit(float(x[0]), float(x[1]), float(x[2]), half, float(math.exp(x[3])), rm.used)


def read_clat_log(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """fio's per-request completion-latency log written with log_offset=1 (columns: time ms, clat ns, direction,
    bs, offset, priority): (offsets, latencies in s), in log order (at QD1: issue order)."""
    arr = np.loadtxt(path, delimiter=",", ndmin=2)
    return arr[:, 4].astype(np.int64), arr[:, 1] / 1e9


def phase_from_counters(before: dict, after: dict) -> float:
    """Median client turnaround (s) over a run, from the emulator's idle-phase histograms before and after."""
    e0, e1 = before.get("emulator", {}), after.get("emulator", {})
    h1 = np.asarray(e1.get("idle_phase_hist", []), float)
    if not len(h1):
        return 0.0
    h0 = np.asarray(e0.get("idle_phase_hist", np.zeros(len(h1))), float)
    h = h1 - h0 if len(h0) == len(h1) else h1
    if h.sum() <= 0:
        return 0.0
    c = np.cumsum(h)
    i = int(np.searchsorted(c, c[-1] / 2))
    return (i + 0.5) * e1.get("idle_phase_bin_us", 2.0) / 1e6


# ------------------------------------------------------------------ measuring (fio through NBD)

@dataclass(frozen=True)
class Point:
    profile: str
    rw: str
    iodepth: int
    span: float
    iops: float
    clat_mean_s: float
    clat_se_s: float
    ios: int


def measure(uri: str, capacity: int, *, rw: str, iodepth: int, span: float, runtime_s: float, directory: Path,
            profile: str, bs: int = 4096) -> Point:
    """One fio run (random `bs` I/O over [0, span·capacity)) through fio's nbd engine; holds the measurement
    lock (fio.run takes it)."""
    from .. import fio

    size = max(bs * 16, int(span * capacity) // bs * bs)
    job = fio.FioJob(name=f"{rw}-qd{iodepth}-span{span:g}", rw=rw, bs=bs, iodepth=iodepth, size=size,
                     runtime_s=runtime_s, log_avg_msec=None, randrepeat=True)
    run = fio.run(job, fio.FioTarget("nbd", uri=uri), directory)
    d = run.result["jobs"][0]["read" if rw.endswith("read") else "write"]
    n = int(d["total_ios"])
    clat = d["clat_ns"]
    return Point(profile, rw, iodepth, span, float(d["iops"]), clat["mean"] / 1e9,
                 clat["stddev"] / 1e9 / math.sqrt(max(n, 1)), n)


def harness_round_trip(workdir: Path, *, runtime_s: float = 5.0) -> Point:
    """QD1 random reads on the zero-latency device: fio + NBD + emulator cost per command."""
    from ..procs import ProcessGroup
    from ..spindle.profiles import DiskSpec, ZeroProfile
    from ..spindle.serve import SpindleDevice, serve

    cap = 1 << 30
    with ProcessGroup() as group, serve(group, SpindleDevice(DiskSpec(ZeroProfile()), cap, workdir, "zero")) as s:
        return measure(s.uri, cap, rw="randread", iodepth=1, span=1.0, runtime_s=runtime_s,
                       directory=workdir / "fio-zero", profile="zero")


def span_sweep(profile_name: str, workdir: Path, *, capacity: int = 1 << 30, spans=SPANS,
               runtime_s: float = 10.0) -> list[Point]:
    from ..procs import ProcessGroup
    from ..spindle.rigfiles import disk
    from ..spindle.serve import SpindleDevice, serve

    out = []
    with ProcessGroup() as group, serve(group, SpindleDevice(disk(profile_name), capacity, workdir,
                                                              profile_name)) as s:
        for span in spans:
            out.append(measure(s.uri, capacity, rw="randread", iodepth=1, span=span, runtime_s=runtime_s,
                               directory=workdir / f"fio-{profile_name}-span{span:g}", profile=profile_name))
    return out


def qd_sweep(profile_name: str, workdir: Path, *, capacity: int = 1 << 30, depths=QUEUE_DEPTHS,
             runtime_s: float = 10.0, rws=("randread", "randwrite")) -> list[Point]:
    from ..procs import ProcessGroup
    from ..spindle.rigfiles import disk
    from ..spindle.serve import SpindleDevice, serve

    out = []
    with ProcessGroup() as group, serve(group, SpindleDevice(disk(profile_name), capacity, workdir,
                                                              profile_name)) as s:
        for rw in rws:
            for qd in depths:
                out.append(measure(s.uri, capacity, rw=rw, iodepth=qd, span=1.0, runtime_s=runtime_s,
                                   directory=workdir / f"fio-{profile_name}-{rw}-qd{qd}", profile=profile_name))
    return out


def predicted_iops(profile_name: str, *, rw: str, iodepth: int, capacity: int = 1 << 30, span: float = 1.0,
                   ios: int = 6000) -> float:
    """The model's IOPS for the same workload (closed loop in simulated time, no harness)."""
    from ..spindle.predict import closed_loop
    from ..spindle.rigfiles import disk

    return closed_loop(disk(profile_name), capacity, qd=iodepth, write=rw.endswith("write"), span=span,
                       ios=ios).iops
