"""Analysis of a calibration run: IOPS versus queue depth against the model, the read-seek figures recovered per
request with 95 % intervals, QD1 IOPS against the datasheet's arithmetic, and seed 000's host reads per VM read
behind a snapshot with its verdict. Pure: a run in, tables, fits and values out.

Everything about a drive comes from the run itself (the variant's recorded spec), not from rigs/spindles/ as it
is today, so an old run is analysed with the profiles it was measured with.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import pandas as pd

from ...analysis import Analysis
from ...claims import Claim, outcome
from ...errors import AnalysisError
from ...models import metadata_cache as mc, seek
from ...record import Measurement, RunRecord
from ...spindle.measure import clat_log, predicted_iops, read_clat_log, span_of
from ...spindle.profiles import DeviceSpec, DiskSpec, DriveProfile, spec_from_json
from ...stats import Interval, geometric_mean_interval, mean_interval, paired_ratio_interval
from ...values import Value
from .. import standin_settings
from ..standin_settings import crossing
from . import plan as planmod
from .plan import READS_DOUBLE, STUDY, ZERO, CalibrationParameters

HOST_READS = "host.reads"
PREDICTION_IOS = 3000      # completions per closed-loop prediction (deterministic: seeded simulator)
FIGURE_WORDS = {"track_to_track_ms": "track_to_track", "average_ms": "average", "full_stroke_ms": "full_stroke"}

# Seed 000 (Zandboer), Table 2 note ** and the conclusion: "the simple fact of having a snapshot to a VM means that
# all ROPS of this VM grow with a factor 2 (!)" -- host-level reads per VM-level read, 10K SAS RAID1.
SEED000_FACTOR = 2.0
SEED000_TOLERANCE = 0.5
SEED000_BASIS = ("the source states a count, read off perfmon graphs ('host-level ROPS are twice as high'): one "
                 "extra read of the block map per VM read; ±0.5 is half the step to the neighbouring counts, 1 (no "
                 "extra read) and 3 (two extra reads)")
CLAIM_ID = f"{STUDY}.reads_double"
CLAIM_VALUE = f"{STUDY}.reads_double.host_reads_per_vm_read.snapshot"


@dataclass
class CalibrationAnalysis(Analysis):
    harness_s: float = math.nan                                   # fio + NBD + emulator round trip (s)
    qd: pd.DataFrame = field(default_factory=pd.DataFrame)       # IOPS per drive, rw and depth, 95 % CI, model
    span: pd.DataFrame = field(default_factory=pd.DataFrame)     # QD1 service time per drive and span, models
    fits: dict[str, seek.SeekFit] = field(default_factory=dict)  # per drive: read-seek figures recovered
    qd1: pd.DataFrame = field(default_factory=pd.DataFrame)      # QD1 reads: measured, model, datasheet
    reads_double: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per read run of seed 000's test
    drives: dict[str, DriveProfile] = field(default_factory=dict)     # the drive profiles as measured

    def fit_table(self) -> pd.DataFrame:
        """Recovered read-seek figures with 95 % intervals beside the configured (datasheet) ones."""
        return fit_table(self.fits, self.drives)

    def datasheet_table(self) -> pd.DataFrame:
        """Each drive's datasheet figures and the QD1 IOPS its own arithmetic gives (no measurement)."""
        return pd.DataFrame([{"drive": name, "rpm": p.rpm, "avg_seek_ms": p.seek_read.average_ms,
                              "half_rev_ms": round(p.t_rev_s / 2 * 1e3, 3), "overhead_ms": p.overhead_ms,
                              "qd1_iops": round(seek.datasheet_qd1_iops(p), 1)} for name, p in self.drives.items()])

    def reads_double_summary(self) -> pd.DataFrame:
        """Host reads per VM read (arithmetic mean) and VM IOPS (geometric mean) over the repeats with 95 %
        intervals, without/with the snapshot."""
        return reads_double_summary(self.reads_double)


