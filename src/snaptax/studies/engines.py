"""Engine comparison: what a snapshot costs per guest write, as a function of the engine's grain.

The three families the seeds contrast, each at several grains:
  qcow2     redo-log overlay (redirect-on-write, copy merged into the write): cluster 4 KiB … 2 MiB, with and
            without extended L2 (32 subclusters per cluster, ≥ 16 KiB clusters);
  lvmthin   LVM thin snapshot (array-native block sharing, seed 001's vVOL): chunk 64 KiB … 1 MiB, in a TCG guest
            on this kernel (no device-mapper);
  cofw      sparse-file copy-on-first-write (SQL Server database snapshots, seed 004): page 8 … 64 KiB.

For each grain, on a fresh volume (one engine instance per grain), the plan is
  prefill (sequential write of the whole volume), then `repeats` cycles of
    base-write   k random 4 KiB writes, no snapshot         base-read   k random 4 KiB reads, no snapshot
    snapshot
    first-write  k random 4 KiB writes: the first write into each grain breaks its sharing
    snap-read    k random 4 KiB reads with the snapshot present (most grains still shared)
    overwrite    a full sequential overwrite: every grain broken
    steady-write k random 4 KiB writes, all grains broken  steady-read k random 4 KiB reads
    delete the snapshot.
Writes and reads run at queue depth 1 with a fixed number of I/Os (fio number_ios; each at a random
block uniformly (norandommap), so the fraction of first writes follows snaptax.models.cow.first_write_fraction). QD1 because
the cofw engine's Python plugin saturates near 10k IOPS at depth (its GIL), which would flatten every difference
into the plugin's ceiling; at QD1 it adds a constant ~20 µs per request, so ratios within an engine stay honest.
Under TCG the guest's fio is CPU-bound, so LVM thin's cost shows in the guest's block-device counters more than in
its IOPS: host-level bytes per guest write come from each engine's counters, and the copy-on-write amplification
model is fitted to them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from .. import analysis, claims, figures, macros, profiles, rig as rigmod
from ..engines.cofw import CofwEngine, CofwEngineConfig
from ..engines.lvmthin import LvmThinConfig, LvmThinEngine
from ..engines.qcow2 import Qcow2ChainEngine, Qcow2Config
from ..errors import ConfigError
from ..fio import FioJob
from ..models import cow
from ..plan import DeleteSnapshot, Measure, Plan, TakeSnapshot
from ..record import RunSession

STUDY = "engines"
KiB, MiB = 1 << 10, 1 << 20
IO_SIZE = 4096
SUBCLUSTERS = 32          # qcow2 extended L2: 32 subclusters per cluster
WRITE_PHASES = ("base-write", "first-write", "steady-write")
READ_PHASES = ("base-read", "snap-read", "steady-read")
ENGINES = ("qcow2", "qcow2-ext", "cofw", "lvmthin")   # model families: one fit each
MODE = {"qcow2": "redirect-merge", "qcow2-ext": "redirect-merge", "cofw": "copy-out", "lvmthin": "redirect-copy"}
ANALOGUE = {"qcow2": "redo log (SEsparse-like), whole clusters", "qcow2-ext": "redo log with subclusters",
            "cofw": "SQL Server database snapshot (seed 004)", "lvmthin": "array-native snapshot, vVOL (seed 001)"}


@dataclass(frozen=True)
class EngineScale:
    """How much the engine comparison measures at one profile. Sizes in bytes.

    disk_size: the volume under test (smaller than the profile's: every grain gets a fresh, prefilled volume,
        and the overwrite phase copies all of it); writes/reads: 4 KiB I/Os per write/read measurement (k);
    *_grains: grains measured per engine (qcow2 clusters without / with extended L2, cofw pages, LVM chunks).
    """

    disk_size: int
    writes: int
    reads: int
    qcow2_clusters: tuple[int, ...]
    qcow2_ext_clusters: tuple[int, ...]
    cofw_pages: tuple[int, ...]
    lvm_chunks: tuple[int, ...]

    def __post_init__(self) -> None:
        src = "engine scale"
        if self.disk_size % MiB or self.disk_size <= 0:
            raise ConfigError(src, "disk_size", f"{self.disk_size} is not a positive multiple of 1 MiB")
        if not 0 < self.writes <= self.disk_size // IO_SIZE:
            raise ConfigError(src, "writes", f"{self.writes} not in 1…{self.disk_size // IO_SIZE} (one fio pass)")
        if not 0 < self.reads <= self.disk_size // IO_SIZE:
            raise ConfigError(src, "reads", f"{self.reads} not in 1…{self.disk_size // IO_SIZE}")
        if any(c < 16 * KiB for c in self.qcow2_ext_clusters):
            raise ConfigError(src, "qcow2_ext_clusters", "extended L2 needs clusters ≥ 16 KiB")
        for name in ("qcow2_clusters", "qcow2_ext_clusters", "cofw_pages", "lvm_chunks"):
            if any(self.disk_size % g for g in getattr(self, name)):
                raise ConfigError(src, name, "every grain must divide disk_size")


SCALES: dict[str, EngineScale] = {
    "smoke": EngineScale(64 * MiB, writes=2000, reads=2000, qcow2_clusters=(4 * KiB, 64 * KiB, 2 * MiB),
                         qcow2_ext_clusters=(64 * KiB, 2 * MiB), cofw_pages=(8 * KiB, 64 * KiB),
                         lvm_chunks=(64 * KiB,)),
    "quick": EngineScale(256 * MiB, writes=4000, reads=2000,
                         qcow2_clusters=(4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 2 * MiB),
                         qcow2_ext_clusters=(16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 2 * MiB),
                         cofw_pages=(8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB),
                         lvm_chunks=(64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB)),
    "full": EngineScale(1024 * MiB, writes=16000, reads=8000,
                        qcow2_clusters=(4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 2 * MiB),
                        qcow2_ext_clusters=(16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 2 * MiB),
                        cofw_pages=(8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB),
                        lvm_chunks=(64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB)),
}


def scale(profile: profiles.Profile) -> EngineScale:
    try:
        return SCALES[profile.name]
    except KeyError:
        raise ConfigError("engines study", "profile", f"no engine scale for profile {profile.name!r} "
                          f"(one of: {', '.join(SCALES)})") from None


def _size(n: int) -> str:
    return f"{n // MiB}m" if n >= MiB else f"{n // KiB}k"


@dataclass(frozen=True)
class Variant:
    """One engine at one grain. grain: the allocation/sharing unit; copy_grain: the unit a first write copies
    (a qcow2 subcluster with extended L2, else the grain)."""

    name: str
    engine: str          # model family, one of ENGINES
    grain: int
    config: Any = field(compare=False)

    @property
    def copy_grain(self) -> int:
        return self.grain // SUBCLUSTERS if self.engine == "qcow2-ext" else self.grain

    @property
    def mode(self) -> str:
        return MODE[self.engine]

    def describe(self) -> dict[str, Any]:
        return {"family": self.engine, "grain": self.grain, "copy_grain": self.copy_grain, "mode": self.mode,
                "analogue": ANALOGUE[self.engine]}


def variants(profile: profiles.Profile) -> list[Variant]:
    s = scale(profile)
    out = [Variant(f"qcow2-c{_size(c)}", "qcow2", c, Qcow2Config(f"c{_size(c)}", cluster_size=c))
           for c in s.qcow2_clusters]
    out += [Variant(f"qcow2-c{_size(c)}-ext", "qcow2-ext", c,
                    Qcow2Config(f"c{_size(c)}-ext", cluster_size=c, extended_l2=True)) for c in s.qcow2_ext_clusters]
    # durability 'sync': the copy is stable before the source is overwritten, as SQL Server must; direct I/O as
    # the other engines' cache.direct=on.
    out += [Variant(f"cofw-p{_size(p)}", "cofw", p, CofwEngineConfig(f"p{_size(p)}", page_size=p))
            for p in s.cofw_pages]
    out += [Variant(f"lvmthin-c{_size(c)}", "lvmthin", c, LvmThinConfig(f"c{_size(c)}", chunk_size=c))
            for c in s.lvm_chunks]
    return out


# ------------------------------------------------------------------ plan

def sequential_job(name: str, disk_size: int) -> FioJob:
    """Write the whole volume once, 1 MiB sequential: the prefill, and later the overwrite breaking every grain."""
    return FioJob(name, "write", bs=MiB, iodepth=8, numjobs=1, size=disk_size, time_based=False,
                  runtime_s=None, log_avg_msec=1000)


def random_job(name: str, rw: str, ios: int, disk_size: int) -> FioJob:
    """k random 4 KiB I/Os at queue depth 1 over the whole volume (number_ios), uniformly placed."""
    # Reads draw other offsets than the writes (their own seed): reading back exactly the blocks just written
    # would only ever hit broken grains.
    seed = (("randseed", "20261121"),) if "read" in rw else ()
    # norandommap: uniform offsets (with replacement). With fio's random map a collision is resolved to the next
    # free block, usually in the same grain, which makes grains break measurably (2-3 %) less often than any
    # simple sampling model predicts.
    return FioJob(name, rw, bs=IO_SIZE, iodepth=1, numjobs=1, size=disk_size, time_based=False, runtime_s=None,
                  log_avg_msec=None, extra=(("number_ios", str(ios)), ("norandommap", "1"), *seed))


def build_plan(profile: profiles.Profile) -> Plan:
    s = scale(profile)
    write = random_job("randwrite", "randwrite", s.writes, s.disk_size)
    read = random_job("randread", "randread", s.reads, s.disk_size)
    steps: list = [Measure(sequential_job("prefill", s.disk_size), "prefill")]
    for r in range(profile.repeats):
        steps += [Measure(write, "base-write", r), Measure(read, "base-read", r), TakeSnapshot(),
                  Measure(write, "first-write", r), Measure(read, "snap-read", r),
                  Measure(sequential_job("overwrite", s.disk_size), "overwrite", r),
                  Measure(write, "steady-write", r), Measure(read, "steady-read", r), DeleteSnapshot("newest")]
    return Plan(tuple(steps))


def describe_plan(profile: profiles.Profile) -> str:
    """What a run measures, in words and counts (deterministic: shown in the notebook and checked by nbval)."""
    s = scale(profile)
    plan = build_plan(profile)
    vs = variants(profile)
    lines = [f"profile {profile.name}: volume {s.disk_size // MiB} MiB per grain, {profile.repeats} cycle(s) of "
             f"snapshot / measure / delete",
             f"per measurement: {s.writes} random 4 KiB writes or {s.reads} random 4 KiB reads at QD1",
             f"plan: {len(plan.steps)} steps, {sum(1 for _ in plan.measurements())} fio runs per grain",
             f"{len(vs)} engine/grain variants ({sum(v.engine == 'lvmthin' for v in vs)} TCG guest boot(s)):"]
    for fam in ENGINES:
        grains = [v for v in vs if v.engine == fam]
        if grains:
            lines.append(f"  {fam:9s} {MODE[fam]:14s} grains " + ", ".join(_size(v.grain) for v in grains)
                         + (f" (copy unit = grain/{SUBCLUSTERS})" if fam == "qcow2-ext" else ""))
    job = random_job("randwrite", "randwrite", s.writes, s.disk_size)
    lines.append("write job: " + " ".join(f"{k}={v}" for k, v in job.options()))
    return "\n".join(lines)


def _engine(v: Variant, rig, dev, disk_size: int):
    if v.engine.startswith("qcow2"):
        return Qcow2ChainEngine(rig, dev, v.config, disk_size)
    if v.engine == "cofw":
        return CofwEngine(rig, dev, v.config, disk_size)
    return LvmThinEngine(rig, dev, v.config, disk_size)


def run(rig_name: str = "local", profile_name: str = profiles.DEFAULT, device: str | None = None) -> Path:
    """Measure every engine/grain variant on one rig device; returns the published run directory under data/."""
    profile = profiles.get(profile_name)
    rig = rigmod.load(rig_name)
    dev = rig.device(device)
    s = scale(profile)
    plan = build_plan(profile)
    vs = variants(profile)
    parameters = {"profile": profile, "scale": s, "device": dev.name, "io_size": IO_SIZE,
                  "plan_steps": len(plan.steps), "variants": [v.name for v in vs]}
    with RunSession(rig, STUDY, profile.name, parameters, devices_used=(dev.name,)) as session:
        for v in vs:
            with _engine(v, rig, dev, s.disk_size) as engine:
                with session.in_variant(v.name, {**engine.describe(), "study": v.describe()}):
                    engine.execute(plan, session)
    assert session.published is not None
    return session.published


# ------------------------------------------------------------------ analysis

def variant_table(run_dir: Path) -> pd.DataFrame:
    """One row per variant: family, mode, grain, copy grain (bytes), from the run's manifest."""
    man = analysis.manifest(run_dir)
    rows = [{"variant": name, **v["study"]} for name, v in man["variants"].items()]
    return pd.DataFrame(rows)


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    """A counter column, 0 where an engine does not have that counter."""
    return df[name].fillna(0.0) if name in df else pd.Series(0.0, index=df.index)


