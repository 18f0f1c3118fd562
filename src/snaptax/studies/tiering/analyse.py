"""Analysis of a tiering run: per pool and phase the VM-level IOPS (fio's per-second logs, parsed by fiologparser)
and where the pool served the I/O (the SSD-served share p from the pool's counters), the ratios to the initial
phase that seed 002 reports, the misplacement model fitted to the tiered pool's per-second points with its
predictions, and the verdicts on the seed's claims. Pure: a run in, tables, a fit and values out.

Variants. The qcow2 timelines are named after their pool (`sas_pool`, `tier_pool`), the LVM thin ones
`<pool>.lvmthin` (plan.lvmthin_variant); the `pool` column of every table holds the variant. The qcow2 rows carry
the claims; the LVM thin rows are the array-native contrast. An LVM thin run's own counters are the guest's, so its
SSD-served share, tiering cycles and emulator lateness are cut from the host series at the run's start and end
(the guest's step lines, stamped on the host's clock).

Intervals. A phase is one fio run; its per-second IOPS are not independent (a second's queue carries into the
next), so each phase is cut into BATCH_S-second batches and the ratio of two phases' means is formed from their
batch means (ratio of means, Welch, snaptax.stats) — the batch-means method of simulation output analysis. Both
phases of a ratio are minutes apart in one timeline on one device.
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
from ...models import copy_load, tiering as tm
from ...record import Manifest, RunRecord, lateness_fraction, service_time_s
from ...spindle.profiles import DeviceSpec, Raid5Spec, TierSpec, spec_from_json
from ...stats import Interval, ratio_of_means_interval, ratio_of_ratios_interval
from ...values import Value
from .plan import (
    LVM_THIN,
    POOLS,
    STUDY,
    TIERED,
    TieringParameters,
    engine_of,
    lvmthin_variant,
    pool_of,
)

CITE = "kanap"
WHERE_SAS = "table 'V7000 full SAS'"
WHERE_TIER = "table 'V7000 SAS + SSD tiering'"
LOAD_END_MARGIN_S = 1.0                       # a commit ending this close to the load's end ended with it
BATCH_S = 3                                   # seconds per batch mean
MODEL_PHASES = ("initial", "settle", "with", "after", "relearned")   # per-second points the model is fitted to
RATIO_PHASES = ("with", "delete", "after", "relearned")
SEED = {"sas_pool": {"initial": 2450.0, "with": 300.0, "delete": 180.0, "after": 2650.0},
        "tier_pool": {"initial": 11500.0, "with": 420.0, "delete": 300.0, "after": 11500.0}}
WHAT_IF_CYCLES_S = {"24h": 86400.0, "1h": 3600.0, "5min": 300.0}
SEED_MIGRATION_B_S = 40e6                     # 12 GB per 5 min
SEED_DISK_BYTES = 100e9
RATIO_BASIS = ("a judgment: the seed's figures are single IOmeter readings of a plateau; ±5 pp of the initial rate "
               "separates 'a tenth' from 'a twentieth' and from 'a third'")
AFTER_BASIS = ("a judgment: the seed reads its 2650 after 2450 as recovered ('even a bit better, but that's not "
               "related to our test'), so the claim is 100 %; ±10 pp separates recovered from not")
RELATIVE_BASIS = ("a judgment: the ratio of two ratios each read to ±5 pp; ±15 pp separates 'loses a larger "
                  "fraction' (below 100 %) from the same fraction")


SAS_STAND_IN = "qcow2 on the emulated SAS-only pool (sas_pool)"
TIER_SPEED = ("misplacement model at the measured SSD-served shares, SSD tier at its emulated speed "
              "(the harness cannot time it)")


@dataclass
class TieringAnalysis(Analysis):
    meas: pd.DataFrame = field(default_factory=pd.DataFrame)       # one row per fio run (phase)
    seconds: pd.DataFrame = field(default_factory=pd.DataFrame)    # per pool and second: VM IOPS, SSD share
    phases: pd.DataFrame = field(default_factory=pd.DataFrame)     # per pool and phase: IOPS, ratio, p
    events: pd.DataFrame = field(default_factory=pd.DataFrame)
    fit: tm.TierFit | None = None
    what_if: pd.DataFrame = field(default_factory=pd.DataFrame)
    model_us: dict[str, dict[str, float]] = field(default_factory=dict)    # per pool: the emulator's own τ's
    at_tier_speed: pd.DataFrame = field(default_factory=pd.DataFrame)      # tier_pool ratios at the SSD's speed
    what_if_curves: pd.DataFrame = field(default_factory=pd.DataFrame)     # what_if_curves()


def model_time_per_io(record: RunRecord) -> dict[str, dict[str, float]]:
    """Per pool, the emulated device's own µs per I/O per tier for the workload (measure.emulated_time_per_io)."""
    return {pool: dict(meta.get("study", {}).get("model_time_per_io") or {})
            for pool, meta in record.manifest.variants.items()}


def at_tier_speed(phases: pd.DataFrame, fit: tm.TierFit | None, model_us: dict[str, dict[str, float]]) \
        -> pd.DataFrame:
    """The tiered pool's phase ratios, per variant on it (qcow2, LVM thin), as the misplacement model gives them at
    the measured SSD-served shares, with the SSD tier at its own speed: τ_ssd from the emulated tier's model (the
    served emulator, one Python process, cannot deliver it: its lateness reaches ~10x the SSD's service time) or, on
    a real pool, the fitted τ_ssd; τ_hdd fitted on the qcow2 timeline. Interval: the ratio at the ends of τ_hdd's
    95 % interval (it is monotone in τ_hdd)."""
    columns = ["pool", "phase", "ssd_share", "ratio_pct", "ratio_low", "ratio_high", "n", "tau_ssd_us"]
    tier = phases[phases.pool.map(pool_of) == TIERED] if not phases.empty else phases
    if fit is None or tier.empty:
        return pd.DataFrame(columns=columns)
    tau_s = model_us.get(TIERED, {}).get("ssd_us_per_io", fit.tau_ssd_us)
    rows = []
    for variant in sorted(set(tier.pool)):
        v = tier[tier.pool == variant]
        if "initial" not in set(v.phase):
            continue
        p0 = float(v[v.phase == "initial"].ssd_share.iloc[0])
        for r in v[v.phase != "initial"].itertuples():
            def ratio(tau_h: float, p: float = float(r.ssd_share), p0: float = p0) -> float:
                return 100 * float(tm.time_per_io_us(p0, tau_s, tau_h) / tm.time_per_io_us(p, tau_s, tau_h))
            ends = sorted(ratio(t) for t in fit.ci95[1])
            rows.append({"pool": variant, "phase": r.phase, "ssd_share": r.ssd_share,
                         "ratio_pct": ratio(fit.tau_hdd_us), "ratio_low": ends[0], "ratio_high": ends[1],
                         "n": fit.points, "tau_ssd_us": tau_s})
    return pd.DataFrame(rows, columns=columns)


