"""Analysis of a lifecycle run: per timeline the VM-level (fio's per-second IOPS logs, parsed by fiologparser at
measuring time) and host-level (the emulated array's counters, sampled every second) reads and writes per second;
per phase their geometric means over the timelines (log-t intervals); the three deletion methods (time,
convergence, stun, write latency); the consolidation convergence model fitted to every iteration of the iterative
deletions, with its predictions against the measured outcomes; the seek-span prediction; and the verdicts on seed
000's claims. Pure: a run in, tables, fits and values out.

Ratios are formed within one timeline (before / with / during are neighbours in time). The timelines of a load
level are independent replicates of everything before the deletion (a fresh engine, emulated array and fio
processes each; the deletion method acts only after those phases), so the ratios of those phases, and of the
`after` phase, are estimates over them (n = the number of deletion methods, t pivot on the log ratio) that the
verdict rule judges; the deletion window's ratios, where the methods differ, are intervals only.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...analysis import Analysis
from ...claims import Claim, outcome
from ...inference import Estimate, Scale, ratio_estimate
from ...models import consolidation as cm, heldout as ho, seek as seekmod
from ...record import RunRecord
from ...spindle.profiles import DriveProfile
from ...spindle.rigfiles import disk
from ...stats import (
    Interval,
    geometric_mean_interval,
    paired_ratio_interval,
    proportion_interval,
    ratio_of_means_interval,
)
from ...timeline import STUN_SETTLE_S
from ...values import Value, heldout_values
from .. import standin_settings
from . import apart as apartmod
from .heldout import OutcomeCheck, heldout_tests
from .plan import (
    APART,
    FIXED_COMMIT_S,
    GRID,
    LOADS,
    METHODS,
    PRESET_COVERAGE,
    SEED_MAX_CONSOLIDATE_S,
    STAND_IN,
    STUDY,
    LifecycleParameters,
    variant_name,
)

MiB = 1 << 20
CITE = "zandboer"
SEED_READ_BEFORE, SEED_WRITE_BEFORE = 510.0, 250.0     # Graph 3, samples 7-25
SEED_READ_WITH, SEED_WRITE_WITH = 110.0, 100.0         # Graph 3, samples 43-49
SEED_READ_DELETE = 28.0                                # Graph 3, after sample 50
DRIVE = "sas10k"
DIRECTION_BASIS = ("the seed states a direction without a number: the published value is put at the smallest "
                   "effect in that direction the tolerance resolves (no-effect value ∓ 2 × tolerance), so an "
                   "effect of ours in that direction gives 'agrees' or 'same direction' and anything else "
                   "'differs'")


@dataclass
class LifecycleAnalysis(Analysis):
    meas: pd.DataFrame = field(default_factory=pd.DataFrame)        # one row per fio run (phase)
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)    # per second: VM and host reads/writes
    events: pd.DataFrame = field(default_factory=pd.DataFrame)      # snapshot / deletion events on the timeline
    deletions: pd.DataFrame = field(default_factory=pd.DataFrame)   # one row per deletion
    iterations: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per iteration of iterative deletions
    fit: cm.ConsolidationFit | None = None
    predictions: pd.DataFrame = field(default_factory=pd.DataFrame)  # measured vs predicted per deletion
    seek: dict[str, float] = field(default_factory=dict)
    heldout: dict = field(default_factory=dict)        # (model, test) → models.heldout.HeldOut
    heldout_outcomes: OutcomeCheck | None = None       # leave-one-deletion-out outcomes (heldout.py)
    apart: apartmod.Apart | None = None                # the model's parameters measured apart (apart.py)
    apart_outcomes: apartmod.ApartOutcomes | None = None


def _host_series(record: RunRecord, variant: str) -> pd.DataFrame:
    path = record.variant_dir(variant) / "host_series.csv"
    with open(path) as f:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return pd.DataFrame(rows)


def _split(variant: str) -> tuple[str, str]:
    if variant == GRID:
        return "grid", "iterative"
    if variant == APART:
        return APART, APART
    load, method = variant.split("-", 1)
    return load, method


def measurements_table(record: RunRecord) -> pd.DataFrame:
    rows = []
    for m in record.measurements:
        load, method = _split(m.variant)
        # host rates over fio's own runtime (the fio process's wall time adds start-up and teardown)
        wall = max(max((float(r["runtime_ms"]) for r in m.fio), default=0.0) / 1e3, 1e-9)
        c = {n: (v.delta or 0.0) for n, v in m.counters.items() if v.delta is not None}
        wr = [r for r in m.fio if r["direction"] == "write"]
        rows.append({"variant": m.variant, "load": load, "method": method, "index": m.index, "phase": m.phase,
                     "t_start_s": m.extra.get("t_start_s", math.nan), "t_end_s": m.extra.get("t_end_s", math.nan),
                     "wall_s": m.wall_s, "vm_read_iops": m.iops("read"), "vm_write_iops": m.iops("write"),
                     "vm_reads": m.ios("read"), "vm_writes": m.ios("write"),
                     "host_reads": c.get("host.reads", 0.0), "host_writes": c.get("host.writes", 0.0),
                     "host_read_iops": c.get("host.reads", 0.0) / wall,
                     "host_write_iops": c.get("host.writes", 0.0) / wall,
                     "member_service_ms": m.service_time_s * 1e3,
                     "write_clat_ms": (wr[0]["clat_mean_us"] / 1e3) if wr else math.nan,
                     "rate_iops": m.extra.get("rate_iops", math.nan),
                     "flagged": m.flagged})
    return pd.DataFrame(rows)


def timeline_table(record: RunRecord) -> pd.DataFrame:
    """Long form: variant, t_s (since the timeline's start), level (VM, host), direction, iops."""
    rows: list[dict[str, Any]] = []
    for m in record.measurements:
        t0 = float(m.extra.get("t_start_s", 0.0))
        for name, series in (m.extra.get("vm_series") or {}).items():
            direction = "read" if name == "reader" else "write"
            for end_s, value in series:
                rows.append({"variant": m.variant, "t_s": t0 + float(end_s), "level": "VM",
                             "direction": direction, "iops": float(value)})
    for variant in sorted({m.variant for m in record.measurements}):
        h = _host_series(record, variant)
        if len(h) < 2:
            continue
        dt = h["t_s"].diff()
        for col, direction in (("host.reads", "read"), ("host.writes", "write")):
            rate = h[col].diff() / dt
            for t, v in zip(h["t_s"].iloc[1:], rate.iloc[1:], strict=True):
                rows.append({"variant": variant, "t_s": float(t), "level": "host", "direction": direction,
                             "iops": float(v)})
    df = pd.DataFrame(rows, columns=["variant", "t_s", "level", "direction", "iops"])
    return df.sort_values(["variant", "level", "direction", "t_s"]).reset_index(drop=True)


def events_table(record: RunRecord) -> pd.DataFrame:
    rows = [{"variant": e["variant"], "event": e["event"], "t_s": e.get("t_s", math.nan)}
            for e in record.manifest.events if "t_s" in e and e["event"] != "job_progress"]
    return pd.DataFrame(rows, columns=["variant", "event", "t_s"])


def _writer_rate(series: list, t_start: float, a: float, b: float) -> float:
    """Mean writer IOPS of a fio run's per-second series over [a, b] on the timeline (s)."""
    vals = [v for end, v in series if a <= t_start + end - 0.5 <= b]
    if not vals:
        vals = [v for end, v in series if t_start + end >= a][:1]
    return float(np.mean(vals)) if vals else math.nan


def _writer_writes(series: list, t_start: float, a: float, b: float) -> float:
    """The writes a fio run's per-second series holds in [a, b] on the timeline: each second's rate times the part of
    that second inside the window. Unlike rate × (b − a), it counts nothing after the writer stopped (a load window
    that ends inside an iteration) and the fraction of a second a short iteration spans."""
    return float(sum(v * max(0.0, min(b, t_start + end) - max(a, t_start + end - 1.0)) for end, v in series))


def deletion_tables(record: RunRecord) -> tuple[pd.DataFrame, pd.DataFrame]:
    dels, its = [], []
    for m in record.measurements:
        info = m.extra.get("deletion")
        if not info:
            continue
        load, method = _split(m.variant)
        writer = (m.extra.get("vm_series") or {}).get("writer", [])
        t0 = float(m.extra.get("t_start_s", 0.0))
        rate_during = _writer_rate(writer, t0, info["t_delete_start"], info["t_done"]) if writer else math.nan
        n_it = len(info.get("iterations", []))
        dels.append({"variant": m.variant, "load": load, "method": info["method"], "index": m.index,
                     "rate_iops": m.extra.get("rate_iops", math.nan), "writer_iops": rate_during,
                     "converged": bool(info["converged"]), "seconds": info["seconds"],
                     "after_load_s": info.get("after_load_s", 0.0), "stun_s": info.get("stun_s", math.nan),
                     "iterations": n_it, "delta0_mib": info.get("delta0_bytes", math.nan) / MiB,
                     "threshold_bytes": info.get("threshold_bytes", math.nan),
                     "max_iterations": info.get("max_iterations", math.nan)})
        for it in info.get("iterations", []):
            its.append({"variant": m.variant, "index": m.index, "k": it["k"],
                        "writer_iops": _writer_rate(writer, t0, it["t_start"], it["t_end"]) if writer else math.nan,
                        "writes": _writer_writes(writer, t0, it["t_start"], it["t_end"]) if writer else math.nan,
                        "delta": it["committed_bytes"], "seconds": it["seconds"], "grown": it["helper_bytes"]})
    return pd.DataFrame(dels), pd.DataFrame(its)


def _pairs(meas: pd.DataFrame, load: str, num_phase: str, den_phase: str, col: str, den_col: str | None = None,
           norm: tuple[str, str] | None = None) -> tuple[list[float], list[float]]:
    """Per timeline at a load level: `col` in num_phase and den_col (default `col`) in den_phase; with `norm`
    (numerator column, denominator column) both sides are divided by that ratio first (host per VM request)."""
    sub = meas[(meas.load == load)]
    a, b = [], []
    for _, g in sub.groupby("variant"):
        x, y = g[g.phase == num_phase], g[g.phase == den_phase]
        if x.empty or y.empty:
            continue
        xv, yv = float(x[col].iloc[0]), float(y[den_col or col].iloc[0])
        if norm:
            xv /= max(float(x[norm[1]].iloc[0]), 1e-9)
            yv /= max(float(y[norm[1]].iloc[0]), 1e-9)
        a.append(xv)
        b.append(yv)
    return a, b


def _paired(meas: pd.DataFrame, load: str, num_phase: str, den_phase: str, col: str, den_col: str | None = None,
            norm: tuple[str, str] | None = None) -> Interval:
    """Paired (per timeline) ratio of num_phase over den_phase at a load level (see _pairs), as an interval over
    the timelines, not an estimate the verdict rule judges: used where a phase differs between the timelines (the
    deletion window: each timeline deletes by another method)."""
    return paired_ratio_interval(*_pairs(meas, load, num_phase, den_phase, col, den_col, norm))


def _replicated(meas: pd.DataFrame, load: str, num_phase: str, den_phase: str, col: str, scale: Scale,
                norm: tuple[str, str] | None = None, den_col: str | None = None) -> Estimate:
    """Paired (per timeline) ratio of num_phase over den_phase at a load level as an estimate over independent
    replicates (issue 47.3). The timelines of a load level are replicates of the phases before the deletion:
    each has a fresh engine, emulated array, volume and fio processes, and they run the same create, before,
    refill and with phases; the deletion method, the one thing that differs, acts only after them. The `after`
    phase follows deletions by different methods, each of which leaves the delta's data in the base's own blocks,
    so it too measures the base alone (the paper's lifecycle section says so)."""
    return ratio_estimate(*_pairs(meas, load, num_phase, den_phase, col, den_col, norm), scale=scale)


def seek_prediction(record: RunRecord) -> dict[str, float]:
    """Mean QD1 service time of the emulated 10K drive over the span base files + delta (a delta of the test
    files' size after the volume) against the files alone (seek-span model, datasheet seek figures)."""
    p = record.parameters(LifecycleParameters)
    cap = p.device_capacity
    prof = disk(DRIVE).profile
    if not isinstance(prof, DriveProfile):
        raise TypeError(f"{DRIVE} is not a mechanical drive profile")
    files, vol = 2 * p.scale.file_bytes, p.scale.disk_bytes
    with_span = (vol + files + 16 * MiB) / cap
    without = files / cap
    s_with = seekmod.mean_service_s(with_span, prof.seek_read, prof, cap)
    s_without = seekmod.mean_service_s(without, prof.seek_read, prof, cap)
    return {"span_with": with_span, "span_without": without, "service_with_ms": s_with * 1e3,
            "service_without_ms": s_without * 1e3, "iops_ratio": s_with / s_without}


def seek_heldout(meas: pd.DataFrame, predicted: float) -> ho.HeldOut:
    """The seek-span model's test (issue 48): the member drives' service time after the deletion over with the
    snapshot, predicted from the layout alone (seek_prediction: exact, no fitted parameter) against the ratio
    measured over the timelines of each load (its t interval on the log scale)."""
    points = []
    for load in LOADS:
        e = _replicated(meas, load, "after", "with", "member_service_ms", "pct_log")
        if e is not None and e.defined:
            points.append(ho.PointError(load, predicted, 0.0, math.nan, math.exp(e.pivot), e.se, e.dof, e.n))
    return ho.judge(points, 0, SEEK_PREDICTS, not_tested="no load with an after/with service ratio")


SEEK_PREDICTS = "the drives' service time once the delta is gone, over with it (seek span, datasheet figures)"
DIRECTIONS = ("read", "write")


def during_iterative(a: LifecycleAnalysis, meas: pd.DataFrame, load: str, level: str,
                     directions: tuple[str, ...]) -> Interval | None:
    """IOPS (the sum over `directions`) at `level` (VM, host) per second while the iterative deletion of the `load`
    timeline ran, against its `before` phase: ratio of means over the per-second samples (one timeline: samples,
    not replicates), from the second after the deletion started until the load stopped or the deletion ended. None
    when the run has no such timeline."""
    variant = f"{load}-iterative"
    ser = a.timeline
    sel = ser[(ser.variant == variant) & (ser.level == level) & ser.direction.isin(directions)]
    ph = meas[meas.variant == variant].set_index("phase")
    d = a.deletions
    if sel.empty or not {"before", "delete"} <= set(ph.index) or d.empty or variant not in set(d.variant):
        return None
    # the reader's and the writer's logs (and the host's two counters) tick together: summed per whole second
    per_s = sel.assign(t_s=sel.t_s.round()).groupby("t_s").iops.sum().reset_index()
    dl = d[d.variant == variant].iloc[0]
    t_del0 = float(ph.loc["delete", "t_start_s"])
    during = per_s[(per_s.t_s > t_del0 + 1) & (per_s.t_s <= t_del0 + 1 + max(float(dl.seconds)
                                                                             - float(dl.after_load_s), 1.0))].iops
    bef = per_s[(per_s.t_s > float(ph.loc["before", "t_start_s"])) & (per_s.t_s <= float(ph.loc["before",
                                                                                                "t_end_s"]))]
    return ratio_of_means_interval(during, bef.iops)


def analyse(record: RunRecord) -> LifecycleAnalysis:
    m = record.manifest
    p = record.parameters(LifecycleParameters)
    sc = p.scale
    meas = measurements_table(record)
    a = LifecycleAnalysis(record, meas=meas, timeline=timeline_table(record), events=events_table(record))
    a.deletions, a.iterations = deletion_tables(record)
    vals: list[Value] = []
    k = STUDY
    vals += [Value(f"{k}.file_mib", sc.file_bytes / MiB, "MiB"), Value(f"{k}.disk_mib", sc.disk_bytes / MiB, "MiB"),
             Value(f"{k}.delete_window_s", float(sc.delete_window_s), "s"),
             Value(f"{k}.steady_s", float(sc.steady_s), "s"),
             # the model grid: iterative deletions beside a writer limited to each rate (plan.grid_workload)
             Value(f"{k}.grid_rates", text=", ".join(str(r) for r in sc.grid_rates)),
             Value(f"{k}.grid_points", float(len(sc.grid_rates)), "deletions"),
             Value(f"{k}.grid_window_s", float(sc.grid_window_s), "s"),
             Value(f"{k}.light_steady_s", float(sc.light_steady_s), "s"),
             Value(f"{k}.threshold_kib", p.helper_threshold_bytes / 1024, "KiB"),
             Value(f"{k}.max_iterations", float(sc.max_iterations), ""),
             Value(f"{k}.max_consolidate_s", float(p.max_consolidate_s), "s", digits=2),
             # what max_consolidate_s is made of (plan.LifecycleScale), and the stun's settling time (timeline)
             Value(f"{k}.seed_max_consolidate_s", SEED_MAX_CONSOLIDATE_S, "s"),
             Value(f"{k}.fixed_commit_s", FIXED_COMMIT_S, "s"),
             Value(f"{k}.stun_settle_s", STUN_SETTLE_S, "s", digits=1),
             Value(f"{k}.hangs", float(sum(e["event"] == "attempt_failed" for e in m.events)), "timelines")]

    # ---- steady phases: VM and host per load
    for load in LOADS:
        for ph in ("before", "with", "after"):
            sub = meas[(meas.load == load) & (meas.phase == ph)]
            for col, name in (("vm_read_iops", "vm_read"), ("vm_write_iops", "vm_write"),
                              ("host_read_iops", "host_read"), ("host_write_iops", "host_write")):
                vals.append(Value.of(f"{k}.{load}.{ph}.{name}", geometric_mean_interval(sub[col]), "IO/s", 0))
        vals.append(Value.of_estimate(f"{k}.{load}.vm_with_over_before",
                                      _replicated(meas, load, "with", "before", "vm_read_iops", "pct_log"), "%", 0))
        tot = meas.assign(vm_iops=meas.vm_read_iops + meas.vm_write_iops)
        vals.append(Value.of_estimate(f"{k}.{load}.vm_total_with_over_before",
                                      _replicated(tot, load, "with", "before", "vm_iops", "pct_log"), "%", 0))
        vals.append(Value.of_estimate(f"{k}.{load}.host_reads_per_vm_read_factor",
                                      _replicated(meas, load, "with", "before", "host_reads", "log",
                                                  norm=("host_reads", "vm_reads")), "×", 2))
        vals.append(Value.of_estimate(f"{k}.{load}.host_writes_per_vm_write_refill_factor",
                                      _replicated(meas, load, "refill", "create", "host_writes", "log",
                                                  norm=("host_writes", "vm_writes")), "×", 2))
        # the host's reads per write (the RAID1's balance: C000-3c), and the VM's IOPS once the delta is gone
        # against before the snapshot (C000-9), over the timelines as the other phases before and after the deletion
        vals.append(Value.of_estimate(f"{k}.{load}.before.host_reads_per_host_write",
                                      _replicated(meas, load, "before", "before", "host_read_iops", "log",
                                                  den_col="host_write_iops"), "×", 2))
        vals.append(Value.of_estimate(f"{k}.{load}.vm_total_after_over_before",
                                      _replicated(tot, load, "after", "before", "vm_iops", "pct_log"), "%", 0))
        vals.append(Value.of(f"{k}.{load}.vm_read_delete_over_before",
                             _paired(meas, load, "delete", "before", "vm_read_iops").scaled(100), "%", 1))
        vals.append(Value.of_estimate(f"{k}.{load}.service_after_over_with",
                                      _replicated(meas, load, "after", "with", "member_service_ms", "pct_log"),
                                      "%", 0))

    # ---- deletions
    d = a.deletions
    tl = d[d.load.isin(LOADS)] if not d.empty else d
    for load in LOADS:
        for method in METHODS:
            row = tl[(tl.load == load) & (tl.method == method)] if not tl.empty else tl
            if row.empty:
                continue
            r = row.iloc[0]
            vals += [Value(f"{k}.{load}.{method}.delete_s", float(r.seconds), "s", n=1, digits=1),
                     Value(f"{k}.{load}.{method}.converged", float(r.converged), "", n=1, digits=0),
                     Value(f"{k}.{load}.{method}.after_load_s", float(r.after_load_s), "s", n=1, digits=1),
                     Value(f"{k}.{load}.{method}.writer_iops", float(r.writer_iops), "writes/s", n=1)]
            if method == "iterative":
                vals += [Value(f"{k}.{load}.iterative.iterations", float(r.iterations), "", n=1),
                         Value(f"{k}.{load}.iterative.stun_s", float(r.stun_s) if r.converged else math.nan, "s",
                               n=1, digits=2)]
        # write latency during each deletion against the `with` phase of the same timeline
        for method in METHODS:
            sub = meas[(meas.load == load) & (meas.method == method)]
            x, y = sub[sub.phase == "delete"], sub[sub.phase == "with"]
            if x.empty or y.empty:
                continue
            vals.append(Value(f"{k}.{load}.{method}.write_latency_factor",
                              float(x.write_clat_ms.iloc[0] / y.write_clat_ms.iloc[0]), "×", n=1, digits=2))
    sat = tl[(tl.load == "saturated") & tl.method.isin(["active", "iterative"])] if not tl.empty else tl
    vals.append(Value.of(f"{k}.saturated.converged_pct",
                         proportion_interval(sat.converged if len(sat) else []).scaled(100.0), "%", 0))
    lit = tl[(tl.load == "light") & tl.method.isin(["active", "iterative"])] if not tl.empty else tl
    vals.append(Value.of(f"{k}.light.converged_pct",
                         proportion_interval(lit.converged if len(lit) else []).scaled(100.0), "%", 0))
    # during VMware's (iterative) deletion against before the snapshot, on the per-second series of each load's
    # iterative timeline: the VM's reads (C000-3b), the VM's reads and writes (C000-8), the host's (C000-7, C000-10)
    for load, level, directions, name in (("saturated", "VM", ("read",), "read"), ("light", "VM", DIRECTIONS, "vm"),
                                          ("light", "host", DIRECTIONS, "host"),
                                          ("saturated", "host", DIRECTIONS, "host")):
        iv = during_iterative(a, meas, load, level, directions)
        if iv is not None:
            vals.append(Value.of(f"{k}.{load}.{name}_during_iterative_over_before", iv.scaled(100), "%", 1))

    # ---- the consolidation model
    its = a.iterations
    if not its.empty:
        ok = its[np.isfinite(its.writer_iops)]
        a.fit = cm.fit(ok.delta, ok.seconds, ok.writer_iops, ok.grown)
        f = a.fit
        vals += [Value(f"{k}.model.c0_mib_s", f.c0.value / MiB, "MiB/s", f.c0.low / MiB, f.c0.high / MiB,
                       f.n_commit, 1, method="least squares, t"),
                 Value(f"{k}.model.b_kib_per_write", f.b.value / 1024, "KiB/s per write/s", f.b.low / 1024,
                       f.b.high / 1024, f.n_commit, 1, method="least squares, t"),
                 Value(f"{k}.model.t0_s", f.t0.value, "s", f.t0.low, f.t0.high, f.n_commit, 2,
                       method="least squares, t"),
                 Value(f"{k}.model.a_kib_per_write", f.a.value / 1024, "KiB", f.a.low / 1024, f.a.high / 1024,
                       f.n_dirty, 1, method="least squares through 0, t"),
                 # the commit fit's parameters on a bound of their physical range (t0, b ≥ 0; c0 > 0)
                 Value(f"{k}.model.at_bound", text=", ".join(cm.commit_at_bound(f.t0, f.c0, f.b)) or "none")]
        sat_rate = float(a.deletions[a.deletions.load == "saturated"].writer_iops.mean()) \
            if not a.deletions.empty else math.nan
        if math.isfinite(sat_rate):
            share = [100 * (1 - bb * sat_rate / f.c0.value) for bb in (f.b.value, f.b.high, f.b.low)]
            vals.append(Value(f"{k}.model.commit_share_saturated", share[0], "%", share[1], share[2], f.n_commit,
                              0, method="interval of b, c0 at its estimate"))
            vals.append(Value(f"{k}.model.saturated_writer_iops", sat_rate, "writes/s", n=1))
        lo, hi = f.critical_rate_interval()
        vals.append(Value(f"{k}.model.critical_rate", f.critical_rate, "writes/s", lo, hi, f.n_commit, 0,
                          method="interval ends of c0 and a + b"))
        a.predictions = predictions_table(a.deletions, f, p)
        if not a.predictions.empty:
            agree = a.predictions.converged == a.predictions.predicted_converged
            vals.append(Value(f"{k}.model.outcomes_predicted", float(agree.sum()), "", n=len(agree)))
            vals.append(Value(f"{k}.model.outcomes_total", float(len(agree)), "", n=len(agree)))

    # ---- the consolidation model's held-out test: leave one iterative deletion out (plan.HELDOUT)
    a.heldout, a.heldout_outcomes = heldout_tests(a.deletions, a.iterations, float(p.helper_threshold_bytes),
                                                  int(sc.max_iterations), float(p.max_consolidate_s))
    vals += [v for (model, test), h in sorted(a.heldout.items())
             for v in heldout_values(f"{k}.{model}.heldout.{test}", h)]
    oc = a.heldout_outcomes
    vals += [Value(f"{k}.model.heldout_outcomes_predicted", float(oc.predicted), "", n=oc.tested),
             Value(f"{k}.model.heldout_outcomes_tested", float(oc.tested), "deletions", n=oc.tested),
             Value(f"{k}.model.heldout_outcomes_majority", float(oc.majority), "", n=oc.tested)]
    # seed 000's two deletions (light: converges, saturated: does not), each held out in turn
    vals += [Value(f"{k}.{load}.heldout_outcome", text=oc.words(variant_name(load, "iterative")) or "not measured")
             for load in LOADS]

    # ---- the same model with its parameters measured apart (plan.HELDOUT_APART; runs before it have none)
    a.apart = apartmod.measured(apartmod.apart_table(record), apartmod.write_pattern(p))
    if a.apart is not None:
        tests, a.apart_outcomes = apartmod.apart_tests(a.apart, a.deletions, a.iterations, p)
        a.heldout.update(tests)
        vals += apartmod.apart_values(k, a.apart, tests, a.apart_outcomes)

    # ---- seek span
    a.seek = seek_prediction(record)
    vals.append(Value(f"{k}.seek.predicted_service_without_over_with", 100 * a.seek["service_without_ms"]
                      / a.seek["service_with_ms"], "%", n=1, digits=1))
    # held out by construction: the prediction uses the plan's layout and the drive's datasheet seek figures only
    seek_test = seek_heldout(meas, a.seek["service_without_ms"] / a.seek["service_with_ms"])
    a.heldout[("seek", "after_over_with")] = seek_test
    vals += heldout_values(f"{k}.seek.heldout", seek_test)

    # the stand-in's setting: the inferred operating point it measured at, or the preset (standin_settings)
    vals += standin_settings.operating_point_values(k, STAND_IN, PRESET_COVERAGE, p.operating_points)
    a.values = vals
    vd = {v.key: v for v in vals}
    a.outcomes = [outcome(c, vd) for c in claims(vd[f"{k}.coverage"].value) if c.value_key in vd]
    return a


def predictions_table(deletions: pd.DataFrame, f: cm.ConsolidationFit, p: LifecycleParameters) -> pd.DataFrame:
    """Measured against predicted outcome, iterations and time of every iterative deletion (load while it ran:
    the writer's measured IOPS)."""
    rows = []
    it = deletions[deletions.method == "iterative"]
    for _, r in it.iterrows():
        d0 = float(r.delta0_mib) * MiB
        tr = f.simulate(d0, float(r.writer_iops), float(p.helper_threshold_bytes),
                        max_iterations=int(p.scale.max_iterations), max_stun_s=float(p.max_consolidate_s))
        rows.append({"variant": r.variant, "writer_iops": r.writer_iops, "converged": bool(r.converged),
                     "predicted_converged": tr.converged, "iterations": int(r.iterations),
                     "predicted_iterations": tr.iterations,
                     "seconds": float(r.seconds) - float(r.after_load_s),
                     "predicted_seconds": tr.total_s if tr.converged else math.nan})
    return pd.DataFrame(rows)


def cache_words(coverage: float) -> str:
    """The delta's L2 cache in the claims' stand-in text: 'L2 tables cached' (every one), else the fraction."""
    return "L2 tables cached" if coverage >= 1 else f"L2 cache holding {coverage:.3f} of the tables"


def claims(coverage: float = 1.0) -> list[Claim]:
    """Seed 000's claims (Zandboer 2009, vmdamentals.com), each with the value of ours that tests it; coverage: the
    delta's L2-cache coverage the run measured at (its stand-in's operating point, or the preset: every table)."""
    stand = (f"emulated 2 x Savvio 10K.4 RAID1 (raid1_10k), qcow2 delta ({cache_words(coverage)}) in the same "
             "device")
    return [
        Claim(f"{STUDY}.C000-1a", CITE, "Graph 1, samples 13 and 36 (25 ms)",
              "light load: the VM's read IOPS unchanged with a snapshot (with / before)", 100.0, "%", 100.0, 10.0,
              "a judgment: the seed reads 'remain at quite a steady level' from a 20 s perfmon graph; ±10 pp is "
              "what such a graph can tell apart", f"{STUDY}.light.vm_with_over_before", stand,
              "unchanged"),
        Claim(f"{STUDY}.C000-1b", CITE, "Graph 1, sample 36 and note **",
              "light load: host reads per VM read with a snapshot, against without", 2.0, "×", 1.0, 0.4,
              "a judgment: 'twice as high' read from a graph; ±0.4 separates a doubling from +40 %",
              f"{STUDY}.light.host_reads_per_vm_read_factor", stand),
        Claim(f"{STUDY}.C000-1c", CITE, "Graph 1, sample 21 and note *",
              "host writes per VM write while the delta grows (file recreated after the snapshot, against "
              "before it)", 2.0, "×", 1.0, 0.4, "as C000-1b",
              f"{STUDY}.light.host_writes_per_vm_write_refill_factor", stand),
        Claim(f"{STUDY}.C000-3a", CITE, "Graph 3, samples 7-25 and 43-49",
              "saturated: VM IOPS with a snapshot against before, (110 R + 100 W) / (510 R + 250 W)",
              100.0 * (SEED_READ_WITH + SEED_WRITE_WITH) / (SEED_READ_BEFORE + SEED_WRITE_BEFORE), "%", 100.0,
              10.0, "a judgment: values read from a graph of 20 s samples; ±10 pp. We compare the ratio, not the "
              "absolute IOPS: the emulated mirror behind NBD and qcow2 does not reach the seed's 510 ROPS at QD1",
              f"{STUDY}.saturated.vm_total_with_over_before", stand),
        Claim(f"{STUDY}.C000-3b", CITE, "Graph 3, after sample 50",
              "saturated: VM reads during the deletion against before (28 of 510 ROPS)",
              100.0 * SEED_READ_DELETE / SEED_READ_BEFORE, "%", 100.0, 5.0,
              "a judgment: ±5 pp around 5.5 % separates a collapse from a halving; interval over the per-second "
              "samples of our one saturated iterative deletion (ratio of means), not over repeats",
              f"{STUDY}.saturated.read_during_iterative_over_before", stand + "; VMware-style iterative deletion"),
        Claim(f"{STUDY}.saturated_read_write", CITE, "Graph 2, samples 7-25",
              "saturated, before the snapshot: host reads per host write (the RAID1 write penalty)", 2.0, "×", 1.0,
              0.3, "'about twice' read from a graph", f"{STUDY}.saturated.before.host_reads_per_host_write", stand,
              "about twice as many ROPS as WOPS", label="C000-3c"),
        Claim(f"{STUDY}.delete_host_iops", CITE, "Graph 1, samples 43-52",
              "light load: host IOPS while deleting against before (the deletion 'shoots disk IOPS to the roof')",
              110.0, "%", 100.0, 5.0, DIRECTION_BASIS, f"{STUDY}.light.host_during_iterative_over_before",
              stand + "; VMware-style iterative deletion", "to the roof (no number)", label="C000-7", direction=1),
        Claim(f"{STUDY}.delete_vm_steady", CITE, "Graph 1, samples 43-60",
              "light load: the VM's IOPS while deleting against before", 100.0, "%", 100.0, 5.0,
              "read from a graph of 20-s samples", f"{STUDY}.light.vm_during_iterative_over_before",
              stand + "; VMware-style iterative deletion", "the VM's IOPS stay steady", label="C000-8"),
        Claim(f"{STUDY}.after_vm_as_before", CITE, "Graph 1, sample 60",
              "light load: the VM's IOPS after the commit against before the snapshot", 100.0, "%", 100.0, 5.0,
              "read from a graph of 20-s samples", f"{STUDY}.light.vm_total_after_over_before", stand,
              "performing as before", label="C000-9"),
        Claim(f"{STUDY}.saturated_delete_total", CITE, "Graph 2, samples 51-60",
              "saturated: host IOPS (reads + writes) while deleting against before", 100.0, "%", 100.0, 10.0,
              "'remain the same' read from a graph whose samples scatter by about ±10 %",
              f"{STUDY}.saturated.host_during_iterative_over_before", stand + "; VMware-style iterative deletion",
              "overall IOPS remain the same", label="C000-10"),
        Claim(f"{STUDY}.C000-4", CITE, "Graph 2, samples 51-128",
              "saturated: deletions (active commit, iterative) that finished while the load ran", 0.0, "%", 100.0,
              45.0, "binary outcomes: the seed's deletion did not finish until IOmeter was stopped (0 %); with our "
              "two deletions' exact binomial interval, ±45 pp holds 'none finished' (0 of 2: [0, 84] %, half-width "
              "42) and leaves 'one finished' (50 %) outside",
              f"{STUDY}.saturated.converged_pct", stand, "did not converge"),
        Claim(f"{STUDY}.C000-5", CITE, "Graph 1, sample 52 and note ***",
              "host service time per request once the big delta is gone (after / with): the seek-span effect "
              "behind the seed's rise of host WOPS", 90.0, "%", 100.0, 5.0, DIRECTION_BASIS,
              f"{STUDY}.light.service_after_over_with", stand, "host WOPS rise (no number)"),
        Claim(f"{STUDY}.C000-6", CITE, "Conclusions",
              "deletion time depends on the guest's write rate: the fitted model's commit throughput beside the "
              "saturating guest, % of that beside an idle guest", 70.0, "%", 100.0, 15.0, DIRECTION_BASIS,
              f"{STUDY}.model.commit_share_saturated", stand, "impacts the time significantly (no number)",
              basis="model"),
    ]


__all__ = ["LifecycleAnalysis", "analyse", "claims", "measurements_table", "timeline_table", "deletion_tables",
           "predictions_table", "seek_prediction"]