# ------------------------------------------------------------------ what the run recorded

def variant_spec(record: RunRecord, variant: str) -> DeviceSpec:
    """The device a spindle variant served, as the run recorded it (its `spec`; runs migrated from format 1 carry
    the drive profile alone)."""
    d = record.manifest.variants[variant]
    if "spec" in d:
        return spec_from_json(d["spec"], f"{record.path.name}: variant {variant}")
    return spec_from_json({"kind": "disk", "profile": {**d["profile"], "type": "DriveProfile"}},
                          f"{record.path.name}: variant {variant}")


def drive_profiles(record: RunRecord) -> dict[str, DriveProfile]:
    out = {}
    for name in record.parameters(CalibrationParameters).drive_profiles:
        spec = variant_spec(record, name)
        if not (isinstance(spec, DiskSpec) and isinstance(spec.profile, DriveProfile)):
            raise AnalysisError(f"{record.path.name}: variant {name} is not a single drive")
        out[name] = spec.profile
    return out


def _measurements(record: RunRecord, variant: str | None = None, phase: str | None = None) -> list[Measurement]:
    return [m for m in record.measurements if variant in (None, m.variant) and phase in (None, m.phase)]


def _read_clat_mean_us(m: Measurement) -> float:
    rows = [r for r in m.fio if r["direction"] == "read"]
    if not rows:
        raise AnalysisError(f"{m.directory}: no reads in a read measurement")
    return float(rows[0]["clat_mean_us"])


def harness_s(record: RunRecord) -> float:
    """Mean fio-visible QD1 completion latency on the zero-latency device (s): the harness round trip."""
    runs = _measurements(record, ZERO, "harness")
    if not runs:
        raise AnalysisError(f"{record.path.name}: no harness measurement (variant {ZERO})")
    return float(sum(_read_clat_mean_us(m) for m in runs) / len(runs) / 1e6)


# ------------------------------------------------------------------ tables

def qd_table(record: RunRecord, drives: dict[str, DriveProfile]) -> pd.DataFrame:
    """IOPS per drive, direction and queue depth: geometric mean over the repeats with its 95 % log-t interval
    (stats.geometric_mean_interval; `method` says which rule it got), the model's prediction (closed loop in
    simulated time, no harness) and measured ÷ model with its interval."""
    capacity = record.parameters(CalibrationParameters).capacity
    depth = {(m.variant, m.index): m.iodepth for m in record.measurements}
    meas = record.per_measurement()
    meas = meas[(meas.phase == "qd") & meas.variant.isin(list(drives))].copy()
    meas["iodepth"] = [depth[(v, i)] for v, i in zip(meas.variant, meas["index"], strict=True)]
    rows = []
    for (name, rw, qd), g in meas.groupby(["variant", "rw", "iodepth"]):
        iv = geometric_mean_interval(g.iops.to_numpy())
        model = predicted_iops(DiskSpec(drives[name]), rw=rw, iodepth=int(qd), capacity=capacity, ios=PREDICTION_IOS)
        ratio = iv.scaled(1 / model)
        rows.append({"drive": name, "rw": rw, "iodepth": int(qd), "n": iv.n, "iops": iv.estimate,
                     "iops_low": iv.low, "iops_high": iv.high, "model_iops": model, "ratio": ratio.estimate,
                     "ratio_low": ratio.low, "ratio_high": ratio.high, "method": iv.method})
    return pd.DataFrame(rows, columns=["drive", "rw", "iodepth", "n", "iops", "iops_low", "iops_high", "model_iops",
                                       "ratio", "ratio_low", "ratio_high", "method"])