def measurements(run_dir: Path) -> pd.DataFrame:
    """Per-measurement table with host-level bytes and first writes.

    Columns beyond analysis.per_measurement: family, mode, grain, copy_grain (bytes); host_read_bytes,
    host_write_bytes (bytes the engine's device received during the measurement: cofw adds its copies, which go to
    the snapshot's sparse file outside the counted device); first_writes (grains broken: measured by cofw and
    LVM thin, expected from the model for qcow2, which counts none); first_source ('measured' | 'expected');
    snapshot_bytes (space the snapshot costs after the measurement: qcow2 overlay size, cofw bytes copied since
    the snapshot, LVM thin pool chunks allocated since the snapshot × chunk).
    """
    import json
    man = analysis.manifest(run_dir)
    disk = man["parameters"]["scale"]["disk_size"]
    meas = analysis.per_measurement(analysis.results(run_dir))
    paths = analysis.results(run_dir).groupby(["variant", "index"])["path"].first()
    meas = meas.merge(variant_table(run_dir), on="variant")
    meas["host_read_bytes"] = 512.0 * _col(meas, "host_disk_sectors_read")
    meas["host_write_bytes"] = 512.0 * _col(meas, "host_disk_sectors_written") + _col(meas, "host_cofw_bytes_copied")
    measured = pd.Series(np.nan, index=meas.index)
    if "host_cofw_pages_copied" in meas:
        measured = measured.where(meas.family != "cofw", meas["host_cofw_pages_copied"])
    if "host_chunks_broken" in meas:
        measured = measured.where(meas.family != "lvmthin", meas["host_chunks_broken"])
    expected = pd.Series(0.0, index=meas.index)
    fw = meas.phase == "first-write"
    for i in meas.index[fw]:
        r = meas.loc[i]
        expected[i] = float(cow.expected_grains_hit(r.write_ios, disk, r.copy_grain, IO_SIZE, replacement=True))
    meas["first_writes_expected"] = expected
    meas["first_writes"] = measured.fillna(expected)
    meas["first_source"] = np.where(measured.notna(), "measured", "expected")
    # Absolute counters after each measurement (results.csv holds deltas): the snapshot's space.
    after = []
    for _, r in meas.iterrows():
        rec = json.loads((Path(run_dir) / paths[(r.variant, r["index"])] / "measurement.json").read_text())
        after.append(rec["counters_after"])
    space = []
    base: dict[str, float] = {}
    for (_, r), a in zip(meas.iterrows(), after):
        if r.chain_length == 0:
            base[r.variant] = a
            space.append(0.0)
        elif r.family.startswith("qcow2"):
            space.append(a.get("qcow2_active_allocated_bytes", np.nan))
        elif r.family == "cofw":
            space.append(a["cofw_bytes_copied"] - base[r.variant]["cofw_bytes_copied"])
        else:
            space.append((a["pool_data_used_chunks"] - base[r.variant]["pool_data_used_chunks"]) * r.grain)
    meas["snapshot_bytes"] = space
    return meas


