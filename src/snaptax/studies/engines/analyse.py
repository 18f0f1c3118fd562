"""Analysis of an engine-comparison run: per measurement the host-level bytes and the grains broken, per variant
the IOPS ratios with a snapshot to without (95 % intervals over cycles), the bytes and time per first write and
the snapshot's space, the copy-on-write amplification model fitted per engine family, and the verdicts on seed
001's vVOL claim. Pure: a run in, tables, fits and values out.

Host-level bytes per guest write come from the engines' counters (snaptax.counters): host.sectors_read /
host.sectors_written of the device below the engine (for LVM thin the guest's PV, the rig device's region), plus
engine.bytes_copied for the copy-on-first-write engine, whose copies go to the snapshot's sparse file outside the
counted device. Grains broken in a measurement: engine.pages_copied (cofw), engine.chunks_broken (LVM thin), and
for qcow2, which counts none, the model's expectation for k uniformly placed writes
(snaptax.models.cow.expected_grains_hit). Snapshot space: the gauge engine.snapshot_allocated_bytes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...analysis import Analysis
from ...claims import Claim, outcome
from ...errors import AnalysisError
from ...models import cow
from ...record import RunRecord
from ...stats import Interval, geometric_mean_interval, mean_interval, paired_ratio_interval
from ...values import Value
from .plan import CLAIM_VARIANT, FAMILIES, IO_SIZE, MODE, READ_PHASES, STUDY, WRITE_PHASES, EnginesParameters

KiB, MiB = 1 << 10, 1 << 20
HOST_READ, HOST_WRITTEN = "host.sectors_read", "host.sectors_written"
BYTES_COPIED, PAGES_COPIED = "engine.bytes_copied", "engine.pages_copied"
CHUNKS_BROKEN, SNAPSHOT_BYTES = "engine.chunks_broken", "engine.snapshot_allocated_bytes"
COUNTERS = (HOST_READ, HOST_WRITTEN, BYTES_COPIED, PAGES_COPIED, CHUNKS_BROKEN, SNAPSHOT_BYTES)

# Seed 001, Table 1, vVOL column: 'No impact' with one snapshot (FIO random I/O), read as 0 % loss.
LOSS_TOLERANCE_PP = 15.0
LOSS_BASIS = ("a judgment, not derived from data: Table 1 states 'No impact' in words for a product we only stand "
              "in for, and its other entries come in steps of 5 %; ±15 pp separates 'no impact' from 'a third'")
CLAIM_PHASES = {"first": "grains being broken", "steady": "all grains broken"}

# Per-variant metrics over the cycles of a run. RATIOS (numerator phase, denominator phase, IOPS column) are
# paired by cycle, with a t interval on the log scale; LOSSES are 100·(1 − ratio); MEANS (unit, digits) are averages
# over cycles: those in POSITIVE, strictly positive physical quantities (a rate, bytes the host wrote per write, a
# count over its expectation, a snapshot's space), geometric means with a log-t interval
# (stats.geometric_mean_interval); the others arithmetic means with a linear t interval, because they can be 0 or
# negative: the share of writes that were first writes (0 once every grain is broken) and the two per-first-write
# costs, which are differences against the base phase.
# The steady phases come late in a cycle, so they are set against the no-snapshot measurements that bracket them —
# the geometric mean of this cycle's base and the next one's (the last cycle's: the closing base measurements):
# drift that runs linearly through the cycle cancels. The first-write and snap-read phases follow their cycle's
# base measurements closely and are set against those.
RATIOS = {"first_ratio": ("first-write", "base-write", "write_iops"),
          "steady_ratio": ("steady-write", "bracket-write", "write_iops"),
          "snap_read_ratio": ("snap-read", "base-read", "read_iops"),
          "steady_read_ratio": ("steady-read", "bracket-read", "read_iops")}
MEANS = {"base_write_iops": ("IOPS", 0), "first_fraction": ("", 2), "first_over_expected": ("", 3),
         "bytes_per_write_kib_base": ("KiB", 1), "bytes_per_write_kib_first": ("KiB", 1),
         "bytes_per_write_kib_steady": ("KiB", 1), "bytes_per_first_write_kib": ("KiB", 1),
         "extra_us_per_first_write": ("µs", 0), "space_first_mib": ("MiB", 1), "space_steady_mib": ("MiB", 1)}
POSITIVE = frozenset({"base_write_iops", "first_over_expected", "bytes_per_write_kib_base",
                      "bytes_per_write_kib_first", "bytes_per_write_kib_steady", "space_first_mib",
                      "space_steady_mib"})
LOSSES = {"first_loss": "first_ratio", "steady_loss": "steady_ratio"}


# ------------------------------------------------------------------ tables

def variant_table(record: RunRecord) -> pd.DataFrame:
    """One row per variant: family, mode, grain, copy grain (bytes), analogue, from the run's manifest."""
    rows = [{"variant": name, **v["study"]} for name, v in record.manifest.variants.items()]
    return pd.DataFrame(rows, columns=["variant", "family", "grain", "copy_grain", "mode", "analogue"])


