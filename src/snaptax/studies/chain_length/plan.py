"""What the chain-length study measures, in an order that cancels the host disk's drift.

Per configuration: fill the base disk; one untimed warm-up of each job (the first run of a session is cold);
then
  pairs   the claim of seed 001's Table 1 — loss with one snapshot — measured as K neighbouring pairs: no snapshot,
          take a snapshot, one snapshot, delete it (active commit), … so each ratio is formed from measurements
          seconds apart and drift cancels in the ratio (the K pairs give its 95 % interval);
  create  the chain sweep (figures 1/2): R runs at n = 0, then take the n-th snapshot and run once at each
          n = 1 … max_chain;
  delete  the mirror (figures 5/6): delete the newest snapshot one at a time and run once after each, R runs at
          n = 0 at the end (recovery: the end's R runs against the sweep's first R).
Every run is seed 001's two fio jobs (randrw and readwrite, 4 KiB, iodepth 32, numjobs 4, direct). Each fio run
writes into the active layer, so every layer holds the data written while it was active, as the study's VMs did.

It runs for the two qcow2 presets of snaptax.engines.qcow2.metadata_configs, which differ only in where the redo
log's metadata lives (on disk, as SEsparse on VMFS; in memory, as vSANsparse on vSAN).
"""
from __future__ import annotations

from typing import Literal

from ... import profiles
from ...engines.qcow2 import Qcow2Config, metadata_configs
from ...fio import prefill_job, seed001_job
from ...plan import DeleteSnapshot, Measure, Plan, StudyPlan, TakeSnapshot, VariantPlan

WORKLOADS: tuple[Literal["randrw", "readwrite"], ...] = ("randrw", "readwrite")
# Neighbouring no-snapshot/one-snapshot pairs per profile, and why that many: the 95 % interval of a loss is
# t(K−1)·s/√K on the log ratio, s the pair-to-pair spread. PAIRS_BASIS states where s came from.
PAIRS = {"smoke": 2, "quick": 5, "full": 8}
PAIRS_BASIS = ("K = 5 keeps a loss's 95 % half-width near 6 pp, under the 15 pp tolerance, for a pair-to-pair "
               "spread up to s = 0.05 in log ratio; each run reports the spread it measured "
               "(chain_length.pair_log_sd.*); smoke's 2 pairs only exercise the code")


def configs(profile: profiles.Profile) -> tuple[Qcow2Config, Qcow2Config]:
    return metadata_configs(profile.disk_size)


def variant_plan(profile: profiles.Profile) -> Plan:
    def both(phase: str, repeat: int = 0) -> list[Measure]:
        return [Measure(seed001_job(kind, size=profile.disk_size, runtime_s=profile.runtime_s,
                                    ramp_time_s=profile.ramp_time_s), phase, repeat) for kind in WORKLOADS]

    steps: list = [Measure(prefill_job(profile.disk_size), "prefill"), *both("warmup")]
    for k in range(PAIRS[profile.name]):
        steps += [*both("pair", k), TakeSnapshot(), *both("pair", k), DeleteSnapshot("newest")]
    for r in range(profile.repeats):
        steps += both("create", r)
    for _ in range(profile.max_chain):
        steps += [TakeSnapshot(), *both("create")]
    for n in range(profile.max_chain):
        steps.append(DeleteSnapshot("newest"))
        steps += [m for r in range(profile.repeats if n == profile.max_chain - 1 else 1) for m in both("delete", r)]
    return Plan(tuple(steps))


def build_plan(profile: profiles.Profile) -> StudyPlan:
    plan = variant_plan(profile)
    return StudyPlan(tuple(VariantPlan(c.name, plan) for c in configs(profile)))


def describe(profile: profiles.Profile) -> str:
    """What a run measures, in words and counts from the plan (deterministic: checked by nbval)."""
    study = build_plan(profile)
    plan = study.variants[0].plan
    lines = [f"profile {profile.name}: disk {profile.disk_size >> 20} MiB, chain 0..{plan.max_chain_length}, "
             f"runs of {profile.runtime_s:g} s (+{profile.ramp_time_s:g} s ramp)",
             f"loss with one snapshot: {PAIRS[profile.name]} neighbouring pairs per job ({PAIRS_BASIS})",
             f"chain sweep: {profile.repeats} runs at n = 0 before and after, one at each other length",
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