def write_points(meas: pd.DataFrame) -> pd.DataFrame:
    """Write measurements with bytes per guest write (y), first-write fraction (f) and the model's y."""
    w = meas[meas.phase.isin(WRITE_PHASES)].copy()
    w["f"] = w.first_writes / w.write_ios
    w["bytes_per_write"] = (w.host_read_bytes + w.host_write_bytes) / w.write_ios
    w["read_bytes_per_write"] = w.host_read_bytes / w.write_ios
    # Excess over the same volume's base-write of the same cycle: cancels what every measurement window carries
    # besides the writes (LVM thin's counter snapshot runs lvs, which reads 256 KiB of LVM metadata).
    base = w[w.phase == "base-write"].set_index(["variant", "repeat"]).bytes_per_write
    w["excess_bytes_per_write"] = w.bytes_per_write - base.reindex(list(zip(w.variant, w.repeat))).to_numpy()
    w["model_bytes_per_write"] = [float(cow.bytes_per_write(r.f, r.copy_grain, IO_SIZE, r["mode"]))
                                  for _, r in w.iterrows()]
    return w


def fits(meas: pd.DataFrame) -> dict[str, cow.CowFit]:
    """The amplification model fitted per engine family to its write measurements (all grains, all phases):
    y = B + excess bytes per guest write over the same cycle's base-write (so base-write points sit at y = B)."""
    w = write_points(meas)
    out = {}
    for fam, g in w.groupby("family"):
        try:
            out[fam] = cow.fit(g.f, g.copy_grain, IO_SIZE, IO_SIZE + g.excess_bytes_per_write, MODE[fam])
        except ValueError:
            continue
    return out


