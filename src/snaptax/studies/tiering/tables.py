"""A tiering run read into tables: one row per fio run (measurements_table: IOPS, where the pool served the I/O,
the array's and its members' time, the chunks LVM thin copied), per pool and second of the timeline (seconds_table),
the timeline's events, and per pool and phase the VM-level IOPS and their ratios to the initial phase
(phases_table).

Intervals. A phase is one fio run; its per-second IOPS are not independent (a second's queue carries into the
next), so each phase is cut into BATCH_S-second batches and the ratio of two phases' means is formed from their
batch means (ratio of means, Welch, snaptax.stats) — the batch-means method of simulation output analysis. Both
phases of a ratio are minutes apart in one timeline on one device. These intervals describe one timeline; the
claims' intervals are over independent replicates (replicates.py), which batch means never count as.

Replicates. `pool` in every table is the variant as recorded: the first replicate keeps the pool's name
(`sas_pool`, `tier_pool.lvmthin`), later ones carry plan.replicate_name's mark (`sas_pool@r1`); plan.pool_of,
engine_of and replicate_of read it.
"""
from __future__ import annotations

import csv
import math
from typing import Any

import numpy as np
import pandas as pd

from ...record import RunRecord, lateness_fraction, service_time_s
from ...stats import ratio_of_means_interval
from .plan import (
    LVM_THIN,
    SWEEP,
    engine_of,
    pool_of,
    replicate_of,
)

BATCH_S = 3                                   # seconds per batch mean
RATIO_PHASES = ("with", "delete", "after", "relearned")
SEED = {"sas_pool": {"initial": 2450.0, "with": 300.0, "delete": 180.0, "after": 2650.0},
        "tier_pool": {"initial": 11500.0, "with": 420.0, "delete": 300.0, "after": 11500.0}}


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


def variant_chunk_size(record: RunRecord, variant: str) -> float:
    """An LVM thin variant's chunk size in bytes from its record (nan for the qcow2 timelines)."""
    config = (record.manifest.variants.get(variant) or {}).get("config") or {}
    return float(config.get("chunk_size") or math.nan) if engine_of(variant) == LVM_THIN else math.nan


def measurements_table(record: RunRecord) -> pd.DataFrame:
    rows = []
    hosts = {v: _host_series(record, v) for v in record.manifest.variants if engine_of(v) == LVM_THIN}
    chunk_size = {v: variant_chunk_size(record, v) for v in {m.variant for m in record.measurements}}
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
    """Per timeline (`pool`: the recorded variant, every replicate; `replicate` its number) and phase: the mean of
    the phase's batch means, their ratio to the initial phase's with the Welch interval within the timeline
    (descriptive: the claims' intervals are over replicates, replicates.py), the SSD-served share, cycles inside and
    the seed's figures. The coverage sweeps are not timelines of the seed's phases (coverage.py reads them)."""
    rows = []
    for pool in sorted(p for p in meas.pool.unique() if engine_of(p) != SWEEP):
        initial = phase_samples(seconds, meas, pool, "initial")
        for phase in ("initial", *RATIO_PHASES):
            m = meas[(meas.pool == pool) & (meas.phase == phase)]
            if m.empty:
                continue
            x = phase_samples(seconds, meas, pool, phase)
            r = ratio_of_means_interval(x, initial)
            rows.append({"pool": pool, "replicate": replicate_of(pool), "phase": phase,
                         "iops": float(np.mean(x)) if len(x) else math.nan,
                         "batches": len(x), "ratio_pct": 100 * r.estimate, "ratio_low": 100 * r.low,
                         "ratio_high": 100 * r.high, "n": r.n, "ssd_share": float(m.ssd_share.iloc[0]),
                         "cycles_inside": float(m.tier_cycles.iloc[0]),
                         "seed_iops": SEED[pool_of(pool)].get(phase, math.nan),
                         "seed_ratio_pct": 100 * SEED[pool_of(pool)].get(phase, math.nan)
                         / SEED[pool_of(pool)]["initial"]})
    return pd.DataFrame(rows)