def measurements(record: RunRecord) -> pd.DataFrame:
    """One row per fio run with host-level bytes, grains broken and snapshot space.

    Columns beyond RunRecord.per_measurement: family, mode, grain, copy_grain (bytes); host_read_bytes,
    host_write_bytes (bytes the engine's device received, plus cofw's copies into the sparse file);
    first_writes (grains broken: measured by cofw and LVM thin, expected from the model for qcow2);
    first_writes_expected (the model's expectation in the first-write phase, 0 elsewhere); first_source
    ('measured' | 'expected'); snapshot_bytes (engine.snapshot_allocated_bytes after the measurement).
    """
    disk = record.parameters(EnginesParameters).scale.disk_size
    meas = record.per_measurement(counters=COUNTERS).merge(variant_table(record), on="variant", how="left")
    if meas.family.isna().any():
        missing = sorted(set(meas.variant[meas.family.isna()]))
        raise AnalysisError(f"{record.path}: variants {missing} are not described in the manifest")
    meas["host_read_bytes"] = 512.0 * meas[HOST_READ].fillna(0.0)
    meas["host_write_bytes"] = 512.0 * meas[HOST_WRITTEN].fillna(0.0) + meas[BYTES_COPIED].fillna(0.0)
    measured = pd.Series(np.nan, index=meas.index)
    measured = measured.where(meas.family != "cofw", meas[PAGES_COPIED])
    measured = measured.where(meas.family != "lvmthin", meas[CHUNKS_BROKEN])
    expected = pd.Series(0.0, index=meas.index)
    fw = meas.phase == "first-write"
    expected[fw] = [float(cow.expected_grains_hit(k, disk, g, IO_SIZE, replacement=True))
                    for k, g in zip(meas.write_ios[fw], meas.copy_grain[fw], strict=True)]
    meas["first_writes_expected"] = expected
    meas["first_writes"] = measured.fillna(expected)
    meas["first_source"] = np.where(measured.notna(), "measured", "expected")
    meas["snapshot_bytes"] = meas[SNAPSHOT_BYTES]
    return meas


def write_points(meas: pd.DataFrame) -> pd.DataFrame:
    """Write measurements with bytes per guest write (y), first-write fraction (f) and the model's y."""
    w = meas[meas.phase.isin(WRITE_PHASES)].copy()
    w["f"] = w.first_writes / w.write_ios
    w["bytes_per_write"] = (w.host_read_bytes + w.host_write_bytes) / w.write_ios
    w["read_bytes_per_write"] = w.host_read_bytes / w.write_ios
    # Excess over the same volume's base-write of the same cycle: cancels what every measurement window carries
    # besides the writes (in runs before 2026-11-23T21 LVM thin's counter snapshot ran lvs, which read 256 KiB
    # of LVM metadata).
    base = w[w.phase == "base-write"].set_index(["variant", "repeat"]).bytes_per_write
    same_cycle = list(zip(w.variant, w.repeat, strict=True))
    w["excess_bytes_per_write"] = w.bytes_per_write - base.reindex(same_cycle).to_numpy()
    w["model_bytes_per_write"] = [float(cow.bytes_per_write(f, g, IO_SIZE, mode))
                                  for f, g, mode in zip(w.f, w.copy_grain, w["mode"], strict=True)]
    return w.reset_index(drop=True)


def fit_families(points: pd.DataFrame) -> dict[str, cow.CowFit]:
    """The amplification model fitted per engine family to its write measurements (all grains, all phases):
    y = B + excess bytes per guest write over the same cycle's base-write (so base-write points sit at y = B).
    A family whose fit cannot be made raises: the paper quotes every one."""
    out = {}
    for fam in [f for f in FAMILIES if f in set(points.family)]:
        g = points[points.family == fam]
        try:
            out[fam] = cow.fit(g.f, g.copy_grain, IO_SIZE, IO_SIZE + g.excess_bytes_per_write, MODE[fam])
        except (ValueError, RuntimeError) as exc:
            raise AnalysisError(f"engines: the copy-on-write model cannot be fitted to {fam}: {exc}") from exc
    return out