def summary(meas: pd.DataFrame) -> pd.DataFrame:
    """Per variant (medians over repeats): IOPS ratios to no snapshot, bytes per guest write, first-write
    cost, snapshot space.

    first_ratio / steady_ratio: write IOPS with the snapshot (grains being broken / all broken) ÷ before it;
    snap_read_ratio / steady_read_ratio: likewise for reads; bytes_per_first_write: host-level bytes per
    first write, (y_first·k − y_base·k) / first writes + B; extra_us_per_first_write: added time per first write at
    QD1, (k/IOPS_first − k/IOPS_base) / first writes; space_first_mib / space_steady_mib: snapshot space after the
    first-write and after the overwrite phase.
    """
    w = write_points(meas)
    rows = []
    for variant, g in meas.groupby("variant", sort=False):
        info = g.iloc[0]
        ph = {p: g[g.phase == p] for p in (*WRITE_PHASES, *READ_PHASES, "overwrite")}
        wv = w[w.variant == variant]
        per_cycle = []
        for rep in sorted(ph["first-write"].repeat.unique()):
            def one(phase, col):
                sel = g[(g.phase == phase) & (g.repeat == rep)]
                return float(sel[col].iloc[0]) if len(sel) else np.nan
            def yv(phase):
                sel = wv[(wv.phase == phase) & (wv.repeat == rep)]
                return float(sel.bytes_per_write.iloc[0]) if len(sel) else np.nan
            k = one("first-write", "write_ios")
            n_first = one("first-write", "first_writes")
            b_w, f_w, s_w = (one(p, "write_iops") for p in WRITE_PHASES)
            b_r, s_r, st_r = (one(p, "read_iops") for p in READ_PHASES)
            per_cycle.append({
                "base_write_iops": b_w, "first_ratio": f_w / b_w, "steady_ratio": s_w / b_w,
                "snap_read_ratio": s_r / b_r, "steady_read_ratio": st_r / b_r,
                "first_fraction": n_first / k,
                "base_bytes_per_write": yv("base-write"), "first_bytes_per_write": yv("first-write"),
                "steady_bytes_per_write": yv("steady-write"),
                "bytes_per_first_write": ((yv("first-write") - yv("base-write")) * k / n_first + IO_SIZE
                                          if n_first > 0 else np.nan),
                "extra_us_per_first_write": ((k / f_w - k / b_w) * 1e6 / n_first if n_first > 0 else np.nan),
                "space_first_mib": one("first-write", "snapshot_bytes") / MiB,
                "space_steady_mib": one("overwrite", "snapshot_bytes") / MiB,
            })
        pc = pd.DataFrame(per_cycle)
        row = {"variant": variant, "family": info.family, "mode": info["mode"], "grain_kib": info.grain / KiB,
               "copy_grain_kib": info.copy_grain / KiB, "cycles": len(pc)}
        for c in pc.columns:
            row[c] = float(pc[c].median())
            if c.endswith("ratio"):
                row[f"{c}_low"], row[f"{c}_high"] = float(pc[c].min()), float(pc[c].max())
        row["model_bytes_per_first_write"] = float(cow.first_write_bytes(info.copy_grain, IO_SIZE, info["mode"]))
        rows.append(row)
    out = pd.DataFrame(rows)
    order = out.family.map({f: i for i, f in enumerate(ENGINES)})
    return out.assign(_o=order).sort_values(["_o", "grain_kib"]).drop(columns="_o").reset_index(drop=True)