def _host_series(record: RunRecord, variant: str) -> pd.DataFrame:
    path = record.variant_dir(variant) / "host_series.csv"
    if not path.exists():
        return pd.DataFrame()
    with open(path) as f:
        return pd.DataFrame([{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)])


def _share(c: dict[str, float]) -> float:
    total = c.get("host.reads", 0.0) + c.get("host.writes", 0.0)
    return (c.get("host.ssd_reads", 0.0) + c.get("host.ssd_writes", 0.0)) / total if total > 0 else math.nan


def _interval_shares(h: pd.DataFrame) -> np.ndarray:
    """_share of each host-series interval: element i for the interval ending at sample i (element 0: nan)."""
    def d(k: str) -> np.ndarray:
        return np.diff(h[k].to_numpy(), prepend=np.nan) if k in h.columns else np.zeros(len(h))
    total = d("host.reads") + d("host.writes")
    ssd = d("host.ssd_reads") + d("host.ssd_writes")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, ssd / np.where(total > 0, total, 1.0), math.nan)


def series_delta(h: pd.DataFrame, t_start_s: float, t_end_s: float) -> dict[str, float]:
    """The host counters' increase over [t_start_s, t_end_s] from a 1-s host series: between the last sample at or
    before the start and the first at or after the end (the run lies inside; empty when the series does not
    cover it); "t_s" is the length of that bracket in s."""
    if len(h) < 2 or not (math.isfinite(t_start_s) and math.isfinite(t_end_s)):
        return {}
    ts = h["t_s"].to_numpy()
    i = int(np.searchsorted(ts, t_start_s, side="right")) - 1
    j = int(np.searchsorted(ts, t_end_s, side="left"))
    if i < 0 or j >= len(h) or j <= i:
        return {}
    return {k: float(h[k].iloc[j] - h[k].iloc[i]) for k in h.columns}     # "t_s": the bracket's length


def lateness_pct(c: dict[str, float]) -> float:
    """The emulator's mean release lateness over the mean member service time, in % (record.lateness_fraction),
    from counter increases; nan without them."""
    return 100 * lateness_fraction(c)


# Where an LVM thin phase's time went on the untiered pool (measurements_table's columns): value unit and digits.
LAYOUT_COLUMNS = {"device_per_guest_io": ("", 3), "copied_write_pct": ("%", 0),
                  "device_ms_per_io": ("ms", 1), "device_queue": ("", 1),
                  "member_ms_per_io": ("ms", 2), "member_busy_pct": ("%", 0), "member_busy_spread": ("", 2),
                  "member_hit_pct": ("%", 0),
                  "guest_cpu_pct": ("%", 0)}


def chunks_copied(guest: dict[str, Any], chunk_size: float) -> float:
    """Chunks the pool copied during one run, from the guest's counters: (Δ device sectors read − Δ volume sectors
    read) · 512 B / chunk_size. dm-thin breaks the sharing of a chunk by reading it whole (kcopyd) into a new one, so
    the device reads what the volume did not ask for; the pool's metadata reads would count too (none in the phases
    before any snapshot). nan without the counters."""
    try:
        extra = float(guest["host.sectors_read"].delta) - float(guest["guest.sectors_read"].delta)
    except (KeyError, TypeError):
        return math.nan
    return extra * 512 / chunk_size if chunk_size > 0 else math.nan


def copied_write_pct(guest: dict[str, Any], chunk_size: float) -> float:
    """The share of the guest's writes in % that made the pool copy a chunk: chunks_copied / Δ volume writes · 100;
    nan without the counters or without writes."""
    try:
        writes = float(guest["guest.writes"].delta)
    except (KeyError, TypeError):
        return math.nan
    return 100 * chunks_copied(guest, chunk_size) / writes if writes > 0 else math.nan


def member_ms_per_io(c: dict[str, float]) -> float:
    """The array members' busy time per member request in ms, from counter increases: Σ busy_s over the members /
    (member reads + member writes) · 10³ (record.service_time_s) — the device's own time per command, whatever the
    host's path adds; nan without them."""
    return 1e3 * service_time_s(c)


def member_balance(c: dict[str, float]) -> dict[str, float]:
    """From counter increases over a bracket of c["t_s"] seconds, how the array's members shared the work:
    member_busy_pct = the mean member's busy time / t_s in % (how much of the time a drive was positioning or
    transferring), member_busy_spread = the busiest member's busy time over the least busy one's (1: even),
    member_hit_pct = Σ cache hits / Σ member requests in % (a hit costs no positioning); nans without the members'
    counters (a hit share needs host.member<i>.cache_hits)."""
    busy = [v for k, v in c.items() if k.startswith("host.member") and k.endswith(".busy_s")]
    hits = [v for k, v in c.items() if k.startswith("host.member") and k.endswith(".cache_hits")]
    n = c.get("host.member_reads", 0.0) + c.get("host.member_writes", 0.0)
    dt = c.get("t_s", math.nan)
    return {"member_busy_pct": 100 * sum(busy) / len(busy) / dt if busy and dt > 0 else math.nan,
            "member_busy_spread": max(busy) / min(busy) if busy and min(busy) > 0 else math.nan,
            "member_hit_pct": 100 * sum(hits) / n if hits and n > 0 else math.nan}


def device_time(c: dict[str, float]) -> dict[str, float]:
    """From counter increases over a bracket of c["t_s"] seconds, the array's own view of the host commands:
    device_ms_per_io = Σ command time (arrival → completion) / commands · 10³, and device_queue = Σ command time /
    t_s, the mean number of commands outstanding in the array (Little's law); nans when the device did not count
    host.latency_s_sum (a real pool's counters, or an emulator before 2026-11-26)."""
    n = c.get("host.reads", 0.0) + c.get("host.writes", 0.0)
    lat, dt = c.get("host.latency_s_sum", math.nan), c.get("t_s", math.nan)
    return {"device_ms_per_io": 1e3 * lat / n if n > 0 else math.nan,
            "device_queue": lat / dt if dt > 0 else math.nan}


def _per(counters: dict[str, Any], num: tuple[str, ...], den: tuple[str, ...]) -> float:
    """Σ of the `num` counters' increases over Σ of the `den` ones' (nan when any is missing or den is 0)."""
    try:
        a = sum(float(counters[k].delta) for k in num)
        b = sum(float(counters[k].delta) for k in den)
    except (KeyError, TypeError):
        return math.nan
    return a / b if b > 0 else math.nan


def span_model_ratio(curve: dict[str, list], f: float) -> tuple[float, float, float]:
    """The emulated pool's own model of the load over the two-region layout (measure.span_model), at the share f of
    the data in the second region (0 … 1): (ratio, low, high) in % of the one-region rate, linear between the
    modelled fractions; nans outside them or without the curve."""
    xs = curve.get("fraction") or []
    if not xs or not math.isfinite(f) or not xs[0] <= f <= xs[-1]:
        return (math.nan, math.nan, math.nan)
    return tuple(float(np.interp(f, xs, curve[k])) for k in ("ratio_pct", "ratio_low", "ratio_high"))  # type: ignore[return-value]