def _cycle(by: pd.DataFrame, y: pd.Series, rep: int) -> dict[str, float]:
    """One cycle of one variant: `by` its measurements and `y` its bytes per write, indexed by (phase, repeat)."""
    def at(phase: str, col: str) -> float:
        return float(by.at[(phase, rep), col]) if (phase, rep) in by.index else math.nan

    def yv(phase: str) -> float:
        return float(y.at[(phase, rep)]) if (phase, rep) in y.index else math.nan

    def bracket(phase: str, col: str) -> float:
        """Geometric mean of this cycle's and the next cycle's (or the closing) `phase` measurement; this
        cycle's alone in runs without closing measurements."""
        here = at(phase, col)
        nxt = float(by.at[(phase, rep + 1), col]) if (phase, rep + 1) in by.index else math.nan
        return math.sqrt(here * nxt) if math.isfinite(nxt) and nxt > 0 and here > 0 else here

    k, n_first = at("first-write", "write_ios"), at("first-write", "first_writes")
    expected = at("first-write", "first_writes_expected")
    # cycles without first-write (the claim variant's early ones, plan.CLAIM_FIRST_CYCLES) give NaN first metrics
    measured = ("first-write", rep) in by.index and by.at[("first-write", rep), "first_source"] == "measured"
    b_w, f_w = at("base-write", "write_iops"), at("first-write", "write_iops")
    return {
        **{f"{p}_write_iops": at(p, "write_iops") for p in WRITE_PHASES},
        **{f"{p}_read_iops": at(p, "read_iops") for p in READ_PHASES},
        "bracket-write_write_iops": bracket("base-write", "write_iops"),
        "bracket-read_read_iops": bracket("base-read", "read_iops"),
        "base_write_iops": b_w, "write_ios": k, "first_writes": n_first,
        "first_fraction": n_first / k if k > 0 else math.nan,
        "first_over_expected": n_first / expected if measured and expected > 0 else math.nan,
        "bytes_per_write_kib_base": yv("base-write") / KiB,
        "bytes_per_write_kib_first": yv("first-write") / KiB,
        "bytes_per_write_kib_steady": yv("steady-write") / KiB,
        "bytes_per_first_write_kib": (((yv("first-write") - yv("base-write")) * k / n_first + IO_SIZE) / KiB
                                      if n_first > 0 else math.nan),
        "extra_us_per_first_write": (k / f_w - k / b_w) * 1e6 / n_first if n_first > 0 else math.nan,
        "space_first_mib": at("first-write", "snapshot_bytes") / MiB,
        "space_steady_mib": at("overwrite", "snapshot_bytes") / MiB,
    }


