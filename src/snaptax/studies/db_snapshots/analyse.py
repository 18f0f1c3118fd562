"""Analysis of a database-snapshot run: per snapshot device and snapshot count the SELECT INTO's duration (fio's
runtime of the eight data-file jobs) with its spread, where the engine's time went (its counters: source writes,
copy reads, copy writes and commits per snapshot, the analogue of the seed's wait statistics), the cost model
(snaptax.models.db_snapshot) fitted per device, and the verdicts on the seed's claims. Pure: a run in, tables, fits
and values out.

Intervals. Each repetition ran k = 0, 1, 2 back to back, so a ratio to the baseline is paired within a repetition.
The values the claims judge are over the independent replicates (each device's whole plan on a fresh engine,
plan.replicated): per replicate one number — the geometric mean of its repetitions' paired ratios, its increments'
ratio of means, the RAID5's ratio over the SSD's of the same replicate — and a t pivot over the replicates
(replicate_estimates); the copies' share of the time a snapshot adds (C004-4) is a mean of the repetitions' shares
per replicate, then a linear t over the replicates. The summary's descriptive intervals pool the repetitions of all
replicates (paired log-ratio t; increments a ratio of means, delta method, Welch).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...analysis import Analysis, geometric_mean_by_replicate
from ...claims import Claim, outcome
from ...inference import Estimate, mean_estimate, ratio_estimate
from ...models import db_snapshot as dbm, heldout as ho
from ...plan import split_replicate
from ...record import RunRecord
from ...stats import (
    Interval,
    geometric_mean_interval,
    paired_ratio_interval,
    ratio_of_means_interval,
    ratio_of_ratios_interval,
)
from ...values import Value, format_number, heldout_values
from .heldout import THREE_LEVELS, heldout_test
from .plan import (
    DENSITY_PAGES,
    DENSITY_ROWS,
    PHASE,
    SEED_BASELINE_S,
    SEED_ROWS,
    SNAPSHOT_DEVICES,
    STUDY,
    DbSnapshotParameters,
)
from .statement import (
    ALT_MODULE_WRITE_MB_S,
    shifted_runs,
    statement_clause,
    statement_values,
    time_scale_of,
    write_alone_clause,
)

CITE = "kehayias"
WHERE = "Figure 1 and its text"
RAID5, SSD = SNAPSHOT_DEVICES
DIRECTION_BASIS = ("the seed states a direction without a number (Figure 1's bars are not in its text): the "
                   "published value is put at the smallest effect in that direction the tolerance resolves "
                   "(no-effect value ∓ 2 × tolerance), so an effect of ours in that direction gives 'agrees' or "
                   "'same direction' and anything else 'differs'")
TIME_KEYS = ("source_write_s", "copy_read_s", "copy_write_s", "commit_s")
# The shares of the added busy thread-time (value name → runs_table column): the copies' write + commit (C004-4's
# analogue of PREEMPTIVE_OS_WRITEFILE, judged) and their write alone (reported, not judged)
SHARE_COLUMNS = {"copy_write_share": "copy_write_commit_s", "copy_write_alone_share": "copy_write_s"}


@dataclass
class DbSnapshotAnalysis(Analysis):
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)       # one row per SELECT INTO run
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)    # per device and k: duration, ratio, time split
    fits: dict[str, dbm.DbSnapshotFit] = field(default_factory=dict)
    model: pd.DataFrame = field(default_factory=pd.DataFrame)      # per device: fit, overlap, predictions
    heldout: ho.HeldOut | None = None                                # the identified copy-work model's test


def _delta(m, name: str) -> float:
    c = m.counters.get(name)
    return float(c.delta) if c is not None and c.delta is not None else math.nan


def _snapshot_times(m) -> list[float]:
    """Per snapshot present during the run, oldest first: its copy write + commit thread-seconds."""
    names = sorted({n.split(".")[1] for n in m.counters if n.startswith("engine.snap") and n.count(".") == 2},
                   key=lambda s: int(s[4:]) if s[4:].isdigit() else 0)
    return [_delta(m, f"engine.{s}.copy_write_s") + _delta(m, f"engine.{s}.commit_s") for s in names]


def runs_table(record: RunRecord) -> pd.DataFrame:
    """One row per SELECT INTO run: duration (fio's runtime; the eight jobs start together and group reporting
    gives the longest), pages first-written (cow_faults), copies, the engine's time counters (thread-seconds), their
    sum (busy_s; nan when one is missing), the copies' write + commit (copy_write_commit_s: the analogue of SQL
    Server's PREEMPTIVE_OS_WRITEFILE, C004-4), the engine's mean concurrency (the counters' sum over the duration:
    Little's law) and the snapshot device's requests."""
    rows = []
    for m in record.measurements:
        if m.phase != PHASE:
            continue
        duration = max((float(r["runtime_ms"]) for r in m.fio), default=math.nan) / 1e3
        times = {k: _delta(m, f"engine.{k}") for k in TIME_KEYS}
        per_snap = _snapshot_times(m)
        busy = sum(v for v in times.values() if math.isfinite(v))
        # C004-4's denominator: the sum only where every counter is there (a missing one would shrink it silently)
        busy_all = busy if all(math.isfinite(v) for v in times.values()) else math.nan
        device, replicate = split_replicate(m.variant)
        rows.append({"device": device, "replicate": replicate, "repeat": m.repeat, "k": m.chain_length,
                     "index": m.index,
                     "duration_s": duration, "pages_first_written": _delta(m, "engine.cow_faults"),
                     "pages_copied": _delta(m, "engine.pages_copied"), **times,
                     "first_snapshot_s": per_snap[0] if len(per_snap) > 0 else 0.0,
                     "second_snapshot_s": per_snap[1] if len(per_snap) > 1 else 0.0,
                     "concurrency": busy / duration if duration > 0 else math.nan, "busy_s": busy_all,
                     "copy_write_commit_s": times["copy_write_s"] + times["commit_s"],
                     "statement_s": _delta(m, "engine.statement_s"),
                     "snapdev_writes": _delta(m, "snapdev.writes"),
                     "snapdev_rmw_rows": _delta(m, "snapdev.rmw_rows"),
                     # what the source device wrote per second of the run (its loop device's sectors): at k = 0
                     # the source's own rate, checked against its cap where the rig gave it one
                     "source_write_mb_s": _delta(m, "host.sectors_written") * 512 / 1e6 / duration
                     if duration > 0 else math.nan,
                     "lateness_pct": 100 * m.lateness_fraction})
    return pd.DataFrame(rows, columns=["device", "replicate", "repeat", "k", "index", "duration_s",
                                       "pages_first_written", "pages_copied", *TIME_KEYS, "first_snapshot_s",
                                       "second_snapshot_s", "concurrency", "busy_s", "copy_write_commit_s",
                                       "statement_s", "snapdev_writes", "snapdev_rmw_rows", "source_write_mb_s",
                                       "lateness_pct"])


def source_throttle(record: RunRecord) -> dict[str, float]:
    """The caps of the source under the SSD-class snapshots, as the run's manifest recorded the rig device
    (rigs/*.yaml `throttle`; empty: none, as on every run before 2026-12-01 and on a real rig's device)."""
    source = record.parameters(DbSnapshotParameters).source_of(SSD)
    for d in record.manifest.devices:
        if d.get("name") == source:
            return {k: float(v) for k, v in d.get("throttle", {}).items()}
    return {}


def cap_values(record: RunRecord, runs: pd.DataFrame) -> list[Value]:
    """Did the source's cap bind? Its write rate in the SSD pair's runs without snapshots (mean over them, with a t
    interval over the runs) and that rate as a share of the cap: near 100 % the source ran at its own rate; well
    below, the host disk or the engine held it back and the two devices were not two devices of their rate, unless
    the statement's work set the pace (runs with statement_ns: by design about a quarter of the cap). With the
    text clauses the set-up's prose reads (where the source is, what the snapshot SSD is, how the table was sized),
    which differ between runs with capped devices and the runs before them."""
    k0 = (runs[(runs.k == 0) & (runs.device == SSD)].source_write_mb_s.dropna().to_numpy() if not runs.empty
          else np.array([]))
    caps, params = source_throttle(record), record.parameters(DbSnapshotParameters)
    cap = caps.get("write_mb_s", math.nan)
    # repetitions, not independent runs: their interval is descriptive
    rate = mean_estimate(k0, independent=False) if len(k0) > 1 else None
    rate_value = (Value.of_estimate(f"{STUDY}.k0.source_write_mb_s", rate, "MB/s", 0) if rate is not None
                  else Value(f"{STUDY}.k0.source_write_mb_s", math.nan, "MB/s"))
    share = 100 * rate_value.value / cap if math.isfinite(cap) and cap > 0 else math.nan
    share_value = Value(f"{STUDY}.k0.source_write_of_cap", share, "%", digits=0)
    return [Value(f"{STUDY}.source_cap_mb_s", cap, "MB/s", digits=0), rate_value, share_value,
            Value(f"{STUDY}.source_clause", text=source_clause(params)),
            Value(f"{STUDY}.pushers_clause", text=pushers_clause(params)),
            Value(f"{STUDY}.snapshot_ssd_clause", text=snapshot_ssd_clause(caps)),
            Value(f"{STUDY}.ssd_difference_clause", text=ssd_difference_clause(caps)),
            Value(f"{STUDY}.table_clause", text=table_clause(record.manifest.profile.name, caps, rate_value,
                                                             share_value, bool(params.statement_ns)))]


def source_clause(p: DbSnapshotParameters) -> str:
    """Where the data files were, for the set-up's first sentence."""
    if p.source_of(RAID5) == p.source_of(SSD):
        return "The source (the data files) is the rig's SSD-class device"
    return ("The source (the data files) is SSD-class: with the snapshots on the RAID5, the host disk at its own rate "
            "(of the order of the seed's four ioDrive modules), so that the RAID5, emulated at its drives' speed, "
            "meets a source of about the seed's speed; with them on the second SSD, a device capped like that SSD "
            "(below)")


def pushers_clause(p: DbSnapshotParameters) -> str:
    """Who makes the copies, for the set-up's sentence on the engine: one pusher (SQL Server's statement thread),
    or (runs before 20261201T032541Z) every request thread at once."""
    if not p.pushers:
        return (f"Every request thread made its own copies, so up to {p.iodepth * p.data_files} requests copied at "
                "once, as many as the table's writes in flight")
    depth = ("fio keeps the table's writes outstanding, each waiting for the pusher" if p.statement_ns
             else "the table's writes keep their depth")
    who = "one at a time, by one thread (the pusher)" if p.pushers == 1 else f"{p.pushers} at a time"
    return (f"The copies are made {who}, while {depth}: "
            "SQL Server pushes a page's copies in the thread of the statement "
            "about to change the page, before the change goes on, and SQL Server 2012 runs a SELECT INTO's "
            "insert in one thread (a parallel insert came with SQL Server 2014)")


def snapshot_ssd_clause(caps: dict[str, float]) -> str:
    """What the SSD-class snapshot device is, for the set-up's sentence: two capped devices, or (runs before
    2026-12-01) a second file sharing the host disk's bandwidth with the source."""
    if "write_mb_s" not in caps:
        return ("a second SSD-class file on the same host disk (the seed's storage equivalent in performance, here "
                "also sharing the source's bandwidth)")
    reads = f" and {format_number(caps['read_mb_s'])}\u2009MB/s of reads" if "read_mb_s" in caps else ""
    return ("a second SSD-class device as fast as the source (the seed's storage equivalent in performance): the "
            "source and it are two files on the host disk, each capped by a blkio throttle at the same rates of its "
            f"own, {format_number(caps['write_mb_s'])}\u2009MB/s of writes{reads}, so that neither takes the "
            "other's bandwidth")


def ssd_difference_clause(caps: dict[str, float]) -> str:
    """How the SSD-class devices differ from the seed's, for the limits' sentence."""
    if "write_mb_s" not in caps:
        return ("our SSD-class snapshot device shares the host disk with the source, where the seed's Nytro card was a "
                "device of its own")
    return ("our two SSD-class devices have rates of their own but one host disk beneath them, whose latency under "
            "the other's load they share, and their caps scale the seed's cards' rates down to what that disk serves "
            "to both at once")


def table_clause(profile: str, caps: dict[str, float], rate: Value, share: Value, statement: bool = False) -> str:
    """How the table was sized, for the set-up's sentence (`statement`: the run had the statement's own work)."""
    if statement:
        said = (f"; without snapshots on the SSD pair the source wrote {rate.formatted()}\u2009MB/s, "
                f"{share.formatted()}\u2009% of its cap: the statement's work, not the cap, set the pace"
                if math.isfinite(share.value) else "")
        return (f"The table is the seed's {format_number(SEED_ROWS)} rows at the density of AdventureWorks' "
                f"SalesOrderHeader ({format_number(DENSITY_ROWS)} rows in {format_number(DENSITY_PAGES)} pages), "
                "at every profile (they differ in how many runs they make); it leaves out the two computed columns "
                f"SELECT INTO stores, about a tenth more{said}")
    if "write_mb_s" in caps:
        said = (f"; in those runs the source wrote {rate.formatted()}\u2009MB/s, {share.formatted()}"
                f"\u2009% of its cap" if math.isfinite(share.value) else "")
        return ("The table is sized so that a run without snapshots on the SSD pair takes the seed's "
                f"{format_number(SEED_BASELINE_S, 1)}\u2009s at its source's write cap, at every profile (they "
                f"differ in how many runs they make){said}")
    if profile == "full":
        return ("The full profile sized the table so that a run without snapshots took about the seed's "
                f"{format_number(SEED_BASELINE_S, 1)}\u2009s on the host disk as it ran when the size was chosen")
    return (f"The table's size at the {profile} profile is set by its time budget (a table sized to the seed's "
            "time without snapshots would lengthen every run in proportion)")


def _paired(runs: pd.DataFrame, device: str, k: int, base: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Durations with k and with `base` snapshots on one device, paired by repetition (of every replicate)."""
    d = runs[runs.device == device].pivot_table(index=["replicate", "repeat"], columns="k", values="duration_s")
    if k not in d.columns or base not in d.columns:
        return np.array([]), np.array([])
    d = d[[k, base]].dropna()
    return d[k].to_numpy(), d[base].to_numpy()


def ratio_to_baseline(runs: pd.DataFrame, device: str, k: int) -> Interval:
    """T(k)/T(0) on one device, paired by repetition."""
    a, b = _paired(runs, device, k)
    return paired_ratio_interval(a, b)


def second_over_first(runs: pd.DataFrame, device: str) -> Interval:
    """What the second snapshot adds over what the first adds: mean(T2 − T1) / mean(T1 − T0), per repetition's
    increments (ratio of means)."""
    d = runs[runs.device == device].pivot_table(index=["replicate", "repeat"], columns="k", values="duration_s")
    if not {0, 1, 2} <= set(d.columns):
        return Interval(math.nan, math.nan, math.nan, 0, "ratio of means")
    d = d[[0, 1, 2]].dropna()
    return ratio_of_means_interval((d[2] - d[1]).to_numpy(), (d[1] - d[0]).to_numpy())


def device_over_device(runs: pd.DataFrame, k: int) -> Interval:
    """The RAID5's T(k)/T(0) over the SSD's: how much worse the RAID5 keeps up, each device against its own
    baseline (a ratio of two independent ratios: log half-widths combined)."""
    a, b = ratio_to_baseline(runs, RAID5, k), ratio_to_baseline(runs, SSD, k)
    if not (math.isfinite(a.estimate) and math.isfinite(b.estimate)):
        return Interval(math.nan, math.nan, math.nan, 0, "ratio of ratios")
    return ratio_of_ratios_interval(a.estimate / b.estimate, (a.low, a.high), (b.low, b.high), min(a.n, b.n),
                                    "ratio of paired ratios (log half-widths combined)")


def _by_replicate(runs: pd.DataFrame, device: str, column: str = "duration_s") -> pd.DataFrame:
    """`column` (default the durations) on one device: a row per (replicate, repetition), a column per k."""
    return runs[runs.device == device].pivot_table(index=["replicate", "repeat"], columns="k", values=column)


def _ratio_by_replicate(runs: pd.DataFrame, device: str, k: int) -> pd.Series:
    """Per replicate, the geometric mean over its repetitions of T(k) / T(0) (repetitions lacking either left
    out)."""
    d = _by_replicate(runs, device)
    if k not in d.columns or 0 not in d.columns:
        return pd.Series(dtype=float)
    d = d[[k, 0]].dropna()
    d = d[(d[k] > 0) & (d[0] > 0)]
    return geometric_mean_by_replicate(d[k] / d[0], d.index.get_level_values("replicate"))


def added_column(p: DbSnapshotParameters) -> str:
    """C004-4's denominator: with one pusher doing the statement's work (statement_ns) the run's added wall time
    (duration_s; science plan §24, declared before it was computed: the one pusher's copy write + commit time is
    wall time, in series with the statement's work), else the engine's added thread-time (busy_s; §18), the rule
    every earlier run was judged by."""
    return "duration_s" if p.pushers == 1 and p.statement_ns else "busy_s"


def _copy_write_share_by_replicate(runs: pd.DataFrame, device: str, k: int,
                                   column: str = "copy_write_commit_s", added: str = "busy_s") -> pd.Series:
    """Per replicate, the mean over its repetitions of 100 × column(k) ÷ (added(k) − added(0)): the share of the
    time the k snapshots add (`added`: busy_s, the engine's thread-time, science plan §18; duration_s, the run's
    wall time, §24) that went to writing and committing the copies (C004-4; `column` copy_write_s: to writing them
    alone, reported beside it, not judged). Repetitions lacking either k or a counter are left out, and those whose
    snapshots added exactly no time (no share to form); a negative added time is kept (its share is negative:
    dropping it would bias the mean up)."""
    busy, copy = _by_replicate(runs, device, added), _by_replicate(runs, device, column)
    if k not in copy.columns or k not in busy.columns or 0 not in busy.columns:
        return pd.Series(dtype=float)
    added = (busy[k] - busy[0]).where(lambda a: a != 0)
    share = (100 * copy[k] / added).dropna()
    return share.groupby(level="replicate").mean()


def replicate_estimates(runs: pd.DataFrame, added: str = "busy_s") -> dict[str, Estimate]:
    """The values the claims judge, each over the independent replicates (one number per replicate, then a t pivot):
      <device>.k<k>.ratio           T(k)/T(0), the geometric mean of the replicate's paired ratios (%);
      <device>.second_over_first    mean(T2 − T1) / mean(T1 − T0) within the replicate (%, linear: an increment
                                    can come out ≤ 0);
      raid5_over_ssd.k<k>           the RAID5's T(k)/T(0) over the SSD's, both of the same replicate (%);
      <device>.k<k>.copy_write_share  the copies' write + commit time's share of the time the snapshots add
                                    (`added`: thread-time busy_s or wall time duration_s, added_column;
                                    _copy_write_share_by_replicate; %, linear);
      <device>.k<k>.copy_write_alone_share  the same for the copies' write alone (not judged).
    A run of one replicate gives estimates of n = 1, without an interval (not judged: n < 3)."""
    out: dict[str, Estimate] = {}
    for device in [d for d in SNAPSHOT_DEVICES if d in set(runs.device)]:
        for k in (1, 2):
            ratios = _ratio_by_replicate(runs, device, k)
            out[f"{device}.k{k}.ratio"] = ratio_estimate(ratios.to_numpy(), np.ones(len(ratios)), "pct_log")
        d = _by_replicate(runs, device)
        if {0, 1, 2} <= set(d.columns):
            d = d[[0, 1, 2]].dropna()
            per = [100 * float((g[2] - g[1]).mean() / (g[1] - g[0]).mean())
                   for _, g in d.groupby(level="replicate") if (g[1] - g[0]).mean() != 0]
            out[f"{device}.second_over_first"] = mean_estimate(per)
        for k in (1, 2):
            for name, column in SHARE_COLUMNS.items():
                if len(share := _copy_write_share_by_replicate(runs, device, k, column, added)):
                    out[f"{device}.k{k}.{name}"] = mean_estimate(list(share))
    for k in (1, 2):
        a, b = _ratio_by_replicate(runs, RAID5, k), _ratio_by_replicate(runs, SSD, k)
        common = a.index.intersection(b.index)
        out[f"raid5_over_ssd.k{k}"] = ratio_estimate(a.loc[common].to_numpy(), b.loc[common].to_numpy(), "pct_log")
    return out


def _per_page(seconds_column: str) -> str:
    """'copy_write_s' -> 'copy_write_us_per_page'."""
    return seconds_column[:-2] + "_us_per_page"


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per device and k: geometric mean duration with its log-t interval (stats.geometric_mean_interval;
    duration_method says which rule it got), min–max, ratio to k = 0 (paired), and where the engine's time went per
    first-written page (thread-µs)."""
    rows = []
    for device in [d for d in SNAPSHOT_DEVICES if d in set(runs.device)]:
        for k in sorted(runs[runs.device == device].k.unique()):
            g = runs[(runs.device == device) & (runs.k == k)]
            t = geometric_mean_interval(g.duration_s.to_numpy())
            r = ratio_to_baseline(runs, device, int(k)) if k else None
            pages = float(g.pages_first_written.mean()) if k else math.nan
            row = {"device": device, "k": int(k), "runs": len(g), "duration_s": t.estimate,
                   "duration_low": t.low, "duration_high": t.high, "duration_method": t.method,
                   "min_s": float(g.duration_s.min()),
                   "max_s": float(g.duration_s.max()),
                   "ratio_pct": 100 * r.estimate if r else 100.0, "ratio_low": 100 * r.low if r else math.nan,
                   "ratio_high": 100 * r.high if r else math.nan, "pages_first_written": pages,
                   "concurrency": float(g.concurrency.mean())}
            for key in TIME_KEYS + ("first_snapshot_s", "second_snapshot_s"):
                row[_per_page(key)] = 1e6 * float(g[key].mean()) / pages if k else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def fit_models(runs: pd.DataFrame) -> dict[str, dbm.DbSnapshotFit]:
    """The cost model per snapshot device on every run (k = 0 runs' P does not enter the model)."""
    out = {}
    for device in [d for d in SNAPSHOT_DEVICES if d in set(runs.device)]:
        g = runs[runs.device == device]
        pages = g.pages_first_written.where(g.k > 0, 0.0).to_numpy()
        try:
            out[device] = dbm.fit(g.k.to_numpy(), pages, g.duration_s.to_numpy())
        except (ValueError, np.linalg.LinAlgError):
            continue
    return out


def model_table(runs: pd.DataFrame, fits: dict[str, dbm.DbSnapshotFit], pushers: int | None = None) -> pd.DataFrame:
    """Per device: the fitted T0, τ1, τ2 (µs per first-written page) with intervals, τ2/τ1, and the overlap ω of
    the second snapshot's copies: c = its own copy write + commit thread-seconds per page over the copies' mean
    concurrency (Little's law turns thread-seconds into wall seconds), ω = 1 − τ2/c. The copies' concurrency is the
    engine's (its request threads') or, with `pushers` (the run's requests copying at once at most), between 1 and
    that: with one pusher their thread-seconds are wall seconds. (Until 2026-12-01 the engine's mean concurrency was
    only capped at `pushers`; with the statement's work the engine is idle much of a run, its mean concurrency falls
    below 1, and dividing by it inflated c: science plan §24.)"""
    rows = []
    for device, f in fits.items():
        two = runs[(runs.device == device) & (runs.k == 2)]
        concurrency = two.concurrency.clip(lower=1, upper=pushers) if pushers else two.concurrency
        c = float((two.second_snapshot_s / concurrency / two.pages_first_written).mean()) if len(two) \
            else math.nan
        rows.append({"device": device, "t0_s": f.t0_s, "t0_low": f.ci95[0][0], "t0_high": f.ci95[0][1],
                     "tau1_us": 1e6 * f.tau1_s, "tau1_low": 1e6 * f.ci95[1][0], "tau1_high": 1e6 * f.ci95[1][1],
                     "tau2_us": 1e6 * f.tau2_s, "tau2_low": 1e6 * f.ci95[2][0], "tau2_high": 1e6 * f.ci95[2][1],
                     "second_over_first": f.second_over_first, "second_copy_us": 1e6 * c,
                     "overlap": dbm.overlap(f.tau2_s, c) if math.isfinite(c) and c > 0 else math.nan,
                     "points": f.points})
    return pd.DataFrame(rows)


# The spindle emulator's flush fix (commit 9f03b4ac1; emulator version 2, record.EMULATOR_VERSIONS): before it, a
# flush that found nothing to destage was answered at once, not after the drive's command overhead. Flushes are half
# of this study's commands on the RAID5 (one per copy), so a run timed by an emulator before it understates each
# copy's cost there: its rows on the RAID5 are provisional (paper/sections/reproducibility.tex says why the run was
# not measured again).
FLUSH_FIX_EMULATOR = 2
PROVISIONAL_RAID5 = ("measured before the emulator's flush fix: a flush with nothing to destage was answered at once, "
                     "not after the drive's overhead, so this run understates each copy's cost on the emulated RAID5")


def provisional_on_raid5(emulator_version: int | None) -> str:
    """Why a run's rows on the emulated RAID5 are provisional ('' if they are not): the emulator that timed it (the
    manifest's emulator_version) predates the flush fix."""
    return PROVISIONAL_RAID5 if emulator_version is not None and emulator_version < FLUSH_FIX_EMULATOR else ""


def claims(emulator_version: int | None = None, pushers: int | None = None, statement: bool = False) -> list[Claim]:
    """Seed 004's claims (Kehayias, SQLPerformance.com), each with the value of ours that tests it; those on the
    emulated RAID5 provisional when the emulator that timed the run (`emulator_version`, the manifest's) predates
    the flush fix; C004-4's analogue read as wall time with one pusher doing the statement's work (`pushers`,
    `statement`: added_column)."""
    k = STUDY
    share = ("the one pusher's copy write + commit time over the time the snapshot adds to the run"
             if pushers == 1 and statement
             else "the copies' write + commit thread-time over the engine's added thread-time")
    cow = "8 KiB copy-on-first-write engine, 64 KiB allocation units"
    raid5 = provisional_on_raid5(emulator_version)
    return [
        Claim(f"{k}.C004-1", CITE, WHERE, "one snapshot on storage as fast as the source: duration against none",
              120.0, "%", 100.0, 10.0, DIRECTION_BASIS + "; ±10 pp is the smallest difference a bar chart of "
              "ten-run averages shows plainly",
              f"{k}.{SSD}.k1.ratio", f"{cow}, snapshots on ssd_snapshots", "overhead (no number)"),
        Claim(f"{k}.C004-2a", CITE, WHERE, "15K RAID5: what the second snapshot adds, % of what the first adds",
              70.0, "%", 100.0, 15.0, DIRECTION_BASIS + "; ±15 pp separates 'less' from 'as much'",
              f"{k}.{RAID5}.second_over_first",
              f"{cow}, snapshots on emulated raid5_15k_6", "lower (no number)", provisional=raid5),
        Claim(f"{k}.C004-2b", CITE, WHERE, "SSD: what the second snapshot adds, % of what the first adds",
              70.0, "%", 100.0, 15.0, DIRECTION_BASIS + "; as C004-2a", f"{k}.{SSD}.second_over_first",
              f"{cow}, snapshots on ssd_snapshots", "lower (no number)"),
        Claim(f"{k}.top_wait", CITE, "wait statistics (Figure 2 and its text)", "the writes of the copies "
              "(PREEMPTIVE_OS_WRITEFILE) are the top wait: their share of the time a snapshot adds", 60.0, "%", 50.0,
              5.0, DIRECTION_BASIS + "; a top wait holds more than half of the added time",
              f"{k}.{SSD}.k1.copy_write_share", f"{cow}, snapshots on ssd_snapshots; {share}",
              "top wait (no number)", label="C004-4", direction=1),
        Claim(f"{k}.C004-3", CITE, WHERE, "two snapshots: the 15K RAID5's slowdown over the SSD's (T2/T0 over "
              "T2/T0)", 150.0, "%", 100.0, 25.0, DIRECTION_BASIS + "; 'much more difficult' is a large effect: "
              "±25 pp separates it from 'somewhat'", f"{k}.raid5_over_ssd.k2",
              "emulated raid5_15k_6 vs ssd_snapshots", "'a much more difficult time' (no number)",
              provisional=raid5),
    ]


def _values(record: RunRecord, runs: pd.DataFrame, summary: pd.DataFrame, model: pd.DataFrame) -> list[Value]:
    k, p = STUDY, record.parameters(DbSnapshotParameters)
    est = replicate_estimates(runs, added_column(p))
    out = [Value(f"{k}.table_mib", float(p.scale.table_bytes) / (1 << 20), "MiB"),
           Value(f"{k}.pages", float(p.pages), "pages"),
           Value(f"{k}.replicates", float(p.scale.replicates), ""),
           Value(f"{k}.repeats", float(p.scale.repeats), ""),
           Value(f"{k}.ssd_repeats", float(p.scale.ssd_repeats), ""),
           Value(f"{k}.iodepth", float(p.iodepth), ""),
           Value(f"{k}.data_files", float(p.data_files), ""),
           Value(f"{k}.seed_baseline_s", SEED_BASELINE_S, "s", digits=1)]
    for device in SNAPSHOT_DEVICES:
        for kk in (0, 1, 2):
            row = summary[(summary.device == device) & (summary.k == kk)] if not summary.empty else summary
            base = f"{k}.{device}.k{kk}"
            if row.empty:
                out += [Value(f"{base}.duration_s", math.nan, "s", digits=2)]
                if kk:
                    out += [Value(f"{base}.ratio", math.nan, "%")] + [
                        Value(f"{base}.{t[:-2]}_us", math.nan, "µs") for t in TIME_KEYS]
                continue
            r = row.iloc[0]
            out.append(Value.where_defined(f"{base}.duration_s", float(r.duration_s), float(r.duration_low),
                                           float(r.duration_high), int(r.runs), "s", 2, str(r.duration_method)))
            if kk:
                out.append(Value.of_estimate(f"{base}.ratio", est[f"{device}.k{kk}.ratio"], "%"))
                for t in TIME_KEYS:
                    out.append(Value(f"{base}.{t[:-2]}_us", float(r[_per_page(t)]), "µs", digits=0))
        key = f"{k}.{device}.second_over_first"
        out.append(Value.of_estimate(key, est[f"{device}.second_over_first"], "%")
                   if f"{device}.second_over_first" in est
                   else Value.of(key, second_over_first(runs, device).scaled(100), "%"))
        m = model[model.device == device] if not model.empty else model
        if m.empty:
            out += [Value(f"{k}.{device}.fit.{n}", math.nan, u) for n, u in
                    (("t0_s", "s"), ("tau1_us", "µs"), ("tau2_us", "µs"), ("overlap", ""), ("second_copy_us", "µs"))]
            continue
        r = m.iloc[0]
        n = int(r.points)
        out += [Value(f"{k}.{device}.fit.t0_s", float(r.t0_s), "s", float(r.t0_low), float(r.t0_high), n, 2,
                      method="least squares, t"),
                Value(f"{k}.{device}.fit.tau1_us", float(r.tau1_us), "µs", float(r.tau1_low), float(r.tau1_high), n,
                      1, method="least squares, t"),
                Value(f"{k}.{device}.fit.tau2_us", float(r.tau2_us), "µs", float(r.tau2_low), float(r.tau2_high), n,
                      1, method="least squares, t"),
                Value(f"{k}.{device}.fit.overlap", float(r.overlap), "", digits=2),
                Value(f"{k}.{device}.fit.second_copy_us", float(r.second_copy_us), "µs", digits=1)]
    for kk in (1, 2):
        out.append(Value.of_estimate(f"{k}.raid5_over_ssd.k{kk}", est[f"raid5_over_ssd.k{kk}"], "%"))
        # every device's shares, nan where the run cannot form one (C004-4's claim reads copy_write_share on the SSD
        # at k = 1; the copy write alone is reported beside it)
        names = [f"{device}.k{kk}.{share}" for device in SNAPSHOT_DEVICES for share in SHARE_COLUMNS]
        out += [Value.of_estimate(f"{k}.{n}", est[n], "%", 0) if n in est else Value(f"{k}.{n}", math.nan, "%")
                for n in names]
    base = summary[(summary.device == SSD) & (summary.k == 0)] if not summary.empty else summary
    # the seed's baseline at the SSD pair's time scale (the statement's work scaled with its devices; 1 before it)
    scale = time_scale_of(p, SSD) if p.statement_of(SSD) else 1.0
    out.append(Value(f"{k}.baseline_over_seed", 100 * float(base.duration_s.iloc[0]) / (SEED_BASELINE_S * scale)
                     if len(base) else math.nan, "%"))
    out += statement_values(runs, p)
    alone = next(v for v in out if v.key == f"{k}.{SSD}.k1.copy_write_alone_share")
    out.append(Value(f"{k}.write_alone_clause", text=write_alone_clause(alone)))
    return out + sensitivity_values(runs, p)


def sensitivity_values(runs: pd.DataFrame, p: DbSnapshotParameters) -> list[Value]:
    """The ratios the claims judge had the time scale assumed a module writing at ALT_MODULE_WRITE_MB_S
    (statement.shifted_runs), over the replicates as the measured ones (`sensitivity.*`); nan without the statement's
    work (a run before it, or `runs` without statement_s)."""
    k = f"{STUDY}.sensitivity"
    shifted = shifted_runs(runs, p) if p.statement_ns and "statement_s" in runs.columns else runs.iloc[0:0]
    est = replicate_estimates(shifted) if len(shifted) and shifted.duration_s.notna().all() else {}
    keys = [f"{SSD}.k1.ratio", f"{SSD}.k2.ratio", f"{SSD}.second_over_first", "raid5_over_ssd.k2"]
    return [Value(f"{k}.module_write_mb_s", ALT_MODULE_WRITE_MB_S, "MB/s")] + [
        Value.of_estimate(f"{k}.{n}", est[n], "%") if n in est else Value(f"{k}.{n}", math.nan, "%") for n in keys]


def analyse(record: RunRecord) -> DbSnapshotAnalysis:
    runs = runs_table(record)
    summary = summary_table(runs)
    fits = fit_models(runs)
    model = model_table(runs, fits, record.parameters(DbSnapshotParameters).pushers)
    values = _values(record, runs, summary, model) + cap_values(record, runs)
    params = record.parameters(DbSnapshotParameters)
    # own baselines where the variants' sources differ (heldout's docstring, science plan §24); the test as first
    # declared (a shared T0) is reported beside it
    own = params.source_of(RAID5) != params.source_of(SSD)
    heldout, beta, cov = heldout_test(runs, summary, own_baseline=own)
    values += heldout_values(f"{STUDY}.copy_work.heldout_shared_t0",
                             heldout_test(runs, summary)[0] if own else heldout)
    dof = heldout.fit_points - 2
    half = (float(sps.t.ppf(0.975, dof)) * np.sqrt(np.diag(cov)) if dof > 0 and np.all(np.isfinite(cov))
            else np.full(2, np.nan))
    values += heldout_values(f"{STUDY}.copy_work.heldout", heldout)
    values += [Value(f"{STUDY}.copy_work.fit.t0_s", float(beta[0]), "s", float(beta[0] - half[0]),
                     float(beta[0] + half[0]), heldout.fit_points, 2, None, "least squares, t"),
               Value(f"{STUDY}.copy_work.fit.beta", float(beta[1]), "", float(beta[1] - half[1]),
                     float(beta[1] + half[1]), heldout.fit_points, 3, None, "least squares, t")]
    three = ho.judge([], int(len(runs)), "nothing beyond the levels it is fitted on", not_tested=THREE_LEVELS)
    values += heldout_values(f"{STUDY}.cost.heldout", three)
    by_key = {v.key: v for v in values}
    outcomes = [outcome(c, by_key) for c in claims(record.manifest.emulator_version, params.pushers,
                                                    bool(params.statement_ns))]
    return DbSnapshotAnalysis(record, values, outcomes, runs, summary, fits, model, heldout)


__all__ = ["added_column", "statement_values", "statement_clause", "sensitivity_values",
           "DbSnapshotAnalysis", "analyse", "runs_table", "summary_table", "fit_models", "model_table",
           "ratio_to_baseline", "second_over_first", "device_over_device", "replicate_estimates", "claims",
           "source_throttle", "cap_values", "source_clause", "snapshot_ssd_clause", "ssd_difference_clause",
           "table_clause", "write_alone_clause"]
