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

from .. import claims
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
        # a non-positive variance means the numeric Hessian failed there: say so (nan), do not print ±0
        half = tuple(float(1.96 * math.sqrt(cov[i, i])) if cov[i, i] > 0 else math.nan for i in range(3))
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


# ================================================================== the study

STUDY = "calibration"
CAPACITY = 1 << 30             # each profile is served scaled to 1 GiB (its full stroke, see spindle.model)
ZERO = "zero"
READS_DOUBLE = "reads-double"
SEED000_FACTOR = 2.0           # seed 000: "all ROPS of this VM grow with a factor 2"
SEED000_TOLERANCE = 0.5        # ± host reads per VM read


@dataclass(frozen=True)
class Points:
    """How many points each profile measures (scaled with the run profile; times come from Profile.runtime_s)."""

    depths: tuple[int, ...]
    spans: tuple[float, ...]
    span_runtime_factor: float   # QD1 span runs are longer: the per-request fit wants requests
    reads_double_iodepth: int = 4


POINTS = {
    "smoke": Points(depths=(1, 4, 32), spans=(0.01, 0.1, 1.0), span_runtime_factor=2),
    "quick": Points(depths=(1, 2, 4, 8, 16, 32), spans=(0.003, 0.01, 0.03, 0.1, 0.3, 1.0), span_runtime_factor=3),
    "full": Points(depths=(1, 2, 4, 8, 16, 32), spans=(0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0),
                   span_runtime_factor=2),
}


def points_for(profile) -> Points:
    return POINTS.get(profile.name, POINTS["quick"])


def drive_profiles() -> list[str]:
    """Every drive profile in rigs/spindles/ (SSD and zero-latency profiles are not drives)."""
    from ..spindle.rigfiles import load_profile, profile_names

    return [n for n in profile_names() if isinstance(load_profile(n), DriveProfile)]


def qd_job(rw: str, qd: int, runtime_s: float, repeat: int = 0) -> "fio.FioJob":
    from .. import fio

    return fio.FioJob(name=f"{rw}-qd{qd}", rw=rw, bs=4096, iodepth=qd, size=CAPACITY, runtime_s=runtime_s,
                      log_avg_msec=None)