def _chunk_size(record: RunRecord, variant: str) -> float:
    """An LVM thin variant's chunk size in bytes from its record (nan for the qcow2 timelines)."""
    config = (record.manifest.variants.get(variant) or {}).get("config") or {}
    return float(config.get("chunk_size") or math.nan) if engine_of(variant) == LVM_THIN else math.nan


def measurements_table(record: RunRecord) -> pd.DataFrame:
    rows = []
    hosts = {v: _host_series(record, v) for v in record.manifest.variants if engine_of(v) == LVM_THIN}
    chunk_size = {v: _chunk_size(record, v) for v in {m.variant for m in record.measurements}}
    for m in record.measurements:
        t_start, t_end = float(m.extra.get("t_start_s", math.nan)), float(m.extra.get("t_end_s", math.nan))
        if m.variant in hosts:
            c = series_delta(hosts[m.variant], t_start, t_end)
            late = lateness_pct(c)
        else:
            c = {n: (v.delta or 0.0) for n, v in m.counters.items() if v.delta is not None}
            c["t_s"] = m.wall_s       # the counters bracket the fio run
            late = 100 * m.lateness_fraction
        g = m.counters       # the guest's own, for an LVM thin run
        rows.append({"pool": m.variant, "index": m.index, "phase": m.phase,
                     "t_start_s": t_start, "t_end_s": t_end,
                     "iops": m.iops(), "ssd_share": _share(c), "tier_cycles": c.get("host.tier_cycles", 0.0),
                     "member_ms_per_io": member_ms_per_io(c), **device_time(c), **member_balance(c),
                     "device_per_guest_io": _per(g, ("host.reads", "host.writes"), ("guest.reads", "guest.writes")),
                     "copied_write_pct": copied_write_pct(g, chunk_size[m.variant]),
                     "chunks_copied": chunks_copied(g, chunk_size[m.variant]),
                     "guest_cpu_pct": 100 * _per(g, ("guest.cpu_busy_s",), ("guest.cpu_busy_s", "guest.cpu_idle_s")),
                     "chunks_broken": g["engine.chunks_broken"].after if "engine.chunks_broken" in g else math.nan,
                     "mapped_bytes": 512 * g["engine.live_mapped_sectors"].after
                     if "engine.live_mapped_sectors" in g else math.nan,
                     "promotions": c.get("host.promotions", 0.0), "demotions": c.get("host.demotions", 0.0),
                     "lateness_pct": late, "deletion": m.extra.get("deletion"),
                     "fio_runtime_s": max((float(r["runtime_ms"]) for r in m.fio), default=math.nan) / 1e3})
    return pd.DataFrame(rows)


def seconds_table(record: RunRecord) -> pd.DataFrame:
    """Per pool and second of the timeline: the phase, VM IOPS (fio's log, all directions) and the SSD-served
    share of the pool's I/O over the host-counter sample ending nearest that second."""
    rows: list[dict[str, Any]] = []
    hosts = {v: _host_series(record, v) for v in sorted({m.variant for m in record.measurements})}
    shares = {v: (h["t_s"].to_numpy(), _interval_shares(h)) for v, h in hosts.items() if len(h) >= 2}
    for m in record.measurements:
        t0 = float(m.extra.get("t_start_s", 0.0))
        ts, share = shares.get(m.variant, (np.empty(0), np.empty(0)))
        for series in (m.extra.get("vm_series") or {}).values():
            for end_s, value in series:
                t = t0 + float(end_s)
                i = int(np.searchsorted(ts, t))
                p = float(share[i]) if 1 <= i < len(ts) else math.nan
                rows.append({"pool": m.variant, "phase": m.phase, "index": m.index, "t_s": t,
                             "t_in_phase_s": float(end_s), "iops": float(value), "ssd_share": p})
    return pd.DataFrame(rows, columns=["pool", "phase", "index", "t_s", "t_in_phase_s", "iops", "ssd_share"])


def events_table(record: RunRecord) -> pd.DataFrame:
    rows = [{"pool": e["variant"], "event": e["event"], "t_s": e.get("t_s", math.nan),
             "learned": e.get("learned"), "seconds": e.get("seconds", math.nan)}
            for e in record.manifest.events if "t_s" in e and e["event"] != "job_progress"]
    return pd.DataFrame(rows, columns=["pool", "event", "t_s", "learned", "seconds"])


def phase_samples(seconds: pd.DataFrame, meas: pd.DataFrame, pool: str, phase: str) -> np.ndarray:
    """Batch means (BATCH_S seconds) of a phase's per-second VM IOPS. The consolidation phase ('delete') is the
    seconds between the commit's start and its end, not the whole load window; the first second of every run
    (fio starting) is left out."""
    s = seconds[(seconds.pool == pool) & (seconds.phase == phase) & (seconds.t_in_phase_s > 1.0)]
    if phase == "delete":
        rows = meas[(meas.pool == pool) & (meas.phase == "delete")]
        info = rows.deletion.iloc[0] if len(rows) else None
        if info:
            s = s[(s.t_s - 0.5 >= info["t_delete_start"]) & (s.t_s - 0.5 <= info["t_done"])]
    v = s.iops.to_numpy()
    if len(v) < BATCH_S:
        return v
    n = len(v) // BATCH_S
    return v[: n * BATCH_S].reshape(n, BATCH_S).mean(axis=1)


