"""Seed 001 (Setty & Nag 2021): guest I/O versus snapshot chain length, and the mirror image on delete.

Experiment: fill the base disk, then for n = 0 … max_chain take the n-th snapshot and run seed 001's two fio
jobs (randrw and readwrite, 4 KiB, iodepth 32, numjobs 4, direct); then delete the newest snapshot one at a time
and run the same jobs after each delete (the study's figures 5/6). Each fio run writes into the active layer,
so every layer holds the data written while it was active, as the study's VMs did.

It runs for two qcow2 configurations that differ only in where the redo log's metadata lives:
  on-disk-metadata    an L2 cache holding 1/8 of the image's L2 tables: most lookups read metadata from disk,
                      as SEsparse (VMFS) does;
  in-memory-metadata  an L2 cache covering the whole image: lookups never leave memory, as vSANsparse's
                      in-memory metadata cache.
Both use 64 KiB clusters with extended L2 (2 KiB subclusters), so a first 4 KiB write does not copy backing data
(SEsparse's grain is 4 KiB); the copy-on-write cost of grains is the engine-comparison study's subject.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import analysis, claims, figures, macros, paths, profiles, rig as rigmod
from ..models import chain as chain_model
from ..engines.qcow2 import Qcow2ChainEngine, Qcow2Config
from ..fio import FioJob, seed001_job
from ..plan import DeleteSnapshot, Measure, Plan, TakeSnapshot
from ..record import RunSession

STUDY = "chain_length"
WORKLOADS = ("randrw", "readwrite")
L2_SLICE = 4096  # bytes per L2 cache entry: fine-grained so "1/8 of the tables" is meaningful on small disks


def qcow2_configs(disk_size: int) -> tuple[Qcow2Config, Qcow2Config]:
    probe = Qcow2Config("probe", extended_l2=True)
    l2_total = probe.l2_bytes_for(disk_size)
    small = max(2 * L2_SLICE, (l2_total // 8) // L2_SLICE * L2_SLICE)
    covering = l2_total + probe.cluster_size
    return (
        Qcow2Config("on-disk-metadata", extended_l2=True, l2_cache_size=small, l2_cache_entry_size=L2_SLICE,
                    analogue="SEsparse (VMFS)"),
        Qcow2Config("in-memory-metadata", extended_l2=True, l2_cache_size=covering,
                    l2_cache_entry_size=L2_SLICE, analogue="vSANsparse (vSAN)"),
    )


def prefill_job(disk_size: int) -> FioJob:
    """Write the whole base disk once, sequentially, so reads hit real data (IOmeter's test file)."""
    return FioJob("prefill", "write", bs=1 << 20, iodepth=8, numjobs=1, size=disk_size, time_based=False,
                  runtime_s=None, log_avg_msec=1000)


def build_plan(profile: profiles.Profile) -> Plan:
    def measure_all(phase: str) -> list[Measure]:
        return [Measure(seed001_job(kind, size=profile.disk_size, runtime_s=profile.runtime_s,
                                    ramp_time_s=profile.ramp_time_s), phase, repeat)
                for repeat in range(profile.repeats) for kind in WORKLOADS]

    steps: list = [Measure(prefill_job(profile.disk_size), "prefill")]
    steps += measure_all("create")
    for _ in range(profile.max_chain):
        steps.append(TakeSnapshot())
        steps += measure_all("create")
    for _ in range(profile.max_chain):
        steps.append(DeleteSnapshot("newest"))
        steps += measure_all("delete")
    return Plan(tuple(steps))


def describe_plan(profile: profiles.Profile) -> str:
    """What a run measures, in words and counts (deterministic: shown in the notebook and checked by nbval)."""
    plan = build_plan(profile)
    configs = qcow2_configs(profile.disk_size)
    counts: dict[str, int] = {}
    for _, m, _ in plan.measurements():
        counts[m.phase] = counts.get(m.phase, 0) + 1
    lines = [f"profile {profile.name}: disk {profile.disk_size >> 20} MiB, chain 0..{plan.max_chain_length}, "
             f"{profile.repeats} repeat(s) of {profile.runtime_s:g} s per point",
             "fio measurements per configuration: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
             f"fio time per configuration >= {plan.fio_seconds():.0f} s"]
    for c in configs:
        lines.append(f"  {c.name} ({c.analogue}): cluster {c.cluster_size >> 10} KiB, extended_l2={c.extended_l2}, "
                     f"L2 cache {c.l2_cache_size >> 10} KiB of {c.l2_bytes_for(profile.disk_size) >> 10} KiB tables")
    job = seed001_job("randrw", size=profile.disk_size, runtime_s=profile.runtime_s)
    lines.append("randrw job: " + " ".join(f"{k}={v}" for k, v in job.options()))
    return "\n".join(lines)


def run(rig_name: str = "local", profile_name: str = profiles.DEFAULT, device: str | None = None) -> Path:
    """Measure the study on a rig; returns the published run directory under data/."""
    profile = profiles.get(profile_name)
    rig = rigmod.load(rig_name)
    dev = rig.device(device)
    plan = build_plan(profile)
    configs = qcow2_configs(profile.disk_size)
    parameters = {"profile": profile, "device": dev.name, "workloads": WORKLOADS,
                  "plan_steps": len(plan.steps), "max_chain": plan.max_chain_length,
                  "configs": [c.name for c in configs], "fio_seconds_lower_bound": plan.fio_seconds() * 2}
    with RunSession(rig, STUDY, profile.name, parameters, devices_used=(dev.name,)) as session:
        for config in configs:
            with Qcow2ChainEngine(rig, dev, config, profile.disk_size) as engine:
                with session.in_variant(config.name, engine.describe()):
                    engine.execute(plan, session)
    assert session.published is not None
    return session.published


# ------------------------------------------------------------------ analysis

# Which of our configurations stands for which of the study's datastores.
STAND_IN = {"on-disk-metadata": "VMFS (SEsparse)", "in-memory-metadata": "vSAN (vSANsparse)"}
JOB_WORDS = {"randrw": "random I/O", "readwrite": "sequential I/O"}

# Seed 001, Table 1 ("Guest performance loss with 1 snapshot"), FIO columns; 'No impact' read as 0 % loss.
PUBLISHED_LOSS = {
    ("on-disk-metadata", "randrw"): (65.0, "Table 1"), ("on-disk-metadata", "readwrite"): (65.0, "Table 1"),
    ("in-memory-metadata", "randrw"): (35.0, "Table 1"), ("in-memory-metadata", "readwrite"): (0.0, "Table 1"),
}
LOSS_TOLERANCE_PP = 15.0
RECOVERY_TOLERANCE_PP = 10.0


def tables(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-measurement table, per-point summary with ratios to no snapshot), measurement phases only."""
    meas = analysis.per_measurement(analysis.results(run_dir))
    meas = meas[meas.phase.isin(["create", "delete"])]
    return meas, analysis.relative_to_baseline(analysis.summarize(meas))


def fits(meas: pd.DataFrame) -> dict[tuple[str, str], chain_model.ChainFit]:
    """The chain service-time model fitted per configuration and job to the create phase."""
    out = {}
    for (variant, job), g in meas[meas.phase == "create"].groupby(["variant", "job"]):
        try:
            out[(variant, job)] = chain_model.fit(g.chain_length.to_numpy(), g.iops.to_numpy())
        except ValueError:
            continue
    return out


def outcomes(rel: pd.DataFrame) -> list[claims.Outcome]:
    loss = analysis.loss_at(rel, 1).set_index(["variant", "job"])
    result = []
    for (variant, job), (published, where) in PUBLISHED_LOSS.items():
        if (variant, job) not in loss.index:
            continue
        row = loss.loc[(variant, job)]
        claim = claims.Claim(f"seed001-loss-{variant}-{job}", "setty2021", where,
                             f"{STAND_IN[variant].split()[0]}, FIO {JOB_WORDS[job]}: loss with 1 snapshot",
                             published, "%", LOSS_TOLERANCE_PP, "No impact" if published == 0 else "")
        result.append(claims.Outcome(claim, row.loss_pct, row.loss_pct_low, row.loss_pct_high,
                                     f"qcow2 {variant}"))
    final = rel[(rel.phase == "delete") & (rel.chain_length == 0)]
    for _, row in final.iterrows():
        claim = claims.Claim(f"seed001-recovery-{row.variant}-{row.job}", "setty2021", "Summary, Figure 6",
                             f"{STAND_IN[row.variant].split()[0]}, FIO {JOB_WORDS[row.job]}: performance after "
                             "all snapshots are deleted (÷ before)", 100.0, "%", RECOVERY_TOLERANCE_PP,
                             "full recovery")
        result.append(claims.Outcome(claim, 100 * row.ratio_median, 100 * row.ratio_low, 100 * row.ratio_high,
                                     f"qcow2 {row.variant}"))
    return result


def outcomes_table(rel: pd.DataFrame) -> pd.DataFrame:
    """The claims of seed 001 that this study tests, with our values and verdicts, as a table."""
    return analysis.outcomes_frame(outcomes(rel))


def fits_table(meas: pd.DataFrame) -> pd.DataFrame:
    """The chain model's parameters (µs per I/O, aggregate) with 95 % confidence intervals."""
    rows = []
    for (variant, job), f in sorted(fits(meas).items()):
        row = {"variant": variant, "job": job, "r2": round(f.r2, 3), "points": f.points}
        for p, (lo, hi) in zip(("tau0_us", "tau1_us", "tau_layer_us"), f.ci95):
            row[p] = round(getattr(f, p), 2)
            row[f"{p}_ci95"] = f"[{lo:.2f}, {hi:.2f}]"
        rows.append(row)
    return pd.DataFrame(rows)


def host_vs_vm_reads(meas: pd.DataFrame) -> pd.DataFrame:
    """Host-level reads per guest read, median per configuration and chain length (random job)."""
    m = meas[meas.job == "randrw"].assign(host_reads_per_vm_read=analysis.host_reads_per_vm_read(meas))
    return (m.groupby(["variant", "phase", "chain_length"])["host_reads_per_vm_read"].median()
            .round(2).unstack("chain_length"))


def measured_devices(man: dict) -> list[dict]:
    """The manifest entries of the device(s) the run measured (its parameters name the device)."""
    named = [d for d in man["devices"] if d["name"] == man["parameters"].get("device")]
    return named or man["devices"]


def render(run_dir: Path, figure_dir: Path | None = None, generated_dir: Path | None = None) -> list[claims.Outcome]:
    """Figures, macros and the Table 1 excerpt for the paper, from one published run."""
    meas, rel = tables(run_dir)
    man = analysis.manifest(run_dir)
    for job, stem in (("randrw", "seed001-random"), ("readwrite", "seed001-sequential")):
        figures.save(figures.chain_chart(rel, job), stem, figure_dir)
        figures.save(figures.mirror_chart(rel, job), f"{stem}-mirror", figure_dir)

    m: dict[str, str] = {
        "ChainRunId": macros.tex_escape(man["run_id"]), "ChainProfile": man["profile"],
        "ChainRig": macros.tex_escape(man["rig"]),
        "ChainDevice": macros.tex_escape(", ".join(f"{d['name']} ({d['medium']}{', EMULATED' if d['emulated'] else ''})"
                                                   for d in measured_devices(man))), "ChainMaxLength": str(int(rel.chain_length.max())),
        "ChainRepeats": str(int(rel.n.max())), "ChainMeasurements": str(len(meas)),
        "ChainRuntime": macros.fmt(man["parameters"]["profile"]["runtime_s"]),
        "ChainDiskMiB": macros.fmt(man["parameters"]["profile"]["disk_size"] / 2**20),
        "ChainFioVersion": macros.tex_escape(man["provenance"]["tools"]["fio"] or "?"),
        "ChainQemuVersion": macros.tex_escape((man["provenance"]["tools"]["qemu-storage-daemon"] or "?")),
        "ChainKernel": macros.tex_escape(man["provenance"]["host"]["kernel"]),
        "ChainCommit": macros.tex_escape((man["provenance"]["git"]["commit"] or "unknown")[:10]),
    }
    for name, variant in man["variants"].items():
        cfg = variant["config"]
        m[macros.macro_name("Chain", name, "LTwoCacheKiB")] = macros.fmt(cfg["l2_cache_size"] / 1024)
    for _, row in rel.iterrows():
        key = (row.variant, row.job, row.phase, f"n{int(row.chain_length)}")
        m[macros.macro_name("Chain", "Ratio", *key)] = macros.fmt(row.ratio_median, 2)
        m[macros.macro_name("Chain", "Iops", *key)] = macros.fmt(row["median"])
    for _, row in analysis.loss_at(rel, 1).iterrows():
        m[macros.macro_name("Chain", "Loss", row.variant, row.job)] = macros.fmt(row.loss_pct)
    for (variant, job), f in fits(meas).items():
        for pname in ("tau0_us", "tau1_us", "tau_layer_us"):
            m[macros.macro_name("Chain", "Fit", variant, job, pname)] = macros.fmt(getattr(f, pname), 1)
        m[macros.macro_name("Chain", "Fit", variant, job, "rsq")] = macros.fmt(f.r2, 2)
    if "host_disk_reads" in meas:
        ratio = analysis.host_reads_per_vm_read(meas)
        for variant, g in meas.assign(ratio=ratio).groupby("variant"):
            rand = g[(g.job == "randrw") & (g.chain_length >= 1)]
            base = g[(g.job == "randrw") & (g.chain_length == 0)]
            m[macros.macro_name("Chain", "HostReadsPerVmRead", variant, "snap")] = macros.fmt(rand.ratio.median(), 2)
            m[macros.macro_name("Chain", "HostReadsPerVmRead", variant, "none")] = macros.fmt(base.ratio.median(), 2)
    macros.write_macros("seed001", m, generated_dir)

    outs = outcomes(rel)
    fit_rows = []
    for (variant, job), f in sorted(fits(meas).items()):
        fit_rows.append([macros.tex_escape(variant), JOB_WORDS[job],
                         *[f"{macros.fmt(getattr(f, p), 1)} [{macros.fmt(lo, 1)}, {macros.fmt(hi, 1)}]"
                           for p, (lo, hi) in zip(("tau0_us", "tau1_us", "tau_layer_us"), f.ci95)],
                         macros.fmt(f.r2, 2)])
    macros.write_table("seed001-fit", macros.render_table(
        ["configuration", "workload", "$\\tau_0$ ($\\mu$s)", "$\\tau_1$ ($\\mu$s)", "$\\tau_L$ ($\\mu$s)", "$R^2$"], fit_rows,
        align="llrrrr"), generated_dir)
    return outs


__all__ = ["STUDY", "build_plan", "qcow2_configs", "run", "render", "tables", "fits", "outcomes"]
