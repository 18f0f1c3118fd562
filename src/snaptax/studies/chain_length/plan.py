"""What the chain-length study measures.

Fill the base disk, then for n = 0 … max_chain take the n-th snapshot and run seed 001's two fio jobs (randrw and
readwrite, 4 KiB, iodepth 32, numjobs 4, direct); then delete the newest snapshot one at a time and run the same
jobs after each delete (the study's figures 5/6). Each fio run writes into the active layer, so every layer holds
the data written while it was active, as the study's VMs did.

It runs for the two qcow2 presets of snaptax.engines.qcow2.metadata_configs, which differ only in where the redo
log's metadata lives (on disk, as SEsparse on VMFS; in memory, as vSANsparse on vSAN).
"""
from __future__ import annotations

from ... import profiles
from ...engines.qcow2 import Qcow2Config, metadata_configs
from ...fio import prefill_job, seed001_job
from ...plan import DeleteSnapshot, Measure, Plan, StudyPlan, TakeSnapshot, VariantPlan

WORKLOADS = ("randrw", "readwrite")


def configs(profile: profiles.Profile) -> tuple[Qcow2Config, Qcow2Config]:
    return metadata_configs(profile.disk_size)


def variant_plan(profile: profiles.Profile) -> Plan:
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


def build_plan(profile: profiles.Profile) -> StudyPlan:
    plan = variant_plan(profile)
    return StudyPlan(tuple(VariantPlan(c.name, plan) for c in configs(profile)))


def describe(profile: profiles.Profile) -> str:
    """What a run measures, in words and counts from the plan (deterministic: checked by nbval)."""
    study = build_plan(profile)
    plan = study.variants[0].plan
    lines = [f"profile {profile.name}: disk {profile.disk_size >> 20} MiB, chain 0..{plan.max_chain_length}, "
             f"{profile.repeats} repeat(s) of {profile.runtime_s:g} s per point",
             f"{study.points()} fio runs in {len(study.variants)} configurations: "
             + ", ".join(f"{k} {v}" for k, v in study.phase_counts().items()),
             f"fio time >= {study.fio_seconds():.0f} s"]
    for c in configs(profile):
        lines.append(f"  {c.name} ({c.analogue}): cluster {c.cluster_size >> 10} KiB, extended_l2={c.extended_l2}, "
                     f"L2 cache {(c.l2_cache_size or 0) >> 10} KiB of {c.l2_bytes_for(profile.disk_size) >> 10} KiB "
                     "tables")
    job = seed001_job("randrw", size=profile.disk_size, runtime_s=profile.runtime_s)
    lines.append("randrw job: " + " ".join(f"{k}={v}" for k, v in job.options()))
    return "\n".join(lines)