def traces(record: RunRecord, drive: str) -> list[seek.Trace]:
    """The per-request QD1 span traces of one drive, as fio logged them, with the client's turnaround the
    emulator measured (Measurement.extra['spindle']: the median phase_s and, in runs that recorded it, the
    distribution phase_quantiles_s)."""
    out = []
    for m in _measurements(record, drive, "span"):
        off, lat = read_clat_log(clat_log(m.directory))
        spindle = m.extra["spindle"]
        out.append(seek.Trace(off, lat, float(spindle["phase_s"]), 0.0, span_of(m.job),
                              tuple(float(x) for x in spindle.get("phase_quantiles_s", ()))))
    return out


def fit_all(record: RunRecord, drives: dict[str, DriveProfile]) -> dict[str, seek.SeekFit]:
    """The read-seek figures of every drive, recovered per request (raises if a fit fails: the paper quotes
    every one)."""
    from concurrent.futures import ThreadPoolExecutor

    capacity = record.parameters(CalibrationParameters).capacity
    loaded = {name: traces(record, name) for name in drives}
    # The fits are independent and their time is in numpy/scipy ufuncs, which release the GIL: one thread per drive
    # halves the analysis on 2 cores (each fit's arithmetic is unchanged, so are its results). Analysis never runs
    # beside a measurement (it reads a published run).
    with ThreadPoolExecutor(max_workers=len(drives) or 1) as pool:
        futures = {name: pool.submit(seek.fit_seek_requests, loaded[name], p, capacity) for name, p in drives.items()}
        return {name: f.result() for name, f in futures.items()}


def span_table(record: RunRecord, drives: dict[str, DriveProfile], fits: dict[str, seek.SeekFit],
               harness: float) -> pd.DataFrame:
    """QD1 mean service time per drive and span: measured (fio's mean latency − the harness round trip) and the
    seek-span model S(span) with the datasheet's and with the fitted figures (ms)."""
    capacity = record.parameters(CalibrationParameters).capacity
    rows = []
    for name, p in drives.items():
        for m in _measurements(record, name, "span"):
            s = span_of(m.job)
            rows.append({"drive": name, "span": s, "measured_ms": _read_clat_mean_us(m) / 1e3 - harness * 1e3,
                         "ios": m.ios("read"),
                         "model_datasheet_ms": seek.mean_service_s(s, p.seek_read, p, capacity) * 1e3,
                         "model_fitted_ms": seek.mean_service_s(s, fits[name].as_spec(), p, capacity) * 1e3})
    return pd.DataFrame(rows, columns=["drive", "span", "measured_ms", "ios", "model_datasheet_ms",
                                       "model_fitted_ms"])


def qd1_table(qd: pd.DataFrame, drives: dict[str, DriveProfile]) -> pd.DataFrame:
    """QD1 random-read IOPS over the whole device: measured (geometric mean, 95 % CI), the model's prediction and the
    datasheet's
    arithmetic (1 / (overhead + average seek + half a revolution + transfer)), and measured ÷ datasheet."""
    q = qd[(qd.rw == "randread") & (qd.iodepth == 1)].copy()
    q["datasheet_iops"] = [seek.datasheet_qd1_iops(drives[d]) for d in q.drive]
    for col in ("", "_low", "_high"):
        q[f"vs_datasheet{col}"] = q[f"iops{col}"] / q.datasheet_iops
    return q[["drive", "n", "iops", "iops_low", "iops_high", "model_iops", "datasheet_iops", "vs_datasheet",
              "vs_datasheet_low", "vs_datasheet_high", "method"]].reset_index(drop=True)


def fit_table(fits: dict[str, seek.SeekFit], drives: dict[str, DriveProfile]) -> pd.DataFrame:
    rows = []
    for name, f in fits.items():
        truth = drives[name].seek_read
        errs = f.rel_errors(truth)
        for k, ci in zip(seek.FIGURES, f.ci95_ms, strict=True):
            rows.append({"drive": name, "figure": FIGURE_WORDS[k], "datasheet_ms": getattr(truth, k),
                         "fitted_ms": round(getattr(f, k), 4), "ci95_ms": round(ci, 4),
                         "rel_error": round(errs[k], 4), "requests": f.points})
    return pd.DataFrame(rows, columns=["drive", "figure", "datasheet_ms", "fitted_ms", "ci95_ms", "rel_error",
                                       "requests"])