def span_job(span: float, runtime_s: float) -> "fio.FioJob":
    """QD1 random reads in the first `span` of the device, with fio's per-request latency log (offsets)."""
    from .. import fio

    size = max(4096 * 16, int(span * CAPACITY) // 4096 * 4096)
    return fio.FioJob(name=f"span{span:g}", rw="randread", bs=4096, iodepth=1, size=size, runtime_s=runtime_s,
                      log_avg_msec=None, extra=(("write_lat_log", "req"), ("log_offset", "1")))


def reads_double_plan(profile, iodepth: int):
    """Fill the base, random reads; snapshot; rewrite the disk (IOmeter re-created its test file after the
    snapshot, so the data lives in the redo log); random reads again."""
    from .. import fio
    from ..plan import Measure, Plan, TakeSnapshot
    from .chain_length import prefill_job

    read = fio.FioJob("randread", "randread", bs=4096, iodepth=iodepth, size=profile.disk_size,
                      runtime_s=profile.runtime_s, log_avg_msec=None)
    steps: list = [Measure(prefill_job(profile.disk_size), "prefill")]
    steps += [Measure(read, "none", r) for r in range(profile.repeats)]
    steps += [TakeSnapshot(), Measure(prefill_job(profile.disk_size).replace(name="rewrite"), "rewrite")]
    steps += [Measure(read, "snapshot", r) for r in range(profile.repeats)]
    return Plan(tuple(steps))


def describe_plan(profile) -> str:
    """What a run measures (deterministic: shown in the notebook and checked by nbval)."""
    from .chain_length import qcow2_configs

    pts = points_for(profile)
    names = drive_profiles()
    n_qd = 2 * len(pts.depths) * profile.repeats
    n_span = len(pts.spans)
    cfg = qcow2_configs(profile.disk_size)[0]
    secs = len(names) * (n_qd * profile.runtime_s + n_span * profile.runtime_s * pts.span_runtime_factor) \
        + 2 * profile.runtime_s + 2 * profile.repeats * profile.runtime_s
    lines = [f"profile {profile.name}: drive profiles {', '.join(names)}, each served scaled to "
             f"{CAPACITY >> 20} MiB (full stroke)",
             f"  random 4 KiB read and write vs queue depth {', '.join(map(str, pts.depths))}: "
             f"{n_qd} fio runs of {profile.runtime_s:g} s per profile",
             f"  QD1 random reads vs span {', '.join(f'{s:g}' for s in pts.spans)} of the device: {n_span} fio runs "
             f"of {profile.runtime_s * pts.span_runtime_factor:g} s per profile, per-request latency logs",
             f"  harness round trip: QD1 random reads on the zero-latency device, {profile.runtime_s * 2:g} s",
             f"reads double (seed 000): qcow2 {cfg.name} (L2 cache {cfg.l2_cache_size >> 10} KiB of "
             f"{cfg.l2_bytes_for(profile.disk_size) >> 10} KiB tables) on a {profile.disk_size >> 20} MiB disk of the "
             f"emulated 10K RAID1; random 4 KiB reads at QD{pts.reads_double_iodepth}, {profile.repeats} x "
             f"{profile.runtime_s:g} s without and with the snapshot",
             f"fio time >= {secs:.0f} s"]
    return "\n".join(lines)


def _reads_double_device(rig, device: str | None):
    if device:
        return rig.device(device)
    for d in rig.devices:
        if d.emulated and d.spindle.get("device") == "raid1_10k":
            return d
    hdd = [d for d in rig.devices if d.medium == "hdd"]
    if not hdd:
        from ..errors import ConfigError
        raise ConfigError(rig.source, "devices", "no hdd device for seed 000's reads-double experiment")
    return hdd[0]


def _measure_served(session, index: int, step, served, directory_hint: str = "") -> None:
    """One fio run against a served spindle, recorded with the flat host counters before/after and the
    emulator's turnaround (for the per-request fit) in measurement.json."""
    from .. import fio
    from ..spindle.serve import flat_counters, fresh_counters

    directory = session.measurement_dir(index, step)
    raw_before = fresh_counters(served.counters)
    run = fio.run(step.job, fio.FioTarget("nbd", uri=served.uri), directory)
    raw_after = fresh_counters(served.counters)
    emu = raw_after.get("emulator", {})
    extra = {"spindle": {"phase_s": phase_from_counters(raw_before, raw_after),
                         "release_late_us_mean": emu.get("release_late_us_mean"),
                         "label": served.label}}
    session.record_measurement(index, step, chain_length=0, fio_run=run, counters_before=flat_counters(raw_before),
                               counters_after=flat_counters(raw_after), extra=extra)


def run(rig_name: str = "local", profile_name: str | None = None, device: str | None = None) -> Path:
    """Measure the calibration on a rig; returns the published run directory under data/. `device` names the
    rig device for seed 000's reads-double experiment (default: the rig's emulated raid1_10k)."""
    from .. import profiles, rig as rigmod
    from ..engines.qcow2 import Qcow2ChainEngine
    from ..plan import Measure
    from ..procs import ProcessGroup
    from ..record import RunSession
    from ..spindle.profiles import DiskSpec, ZeroProfile, describe
    from ..spindle.rigfiles import disk
    from ..spindle.serve import SpindleDevice, serve
    from .chain_length import qcow2_configs

    profile = profiles.get(profile_name or profiles.DEFAULT)
    rig = rigmod.load(rig_name)
    dev = _reads_double_device(rig, device)
    pts = points_for(profile)
    names = drive_profiles()
    config = qcow2_configs(profile.disk_size)[0]
    parameters = {"profile": profile, "device": dev.name, "drive_profiles": names, "capacity": CAPACITY,
                  "depths": pts.depths, "spans": pts.spans, "span_runtime_s": profile.runtime_s * pts.span_runtime_factor,
                  "reads_double_config": config.name, "reads_double_iodepth": pts.reads_double_iodepth}
    workdir = rig.rig_work_dir / "calibration"
    with RunSession(rig, STUDY, profile.name, parameters, devices_used=(dev.name,)) as session:
        index = 0
        # the harness round trip: fio + NBD + emulator, nothing to wait for
        with ProcessGroup() as group, serve(group, SpindleDevice(DiskSpec(ZeroProfile()), CAPACITY, workdir,
                                                                 ZERO)) as served:
            with session.in_variant(ZERO, {"device": served.label, "capacity": CAPACITY}):
                _measure_served(session, index, Measure(span_job(1.0, profile.runtime_s * 2), "harness"), served)
                index += 1
        for name in names:
            spec = disk(name)
            with ProcessGroup() as group, serve(group, SpindleDevice(spec, CAPACITY, workdir, name)) as served:
                with session.in_variant(name, {"device": describe(spec), "capacity": CAPACITY,
                                               "profile": spec.profile}):
                    for rw in ("randread", "randwrite"):
                        for qd in pts.depths:
                            for r in range(profile.repeats):
                                _measure_served(session, index, Measure(qd_job(rw, qd, profile.runtime_s), "qd", r),
                                                served)
                                index += 1
                    for span in pts.spans:
                        step = Measure(span_job(span, profile.runtime_s * pts.span_runtime_factor), "span")
                        _measure_served(session, index, step, served)
                        index += 1
        with Qcow2ChainEngine(rig, dev, config, profile.disk_size) as engine:
            with session.in_variant(READS_DOUBLE, engine.describe()):
                engine.execute(reads_double_plan(profile, pts.reads_double_iodepth), session)
    assert session.published is not None
    return session.published


# ------------------------------------------------------------------ analysis (tables for the notebook and paper)

def _measurements(run_dir: Path) -> list[dict]:
    import json

    out = []
    for f in sorted((Path(run_dir) / "measurements").glob("*/*/measurement.json")):
        rec = json.loads(f.read_text())
        rec["dir"] = f.parent
        out.append(rec)
    return out


def qd_table(run_dir: Path) -> "pd.DataFrame":
    """IOPS per profile, direction and queue depth (median over repeats) with the model's prediction."""
    import pandas as pd

    from .. import analysis

    meas = analysis.per_measurement(analysis.results(run_dir))
    qd = meas[meas.phase == "qd"]
    jobs = qd.job.str.extract(r"(?P<rw>\w+)-qd(?P<iodepth>\d+)")
    qd = qd.assign(iodepth=jobs.iodepth.astype(int), rw=jobs.rw)
    g = qd.groupby(["variant", "rw", "iodepth"])["iops"].agg(["median", "min", "max", "count"]).reset_index()
    g = g.rename(columns={"variant": "profile", "median": "iops", "min": "iops_low", "max": "iops_high",
                          "count": "n"})
    g["predicted_iops"] = [predicted_iops(p, rw=rw, iodepth=int(q), capacity=CAPACITY, ios=3000)
                           for p, rw, q in zip(g.profile, g.rw, g.iodepth)]
    g["ratio"] = g.iops / g.predicted_iops
    return g


def _profile(name: str) -> DriveProfile:
    from ..spindle.rigfiles import load_profile

    p = load_profile(name)
    assert isinstance(p, DriveProfile)
    return p


def traces(run_dir: Path, profile: str) -> list[Trace]:
    """The per-request QD1 span traces of one profile, as fio logged them."""
    out = []
    for rec in _measurements(run_dir):
        if rec["variant"] != profile or rec["phase"] != "span":
            continue
        logs = sorted(rec["dir"].glob("req_clat*.log"))
        if not logs:
            continue
        off, lat = read_clat_log(logs[0])
        span = float(rec["job"].removeprefix("span"))
        out.append(Trace(off, lat, rec["spindle"]["phase_s"], 0.0, span))
    return out


def harness_s(run_dir: Path) -> float:
    """Mean fio-visible round trip on the zero-latency device (s)."""
    for rec in _measurements(run_dir):
        if rec["variant"] == ZERO:
            return rec["fio"][0]["clat_mean_us"] / 1e6
    return 0.0


def fits(run_dir: Path) -> dict[str, SeekFit]:
    out = {}
    for name in analysis_profiles(run_dir):
        tr = traces(run_dir, name)
        if tr:
            try:
                out[name] = fit_seek_requests(tr, _profile(name), CAPACITY)
            except ValueError:
                continue
    return out


def analysis_profiles(run_dir: Path) -> list[str]:
    from .. import analysis

    return list(analysis.manifest(run_dir)["parameters"]["drive_profiles"])


def fit_table(run_dir: Path, fitted: dict[str, SeekFit] | None = None) -> "pd.DataFrame":
    """Recovered read-seek figures with 95 % intervals beside the configured (datasheet) ones."""
    import pandas as pd

    rows = []
    for name, f in (fitted if fitted is not None else fits(run_dir)).items():
        truth = _profile(name).seek_read
        errs = f.rel_errors(truth)
        for k, ci in zip(("track_to_track_ms", "average_ms", "full_stroke_ms"), f.ci95_ms):
            rows.append({"profile": name, "figure": k.removesuffix("_ms"), "datasheet_ms": getattr(truth, k),
                         "fitted_ms": round(getattr(f, k), 4), "ci95_ms": round(ci, 4),
                         "rel_error": round(errs[k], 4), "requests": f.points})
    return pd.DataFrame(rows)


def span_table(run_dir: Path, fitted: dict[str, SeekFit] | None = None) -> "pd.DataFrame":
    """QD1 mean service time vs span: measured (fio latency − harness round trip) and the seek-span model with the
    datasheet's and with the fitted figures."""
    import pandas as pd

    h = harness_s(run_dir)
    fitted = fitted if fitted is not None else fits(run_dir)
    rows = []
    for rec in _measurements(run_dir):
        if rec["phase"] != "span":
            continue
        name, span = rec["variant"], float(rec["job"].removeprefix("span"))
        p = _profile(name)
        row = rec["fio"][0]
        rows.append({"profile": name, "span": span, "measured_ms": (row["clat_mean_us"] / 1e3) - h * 1e3,
                     "ios": row["ios"],
                     "model_datasheet_ms": mean_service_s(span, p.seek_read, p, CAPACITY) * 1e3,
                     "model_fitted_ms": (mean_service_s(span, fitted[name].as_spec(), p, CAPACITY) * 1e3
                                         if name in fitted else math.nan)})
    return pd.DataFrame(rows)


def qd1_table(run_dir: Path) -> "pd.DataFrame":
    """QD1 random-read IOPS over the whole device: measured, the model's prediction and the datasheet's
    arithmetic (1 / (overhead + average seek + half a revolution + transfer))."""
    q = qd_table(run_dir)
    q = q[(q.rw == "randread") & (q.iodepth == 1)].copy()
    q["datasheet_iops"] = [datasheet_qd1_iops(_profile(p)) for p in q.profile]
    q["vs_datasheet"] = q.iops / q.datasheet_iops
    return q[["profile", "iops", "predicted_iops", "datasheet_iops", "vs_datasheet", "n"]].reset_index(drop=True)


def datasheet_table() -> "pd.DataFrame":
    """The datasheet-derived QD1 figures of every drive profile (deterministic; no measurement)."""
    import pandas as pd

    rows = []
    for name in drive_profiles():
        p = _profile(name)
        rows.append({"profile": name, "rpm": p.rpm, "avg_seek_ms": p.seek_read.average_ms,
                     "half_rev_ms": round(p.t_rev_s / 2 * 1e3, 3), "overhead_ms": p.overhead_ms,
                     "qd1_iops": round(datasheet_qd1_iops(p), 1)})
    return pd.DataFrame(rows)


def reads_double_table(run_dir: Path) -> "pd.DataFrame":
    """Host-level reads (the emulated array's counters) per VM-level read (fio), without and with the snapshot."""
    from .. import analysis

    meas = analysis.per_measurement(analysis.results(run_dir))
    m = meas[(meas.variant == READS_DOUBLE) & meas.phase.isin(["none", "snapshot"])].copy()
    m["host_reads_per_vm_read"] = analysis.host_reads_per_vm_read(m, "host_host_reads")
    return m[["phase", "repeat", "read_ios", "host_host_reads", "host_reads_per_vm_read", "iops"]].reset_index(drop=True)


def outcomes(run_dir: Path) -> list[claims.Outcome]:
    t = reads_double_table(run_dir)
    snap = t[t.phase == "snapshot"].host_reads_per_vm_read
    if snap.empty:
        return []
    # in percent, so the claims table's integer formatting keeps the digits that matter (2.61x -> 261 %)
    claim = claims.Claim("seed000-reads-double", "zandboer", "Table 2, note **",
                         "10K RAID1, VM with a snapshot: host-level reads per VM-level read (%)",
                         100 * SEED000_FACTOR, "%", 100 * SEED000_TOLERANCE, "factor 2")
    return [claims.Outcome(claim, 100 * float(snap.median()), 100 * float(snap.min()), 100 * float(snap.max()),
                           "qcow2 on-disk-metadata on emulated 10K RAID1")]


# ------------------------------------------------------------------ charts

def qd_chart(qd: "pd.DataFrame"):
    import altair as alt

    base = alt.Chart(qd).encode(x=alt.X("iodepth:Q", scale=alt.Scale(type="log", base=2), title="queue depth"),
                                color=alt.Color("profile:N", title="drive"))
    meas = base.mark_point(filled=True).encode(y=alt.Y("iops:Q", title="IOPS (4 KiB random)"),
                                               tooltip=["profile", "rw", "iodepth", alt.Tooltip("iops:Q", format=".0f"),
                                                        alt.Tooltip("predicted_iops:Q", format=".0f")])
    model = base.mark_line(strokeDash=[4, 3]).encode(y="predicted_iops:Q")
    return (model + meas).properties(width=220, height=180).facet(
        column=alt.Column("rw:N", title=None)).properties(title="IOPS vs queue depth: measured (points), model (dashed)")


def span_chart(span: "pd.DataFrame"):
    import altair as alt

    base = alt.Chart(span).encode(x=alt.X("span:Q", scale=alt.Scale(type="log"), title="span (fraction of device)"),
                                  color=alt.Color("profile:N", title="drive"))
    meas = base.mark_point(filled=True, size=50).encode(
        y=alt.Y("measured_ms:Q", title="QD1 service time (ms)"),
        tooltip=["profile", "span", alt.Tooltip("measured_ms:Q", format=".3f"), "ios"])
    model = base.mark_line(strokeDash=[4, 3]).encode(y="model_fitted_ms:Q")
    return (model + meas).properties(width=320, height=200,
                                     title="QD1 random reads vs span: measured (points), fitted model (dashed)")


def reads_double_chart(t: "pd.DataFrame"):
    import altair as alt

    return alt.Chart(t).mark_bar().encode(
        x=alt.X("phase:N", title=None, sort=["none", "snapshot"]),
        y=alt.Y("median(host_reads_per_vm_read):Q", title="host reads per VM read"),
        tooltip=["phase", alt.Tooltip("median(host_reads_per_vm_read):Q", format=".2f")]).properties(
        width=160, height=180, title="Reads behind a qcow2 snapshot (emulated 10K RAID1)")


# ------------------------------------------------------------------ paper

def render(run_dir: Path, figure_dir: Path | None = None, generated_dir: Path | None = None) -> list[claims.Outcome]:
    """Figures and macros (\\stCal…) for the paper's calibration section, from one published run."""
    from .. import analysis, figures, macros

    man = analysis.manifest(run_dir)
    fitted = fits(run_dir)
    qd = qd_table(run_dir)
    span = span_table(run_dir, fitted)
    rd = reads_double_table(run_dir)
    figures.save(qd_chart(qd), "calibration-qd", figure_dir)
    figures.save(span_chart(span), "calibration-span", figure_dir)
    figures.save(reads_double_chart(rd), "calibration-reads-double", figure_dir)

    params = man["parameters"]
    m: dict[str, str] = {
        "CalRunId": macros.tex_escape(man["run_id"]), "CalProfile": macros.tex_escape(man["profile"]),
        "CalCapacityMiB": macros.fmt(params["capacity"] / 2**20), "CalRuntime": macros.fmt(params["profile"]["runtime_s"]),
        "CalSpanRuntime": macros.fmt(params["span_runtime_s"]), "CalRepeats": str(params["profile"]["repeats"]),
        "CalDepths": macros.tex_escape(", ".join(str(d) for d in params["depths"])),
        "CalSpanMin": macros.tex_escape(f"{min(params['spans']) * 100:g}"),
        "CalProfiles": str(len(params["drive_profiles"])),
        "CalHarnessUs": macros.fmt(harness_s(run_dir) * 1e6),
        "CalDevice": macros.tex_escape(params["device"]),
        "CalDiskMiB": macros.fmt(params["profile"]["disk_size"] / 2**20),
        "CalReadsDoubleQd": str(params["reads_double_iodepth"]),
        "CalFioVersion": macros.tex_escape(man["provenance"]["tools"].get("fio") or "?"),
    }
    worst = 0.0
    for name, f in fitted.items():
        truth = _profile(name).seek_read
        for k, ci in zip(("track_to_track_ms", "average_ms", "full_stroke_ms"), f.ci95_ms):
            m[macros.macro_name("Cal", name, k, "fit")] = macros.fmt(getattr(f, k), 3)
            m[macros.macro_name("Cal", name, k, "ci")] = macros.fmt(ci, 3)
            m[macros.macro_name("Cal", name, k, "sheet")] = macros.fmt(getattr(truth, k), 2)
        errs = f.rel_errors(truth)
        m[macros.macro_name("Cal", name, "fit", "max", "err", "pct")] = macros.fmt(100 * max(errs.values()), 1)
        m[macros.macro_name("Cal", name, "fit", "requests")] = macros.fmt(f.points)
        m[macros.macro_name("Cal", name, "fit", "jitter", "us")] = macros.fmt(f.residual_rms_s * 1e6)
        worst = max(worst, max(errs.values()))
    m["CalFitWorstErrPct"] = macros.fmt(100 * worst, 1)
    for _, row in qd1_table(run_dir).iterrows():
        m[macros.macro_name("Cal", row.profile, "qd", "one", "iops")] = macros.fmt(row.iops)
        m[macros.macro_name("Cal", row.profile, "qd", "one", "model")] = macros.fmt(row.predicted_iops)
        m[macros.macro_name("Cal", row.profile, "qd", "one", "sheet")] = macros.fmt(row.datasheet_iops)
        m[macros.macro_name("Cal", row.profile, "qd", "one", "vs", "sheet")] = macros.fmt(row.vs_datasheet, 2)
    for _, row in qd.iterrows():
        m[macros.macro_name("Cal", row.profile, row.rw, "qd", str(int(row.iodepth)))] = macros.fmt(row.iops)
        m[macros.macro_name("Cal", row.profile, row.rw, "qd", str(int(row.iodepth)), "ratio")] = macros.fmt(row.ratio, 2)
    for phase, g in rd.groupby("phase"):
        m[macros.macro_name("Cal", "host", "reads", "per", "vm", "read", phase)] = macros.fmt(
            g.host_reads_per_vm_read.median(), 2)
        m[macros.macro_name("Cal", "reads", "double", "iops", phase)] = macros.fmt(g.iops.median())
    macros.write_macros("calibration", m, generated_dir)

    rows = []
    for name, f in fitted.items():
        truth = _profile(name).seek_read
        rows.append([macros.tex_escape(name)] + [
            f"{macros.fmt(getattr(truth, k), 2)} & {macros.fmt(getattr(f, k), 3)} $\\pm$ {macros.fmt(ci, 3)}"
            for k, ci in zip(("track_to_track_ms", "average_ms", "full_stroke_ms"), f.ci95_ms)])
    macros.write_table("calibration-fit", macros.render_table(
        ["drive", "t2t sheet", "t2t fitted", "avg sheet", "avg fitted", "full sheet", "full fitted"], rows,
        align="lrrrrrr"), generated_dir)
    return outcomes(run_dir)


__all__ = ["STUDY", "describe_plan", "run", "render", "qd_table", "span_table", "fit_table",
           "qd1_table", "datasheet_table", "reads_double_table", "outcomes", "fits", "fit_seek_requests",
           "fit_seek_span", "mean_service_s", "datasheet_qd1_iops"]
