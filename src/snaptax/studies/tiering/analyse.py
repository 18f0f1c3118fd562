"""Analysis of a tiering run: per pool and phase the VM-level IOPS (fio's per-second logs, parsed by fiologparser)
and where the pool served the I/O (the SSD-served share p from the pool's counters), the ratios to the initial
phase that seed 002 reports, the misplacement model fitted to the tiered pool's per-second points with its
predictions, and the verdicts on the seed's claims. Pure: a run in, tables, a fit and values out.

Variants. The qcow2 timelines are named after their pool (`sas_pool`, `tier_pool`), the LVM thin ones
`<pool>.lvmthin` (plan.lvmthin_variant); the `pool` column of every table holds the variant. The qcow2 rows carry
the claims; the LVM thin rows are the array-native contrast. An LVM thin run's own counters are the guest's, so its
SSD-served share, tiering cycles and emulator lateness are cut from the host series at the run's start and end
(the guest's step lines, stamped on the host's clock).

Replicates (issue 47.3). The qcow2 timelines of each pool may be measured several times, each an independent
replicate (`sas_pool`, `tier_pool`, `sas_pool@r1`, ...; plan.qcow2_variants). The claims' values, every qcow2
phase ratio and the ratios at the SSD tier's speed, are formed per replicate and their intervals taken over the
replicates (replicates.py); with one replicate they are not judged (n < 3). Everything else the paper describes
(IOPS, SSD-served shares, the commit's times, learning, the misplacement fit and its what-ifs, the held-out test,
the figures and the phases table) is the first replicate's, the timeline every run has; the lateness and the
cycles that ended inside steady phases are checked over every replicate. The LVM thin contrast is measured once.

Modules. tables.py reads the run into tables (per fio run, per second, per phase); misplacement.py fits the
misplacement model and computes its predictions and what-ifs; lvmthin.py gives the LVM thin contrast's values and
its models of the loss after lvremove; replicates.py the claims' values over replicates; coverage.py the SAS-only
pool's coverage sweep and the stand-in's operating point read off it; this module puts them together into the
values and the claims' verdicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from ...analysis import Analysis
from ...claims import Claim, outcome
from ...models import heldout as ho, tiering as tm
from ...record import Manifest, RunRecord
from ...spindle.profiles import DeviceSpec, Raid5Spec, TierSpec, spec_from_json
from ...stats import Interval, ratio_of_ratios_interval
from ...values import Value, heldout_values
from .. import standin_settings
from .coverage import sweep_summary, sweep_table, sweep_values
from .heldout import heldout_test
from .lvmthin import lvmthin_values
from .misplacement import at_tier_speed, fit_model, model_time_per_io, what_if_curves, what_if_table
from .plan import (
    LVM_THIN,
    POOLS,
    PRESET_COVERAGE,
    STAND_IN,
    STUDY,
    SWEEP,
    TIERED,
    TieringParameters,
    engine_of,
    pool_of,
    replicate_of,
)
from .replicates import estimates, model_rate_value, over_replicates, per_replicate, replicate_values
from .tables import (
    BATCH_S,
    RATIO_PHASES,
    events_table,
    measurements_table,
    phase_samples,
    phases_table,
    seconds_table,
    variant_chunk_size,
)

CITE = "kanap"
WHERE_SAS = "table 'V7000 full SAS'"
WHERE_TIER = "table 'V7000 SAS + SSD tiering'"
LOAD_END_MARGIN_S = 1.0                       # a commit ending this close to the load's end ended with it
RATIO_BASIS = ("a judgment: the seed's figures are single IOmeter readings of a plateau; ±5 pp of the initial rate "
               "separates 'a tenth' from 'a twentieth' and from 'a third'")
AFTER_BASIS = ("a judgment: the seed reads its 2650 after 2450 as recovered ('even a bit better, but that's not "
               "related to our test'), so the claim is 100 %; ±10 pp separates recovered from not")
RELATIVE_BASIS = ("a judgment: the ratio of two ratios each read to ±5 pp; ±15 pp separates 'loses a larger "
                  "fraction' (below 100 %) from the same fraction")
SAS_STAND_IN = "qcow2 on the emulated SAS-only pool (sas_pool)"
# the held-out test's engines: label → (SAS-only pool variant, tiered pool variant)
HELDOUT_ENGINES = {"qcow2": ("sas_pool", TIERED), "LVM thin": (f"sas_pool.{LVM_THIN}", f"{TIERED}.{LVM_THIN}")}
# The tiered pool's claims are judged on its measured ratios (issue 45.3): since the emulator bounds its spinning
# (spindle_plugin.c, spin_margin) the flash tier is served near its model's rate (value
# tier_pool.initial.model_rate_pct says how near), and the misplacement model at the tier's own speed is the
# prediction the measurement checks (decided before the first run with the bounded emulator was analysed).
TIER_MEASURED = "qcow2 on the emulated tiered pool (tier_pool), measured"


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
    heldout: ho.HeldOut | None = None                                        # the misplacement model's (heldout.py)
    replicates: pd.DataFrame = field(default_factory=pd.DataFrame)   # per qcow2 replicate and phase (replicates.py)
    sweep: pd.DataFrame = field(default_factory=pd.DataFrame)        # per realised coverage (coverage.py)


INITIAL_BASIS = ("a judgment: two table values of one run each; ±10 % of the published ratio (the registration's rule "
                 "decides)")


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
                  "%", 100.0, 5.0, RATIO_BASIS, f"{k}.tier_pool.with.ratio", TIER_MEASURED,
                  "3.7 % (table: 420 of 11500 IO/s; text: 3,6 %)"),
            Claim(f"{k}.C002-2b", CITE, WHERE_TIER, "SAS + SSD Easy Tier: IOPS during consolidation, % of initial",
                  2.6, "%", 100.0, 5.0, RATIO_BASIS, f"{k}.tier_pool.delete.ratio", TIER_MEASURED,
                  "2.6 % (table: 300 of 11500 IO/s; text: 2,6 %)"),
            Claim(f"{k}.C002-2c", CITE, WHERE_TIER, "SAS + SSD Easy Tier: IOPS after consolidation, % of initial",
                  100.0, "%", 100.0, 10.0, AFTER_BASIS, f"{k}.tier_pool.after.ratio", TIER_MEASURED,
                  "recovered (11500 of 11500)")]
    if {"sas_pool", TIERED} <= pools:
        out.append(Claim(f"{k}.C002-3", CITE, "Summary, point 2", "the tiered pool keeps a smaller fraction with a "
                         "snapshot: its ratio over the SAS-only pool's, %", 100 * (420 / 11500) / (300 / 2450), "%",
                         100.0, 15.0, RELATIVE_BASIS, f"{k}.tier_over_sas.with",
                         "the emulated tiered pool (tier_pool) over the SAS-only pool (sas_pool), both measured, "
                         "qcow2, paired by replicate"))
        out.append(Claim(f"{k}.initial_over_sas", CITE, "both tables, 'Initial situation'", "initial IOPS of the "
                         "tiered pool over the SAS-only pool's (11500 over 2450), %", 100 * 11500 / 2450, "%", 100.0,
                         47.0, INITIAL_BASIS, f"{k}.initial_over_sas",
                         "the emulated tiered pool (tier_pool) over the SAS-only pool (sas_pool), both measured, "
                         "qcow2, paired by replicate", label="C002-4", published_digits=1))
    return out


def _relative(phases: pd.DataFrame, speed: pd.DataFrame) -> Interval:
    """The tiered pool's with-snapshot ratio in `speed` (the measured phases, or the model's at the SSD tier's speed)
    over the SAS-only pool's (measured), in %, first timelines: a ratio of two independent ratios, its log
    half-width the root sum of squares of theirs."""
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
    s = params.scale
    read_phases = ("initial", *RATIO_PHASES)
    out = [Value(f"{k}.disk_mib", float(s.disk_bytes) / (1 << 20), "MiB"),
           # how many of the emulator's flagged measurements are in a phase a claim's ratio reads, and which those are
           Value(f"{k}.flagged_in_ratio_phases",
                 float(sum(1 for x in record.measurements if x.flagged and x.phase in read_phases
                           and engine_of(x.variant) != SWEEP)), "measurements"),
           Value(f"{k}.ratio_phases", text=", ".join(read_phases)),
           Value(f"{k}.iodepth", float(params.iodepth), ""),
           Value(f"{k}.phase_s", float(s.phase_s), "s"), Value(f"{k}.with_s", float(s.with_s), "s"),
           Value(f"{k}.settle_s", float(s.settle_s), "s"),
           Value(f"{k}.delete_window_s", float(s.delete_window_s), "s"),
           Value(f"{k}.batch_s", float(BATCH_S), "s"),
           Value(f"{k}.bs_kib", float(params.bs) / 1024, "KiB"),
           Value(f"{k}.write_share", 1 - read_fraction(record), "", digits=1),      # w of the copy-load model
           Value(f"{k}.learn_segment_s", float(s.learn_segment_s), "s", digits=0),
           Value(f"{k}.guest_segment_s", float(s.guest_segment_s), "s", digits=0),
           Value(f"{k}.learned_fraction_pct", 100 * float(s.learned_fraction), "%", digits=0),
           Value(f"{k}.untiered_factor", float(s.untiered_factor), "", digits=0),
           # over every qcow2 replicate: a cycle inside any of their steady phases would change what it measured
           Value(f"{k}.cycles_inside_steady", float(phases[phases.phase.isin(("initial", "with", "after"))
                                                           & (phases.pool.map(engine_of) == "qcow2")
                                                           ].cycles_inside.sum())
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
        # every replicate's qcow2 timeline on the pool
        q = meas[(meas.pool.map(pool_of) == pool) & (meas.pool.map(engine_of) == "qcow2")] if not meas.empty else meas
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
    out.append(Value.of(f"{k}.tier_over_sas.with", _relative(phases, phases), "%", 1))
    out.append(Value.of(f"{k}.tier_over_sas.with_at_tier_speed", _relative(phases, speed), "%", 1))
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


def read_fraction(record: RunRecord) -> float:
    """The load's share of reads, as the run recorded it (parameters.read_percent)."""
    return float(record.parameters(TieringParameters).read_percent) / 100