def reads_double_table(record: RunRecord) -> pd.DataFrame:
    """Seed 000's test: per read run without ('none') and with ('snapshot') the snapshot, the VM's reads (fio),
    the host's (the emulated array's counter) and their ratio."""
    meas = record.per_measurement(counters=(HOST_READS,))
    m = meas[(meas.variant == READS_DOUBLE) & meas.phase.isin(["none", "snapshot"])].copy()
    m["host_reads_per_vm_read"] = m[HOST_READS] / m["read_ios"].where(m["read_ios"] > 0)
    return m[["phase", "repeat", "read_ios", HOST_READS, "host_reads_per_vm_read", "iops"]].reset_index(drop=True)


def sweep_table(record: RunRecord) -> pd.DataFrame:
    """Seed 000's coverage sweep (plan.reads_double_plan): per coverage the snapshot's reads after the overlay's cache
    was resized to it, host reads per VM read as the mean over the repeats with its t interval; the coverage the
    engine realised (the run's set_cache events; whole slices). Empty for the runs before the sweep."""
    meas = record.per_measurement(counters=(HOST_READS,))
    m = meas[meas.variant == READS_DOUBLE].copy()
    m["coverage"] = [planmod.sweep_coverage(p) for p in m.phase]
    m = m[m.coverage.notna()]
    realised = {Fraction(e["coverage"]): float(e["realised"]) for e in record.manifest.events
                if e.get("event") == "set_cache" and "realised" in e}
    rows = []
    for c, g in m.groupby("coverage", sort=True):
        iv = mean_interval((g[HOST_READS] / g["read_ios"].where(g["read_ios"] > 0)).dropna().to_numpy())
        rows.append({"coverage": float(c), "realised": realised.get(c, float(c)), "label": f"{c.numerator}-"
                     f"{c.denominator}", "n": iv.n, "h": iv.estimate, "h_low": iv.low, "h_high": iv.high})
    return pd.DataFrame(rows, columns=["coverage", "realised", "label", "n", "h", "h_low", "h_high"])


def _interval(t: pd.DataFrame, phase: str, column: str) -> Interval:
    """Over the repeats of `phase`: IOPS (strictly positive) as a geometric mean with its log-t interval; host reads
    per VM read, a count per I/O that can be 0 (reads the host never saw), as an arithmetic mean with its t
    interval."""
    x = t[t.phase == phase][column].dropna().to_numpy()
    return geometric_mean_interval(x) if column == "iops" else mean_interval(x)