def summary_table(summ: pd.DataFrame) -> pd.DataFrame:
    """The per-variant summary rounded for reading."""
    cols = ["variant", "grain_kib", "first_fraction", "first_ratio", "steady_ratio", "snap_read_ratio",
            "bytes_per_first_write", "model_bytes_per_first_write", "extra_us_per_first_write", "space_first_mib",
            "space_steady_mib"]
    out = summ[cols].copy()
    for c in cols[1:]:
        out[c] = out[c].astype(float).round(3 if c.endswith(("ratio", "fraction")) else 1)
    return out


def fits_table(meas: pd.DataFrame) -> pd.DataFrame:
    """The amplification model's parameters per family with 95 % intervals (c dimensionless, M in bytes)."""
    rows = []
    for fam in ENGINES:
        f = fits(meas).get(fam)
        if f is None:
            continue
        (clo, chi), (mlo, mhi) = f.ci95
        rows.append({"family": fam, "mode": f.mode, "c": round(f.copy_factor, 3),
                     "c_ci95": "fixed at 1" if f.copy_factor_fixed else f"[{clo:.3f}, {chi:.3f}]",
                     "M_bytes": round(f.metadata_bytes), "M_ci95": f"[{mlo:.0f}, {mhi:.0f}]",
                     "r2": round(f.r2, 4), "points": f.points})
    return pd.DataFrame(rows)


