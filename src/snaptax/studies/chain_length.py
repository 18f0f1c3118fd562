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

from .. import paths, profiles, rig as rigmod
from ..backends import detach_stale_loops
from ..engines.qcow2 import Qcow2ChainEngine, Qcow2Config
from ..fio import FioJob, seed001_job
from ..lock import measurement_lock
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
    detach_stale_loops(rig.work_dir)
    with measurement_lock(), RunSession(rig, STUDY, profile.name, parameters) as session:
        for config in configs:
            with Qcow2ChainEngine(rig, dev, config, profile.disk_size) as engine:
                with session.in_variant(config.name, engine.describe()):
                    engine.execute(plan, session)
    assert session.published is not None
    return session.published


def latest_run(rig_name: str = "local", profile_name: str | None = None) -> Path | None:
    from ..record import published_runs
    runs = published_runs(rig_name, STUDY, profile_name)
    return runs[-1] if runs else None


__all__ = ["STUDY", "build_plan", "qcow2_configs", "run", "latest_run", "paths"]