def reads_double_summary(t: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for phase in ("none", "snapshot"):
        r, i = _interval(t, phase, "host_reads_per_vm_read"), _interval(t, phase, "iops")
        rows.append({"phase": phase, "n": r.n, "host_reads_per_vm_read": r.estimate, "low": r.low, "high": r.high,
                     "iops": i.estimate, "iops_low": i.low, "iops_high": i.high})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ values and the claim

def _v(key: str, iv: Interval, unit: str, digits: int) -> Value:
    return Value.of(f"{STUDY}.{key}", iv, unit, digits) if iv.n > 1 else \
        Value(f"{STUDY}.{key}", iv.estimate, unit, n=iv.n, digits=digits)


def _values(record: RunRecord, a: CalibrationAnalysis) -> list[Value]:
    k = STUDY
    params = record.parameters(CalibrationParameters)
    out = [Value(f"{k}.drive_profiles", float(len(a.drives)), "profiles"),
           Value(f"{k}.drive_profile_names", text=", ".join(a.drives)),
           Value(f"{k}.capacity_mib", params.capacity / 2**20, "MiB"),
           Value(f"{k}.span_runtime_s", float(params.span_runtime_s), "s"),
           Value(f"{k}.depths", text=", ".join(str(d) for d in params.scale.depths)),
           Value(f"{k}.span_min_pct", 100 * min(params.scale.spans), "%", digits=1),
           Value(f"{k}.harness_us", a.harness_s * 1e6, "µs", n=len(_measurements(record, ZERO, "harness"))),
           # the turnaround's equally likely points each span measurement recorded (spindle.measure.PHASE_POINTS)
           Value(f"{k}.phase_points", float(max((len((m.extra.get("spindle") or {}).get("phase_quantiles_s") or [])
                                                  for m in _measurements(record, phase="span")), default=0)),
                 "points")]
    for _, r in a.qd.iterrows():
        key = f"qd.{r.drive}.{r.rw}.qd{r.iodepth}"
        out.append(_v(f"{key}.iops", Interval(r.iops, r.iops_low, r.iops_high, int(r.n), r.method), "IOPS", 0))
        out.append(Value(f"{k}.{key}.model_iops", r.model_iops, "IOPS"))
        out.append(_v(f"{key}.ratio", Interval(r.ratio, r.ratio_low, r.ratio_high, int(r.n), r.method), "", 2))
    for _, r in a.qd1.iterrows():
        out.append(Value(f"{k}.qd1.{r.drive}.datasheet_iops", r.datasheet_iops, "IOPS"))
        out.append(_v(f"qd1.{r.drive}.vs_datasheet",
                      Interval(r.vs_datasheet, r.vs_datasheet_low, r.vs_datasheet_high, int(r.n), r.method), "", 2))
    worst = 0.0
    for name, f in a.fits.items():
        truth = a.drives[name].seek_read
        for fig, ci in zip(seek.FIGURES, f.ci95_ms, strict=True):
            est = getattr(f, fig)
            out.append(Value(f"{k}.fit.{name}.{FIGURE_WORDS[fig]}", est, "ms", est - ci, est + ci, f.points, 3,
                             None, "maximum likelihood, observed information"))
            out.append(Value(f"{k}.datasheet.{name}.{FIGURE_WORDS[fig]}", getattr(truth, fig), "ms", digits=2))
        errs = f.rel_errors(truth)
        out += [Value(f"{k}.fit.{name}.max_err_pct", 100 * max(errs.values()), "%", digits=1),
                Value(f"{k}.fit.{name}.requests", float(f.points), "requests"),
                Value(f"{k}.fit.{name}.jitter_us", f.residual_rms_s * 1e6, "µs")]
        worst = max(worst, max(errs.values()))
    if a.fits:
        out.append(Value(f"{k}.fit.worst_err_pct", 100 * worst, "%", digits=1))

    rd = record.manifest.variants.get(READS_DOUBLE, {})
    cfg = rd.get("config", {})
    disk_size = int(rd.get("disk_size", record.manifest.profile.disk_size))
    out += [Value(f"{k}.reads_double.device", text=str(params.device)),
            Value(f"{k}.reads_double.config", text=str(params.reads_double_config)),
            Value(f"{k}.reads_double.iodepth", float(params.scale.reads_double_iodepth), ""),
            Value(f"{k}.reads_double.disk_mib", disk_size / 2**20, "MiB")]
    if cfg.get("l2_cache_size"):
        tables = -(-disk_size // int(cfg["cluster_size"])) * (16 if cfg.get("extended_l2") else 8)
        out += [Value(f"{k}.reads_double.l2_cache_kib", cfg["l2_cache_size"] / 1024, "KiB"),
                Value(f"{k}.reads_double.l2_tables_kib", tables / 1024, "KiB")]
    # seed 000's stand-in's setting: the inferred operating point it measured at, or the preset (standin_settings)
    out += standin_settings.operating_point_values(f"{k}.reads_double", planmod.STAND_IN, planmod.PRESET_COVERAGE,
                                                   params.operating_points)
    t = a.reads_double
    for phase in ("none", "snapshot"):
        out.append(_v(f"reads_double.host_reads_per_vm_read.{phase}", _interval(t, phase, "host_reads_per_vm_read"),
                      "×", 2))
        out.append(_v(f"reads_double.iops.{phase}", _interval(t, phase, "iops"), "IOPS", 0))
    # seed 000's point: read off the sweep where the run has one (the one-coverage model's values beside it, but not
    # its point), else from the one coverage through the model
    sweep, model = sweep_table(record), implied_values(out)
    point = {f"{k}.implied.esx35.{name}" for name in ("coverage", "bound", "method")}
    out += [v for v in model if v.key not in point] + sweep_values(sweep) if not sweep.empty else model
    none = t[t.phase == "none"].set_index("repeat").iops
    snap = t[t.phase == "snapshot"].set_index("repeat").iops
    common = none.index.intersection(snap.index)
    out.append(_v("reads_double.iops_ratio", paired_ratio_interval(snap.loc[common].to_numpy(),
                                                                   none.loc[common].to_numpy()), "", 2))
    return out


# Seed 000 (Zandboer, "reads double"): every VM read with a snapshot is two host reads, the block map's and the data's.
SEED000_READS_PER_READ = 2.0


def sweep_values(sweep: pd.DataFrame) -> list[Value]:
    """The sweep's host reads per VM read per coverage, and seed 000's operating point read off it: the realised
    coverage at which the estimates cross the seed's 2 (crossing), its interval where the intervals' upper and lower
    curves cross it (a curve higher at every coverage crosses at a greater one), constrained to [0, 1] as the
    model-based point is; `implied.esx35.method` says which way the point was found."""
    k = STUDY
    if sweep.empty:
        return []
    out = [Value(f"{k}.sweep.coverages", text=", ".join(f"{c:.3f}" for c in sweep.realised))]
    out += [Value(f"{k}.sweep.host_reads_per_vm_read.{r.label}", r.h, "×", r.h_low, r.h_high, int(r.n), 2)
            for r in sweep.itertuples(index=False)]
    # the ends of the sweep under names every profile's sweep has (smoke sweeps fewer coverages than quick)
    for end, r in (("least", sweep.iloc[0]), ("greatest", sweep.iloc[-1])):
        out += [Value(f"{k}.sweep.{end}.coverage", float(r.realised), "", digits=3),
                Value(f"{k}.sweep.{end}.host_reads_per_vm_read", float(r.h), "×", float(r.h_low), float(r.h_high),
                      int(r.n), 2)]
    cov = list(sweep.realised)
    est, lo, hi = (crossing(cov, list(sweep[col]), SEED000_READS_PER_READ) for col in ("h", "h_low", "h_high"))
    clip = [min(max(x, 0.0), 1.0) if not math.isnan(x) else math.nan for x in (est, lo, hi)]
    out += [Value(f"{k}.implied.esx35.coverage", clip[0], "", clip[1], clip[2], int(sweep.n.min()), 3,
                  method="where the sweep's host reads per VM read cross 2 (linear between neighbours)"),
            Value(f"{k}.implied.esx35.method", text="read off the coverage sweep"),
            Value(f"{k}.implied.esx35.bound", text="inside the sweep" if math.isfinite(est) else
                  "below the sweep's least coverage (no cache is the nearest setting)" if est < 0 else
                  "above the sweep's greatest coverage" if est > 0 else "no finite counts")]
    return out


def implied_values(values: list[Value]) -> list[Value]:
    """Seed 000's stand-in's operating point on its own device (standins.esx35_redolog): from the reads-double runs'
    host reads per VM read h with the snapshot at the run's coverage c < 1, the slices a read miss read,
    s_r = (h − 1)/(1 − c) (models.metadata_cache.read_slices_per_miss; interval: the transform of h's ends), and the
    coverage at which h(c) = 1 + (1 − c)·s_r is the seed's 2, c* = 1 − 1/s_r. The operating point is c* constrained
    to [0, 1] (its interval ends too): where even no cache gives fewer than two host reads per read (s_r < 1), the
    nearest setting is no cache (QEMU's two slices); `implied.esx35.bound` says whether the constraint acted. None
    at full coverage (no read misses); estimates without intervals from one repeat."""
    k = STUDY
    by = {v.key: v for v in values}
    h, cov = by.get(f"{k}.reads_double.host_reads_per_vm_read.snapshot"), by.get(f"{k}.reads_double.coverage")
    if h is None or cov is None or cov.value >= 1 or not math.isfinite(h.value):
        return []
    # without an interval (one repeat: smoke) the estimates alone
    ends = (h.low, h.high) if h.has_interval else (math.nan, math.nan)
    s = [float(mc.read_slices_per_miss(x, cov.value)) for x in (h.value, *ends)]
    out = [Value(f"{k}.reads_double.slices_per_miss", s[0], "slices", s[1], s[2], h.n, 2,
                 method="the transform of the host reads per VM read's t interval")]
    if not all(x > 0 for x in s if math.isfinite(x)):
        return out
    c = [float(mc.coverage_for_reads_per_read(SEED000_READS_PER_READ, x)) if math.isfinite(x) else math.nan
         for x in s]
    clipped = [min(max(x, 0.0), 1.0) if math.isfinite(x) else math.nan for x in c]
    out += [Value(f"{k}.implied.esx35.coverage", clipped[0], "", clipped[1], clipped[2], h.n, 3,
                  method="1 − 1/s_r, constrained to [0, 1]"),
            Value(f"{k}.implied.esx35.unconstrained", c[0], "", c[1], c[2], h.n, 3, method="1 − 1/s_r"),
            Value(f"{k}.implied.esx35.method", text="from the one coverage measured, through h(c) = 1 + (1 − c)·s_r"),
            Value(f"{k}.implied.esx35.bound", text="inside [0, 1]" if 0 <= c[0] <= 1 and all(
                  not math.isfinite(x) or 0 <= x <= 1 for x in c) else
                  "at the bound: even with no cache a VM read costs fewer than two host reads on this device, so no "
                  "cache (QEMU's two slices) is the nearest setting" if c[0] < 0 else
                  "an interval end constrained to [0, 1]")]
    return out


def _claims(record: RunRecord) -> list[Claim]:
    m = record.manifest
    params = record.parameters(CalibrationParameters)
    rd = m.variants.get(READS_DOUBLE, {})
    return [Claim(CLAIM_ID, "zandboer", "Table 2, note ** (sample 36), and its conclusions",
                  "10K SAS RAID1, VM with a snapshot: host-level reads per VM-level read",
                  SEED000_FACTOR, "×", 1.0, SEED000_TOLERANCE, SEED000_BASIS, CLAIM_VALUE,
                  f"qcow2 {params.reads_double_config} overlay on the emulated "
                  f"{rd.get('device', params.device)}", label="C000-2")]


def analyse(record: RunRecord) -> CalibrationAnalysis:
    drives = drive_profiles(record)
    h = harness_s(record)
    qd = qd_table(record, drives)
    fits = fit_all(record, drives)
    a = CalibrationAnalysis(record, harness_s=h, qd=qd, span=span_table(record, drives, fits, h), fits=fits,
                            qd1=qd1_table(qd, drives), reads_double=reads_double_table(record), drives=drives)
    a.values = _values(record, a)
    by_key = {v.key: v for v in a.values}
    a.outcomes = [outcome(c, by_key) for c in _claims(record)]
    return a


__all__ = ["CalibrationAnalysis", "analyse", "qd_table", "span_table", "qd1_table", "fit_table", "reads_double_table",
           "traces", "fit_all"]