def first_writes_check(meas: pd.DataFrame) -> pd.DataFrame:
    """Grains broken in the first-write phase: counted by the engine (cofw, LVM thin) beside the model's
    expectation for k random writes (snaptax.models.cow.expected_grains_hit)."""
    fw = meas[(meas.phase == "first-write") & (meas.first_source == "measured")]
    out = fw[["variant", "repeat", "write_ios", "first_writes", "first_writes_expected"]].copy()
    out["measured_over_expected"] = (out.first_writes / out.first_writes_expected).round(3)
    out["first_writes_expected"] = out.first_writes_expected.round(1)
    return out.reset_index(drop=True)


# ------------------------------------------------------------------ charts

FAMILY_TITLE = "engine (copy mode)"


def _family_label(summ: pd.DataFrame) -> pd.Series:
    return summ.family + " (" + summ["mode"] + ")"


def cost_chart(summ: pd.DataFrame) -> alt.Chart:
    """Host-level bytes per first write versus grain: measured (points) and the mechanism's prediction (lines)."""
    d = summ.assign(label=_family_label(summ))
    base = alt.Chart(d).encode(
        x=alt.X("grain_kib:Q", scale=alt.Scale(type="log", base=2), title="grain (KiB)"),
        color=alt.Color("label:N", title=FAMILY_TITLE))
    pts = base.mark_point(filled=True, size=60).encode(
        y=alt.Y("bytes_per_first_write:Q", scale=alt.Scale(type="log"), title="host bytes per first 4 KiB write"),
        tooltip=["variant", alt.Tooltip("bytes_per_first_write:Q", format=".0f"),
                 alt.Tooltip("model_bytes_per_first_write:Q", format=".0f")])
    line = base.mark_line(strokeDash=[4, 3]).encode(y="model_bytes_per_first_write:Q")
    return (line + pts).properties(title="Bytes moved per first write (points: measured; dashed: mechanism)",
                                   width=340, height=230)


def ratio_chart(summ: pd.DataFrame) -> alt.Chart:
    """Write and read IOPS with a snapshot ÷ without, versus grain, per engine family."""
    cols = {"first_ratio": "writes, grains being broken", "steady_ratio": "writes, all grains broken",
            "snap_read_ratio": "reads, snapshot present"}
    d = summ.assign(label=_family_label(summ)).melt(
        id_vars=["variant", "label", "grain_kib"], value_vars=list(cols), var_name="measure", value_name="ratio")
    d["measure"] = d.measure.map(cols)
    return alt.Chart(d).mark_line(point=True).encode(
        x=alt.X("grain_kib:Q", scale=alt.Scale(type="log", base=2), title="grain (KiB)"),
        y=alt.Y("ratio:Q", title="IOPS ÷ no snapshot (QD1)"),
        color=alt.Color("label:N", title=FAMILY_TITLE),
        tooltip=["variant", "measure", alt.Tooltip("ratio:Q", format=".2f")],
    ).properties(width=200, height=180).facet(column=alt.Column("measure:N", title=None, sort=list(cols.values())))