def analyse(record: RunRecord) -> TieringAnalysis:
    meas = measurements_table(record)
    seconds = seconds_table(record)
    events = events_table(record)
    phases = phases_table(seconds, meas)
    fit = fit_model(seconds)                       # the first replicate's timeline
    model_us = model_time_per_io(record)
    first = phases[phases.replicate == 0] if not phases.empty else phases
    speed = at_tier_speed(first, fit, model_us)
    what_if = what_if_table(fit, phases, model_us.get(TIERED, {}).get("ssd_us_per_io", fit.tau_ssd_us if fit
                                                                         else math.nan), read_fraction(record))
    values = _values(record, meas, phases, events, fit, what_if, speed, model_us)
    params = record.parameters(TieringParameters)
    # the claims' values (and every qcow2 phase ratio) over the independent replicates (replicates.py)
    reps = per_replicate(seconds, phases, model_us)
    est = estimates(reps)
    values = [over_replicates(v, est[v.key]) if v.key in est else v for v in values]
    initial = f"{STUDY}.initial_over_sas"
    if initial in est:
        values.append(Value.of_estimate(initial, est[initial], "%", 0, method=f"t over {est[initial].n} "
                                        "independent replicates (pct_log), each pool's initial phase measured"))
    learned = events[(events.event == "learn_done") & (events.pool.map(pool_of) == TIERED)
                     & (events.pool.map(engine_of) == "qcow2")] if not events.empty else events
    values.append(model_rate_value(phases, model_us))
    values += replicate_values(reps, params.scale.replicates,
                               {replicate_of(r.pool): bool(r.learned) for r in learned.itertuples()})
    values += pool_values(pool_specs(record.manifest, params.devices))
    layout = {v: {"span_model": (meta.get("study") or {}).get("span_model") or {},
                  "chunk_size": variant_chunk_size(record, v)}
              for v, meta in record.manifest.variants.items() if engine_of(v) == LVM_THIN}
    values += lvmthin_values(meas, phases, events, speed,
                              float(params.scale.learned_fraction), read_fraction(record), layout,
                              params.scale.span_model_ios)
    chunks = {variant_chunk_size(record, v) for v in layout}
    values.append(Value(f"{STUDY}.{LVM_THIN}.chunk_kib", chunks.pop() / 1024 if len(chunks) == 1 else math.nan, "KiB"))
    # the stand-in's setting the timelines measured at, and the sweep that infers it (coverage.py)
    values += standin_settings.operating_point_values(f"{STUDY}.stand_in", STAND_IN, PRESET_COVERAGE,
                                                      params.operating_points)
    sweep = sweep_summary(sweep_table(seconds, meas, params.scale.disk_bytes, record.manifest.events))
    values += sweep_values(sweep, meas)
    test = heldout_test(phases, lambda pool, phase: phase_samples(seconds, meas, pool, phase), HELDOUT_ENGINES)
    values += heldout_values(f"{STUDY}.misplacement.heldout", test)
    by_key = {v.key: v for v in values}
    outcomes = [outcome(c, by_key) for c in _claims(set(meas.pool))]
    curves = what_if_curves(fit, model_us.get(TIERED, {}).get("ssd_us_per_io", fit.tau_ssd_us if fit else math.nan))
    return TieringAnalysis(record, values, outcomes, meas, seconds, phases, events, fit, what_if, model_us, speed,
                           curves, test, reps, sweep)


__all__ = ["TieringAnalysis", "analyse", "pool_specs", "pool_values", "read_fraction"]