def phases_table(seconds: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for pool in sorted(meas.pool.unique()):
        initial = phase_samples(seconds, meas, pool, "initial")
        for phase in ("initial", *RATIO_PHASES):
            m = meas[(meas.pool == pool) & (meas.phase == phase)]
            if m.empty:
                continue
            x = phase_samples(seconds, meas, pool, phase)
            r = ratio_of_means_interval(x, initial)
            rows.append({"pool": pool, "phase": phase, "iops": float(np.mean(x)) if len(x) else math.nan,
                         "batches": len(x), "ratio_pct": 100 * r.estimate, "ratio_low": 100 * r.low,
                         "ratio_high": 100 * r.high, "n": r.n, "ssd_share": float(m.ssd_share.iloc[0]),
                         "cycles_inside": float(m.tier_cycles.iloc[0]),
                         "seed_iops": SEED[pool_of(pool)].get(phase, math.nan),
                         "seed_ratio_pct": 100 * SEED[pool_of(pool)].get(phase, math.nan)
                         / SEED[pool_of(pool)]["initial"]})
    return pd.DataFrame(rows)


def fit_model(seconds: pd.DataFrame) -> tm.TierFit | None:
    """The misplacement model on the tiered pool's per-second (p, IOPS) points outside consolidation and
    learning (migrations and the commit's copy add I/O the model does not describe); None when the points do
    not span the share (the pool did not learn, e.g. at smoke)."""
    s = seconds[(seconds.pool == TIERED) & seconds.phase.isin(MODEL_PHASES) & (seconds.t_in_phase_s > 1.0)]
    try:
        return tm.fit(s.ssd_share.to_numpy(), s.iops.to_numpy())
    except ValueError:
        return None


def what_if_table(fit: tm.TierFit | None, phases: pd.DataFrame, tau_ssd_us: float,
                  read_fraction: float) -> pd.DataFrame:
    """The seed's pool with other cycles (loss duration at the seed's disk and migration rate) and with flash as a
    write cache (the ratio with a snapshot if every write were served by flash; the model with the SSD tier at
    `tau_ssd_us` and the fitted τ_hdd, as at_tier_speed); `read_fraction`: the load's, as the run recorded it."""
    rows = []
    for name, cycle in WHAT_IF_CYCLES_S.items():
        rows.append({"what": f"cycle {name}", "cycle_s": cycle,
                     "loss_hours": float(tm.loss_duration_s(cycle, SEED_DISK_BYTES, SEED_MIGRATION_B_S)) / 3600})
    tier = phases[(phases.pool == TIERED)] if not phases.empty else phases
    if fit is not None and not tier.empty and {"initial", "with"} <= set(tier.phase):
        p0 = float(tier[tier.phase == "initial"].ssd_share.iloc[0])
        pw = float(tier[tier.phase == "with"].ssd_share.iloc[0])
        # the share of reads served by SSD is not split out from the measured p: take p as the reads' share
        p_cached = float(tm.write_cache_share(pw, read_fraction))
        for what, p in (("measured share with snapshot", pw), ("flash write cache", p_cached)):
            ratio = tm.time_per_io_us(p0, tau_ssd_us, fit.tau_hdd_us) / tm.time_per_io_us(p, tau_ssd_us,
                                                                                         fit.tau_hdd_us)
            rows.append({"what": what, "ssd_share": p, "ratio_pct": 100 * float(ratio)})
    return pd.DataFrame(rows)


WHAT_IF_GRID_CYCLES_S = np.geomspace(60.0, 7 * 86400.0, 61)     # 1 min ... a week
WHAT_IF_GRID_SHARES = np.linspace(0.0, 1.0, 51)


def what_if_curves(fit: tm.TierFit | None, tau_ssd_us: float) -> pd.DataFrame:
    """The what-ifs as curves: (a) how long the loss lasts against the tiering cycle's length, for the seed's disk
    at its migration rate (curve 'loss_hours', x = cycle_s); (b) the rate with a snapshot, as % of a fully SSD-served
    initial rate, against the SSD-served share with the snapshot, from the misplacement model at the SSD tier's
    speed and the fitted τ_hdd, with the ends of τ_hdd's 95 % interval (curve 'ratio_pct', x = ssd_share). (b) is
    empty without a fit."""
    rows = [{"curve": "loss_hours", "x": float(c), "y": float(tm.loss_duration_s(c, SEED_DISK_BYTES,
                                                                                 SEED_MIGRATION_B_S)) / 3600,
             "low": math.nan, "high": math.nan} for c in WHAT_IF_GRID_CYCLES_S]
    if fit is not None and math.isfinite(tau_ssd_us):
        def ratio(p: float, tau_h: float) -> float:
            return 100 * float(tm.time_per_io_us(1.0, tau_ssd_us, tau_h) / tm.time_per_io_us(p, tau_ssd_us, tau_h))
        for p in WHAT_IF_GRID_SHARES:
            ends = sorted(ratio(float(p), t) for t in fit.ci95[1])
            rows.append({"curve": "ratio_pct", "x": float(p), "y": ratio(float(p), fit.tau_hdd_us), "low": ends[0],
                         "high": ends[1]})
    return pd.DataFrame(rows, columns=["curve", "x", "y", "low", "high"])


def _claims(pools: set[str]) -> list[Claim]:
    k = STUDY
    out: list[Claim] = []
    if "sas_pool" in pools:
        out += [
            Claim(f"{k}.C002-1a", CITE, WHERE_SAS, "SAS only: IOPS with a snapshot, % of initial", 12.2, "%", 100.0,
                  5.0, RATIO_BASIS, f"{k}.sas_pool.with.ratio", SAS_STAND_IN,
                  "12.2 % (table: 300 of 2450 IO/s; text: 12 %)"),
            Claim(f"{k}.C002-1b", CITE, WHERE_SAS, "SAS only: IOPS during consolidation, % of initial", 7.3, "%",
                  100.0, 5.0, RATIO_BASIS, f"{k}.sas_pool.delete.ratio", SAS_STAND_IN,
                  "7.3 % (table: 180 of 2450 IO/s; text: 7 %)"),
            Claim(f"{k}.C002-1c", CITE, WHERE_SAS, "SAS only: IOPS after consolidation, % of initial", 100.0, "%",
                  100.0, 10.0, AFTER_BASIS, f"{k}.sas_pool.after.ratio", SAS_STAND_IN,
                  "recovered (2650 of 2450, 108 %)")]
    if TIERED in pools:
        out += [
            Claim(f"{k}.C002-2a", CITE, WHERE_TIER, "SAS + SSD Easy Tier: IOPS with a snapshot, % of initial", 3.7,
                  "%", 100.0, 5.0, RATIO_BASIS, f"{k}.tier_pool.with.at_tier_speed", TIER_SPEED,
                  "3.7 % (table: 420 of 11500 IO/s; text: 3,6 %)", basis="model"),
            Claim(f"{k}.C002-2b", CITE, WHERE_TIER, "SAS + SSD Easy Tier: IOPS during consolidation, % of initial",
                  2.6, "%", 100.0, 5.0, RATIO_BASIS, f"{k}.tier_pool.delete.at_tier_speed", TIER_SPEED,
                  "2.6 % (table: 300 of 11500 IO/s; text: 2,6 %)", basis="model"),
            Claim(f"{k}.C002-2c", CITE, WHERE_TIER, "SAS + SSD Easy Tier: IOPS after consolidation, % of initial",
                  100.0, "%", 100.0, 10.0, AFTER_BASIS, f"{k}.tier_pool.after.at_tier_speed", TIER_SPEED,
                  "recovered (11500 of 11500)", basis="model")]
    if {"sas_pool", TIERED} <= pools:
        out.append(Claim(f"{k}.C002-3", CITE, "Summary, point 2", "the tiered pool keeps a smaller fraction with a "
                         "snapshot: its ratio over the SAS-only pool's, %", 100 * (420 / 11500) / (300 / 2450), "%",
                         100.0, 15.0, RELATIVE_BASIS, f"{k}.tier_over_sas.with",
                         "the emulated tiered pool (tier_pool) at the SSD tier's speed (model) over the SAS-only pool "
                         "(sas_pool, measured), qcow2",
                         basis="model"))
    return out


def _relative(phases: pd.DataFrame, speed: pd.DataFrame) -> Interval:
    """The tiered pool's with-snapshot ratio (at the SSD tier's speed) over the SAS-only pool's (measured), in %:
    a ratio of two independent ratios, its log half-width the root sum of squares of theirs."""
    sas = phases[(phases.pool == "sas_pool") & (phases.phase == "with")] if not phases.empty else phases
    tier = speed[(speed.pool == TIERED) & (speed.phase == "with")] if not speed.empty else speed
    if sas.empty or tier.empty:
        return Interval(math.nan, math.nan, math.nan, 0, "ratio of ratios")
    a, b = tier.iloc[0], sas.iloc[0]
    return ratio_of_ratios_interval(float(100 * a.ratio_pct / b.ratio_pct), (a.ratio_low, a.ratio_high),
                                    (b.ratio_low, b.ratio_high), int(min(a.n, b.n)))


def pool_specs(manifest: Manifest, devices: dict[str, str]) -> dict[str, tuple[DeviceSpec | None, float]]:
    """Per pool (POOLS): the device spec it was served with and its LBA space in bytes, as the run recorded them.
    The spec: the variant's recorded `spec` (profiles.to_json of measure.pool_spec, in `study`; record.upgrade
    gives runs made before it was recorded the spec their rig files named); None for a device without one (a real
    pool). A spec that does not parse raises ConfigError, naming the run and the field. The
    capacity: the manifest's capacity_bytes of that device (nan if not recorded)."""
    recorded_devices = {d.get("name"): d for d in manifest.devices}
    out: dict[str, tuple[DeviceSpec | None, float]] = {}
    for pool in POOLS:
        name = str(devices.get(pool, pool))
        dev = recorded_devices.get(name) or {}
        meta = manifest.variants.get(pool) or {}
        recorded = meta.get("spec") or (meta.get("study") or {}).get("spec")
        spec = spec_from_json(recorded, f"{manifest.run_id}: variant {pool}") if recorded else None
        out[pool] = (spec, float(dev.get("capacity_bytes") or math.nan))
    return out


def pool_values(specs: dict[str, tuple[DeviceSpec | None, float]]) -> list[Value]:
    """The emulated pools' set-up as the paper states it (`{STUDY}.pool.*`): the RAID5's members and strip, the
    same on both pools (nan if the untiered pool and the tiered pool's HDD tier differ), the LBA space (nan if the
    pools' differ), and the tiered pool's SSD share of capacity, extent size, cycle, largest I/O counted as heat and
    migration rate (nan if it is not a tier)."""
    k = f"{STUDY}.pool"
    sas, sas_cap = specs.get("sas_pool", (None, math.nan))
    tier, tier_cap = specs.get(TIERED, (None, math.nan))
    tier_spec = tier if isinstance(tier, TierSpec) else None
    arrays = [sas, tier_spec.hdd if tier_spec is not None else None]
    raid = sas if isinstance(sas, Raid5Spec) and all(a == sas for a in arrays) else None
    nan = math.nan
    return [Value(f"{k}.members", float(len(raid.members)) if raid else nan, "drives"),
            Value(f"{k}.strip_kib", raid.stripe_unit_bytes / 1024 if raid else nan, "KiB"),
            Value(f"{k}.capacity_gib", sas_cap / (1 << 30) if sas_cap == tier_cap else nan, "GiB"),
            Value(f"{k}.ssd_fraction_pct", 100 * tier_spec.ssd_fraction if tier_spec else nan, "%"),
            Value(f"{k}.extent_mib", tier_spec.extent_bytes / (1 << 20) if tier_spec else nan, "MiB"),
            Value(f"{k}.cycle_s", tier_spec.cycle_s if tier_spec else nan, "s"),
            Value(f"{k}.heat_max_io_kib", tier_spec.heat_max_io_bytes / 1024 if tier_spec else nan, "KiB"),
            Value(f"{k}.migration_mb_s", tier_spec.migration_mb_s if tier_spec else nan, "MB/s", digits=1)]


def _values(record: RunRecord, meas: pd.DataFrame, phases: pd.DataFrame, events: pd.DataFrame,
            fit: tm.TierFit | None, what_if: pd.DataFrame, speed: pd.DataFrame,
            model_us: dict[str, dict[str, float]]) -> list[Value]:
    k, params = STUDY, record.parameters(TieringParameters)
    out = [Value(f"{k}.disk_mib", float(params.disk_bytes) / (1 << 20), "MiB"),
           Value(f"{k}.iodepth", float(params.iodepth), ""),
           Value(f"{k}.phase_s", float(params.phase_s), "s"), Value(f"{k}.with_s", float(params.with_s), "s"),
           Value(f"{k}.settle_s", float(params.settle_s), "s"),
           Value(f"{k}.delete_window_s", float(params.delete_window_s), "s"),
           Value(f"{k}.batch_s", float(BATCH_S), "s"),
           Value(f"{k}.bs_kib", float(params.bs) / 1024, "KiB"),
           Value(f"{k}.write_share", 1 - read_fraction(record), "", digits=1),      # w of the copy-load model
           Value(f"{k}.learn_segment_s", float(params.learn_segment_s), "s", digits=0),
           Value(f"{k}.guest_segment_s", float(params.guest_segment_s), "s", digits=0),
           Value(f"{k}.learned_fraction_pct", 100 * float(params.learned_fraction), "%", digits=0),
           Value(f"{k}.untiered_factor", float(params.untiered_factor), "", digits=0),
           Value(f"{k}.cycles_inside_steady", float(phases[phases.phase.isin(("initial", "with", "after"))
                                                           & phases.pool.isin(POOLS)].cycles_inside.sum())
                 if not phases.empty else math.nan, "")]
    for pool in POOLS:
        for phase in ("initial", *RATIO_PHASES):
            r = phases[(phases.pool == pool) & (phases.phase == phase)] if not phases.empty else phases
            base = f"{k}.{pool}.{phase}"
            if r.empty:
                if pool == TIERED or phase != "relearned":
                    out += [Value(f"{base}.iops", math.nan, "IOPS"), Value(f"{base}.ssd_share", math.nan, "%")]
                    if phase != "initial":
                        out.append(Value(f"{base}.ratio", math.nan, "%"))
                continue
            row = r.iloc[0]
            out.append(Value(f"{base}.iops", float(row.iops), "IOPS", n=int(row.batches)))
            out.append(Value(f"{base}.ssd_share", 100 * float(row.ssd_share), "%", digits=0))
            if phase != "initial":
                out.append(Value.where_defined(f"{base}.ratio", float(row.ratio_pct), float(row.ratio_low),
                                               float(row.ratio_high), int(row.n), "%", 1,
                                               f"ratio of means of {BATCH_S}-s batches, Welch"))
        learn = events[(events.pool == pool) & events.event.isin(("learn_done", "relearn_done"))]
        for ev in ("learn_done", "relearn_done"):
            row = learn[learn.event == ev]
            if pool == TIERED:
                out.append(Value(f"{k}.{pool}.{ev.split('_')[0]}_s",
                                 float(row.seconds.iloc[0]) if len(row) else math.nan, "s"))
                out.append(Value(f"{k}.{pool}.{ev.split('_')[0]}ed",
                                 text=("yes" if bool(row.learned.iloc[0]) else "no") if len(row) else "n/a"))
        dels = meas[(meas.pool == pool) & (meas.phase == "delete")]
        info = dels.deletion.iloc[0] if len(dels) else None
        out.append(Value(f"{k}.{pool}.commit_s", float(info["t_done"] - info["t_delete_start"]) if info else math.nan,
                         "s", digits=1))
        out.append(Value(f"{k}.{pool}.commit_ready_s",
                         float(info["t_ready"] - info["t_delete_start"]) if info else math.nan, "s", digits=1))
        # Did the commit end while the load still ran? The load ended fio's runtime after the run's start (the
        # deletion's own flag is taken when the deletion notices, which can be after the load has gone).
        if info:
            load_end = float(dels.t_start_s.iloc[0]) + float(dels.fio_runtime_s.iloc[0])
            under_load = info["t_done"] < load_end - LOAD_END_MARGIN_S
        out.append(Value(f"{k}.{pool}.commit_under_load", text=("yes" if under_load else "no") if info else "n/a"))
        q = meas[meas.pool == pool] if not meas.empty else meas
        out.append(Value(f"{k}.{pool}.worst_lateness_pct", float(q.lateness_pct.max()) if len(q) else math.nan, "%",
                         digits=0))
    for phase in RATIO_PHASES:
        r = speed[(speed.pool == TIERED) & (speed.phase == phase)] if not speed.empty else speed
        out.append(Value.where_defined(f"{k}.{TIERED}.{phase}.at_tier_speed",
                                       float(r.ratio_pct.iloc[0]) if len(r) else math.nan,
                                       float(r.ratio_low.iloc[0]) if len(r) else math.nan,
                                       float(r.ratio_high.iloc[0]) if len(r) else math.nan,
                                       int(r.n.iloc[0]) if len(r) else 0, "%", 1, "fitted τ_hdd's interval"))
    for pool in POOLS:
        for tier in ("ssd", "hdd"):
            if pool == TIERED or tier == "hdd":
                out.append(Value(f"{k}.model.{pool}.{tier}_us_per_io",
                                 model_us.get(pool, {}).get(f"{tier}_us_per_io", math.nan), "µs"))
    out.append(Value.of(f"{k}.tier_over_sas.with", _relative(phases, speed), "%", 1))
    if fit is not None:
        (ls, hs), (lh, hh) = fit.ci95
        out += [Value(f"{k}.fit.tau_ssd_us", fit.tau_ssd_us, "µs", ls, hs, fit.points, 0, method="least squares, t"),
                Value(f"{k}.fit.tau_hdd_us", fit.tau_hdd_us, "µs", lh, hh, fit.points, 0, method="least squares, t"),
                Value(f"{k}.fit.ssd_iops", fit.ssd_iops, "IOPS", 1e6 / hs if hs > 0 else math.nan, 1e6 / ls
                      if ls > 0 else math.nan, fit.points, 0, method="from τ_ssd's interval"),
                Value(f"{k}.fit.hdd_iops", fit.hdd_iops, "IOPS", 1e6 / hh if hh > 0 else math.nan, 1e6 / lh
                      if lh > 0 else math.nan, fit.points, 0, method="from τ_hdd's interval"),
                Value(f"{k}.fit.r2", fit.r2, "", n=fit.points, digits=2),
                Value(f"{k}.fit.points", float(fit.points), "seconds")]
    else:
        out += [Value(f"{k}.fit.{n}", math.nan, u) for n, u in
                (("tau_ssd_us", "µs"), ("tau_hdd_us", "µs"), ("ssd_iops", "IOPS"), ("hdd_iops", "IOPS"), ("r2", ""),
                 ("points", "seconds"))]
    # prediction (2): the SAS-only pool with a snapshot runs at the tiered pool's fitted HDD rate
    sas_with = phases[(phases.pool == "sas_pool") & (phases.phase == "with")] if not phases.empty else phases
    measured = float(sas_with.iops.iloc[0]) if len(sas_with) else math.nan
    sas_with_over_hdd = Value(f"{k}.predict.sas_with_over_hdd", 100 * measured / fit.hdd_iops if fit else math.nan, "%",
                     100 * measured / (1e6 / fit.ci95[1][0]) if fit and fit.ci95[1][0] > 0 else math.nan,
                     100 * measured / (1e6 / fit.ci95[1][1]) if fit and fit.ci95[1][1] > 0 else math.nan,
                     fit.points if fit else 0, 0, method="fitted τ_hdd's interval")
    hdd_model = model_us.get(TIERED, {}).get("hdd_us_per_io", math.nan)
    hdd_fit_over_model = Value(f"{k}.predict.hdd_fit_over_model",
                               100 * fit.tau_hdd_us / hdd_model if fit else math.nan, "%",
                               100 * fit.ci95[1][0] / hdd_model if fit else math.nan,
                               100 * fit.ci95[1][1] / hdd_model if fit else math.nan, fit.points if fit else 0, 0,
                               method="fitted τ_hdd's interval")
    # each prediction's verdict: 'holds' when its interval includes 100 %, 'refuted' when it does not
    for v in (sas_with_over_hdd, hdd_fit_over_model):
        verdict = ("holds" if v.includes(100.0) else "refuted") if v.has_interval else "untested"
        out += [v, Value(f"{v.key}.verdict", text=verdict)]
    for r in what_if.itertuples():
        if r.what.startswith("cycle"):
            out.append(Value(f"{k}.whatif.loss_hours_{r.what.split()[1]}", float(r.loss_hours), "h", digits=1))
    for what, key in (("measured share with snapshot", "model_with_ratio"), ("flash write cache", "write_cache_ratio")):
        row = what_if[what_if.what == what] if not what_if.empty else what_if
        out.append(Value(f"{k}.whatif.{key}", float(row.ratio_pct.iloc[0]) if len(row) else math.nan, "%",
                         digits=1))
    return out


LVM_THIN_PHASES = ("initial", "with", "after", "relearned")


def _stays(phases: pd.DataFrame) -> str:
    """The misplacement model's prediction for the two engines on the tiered pool after the snapshot's deletion,
    which the measured shares can refute: qcow2's commit copies the data back onto the base's promoted extents, so
    its SSD-served share returns towards the initial one; LVM thin's lvremove copies nothing, so its share stays at
    or below the with-snapshot level until a cycle ends. 'holds' when, on the tiered pool, qcow2's after-share lies
    above the midpoint of its with and initial shares and LVM thin's below the midpoint of its own; 'refuted'
    otherwise; 'n/a' without both timelines."""
    def shares(variant: str) -> dict[str, float]:
        v = phases[phases.pool == variant] if not phases.empty else phases
        return {r.phase: float(r.ssd_share) for r in v.itertuples()}
    q, t = shares(TIERED), shares(lvmthin_variant(TIERED))
    need = {"initial", "with", "after"}
    if not (need <= set(q) and need <= set(t)) or not all(math.isfinite(x) for x in (*q.values(), *t.values())):
        return "n/a"
    back = q["after"] > (q["with"] + q["initial"]) / 2
    stays = t["after"] < (t["with"] + t["initial"]) / 2
    return "holds" if back and stays else "refuted"


def remapped_fraction(meas: pd.DataFrame, variant: str, chunk_size: float, phase: str = "with") -> float:
    """The share (0 … 1) of the volume's chunks that LVM thin had moved to newly allocated chunks by the end of
    `phase`: under the snapshot (settle, with) the chunks broken since it was taken (the guest's pool counters),
    over the volume's mapped chunks; after lvremove that share of the data lies in the region allocated after the
    volume's. For `after`: the with-phase share plus the chunks copied in the after phase (chunks_copied: a deleted
    snapshot's time stamps still mark the origin's older chunks shared, so a first write still moves one; the pool's
    usage cannot show it, as the old chunk is freed as the new one is taken). nan where not measured."""
    if meas.empty or not chunk_size > 0:
        return math.nan
    source = "with" if phase == "after" else phase
    m = meas[(meas.pool == variant) & (meas.phase == source)]
    if m.empty:
        return math.nan
    mapped = float(m.mapped_bytes.iloc[0]) / chunk_size
    broken = float(m.chunks_broken.iloc[0])
    if phase == "after":
        a = meas[(meas.pool == variant) & (meas.phase == "after")]
        broken += float(a.chunks_copied.iloc[0]) if len(a) else math.nan
    return min(1.0, broken / mapped) if mapped > 0 else math.nan


def read_fraction(record: RunRecord) -> float:
    """The load's share of reads, as the run recorded it (parameters.read_percent)."""
    return float(record.parameters(TieringParameters).read_percent) / 100


def span_model_seeds(curve: dict[str, list]) -> int:
    """How many seeds the span model (measure.span_model) ran; 0 without one."""
    return len(curve["seeds"]) if curve else 0


def copy_model_values(meas: pd.DataFrame, variant: str, chunk_size: float, curve: dict[str, list],
                      with_ratio: Value | None, after_ratio: Value | None, base: str,
                      read_fraction: float) -> list[Value]:
    """The copy-load model (models.copy_load) on an untiered pool's LVM thin timeline: the copy cost k fitted on the
    with-snapshot phase (its ratio, its copied share of writes, the span model at its mean remapped share), the
    after-lvremove ratio it predicts from that phase's own copies and layout, and whether the measured ratio lies
    in the predicted interval (`{STUDY}.predict.lvmthin_copies_explain_after`). The interval covers the with
    ratio's interval only (the span model's central value is used). `read_fraction`: the load's, as recorded."""
    w = 1 - read_fraction
    f = {ph: remapped_fraction(meas, variant, chunk_size, ph) for ph in ("settle", "with", "after")}

    def copied(ph: str) -> float:
        m = meas[(meas.pool == variant) & (meas.phase == ph)] if not meas.empty else meas
        return float(m.copied_write_pct.iloc[0]) / 100 if len(m) else math.nan

    s_with = span_model_ratio(curve, (f["settle"] + f["with"]) / 2)[0] / 100
    s_after = span_model_ratio(curve, (f["with"] + f["after"]) / 2)[0] / 100
    nan3 = (math.nan, math.nan, math.nan)
    cost = None
    if with_ratio is not None and with_ratio.has_interval:
        cost = copy_load.fit(with_ratio.value / 100, with_ratio.low / 100, with_ratio.high / 100, s_with, w,
                             copied("with"))
    k, k_lo, k_hi = (cost.k, cost.k_low, cost.k_high) if cost is not None else nan3
    est, lo, hi = copy_load.predict(cost, s_after, w, copied("after")) if cost is not None else nan3
    model = Value.where_defined(f"{base}.after.copy_model_ratio", 100 * est, 100 * lo, 100 * hi,
                                with_ratio.n if with_ratio is not None else 0, "%", 1,
                                "copy cost fitted on the with phase; the with ratio's interval")
    verdict = _explains(after_ratio, model) if after_ratio is not None else "n/a"
    return [Value(f"{base}.after.remapped_end_pct", 100 * f["after"], "%", digits=0),
            Value.where_defined(f"{base}.copy_cost", k, k_lo, k_hi, with_ratio.n if with_ratio is not None else 0,
                                "", 1, "from the with phase's ratio interval"),
            model, Value(f"{STUDY}.predict.lvmthin_copies_explain_after", text=verdict)]


def _explains(after: Value, model: Value) -> str:
    """A model of LVM thin's loss after lvremove on an untiered pool (the two-region layout's span model; the copy
    load), as a prediction the measurement can refute: 'holds' when the model's interval (the span model's range
    over seeds; the copy model's from its fitted cost) overlaps the measured after-ratio's interval, 'refuted'
    otherwise, 'n/a' without both."""
    if not (after.has_interval and model.has_interval):
        return "n/a"
    return "holds" if model.low <= after.high and after.low <= model.high else "refuted"


def _lvmthin_values(meas: pd.DataFrame, phases: pd.DataFrame, events: pd.DataFrame, speed: pd.DataFrame,
                    learned_fraction: float, read_fraction: float,
                    layout: dict[str, dict[str, Any]], span_model_ios: int) -> list[Value]:
    """The array-native contrast: per pool, the LVM thin timeline's phase IOPS, SSD-served shares and ratios to its
    own initial phase (with intervals), its guest rate against the qcow2 timeline's, how long lvcreate and lvremove
    took; on the tiered pool also the ratios at the SSD tier's speed and whether the learning runs did learn
    (a cycle ended inside and the last run's SSD-served share reached `learned_fraction`); on an untiered pool the
    share of the data remapped under the snapshot, the two-region layout's rate from the pool's own model
    (`layout[variant]`: its span_model and chunk_size; `span_model_ios` requests per loop) and whether it explains the
    loss after lvremove, and per phase the members' time per command, balance and cache hits, the array's time per
    command and mean queue, the device's I/Os per guest I/O and the guest's CPU use. NaN where not measured."""
    k = STUDY
    out: list[Value] = []
    for pool in POOLS:
        variant = lvmthin_variant(pool)
        base = f"{k}.{pool}.{LVM_THIN}"
        for phase in LVM_THIN_PHASES:
            if phase == "relearned" and pool != TIERED:
                continue
            r = phases[(phases.pool == variant) & (phases.phase == phase)] if not phases.empty else phases
            row = r.iloc[0] if len(r) else None
            out.append(Value(f"{base}.{phase}.iops", float(row.iops) if row is not None else math.nan, "IOPS",
                             n=int(row.batches) if row is not None else 0))
            out.append(Value(f"{base}.{phase}.ssd_share", 100 * float(row.ssd_share) if row is not None
                             else math.nan, "%", digits=0))
            if phase != "initial":
                out.append(Value.where_defined(
                    f"{base}.{phase}.ratio", *((float(row.ratio_pct), float(row.ratio_low), float(row.ratio_high),
                                               int(row.n)) if row is not None else (math.nan, math.nan, math.nan, 0)),
                    "%", 1, f"ratio of means of {BATCH_S}-s batches, Welch"))
            # the untiered pool: where the time went; the tiered pool: only the copies (its rates are harness-bound)
            columns = LAYOUT_COLUMNS if pool != TIERED else {"copied_write_pct": LAYOUT_COLUMNS["copied_write_pct"]}
            m_ph = meas[(meas.pool == variant) & (meas.phase == phase)] if not meas.empty else meas
            out += [Value(f"{base}.{phase}.{col}", float(m_ph[col].iloc[0]) if len(m_ph) else math.nan, unit,
                          digits=digits) for col, (unit, digits) in columns.items()]
            if pool == TIERED and phase != "initial":
                s = speed[(speed.pool == variant) & (speed.phase == phase)] if not speed.empty else speed
                out.append(Value.where_defined(
                    f"{base}.{phase}.at_tier_speed", *((float(s.ratio_pct.iloc[0]), float(s.ratio_low.iloc[0]),
                                                       float(s.ratio_high.iloc[0]), int(s.n.iloc[0])) if len(s)
                                                      else (math.nan, math.nan, math.nan, 0)),
                    "%", 1, "fitted τ_hdd's interval"))
        q = phases[(phases.pool == pool) & (phases.phase == "initial")] if not phases.empty else phases
        g = phases[(phases.pool == variant) & (phases.phase == "initial")] if not phases.empty else phases
        out.append(Value(f"{base}.over_qcow2_initial", 100 * float(g.iops.iloc[0] / q.iops.iloc[0])
                         if len(q) and len(g) else math.nan, "%", digits=0))
        ev = events[events.pool == variant] if not events.empty else events
        for kind, name in (("snapshot", "snapshot_s"), ("delete", "delete_s")):
            e = ev[ev.event == kind] if not ev.empty else ev
            out.append(Value(f"{base}.{name}", float(e.seconds.iloc[0]) if len(e) else math.nan, "s", digits=2))
        m = meas[meas.pool == variant] if not meas.empty else meas
        steady = m[m.phase.isin(("initial", "settle", "with", "after"))] if not m.empty else m
        out.append(Value(f"{base}.cycles_inside_steady", float(steady.tier_cycles.sum()) if len(m) else math.nan,
                         "", digits=0))
        out.append(Value(f"{base}.worst_lateness_pct", float(m.lateness_pct.max()) if len(m) else math.nan, "%",
                         digits=0))
        if pool != TIERED:
            for phase in ("initial", "after"):    # the qcow2 timeline beside it: its members' read-ahead hits
                q_ph = meas[(meas.pool == pool) & (meas.phase == phase)] if not meas.empty else meas
                out.append(Value(f"{k}.{pool}.{phase}.member_hit_pct", float(q_ph.member_hit_pct.iloc[0])
                                 if len(q_ph) else math.nan, "%", digits=0))
            lay = layout.get(variant, {})
            f = remapped_fraction(meas, variant, float(lay.get("chunk_size") or math.nan))
            out.append(Value(f"{base}.remapped_pct", 100 * f, "%", digits=0))
            curve = lay.get("span_model") or {}
            est, lo, hi = span_model_ratio(curve, f)
            seeds = span_model_seeds(curve)
            out.append(Value(f"{k}.span_model_seeds", float(seeds), "seeds"))
            out.append(Value(f"{k}.span_model_ios", float(span_model_ios) if curve else math.nan, "requests",
                             digits=0))
            model = Value.where_defined(f"{base}.after.span_model_ratio", est, lo, hi, seeds, "%",
                                        1, "the emulated pool's own model (closed loops) of the two-region layout, "
                                        "range over seeds")
            out.append(model)
            after = next((v for v in out if v.key == f"{base}.after.ratio"), None)
            out.append(Value(f"{k}.predict.lvmthin_span_explains_after",
                             text=_explains(after, model) if after is not None else "n/a"))
            with_ratio = next((v for v in out if v.key == f"{base}.with.ratio"), None)
            out += copy_model_values(meas, variant, float(lay.get("chunk_size") or math.nan),
                                     curve, with_ratio, after, base, read_fraction)
        if pool == TIERED:
            out.append(Value(f"{k}.predict.lvmthin_misplacement_stays", text=_stays(phases)))
            for phase in ("learn", "relearn"):
                runs = m[m.phase == phase].sort_values("index") if not m.empty else m
                done = ev[ev.event == f"{phase}_done"] if not ev.empty else ev
                # the host's own decision that ended the loop (measure.LearningGate), its last attempt's; a run
                # without one is refused when it is read (record.upgrade)
                learned = bool(done.learned.iloc[-1]) if len(done) else False
                out.append(Value(f"{base}.{phase}ed", text=("yes" if learned else "no") if len(runs) else "n/a"))
                out.append(Value(f"{base}.{phase}_s", float(runs.t_end_s.max() - runs.t_start_s.min())
                                 if len(runs) else math.nan, "s", digits=0))
    return out


def analyse(record: RunRecord) -> TieringAnalysis:
    meas = measurements_table(record)
    seconds = seconds_table(record)
    events = events_table(record)
    phases = phases_table(seconds, meas)
    fit = fit_model(seconds)
    model_us = model_time_per_io(record)
    speed = at_tier_speed(phases, fit, model_us)
    what_if = what_if_table(fit, phases, model_us.get(TIERED, {}).get("ssd_us_per_io", fit.tau_ssd_us if fit
                                                                         else math.nan), read_fraction(record))
    values = _values(record, meas, phases, events, fit, what_if, speed, model_us)
    params = record.parameters(TieringParameters)
    values += pool_values(pool_specs(record.manifest, params.devices))
    layout = {v: {"span_model": (meta.get("study") or {}).get("span_model") or {},
                  "chunk_size": _chunk_size(record, v)}
              for v, meta in record.manifest.variants.items() if engine_of(v) == LVM_THIN}
    values += _lvmthin_values(meas, phases, events, speed,
                              float(params.learned_fraction), read_fraction(record), layout,
                              params.span_model_ios)
    chunks = {_chunk_size(record, v) for v in layout}
    values.append(Value(f"{STUDY}.{LVM_THIN}.chunk_kib", chunks.pop() / 1024 if len(chunks) == 1 else math.nan, "KiB"))
    by_key = {v.key: v for v in values}
    outcomes = [outcome(c, by_key) for c in _claims(set(meas.pool))]
    curves = what_if_curves(fit, model_us.get(TIERED, {}).get("ssd_us_per_io", fit.tau_ssd_us if fit else math.nan))
    return TieringAnalysis(record, values, outcomes, meas, seconds, phases, events, fit, what_if, model_us, speed,
                           curves)


__all__ = ["TieringAnalysis", "analyse", "measurements_table", "seconds_table", "events_table", "phases_table",
           "phase_samples", "fit_model", "what_if_table", "at_tier_speed", "model_time_per_io", "SEED", "BATCH_S",
           "series_delta", "lateness_pct", "LVM_THIN_PHASES", "what_if_curves", "member_ms_per_io",
           "span_model_ratio", "remapped_fraction", "copy_model_values", "chunks_copied", "copied_write_pct",
           "device_time", "member_balance", "LAYOUT_COLUMNS", "pool_specs", "pool_values"]