def space_chart(summ: pd.DataFrame) -> alt.Chart:
    """Snapshot space after the first-write phase, versus grain."""
    d = summ.assign(label=_family_label(summ))
    return alt.Chart(d).mark_line(point=True).encode(
        x=alt.X("grain_kib:Q", scale=alt.Scale(type="log", base=2), title="grain (KiB)"),
        y=alt.Y("space_first_mib:Q", title="snapshot space after k writes (MiB)"),
        color=alt.Color("label:N", title=FAMILY_TITLE),
        tooltip=["variant", alt.Tooltip("space_first_mib:Q", format=".1f")],
    ).properties(width=340, height=230, title="Space the snapshot takes after the first-write phase")


# ------------------------------------------------------------------ claims

CLAIM_VARIANT = "lvmthin-c64k"   # LVM's default thin-pool chunk; present at every profile
LOSS_TOLERANCE_PP = 15.0


def outcomes(summ: pd.DataFrame) -> list[claims.Outcome]:
    """Seed 001, Table 1, vVOL column ('No impact' with one snapshot, FIO random I/O) against LVM thin."""
    sel = summ[summ.variant == CLAIM_VARIANT]
    if sel.empty:
        return []
    row = sel.iloc[0]
    out = []
    for key, phase_words in (("first", "grains being broken"), ("steady", "all grains broken")):
        claim = claims.Claim(f"seed001-vvol-loss-{key}", "setty2021", "Table 1",
                             f"vVOL, FIO random I/O: loss with 1 snapshot ({phase_words})", 0.0, "%",
                             LOSS_TOLERANCE_PP, "No impact")
        ratio, lo, hi = row[f"{key}_ratio"], row[f"{key}_ratio_low"], row[f"{key}_ratio_high"]
        out.append(claims.Outcome(claim, 100 * (1 - ratio), 100 * (1 - hi), 100 * (1 - lo),
                                  f"LVM thin, {int(row.grain_kib)} KiB chunks, QD1 writes (TCG guest)"))
    return out


def outcomes_table(summ: pd.DataFrame) -> pd.DataFrame:
    return analysis.outcomes_frame(outcomes(summ))


# ------------------------------------------------------------------ paper

def _kib(n: float) -> str:
    return macros.fmt(n / KiB, 1)