def cycles(meas: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """One row per variant and cycle (repeat): the IOPS of every phase, grains broken, bytes per write and the
    per-cycle derived quantities (bytes and extra µs per first write, snapshot space)."""
    rows = []
    for variant, g in meas.groupby("variant", sort=False):
        by = g.set_index(["phase", "repeat"])
        y = points[points.variant == variant].set_index(["phase", "repeat"]).bytes_per_write
        for rep in sorted(g[g.phase == "steady-write"].repeat.unique()):
            rows.append({"variant": variant, "family": g.family.iloc[0], "repeat": int(rep),
                         **_cycle(by, y, int(rep))})
    return pd.DataFrame(rows)


def interval_of(cyc: pd.DataFrame, metric: str) -> Interval:
    """The 95 % interval of one per-variant metric over the cycles in `cyc` (one variant's rows)."""
    if metric in RATIOS:
        num, den, col = RATIOS[metric]
        return paired_ratio_interval(cyc[f"{num}_{col}"].to_numpy(), cyc[f"{den}_{col}"].to_numpy())
    if metric in LOSSES:
        return interval_of(cyc, LOSSES[metric]).scaled(-100.0, 100.0)
    if metric in POSITIVE:
        return geometric_mean_interval(cyc[metric].to_numpy())
    return mean_interval(cyc[metric].to_numpy())


def summarize(meas: pd.DataFrame, cyc: pd.DataFrame) -> pd.DataFrame:
    """One row per variant, in family and grain order: each metric's estimate with its 95 % interval
    (<metric>, <metric>_low, <metric>_high; how: <metric>_method) over cycles, the number of cycles, and the
    mechanism's bytes per first write (no metadata)."""
    info = meas.drop_duplicates("variant").set_index("variant")
    rows = []
    for variant, c in cyc.groupby("variant", sort=False):
        r = info.loc[variant]
        row = {"variant": variant, "family": r.family, "mode": r["mode"], "grain_kib": r.grain / KiB,
               "copy_grain_kib": r.copy_grain / KiB, "cycles": len(c)}
        for metric in (*RATIOS, *LOSSES, *MEANS):
            iv = interval_of(c, metric)
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = iv.estimate, iv.low, iv.high
            row[f"{metric}_n"] = iv.n    # cycles that measured it (the claim variant's early ones skip some)
            row[f"{metric}_method"] = iv.method
        row["model_bytes_per_first_write_kib"] = float(cow.first_write_bytes(r.copy_grain, IO_SIZE, r["mode"])) / KiB
        rows.append(row)
    out = pd.DataFrame(rows)
    order = out.family.map({f: i for i, f in enumerate(FAMILIES)})
    return out.assign(_o=order).sort_values(["_o", "grain_kib"]).drop(columns="_o").reset_index(drop=True)


def first_writes_check(meas: pd.DataFrame) -> pd.DataFrame:
    """Grains broken in the first-write phase: counted by the engine (cofw, LVM thin) beside the model's
    expectation for k uniformly placed writes (snaptax.models.cow.expected_grains_hit)."""
    fw = meas[(meas.phase == "first-write") & (meas.first_source == "measured")]
    fw = fw.assign(_o=fw.family.map({f: i for i, f in enumerate(FAMILIES)})).sort_values(["_o", "grain", "repeat"])
    out = fw[["variant", "repeat", "write_ios", "first_writes", "first_writes_expected"]].copy()
    out["measured_over_expected"] = (out.first_writes / out.first_writes_expected).round(3)
    out["first_writes_expected"] = out.first_writes_expected.round(1)
    return out.reset_index(drop=True)


# ------------------------------------------------------------------ the analysis

def _num(x: float, digits: int) -> str:
    text = f"{x:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text     # no "-0"


def _ci(lo: float, hi: float, digits: int) -> str:
    return f"[{_num(lo, digits)}, {_num(hi, digits)}]" if math.isfinite(lo) and math.isfinite(hi) else "n/a"


@dataclass
class EnginesAnalysis(Analysis):
    meas: pd.DataFrame = field(default_factory=pd.DataFrame)        # one row per fio run
    points: pd.DataFrame = field(default_factory=pd.DataFrame)      # write measurements with y and f
    cycles: pd.DataFrame = field(default_factory=pd.DataFrame)      # one row per variant and cycle
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)     # one row per variant, 95 % intervals
    fits: dict[str, cow.CowFit] = field(default_factory=dict)       # per engine family
    first_writes: pd.DataFrame = field(default_factory=pd.DataFrame)  # grains broken: counted vs expected

    def summary_table(self) -> pd.DataFrame:
        """The per-variant summary rounded for reading (means over cycles; ratios with their 95 % interval)."""
        s = self.summary
        out = pd.DataFrame({"variant": s.variant, "grain_kib": s.grain_kib, "cycles": s.cycles,
                            "f": s.first_fraction.round(3)})
        for m in ("first_ratio", "steady_ratio", "snap_read_ratio"):
            out[m] = s[m].round(3)
            out[f"{m}_ci95"] = [_ci(lo, hi, 3) for lo, hi in zip(s[f"{m}_low"], s[f"{m}_high"], strict=True)]
        for m in ("bytes_per_first_write_kib", "model_bytes_per_first_write_kib", "extra_us_per_first_write",
                  "space_first_mib", "space_steady_mib"):
            out[m] = s[m].round(1)
        return out

    def fits_table(self) -> pd.DataFrame:
        """The amplification model's parameters per family with 95 % intervals (c dimensionless, M in bytes)."""
        rows = []
        for fam, f in self.fits.items():
            (clo, chi), (mlo, mhi) = f.ci95
            rows.append({"family": fam, "mode": f.mode, "c": round(f.copy_factor, 3),
                         "c_ci95": "fixed at 1" if f.copy_factor_fixed else _ci(clo, chi, 3),
                         "M_bytes": round(f.metadata_bytes), "M_ci95": _ci(mlo, mhi, 0),
                         "r2": round(f.r2, 4), "points": f.points})
        return pd.DataFrame(rows, columns=["family", "mode", "c", "c_ci95", "M_bytes", "M_ci95", "r2", "points"])


