"""What the chain-bulk study measures: seed 001's 512 KiB sequential jobs and its VM clone against chain length.

Per configuration (the chain study's two qcow2 presets: metadata on disk as SEsparse on VMFS, in memory as
vSANsparse on vSAN), on a fresh volume of the rig's SSD-class device, beside a FLAT CONTROL: a raw volume of the
same size on the same device, in the same daemon, never snapshotted. The host disk's throughput for 512 KiB
streams varies by tens of per cent from one 5-s run to the next and between sessions (two unpaired quick runs of
an earlier plan disagreed by 1.6x at the same point), so every measurement on the chain is paired with the same
measurement on the control right next to it in time, in alternating order, and the study reports chain ÷ control.
  prefill (the whole disk, both volumes), one untimed warm-up of each job on each, then for n = 0 … max_chain, a
  snapshot taken before each n ≥ 1 (the seed's loop: create a snapshot, run fio, clone):
  read    seed 001's large sequential read job (512 KiB, iodepth 32 × 4 jobs, direct, time-based), `repeats` pairs;
  write   its write job, `repeats` pairs; the first pass over the disk allocates the newest layer's clusters and
          later passes overwrite them, as the seed's 300-s runs over a 50 GB file did;
  clone   a full copy of the volume's view to a new flat image on the same device, `repeats` pairs (figure 9:
          "Create a full clone (child VM) from the parent VM and measure the duration").
Reads run before writes at each n, so they read what was written while the previous layer was active and fall
through the new, empty layer's metadata, as a VM's reads do right after a snapshot.

Replicates (issue 47.3): the whole plan of every configuration runs `replicates` times, replicate-major, each on a
fresh engine, volume, control and fio processes (plan.replicate_name); the pairs of replicate r start in the order
pair(r), so the order alternates across replicates when each has one pair. The claims' values are one estimate per
replicate with a t pivot over the replicates (analyse.replicate_estimates); the pairs within a replicate cancel
the drift the chain and its control share. Measured in parts (parts), each part is one configuration in one
replicate, in a session of its own that it warms up. A scale may measure a subset of the chain lengths (`lengths`):
the snapshots between are still taken, so the chain grows one layer at a time as the seed's loop does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ... import profiles
from ...engines.qcow2 import PRESET_COVERAGES, Qcow2Config, metadata_configs
from ...errors import ConfigError
from ...fio import FioJob, prefill_job
from ...operatingpoints import UsedPoint
from ...plan import (
    Clone,
    Measure,
    Plan,
    Step,
    StudyPlan,
    TakeSnapshot,
    Target,
    VariantPlan,
    disk_needs,
    replicate_name,
    replicate_part,
    replicate_parts,
    split_replicate,
)
from ...studyparams import StudyParameters
from .. import seed001_standins

STUDY = "chain_bulk"
Kind = Literal["read", "write"]
KINDS: tuple[Kind, ...] = ("read", "write")
BLOCK = 512 << 10
FLAT_SUFFIX = "-flat"      # the phase of a measurement on the flat control
MiB = 1 << 20


@dataclass(frozen=True)
class BulkScale:
    """How much the study measures at one profile. max_chain: the longest chain (seed 001: 12; at least 3, since
    the seed's read claim is about the snapshots after the first two); runtime_s/ramp_time_s: each fio run;
    replicates: independent runs of each configuration's whole plan; pairs: (chain, control) pairs of each job and
    of clones per measured length and replicate (None: the profile's repeats, as runs before 2026-11-28 had);
    lengths: the chain lengths measured (None: every one, 0 … max_chain); they must hold 0, 1, 2 and max_chain,
    which the claims read."""

    max_chain: int
    runtime_s: float
    ramp_time_s: float
    warmup: bool = True        # one untimed run of each job on each volume first (smoke skips it: CI time)
    replicates: int = 1        # runs recorded before replicates existed (2026-11-28) had one
    pairs: int | None = None
    lengths: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        src = "chain-bulk scale"
        if self.max_chain < 3:
            raise ConfigError(src, "max_chain", f"{self.max_chain}: the per-snapshot claims need chains of at least 3")
        if self.replicates < 1:
            raise ConfigError(src, "replicates", f"{self.replicates}: at least one replicate")
        if self.pairs is not None and self.pairs < 1:
            raise ConfigError(src, "pairs", f"{self.pairs}: at least one pair")
        if self.lengths is not None:
            ls = self.lengths
            if list(ls) != sorted(set(ls)) or not {0, 1, 2, self.max_chain} <= set(ls) or ls[-1] != self.max_chain:
                raise ConfigError(src, "lengths", f"{ls}: increasing, within 0..max_chain, and holding 0, 1, 2 and "
                                  f"max_chain ({self.max_chain}), which the claims read")
        if not (math.isfinite(self.runtime_s) and self.runtime_s > 0):
            raise ConfigError("chain-bulk scale", "runtime_s", f"{self.runtime_s} is not a positive duration")
        if not (math.isfinite(self.ramp_time_s) and self.ramp_time_s >= 0):
            raise ConfigError("chain-bulk scale", "ramp_time_s", f"{self.ramp_time_s} is not a duration")


    def measured_lengths(self) -> tuple[int, ...]:
        return self.lengths if self.lengths is not None else tuple(range(self.max_chain + 1))

    def pairs_for(self, profile_repeats: int) -> int:
        return self.pairs if self.pairs is not None else profile_repeats


SCALES: dict[str, BulkScale] = {
    "smoke": BulkScale(max_chain=3, runtime_s=1, ramp_time_s=0, warmup=False),
    # quick: 3 independent replicates (issue 47.3) of one pair per job and of clones at lengths 0, 1, 2 and 4
    # (the claims read 0, 1, 2 and the longest; 3 is taken but not measured). 2-s runs after a 1-s ramp: the run
    # length is the quick profile's budget (quick as a whole under 90 minutes of measuring, issue 49), not a
    # settling time; before replicates the quick profile ran 2 pairs of 3-s runs at every length of one replicate.
    "quick": BulkScale(max_chain=4, runtime_s=2, ramp_time_s=1, replicates=3, pairs=1, lengths=(0, 1, 2, 4)),
    # full: seed 001's chains of 12, sampled as issue 47.5 suggests, 3 replicates of 2 pairs of 30-s runs
    "full": BulkScale(max_chain=12, runtime_s=30, ramp_time_s=5, replicates=3, pairs=2,
                      lengths=(0, 1, 2, 3, 6, 9, 12)),
}


def scale(profile: profiles.Profile) -> BulkScale:
    return profiles.study_scale(SCALES, profile, STUDY, "chain-bulk scale")


def configs(profile: profiles.Profile, coverages: tuple[Fraction, Fraction] = PRESET_COVERAGES) \
        -> tuple[Qcow2Config, Qcow2Config]:
    """The two redo-log stand-ins at `coverages` (seed001_standins.coverages: the rig's inferred operating points)."""
    return metadata_configs(profile.disk_size, coverages)


def bulk_job(kind: Kind, *, size: int, runtime_s: float, ramp_time_s: float = 0) -> FioJob:
    """Seed 001's large-I/O jobs ('Workloads with large I/O sizes'):

    READ:  -ioengine=libaio -iodepth=32 -rw=read  bs=512k -direct=1 -numjobs=4 -group_reporting=1 -size=50G
           -time_based -runtime=300 -randrepeat=1
    WRITE: the same with -rw=write
    """
    return FioJob(name=f"{kind}512k", rw=kind, bs=BLOCK, iodepth=32, numjobs=4, direct=True, size=size,
                  runtime_s=runtime_s, ramp_time_s=ramp_time_s, time_based=True, randrepeat=True,
                  group_reporting=True)


def variant_plan(profile: profiles.Profile, replicate: int = 0, *, cold: bool | None = None) -> Plan:
    """One configuration's plan in replicate `replicate`: its pairs start in the order pair(replicate + i), and it
    warms up when it opens a measuring session (`cold`; None: only replicate 0 does, as in a run of the whole study,
    whose later replicates follow their own volumes' prefill in a session no longer cold)."""
    s = scale(profile)
    n_pairs = s.pairs_for(profile.repeats)

    def run(kind: Kind, phase: str, repeat: int = 0, target: Target = "live") -> Measure:
        return Measure(bulk_job(kind, size=profile.disk_size, runtime_s=s.runtime_s, ramp_time_s=s.ramp_time_s),
                       phase + FLAT_SUFFIX * (target == "flat"), repeat, target)

    def pair(repeat: int) -> tuple[Target, Target]:
        # alternating order, so a drift through the pairs cancels over each two of them (across replicates too)
        return ("live", "flat") if (repeat + replicate) % 2 == 0 else ("flat", "live")

    prefill = prefill_job(profile.disk_size)
    steps: list[Step] = [Measure(prefill, "prefill"), Measure(prefill, "prefill" + FLAT_SUFFIX, target="flat")]
    if s.warmup and (replicate == 0 if cold is None else cold):
        steps += [run(kind, "warmup", 0, t) for kind in KINDS for t in ("live", "flat")]
    measured = set(s.measured_lengths())
    for n in range(s.max_chain + 1):
        if n:
            steps.append(TakeSnapshot())
        if n not in measured:
            continue
        for kind in KINDS:
            steps += [run(kind, kind, r, t) for r in range(n_pairs) for t in pair(r)]
        steps += [Clone(r, t) for r in range(n_pairs) for t in pair(r)]
    return Plan(tuple(steps))


def build_plan(profile: profiles.Profile, *, part: str | None = None) -> StudyPlan:
    """Every configuration's plan `replicates` times, replicate-major (as plan.replicated, with the pairs' order
    alternating across replicates). part: only that configuration's plan in that replicate (parts), warm-up first:
    a part is a measuring session of its own, cold whichever replicate it measures."""
    s = scale(profile)
    whole = StudyPlan(tuple(VariantPlan(replicate_name(c.name, r), variant_plan(profile, r))
                            for r in range(s.replicates) for c in configs(profile)))
    if part is None:
        return whole
    return StudyPlan(tuple(VariantPlan(v.variant, variant_plan(profile, split_replicate(v.variant)[1], cold=True))
                           for v in replicate_part(whole, part, f"{STUDY} study").variants))


def parts(profile: profiles.Profile) -> tuple[str, ...]:
    """The parts the study may be measured in, one per configuration and replicate (plan.replicate_parts, e.g.
    'on-disk-metadata.r0'): each holds its replicate's flat control (every chain measurement's pair is in its own
    variant plan) and warms its session up, so no ratio crosses two parts."""
    return replicate_parts(build_plan(profile))


def planned_seconds(profile: profiles.Profile, *, part: str | None = None) -> float:
    """The run time the plan (of `part`, None: the whole study) predicts (s), as the run's manifest records it
    (measure passes it to RunSession): the plan's time-based fio runtime."""
    return build_plan(profile, part=part).fio_seconds()


@dataclass(frozen=True)
class ChainBulkParameters(StudyParameters):
    """The study's parameters as the run's manifest records them (read back only by analyse): the scale it ran at
    (checked again by BulkScale when read), the rig device, the I/O size, the pairs per length and replicate
    (`repeats`: the profile's repeats before the scale named its pairs) and disk."""

    scale: BulkScale
    device: str
    block_bytes: int
    repeats: int
    disk_bytes: int
    # the inferred operating points its stand-ins measured at (None: the runs before operating points, at
    # engines.qcow2.PRESET_COVERAGES)
    operating_points: tuple[UsedPoint, ...] | None = None


def parameters(profile: profiles.Profile, device: str, used: tuple[UsedPoint, ...] = ()) -> ChainBulkParameters:
    s = scale(profile)
    return ChainBulkParameters(scale=s, device=device, block_bytes=BLOCK, repeats=s.pairs_for(profile.repeats),
                               disk_bytes=profile.disk_size, operating_points=used)


# Disk space the work directory needs while the study runs (plan.DiskNeed; the README's study table, measured at quick
# on the build machine): a chain of full overlays, the flat control and a clone; full (4 GiB volumes, chains to 12) not
# measured.
DISK = disk_needs(quick=7, full=None)


def describe(profile: profiles.Profile, rig: str = "local") -> str:
    """What a run measures, in words and counts from the plan (deterministic: checked by nbval)."""
    s = scale(profile)
    study = build_plan(profile)
    clones = sum(isinstance(st, Clone) for v in study.variants for st in v.plan.steps)
    lines = [f"profile {profile.name}: disk {profile.disk_size // MiB} MiB, chain 0..{s.max_chain} (measured at "
             f"{', '.join(map(str, s.measured_lengths()))}), {s.replicates} independent replicate(s) of "
             f"{s.pairs_for(profile.repeats)} pair(s) (chain, flat control; order alternating) of each 512 KiB job "
             f"({s.runtime_s:g} s + {s.ramp_time_s:g} s ramp) and of clones at each measured length",
             f"{study.points()} fio runs and {clones} clones in {len(study.variants) // s.replicates} configurations "
             f"x {s.replicates} replicate(s): "
             + ", ".join(f"{k} {v}" for k, v in study.phase_counts().items()),
             f"fio time >= {study.fio_seconds():.0f} s"]
    lines.append(seed001_standins.describe(rig))
    for c in configs(profile, seed001_standins.coverages(rig, profile.disk_size)[0]):
        lines.append(f"  {c.name} ({c.analogue}): L2 cache {(c.l2_cache_size or 0) >> 10} KiB of "
                     f"{c.l2_bytes_for(profile.disk_size) >> 10} KiB tables")
    lines.append("read job: " + " ".join(f"{k}={v}" for k, v in
                                         bulk_job("read", size=profile.disk_size, runtime_s=s.runtime_s).options()))
    return "\n".join(lines)