def render(run_dir: Path, figure_dir: Path | None = None, generated_dir: Path | None = None) -> list[claims.Outcome]:
    """Figures, macros (generated/engines.tex) and tables for the paper, from one published run."""
    meas = measurements(run_dir)
    summ = summary(meas)
    man = analysis.manifest(run_dir)
    figures.save(cost_chart(summ), "engines-cost", figure_dir)
    figures.save(ratio_chart(summ), "engines-ratio", figure_dir)
    figures.save(space_chart(summ), "engines-space", figure_dir)

    sc = man["parameters"]["scale"]
    m: dict[str, str] = {
        "EngRunId": macros.tex_escape(man["run_id"]), "EngProfile": man["profile"],
        "EngRig": macros.tex_escape(man["rig"]), "EngDevice": macros.tex_escape(man["parameters"]["device"]),
        "EngDiskMiB": macros.fmt(sc["disk_size"] / MiB), "EngWrites": macros.fmt(sc["writes"]),
        "EngReads": macros.fmt(sc["reads"]), "EngVariants": str(len(summ)),
        "EngCycles": str(int(summ.cycles.max())), "EngMeasurements": str(len(meas)),
    }
    for _, r in summ.iterrows():
        v = r.variant
        m[macros.macro_name("Eng", v, "FirstRatio")] = macros.fmt(r.first_ratio, 2)
        m[macros.macro_name("Eng", v, "FirstLoss")] = macros.fmt(100 * (1 - r.first_ratio))
        m[macros.macro_name("Eng", v, "SteadyRatio")] = macros.fmt(r.steady_ratio, 2)
        m[macros.macro_name("Eng", v, "SteadyLoss")] = macros.fmt(100 * (1 - r.steady_ratio))
        m[macros.macro_name("Eng", v, "ReadRatio")] = macros.fmt(r.snap_read_ratio, 2)
        m[macros.macro_name("Eng", v, "SteadyReadRatio")] = macros.fmt(r.steady_read_ratio, 2)
        m[macros.macro_name("Eng", v, "FirstFraction")] = macros.fmt(r.first_fraction, 2)
        m[macros.macro_name("Eng", v, "BytesPerFirstKiB")] = _kib(r.bytes_per_first_write)
        m[macros.macro_name("Eng", v, "ModelBytesPerFirstKiB")] = _kib(r.model_bytes_per_first_write)
        m[macros.macro_name("Eng", v, "BytesPerWriteFirstKiB")] = _kib(r.first_bytes_per_write)
        m[macros.macro_name("Eng", v, "BytesPerWriteSteadyKiB")] = _kib(r.steady_bytes_per_write)
        m[macros.macro_name("Eng", v, "ExtraUsPerFirst")] = macros.fmt(r.extra_us_per_first_write)
        m[macros.macro_name("Eng", v, "SpaceFirstMiB")] = macros.fmt(r.space_first_mib, 1)
        m[macros.macro_name("Eng", v, "SpaceSteadyMiB")] = macros.fmt(r.space_steady_mib, 1)
    fitted = fits(meas)
    for fam, f in fitted.items():
        (clo, chi), (mlo, mhi) = f.ci95
        m[macros.macro_name("Eng", "Fit", fam, "C")] = macros.fmt(f.copy_factor, 2)
        m[macros.macro_name("Eng", "Fit", fam, "CLow")] = macros.fmt(clo, 2)
        m[macros.macro_name("Eng", "Fit", fam, "CHigh")] = macros.fmt(chi, 2)
        m[macros.macro_name("Eng", "Fit", fam, "MKiB")] = _kib(f.metadata_bytes)
        m[macros.macro_name("Eng", "Fit", fam, "Rsq")] = macros.fmt(f.r2, 3)
    macros.write_macros("engines", m, generated_dir)

    rows = []
    for _, r in summ.iterrows():
        rows.append([macros.tex_escape(r.family), macros.fmt(r.grain_kib), macros.fmt(r.first_fraction, 2),
                     macros.fmt(r.first_ratio, 2), macros.fmt(r.steady_ratio, 2), macros.fmt(r.snap_read_ratio, 2),
                     _kib(r.bytes_per_first_write), _kib(r.model_bytes_per_first_write),
                     macros.fmt(r.space_first_mib, 1)])
    macros.write_table("engines-table", macros.render_table(
        ["engine", "grain (KiB)", "$f$", "first", "steady", "read", "KiB/first write", "model", "space (MiB)"],
        rows, align="lrrrrrrrr"), generated_dir)
    fit_rows = []
    for fam in ENGINES:
        f = fitted.get(fam)
        if f is None:
            continue
        (clo, chi), (mlo, mhi) = f.ci95
        c = (f"1 (fixed)" if f.copy_factor_fixed else
             f"{macros.fmt(f.copy_factor, 2)} [{macros.fmt(clo, 2)}, {macros.fmt(chi, 2)}]")
        fit_rows.append([macros.tex_escape(fam), macros.tex_escape(f.mode), c,
                         f"{_kib(f.metadata_bytes)} [{_kib(mlo)}, {_kib(mhi)}]", macros.fmt(f.r2, 3), str(f.points)])
    macros.write_table("engines-fit", macros.render_table(
        ["engine", "copy mode", "$c$ [95\\,\\% CI]", "$M$ (KiB) [95\\,\\% CI]", "$R^2$", "points"], fit_rows,
        align="llrrrr"), generated_dir)
    return outcomes(summ)


__all__ = ["STUDY", "SCALES", "EngineScale", "Variant", "variants", "build_plan", "describe_plan", "run",
           "measurements", "write_points", "fits", "summary", "summary_table", "fits_table",
           "first_writes_check", "outcomes", "outcomes_table", "cost_chart", "ratio_chart", "space_chart", "render"]