def _values(record: RunRecord, summary: pd.DataFrame, fits: dict[str, cow.CowFit]) -> list[Value]:
    k = STUDY
    scale = record.parameters(EnginesParameters).scale
    out = [Value(f"{k}.disk_mib", scale.disk_size / MiB, "MiB"),
           Value(f"{k}.writes", float(scale.writes), "I/Os"),
           Value(f"{k}.reads", float(scale.reads), "I/Os"),
           Value(f"{k}.claim_writes", float(scale.claim_writes), "I/Os"),
           Value(f"{k}.io_kib", IO_SIZE / KiB, "KiB"),
           Value(f"{k}.variants", float(len(summary)), "variants"),
           Value(f"{k}.cycles", float(summary.cycles.min()) if len(summary) else 0.0, "cycles")]
    units = {**{m: ("", 2) for m in RATIOS}, **{m: ("%", 0) for m in LOSSES}, **MEANS}
    for _, row in summary.iterrows():
        v = row.variant
        for metric, (unit, digits) in units.items():
            if metric == "first_over_expected" and not math.isfinite(row[metric]):
                continue   # qcow2: nothing counted, nothing to compare
            out.append(Value.where_defined(f"{k}.{metric}.{v}", float(row[metric]), float(row[f"{metric}_low"]),
                                           float(row[f"{metric}_high"]), int(row[f"{metric}_n"]), unit, digits,
                                           str(row[f"{metric}_method"])))
        out.append(Value(f"{k}.model_bytes_per_first_write_kib.{v}", float(row.model_bytes_per_first_write_kib),
                         "KiB", digits=1))
        # how many cycles each variant's ratios rest on (the long variants run more: plan.LONG_VARIANTS)
        out.append(Value(f"{k}.variant_cycles.{v}", float(row.cycles), "cycles"))
        out.append(Value(f"{k}.variant_first_cycles.{v}", float(row.first_ratio_n), "cycles"))
    for fam, f in fits.items():
        (clo, chi), (mlo, mhi) = f.ci95
        if f.copy_factor_fixed:
            out.append(Value(f"{k}.fit.{fam}.c", 1.0, "", n=f.points, digits=2, method="fixed"))
        else:
            out.append(Value(f"{k}.fit.{fam}.c", f.copy_factor, "", clo, chi, f.points, 2, None,
                             "least squares, t"))
        out.append(Value(f"{k}.fit.{fam}.m_kib", f.metadata_bytes / KiB, "KiB", mlo / KiB, mhi / KiB, f.points, 1,
                         None, "least squares, t"))
        out.append(Value(f"{k}.fit.{fam}.r2", f.r2, "", digits=3))
        out.append(Value(f"{k}.fit.{fam}.points", float(f.points), "points"))
    return out


def claims(summary: pd.DataFrame) -> list[Claim]:
    """Seed 001, Table 1, vVOL column ('No impact' with one snapshot, FIO random I/O) against LVM thin with its
    default 64 KiB chunks: the write loss while grains are being broken and once all are broken."""
    sel = summary[summary.variant == CLAIM_VARIANT]
    if sel.empty:
        return []
    grain = int(sel.iloc[0].grain_kib)
    return [Claim(f"{STUDY}.vvol_loss.{phase}", "setty2021", "Table 1",
                  f"vVOL, FIO random I/O: loss with 1 snapshot ({words})", 0.0, "%", 0.0, LOSS_TOLERANCE_PP,
                  LOSS_BASIS, f"{STUDY}.{phase}_loss.{CLAIM_VARIANT}",
                  f"LVM thin, {grain} KiB chunks, QD1 writes (TCG guest)", "No impact", label="C001-3")
            for phase, words in CLAIM_PHASES.items()]


def analyse(record: RunRecord) -> EnginesAnalysis:
    meas = measurements(record)
    points = write_points(meas)
    cyc = cycles(meas, points)
    summary = summarize(meas, cyc)
    fits = fit_families(points)
    values = _values(record, summary, fits)
    by_key = {v.key: v for v in values}
    outcomes = [outcome(c, by_key) for c in claims(summary)]
    return EnginesAnalysis(record, values, outcomes, meas, points, cyc, summary, fits, first_writes_check(meas))


__all__ = ["EnginesAnalysis", "analyse", "measurements", "write_points", "fit_families", "cycles", "summarize",
           "first_writes_check", "claims", "COUNTERS"]
