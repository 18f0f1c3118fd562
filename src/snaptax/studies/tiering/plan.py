"""What the tiering study measures: seed 002's IOmeter load on an SAS-only pool and on an SAS + SSD Easy Tier pool,
before a snapshot, with it, during its consolidation and after, and where each phase's I/O landed.

Devices: the rig's `sas_pool` and `tier_pool` (emulated Storwize V7000 pools, rigs/spindles/devices.yaml: an
8-drive 10K RAID5, and the same RAID5 behind 10 % SSD extents with Easy Tier's cycle scaled 24 h -> 120 s; on a
real rig, the attached pools the rig file names so). Engine: the qcow2 redo log (the VMware delta stand-in) with
its L2 tables cached, base volume at the start of the pool and the delta in the next free region, which nothing
wrote before: its extents are new, so the pool allocates them on the SAS tier, as the seed's "new data".

Workload, as the seed's IOmeter: 32 KiB, 80 % read, 90 % random (fio `rwmixread=80`, `percentage_random=90`), one
worker with 16 outstanding I/Os (the seed names none; 16 keeps both tiers busy without queueing the emulated SSD
tier beyond what the emulator can time). Disk: the seed's 100 GB VM disk scaled by the pool's capacity
(16 GiB / 4.2 TB): 100 GB x 0.0041 = 409 MB -> 384 MiB (24 extents of 16 MiB, a quarter of the pool's 102 SSD
extents, as 100 GB was of ~420 GB of SSD). It is filled first with 1 MiB writes, which Easy Tier does not count
as heat (only I/Os of 64 KiB or less are), so the first plan sees only the workload.

Phases, each one fio run (per-second IOPS logs), the pool's counters sampled every second throughout:
  fill       the disk written once, 1 MiB sequential
  learn      (tier_pool) the workload in `learn_segment_s` runs until the pool has learned, measured from its
             counters: a tiering cycle has ended and at least `learned_fraction` of a segment's I/O was served by
             SSD extents, or `learn_limit_s` has passed (then the run records that it did not learn)
  initial    the workload, no snapshot
  (snapshot taken between runs)
  settle     the workload while the delta fills (the seed: "wait a few minutes")
  with       the workload with the snapshot
  delete     the workload for `delete_window_s` while QEMU's active commit consolidates the snapshot
  after      the workload once the snapshot is gone
  relearn    (tier_pool) the workload until a further cycle has ended after the consolidation and the SSD share
             is back, or `relearn_limit_s`
  relearned  (tier_pool) the workload
On tier_pool, learn ends a few seconds after a cycle end, and initial ... after must fit before the next one, or
that cycle's plan would promote the delta and `with` would measure a recovered pool: the scales keep them within
the cycle and the analysis reports any cycle that ended inside a phase.

Replicates (issue 47.3): the qcow2 timeline of each pool runs `replicates` times, each an independent run (a
fresh emulated pool, engine, daemon and fio processes, its own fill, learning and phases, its own fio offsets:
phase_seed), named by plan.replicate_name (`sas_pool`, `tier_pool`, `sas_pool@r1`, `tier_pool@r1`, ...: the
first keeps the pool's name, so a run of one replicate reads as runs always did). The claims' values are formed
per replicate and their intervals taken over the replicates (analyse, replicates.py); smoke and quick run one
(their claims are not judged, n < 3), full three. The order is replicate-major (qcow2_variants).

The stand-in's operating point (issue 46.4). The redo log's metadata cost is set by how much of its L2 tables the
cache holds (standins.vmfs5_redolog_v7000): the qcow2 timelines measure at the coverage inferred on the rig
(rigs/operating-points/<rig>.yaml), or, where none is, at the preset of the runs before it (every table cached,
PRESET_COVERAGE). Where the scale has a `coverage_sweep`, each replicate also measures a sweep on the SAS-only pool
(`sas_pool.sweep`, `sas_pool.sweep@r1`, ...), which the analysis reads the point off: fill, initial, then per
coverage a fresh snapshot, its cache set to the coverage (QMP blockdev-reopen), settle and with as in the timeline,
and its consolidation without load; then after. The coverages go up in even replicates and down in odd ones, so an
order effect (the base's layout after each commit, drift) falls on both ends alike. C002-1a's 12.2 % calibrates the
point and is then not judged (snaptax.judged).

LVM thin (array-native), for contrast, on each pool after the qcow2 timeline: a thin volume of the same size in a
thin pool (64 KiB chunks, snapshots of the origin, fio on the origin), in the TCG guest where the kernel has no
device-mapper. A snapshot makes every write to a shared chunk allocate a new pool chunk: further into the pool's LBA
space, in extents nothing wrote before, so the pool allocates them on the SAS tier as it does the qcow2 delta. Its
deletion (`lvremove`) copies nothing: the origin keeps mapping the new chunks, so the data stays misplaced until a
cycle promotes it, where the qcow2 commit copies it back onto the extents the pool had promoted. The whole timeline
is one script in the guest (no step can wait on the pool's counters there), so learning and re-learning are runs
of fixed length: one tiering cycle of the emulated pool and a margin, which guarantees a cycle end inside each,
and the analysis judges from the host's counters, cut at the guest's steps, whether the pool learned.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import zlib
from dataclasses import dataclass
from fractions import Fraction

from ... import profiles
from ...engines.lvmthin.config import LvmThinConfig
from ...engines.qcow2 import Qcow2Config, l2_cache_size_for, metadata_configs, nearest_coverage
from ...errors import ConfigError
from ...fio import FioJob, format_size
from ...operatingpoints import UsedPoint
from ...plan import DeleteSnapshot, Measure, Plan, Step, TakeSnapshot, disk_needs, replicate_name, split_replicate
from ...studyparams import StudyParameters

STUDY = "tiering"
KiB, MiB = 1 << 10, 1 << 20
POOLS = ("sas_pool", "tier_pool")          # the seed's two V7000s, in measuring order
TIERED = "tier_pool"
# Held-out test of the misplacement model (issue 48), declared on 2026-11-29 after the committed quick runs had been
# measured but before any held-out error was computed: τ_hdd from the SAS-only pool's initial phase, τ_ssd from the
# tiered pool's initial phase, predicting the tiered pool's later steady phases from their SSD-served shares
# (tiering.heldout). The consolidation window is not predicted: the commit's copies add I/O the model lacks.
HELDOUT_PHASES = ("with", "after", "relearned")
BS = 32 * KiB
READ_PERCENT = 80
RANDOM_PERCENT = 90
IODEPTH = 16
SPAN_MODEL_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)    # shares of the data in a second region (measure.span_model)
SPAN_MODEL_SEEDS = (1, 2, 3, 4, 5)                    # its closed loops' seeds: the range over them is its interval
SEED_DISK_BYTES = 100e9                    # the seed's VM disk
SEED_POOL_BYTES = 4.2e12                   # the V7000's usable capacity the emulated pools scale (16 GiB)
PHASES = ("fill", "learn", "initial", "settle", "with", "delete", "after", "relearn", "relearned")
LVM_THIN = "lvmthin"
# Seed 002's redo-log stand-in (standins.vmfs5_redolog_v7000) and the coverage its timelines measure at where no
# operating point is inferred on the rig: every L2 table cached (the runs before the sweep).
STAND_IN = "vmfs5_redolog_v7000"
PRESET_COVERAGE = Fraction(1)
SWEEP = "sweep"                            # the sweep's engine mark in its variant names (sas_pool.sweep@r1)
SWEEP_POOL = "sas_pool"
# The sweep's coverages, fixed before any sweep was measured: from QEMU's least cache (two 4 KiB slices of the
# 384 MiB disk's 96 KiB of tables, 1/12) through the seed system's bound (a host's metadata heap holds at most
# 24 % of a full 100 GB vmfsSparse delta's grain tables: standins) to every table (the preset, 1). They are whole
# slices of that disk (2, 4, 6, 12 and 24 of 24).
SWEEP_COVERAGES = (Fraction(1, 12), Fraction(1, 6), Fraction(1, 4), Fraction(1, 2), Fraction(1))
HEAP_BOUND = 192 / 800         # standins.vmfs5_redolog_v7000's bound: 192 MiB of heap over 800 MiB of grain tables
SEED_SAS_KEEP_PCT = 100 * 300 / 2450       # C002-1a: 300 of 2450 IO/s with the snapshot on the SAS-only pool


@dataclass(frozen=True)
class TieringScale:
    """How much the tiering study measures at one profile.

    disk_bytes: the VM disk; phase_s: the initial, after and relearned runs; settle_s: the run right after the
    snapshot (kept apart: the SSD-served share falls fastest then); with_s: the run with the snapshot;
    delete_window_s: the load's run while the snapshot is consolidated; learn_segment_s: one run while waiting
    for the pool to learn; learn_limit_s/relearn_limit_s: how long to wait at most; learned_fraction: the
    SSD-served share of I/O that counts as learned; untiered_factor: how much longer the runs are on the pool
    without tiering (phase_length); span_model_ios: requests per closed loop of the untiered pool's span model
    (measure.span_model: 25 loops, about 60 µs of CPU per request); replicates: independent qcow2 timelines per
    pool (issue 47.3: a fresh pool, engine and fio processes each; the LVM thin contrast runs once);
    coverage_sweep: the L2-cache coverages of the SAS-only pool's sweep, once per replicate (none: no sweep)."""

    disk_bytes: int
    phase_s: float
    settle_s: float
    with_s: float
    delete_window_s: float
    learn_segment_s: float
    learn_limit_s: float
    relearn_limit_s: float
    learned_fraction: float = 0.9
    untiered_factor: float = 2.0
    guest_segment_s: float = 10.0
    span_model_ios: int = 6000
    replicates: int = 1     # runs recorded before replicates existed (2026-11-29) had one (record.upgrade)
    coverage_sweep: tuple[Fraction, ...] = ()      # runs before the sweep (2026-12-01) had none

    def __post_init__(self) -> None:
        src = "tiering scale"
        if self.disk_bytes <= 0 or self.disk_bytes % MiB:
            raise ConfigError(src, "disk_bytes", f"must be a positive whole number of MiB, got {self.disk_bytes}")
        for name in ("phase_s", "settle_s", "with_s", "delete_window_s", "learn_segment_s", "guest_segment_s"):
            # nan guest segments: a run made before the LVM thin variants, which had none (record.upgrade)
            if not getattr(self, name) >= 2 and not (name == "guest_segment_s" and math.isnan(self.guest_segment_s)):
                raise ConfigError(src, name, "runs need at least 2 s")
        for name in ("learn_limit_s", "relearn_limit_s"):
            if not getattr(self, name) >= 0:
                raise ConfigError(src, name, "must be a duration ≥ 0")
        if not 0 < self.learned_fraction <= 1:
            raise ConfigError(src, "learned_fraction", f"must be in (0, 1], got {self.learned_fraction}")
        if not self.span_model_ios >= 100:
            raise ConfigError(src, "span_model_ios", f"must be at least 100, got {self.span_model_ios}")
        if not (isinstance(self.replicates, int) and self.replicates >= 1):
            raise ConfigError(src, "replicates", f"must be a whole number >= 1, got {self.replicates}")
        if not self.untiered_factor >= 1:
            raise ConfigError(src, "untiered_factor", f"must be ≥ 1, got {self.untiered_factor}")
        if any(not 0 < c <= 1 for c in self.coverage_sweep) or \
                sorted(set(self.coverage_sweep)) != list(self.coverage_sweep):
            raise ConfigError(src, "coverage_sweep", "must be distinct ascending fractions in (0, 1]")

    def phase_length(self, pool: str, seconds: float) -> float:
        """A run's length on `pool`: a pool without tiering has no cycle to fit its phases into, so they run
        `untiered_factor` times longer there (narrower intervals for the SAS-only claims)."""
        return seconds if tiered(pool) else seconds * self.untiered_factor

    @property
    def between_cycles_s(self) -> float:
        """Load time from the end of learning to the end of `after` (must fit in one tiering cycle)."""
        return 2 * self.phase_s + self.settle_s + self.with_s + self.delete_window_s


SCALES: dict[str, TieringScale] = {
    # smoke: every phase once, short; the pool does not get to learn (no cycle ends): numbers are not meaningful;
    # the span model with a tenth of the requests (1 s of CPU, not 9); one replicate
    "smoke": TieringScale(32 * MiB, phase_s=2, settle_s=2, with_s=2, delete_window_s=4, learn_segment_s=2,
                          learn_limit_s=2, relearn_limit_s=2, untiered_factor=1.0, span_model_ios=600, replicates=1,
                          # the sweep's steps once (the 32 MiB disk's tables are QEMU's least cache: one coverage)
                          coverage_sweep=(Fraction(1),)),
    # quick: the seed's disk scaled; learning takes one 120 s cycle; initial ... after take 95 s of the ~110 s
    # left in the next cycle; sas_pool's runs twice as long (its claims' intervals were about ±6 pp with 3-s
    # batches of 20 s, against ±5 pp tolerances). The LVM thin guest learns in 10-s runs the host ends from the
    # pool's counters (lvmthin_plan's gated runs, measure.LearningGate), as the qcow2 timeline does. One replicate:
    # quick's whole-suite budget (90 min) is nearly used, so its claims stay not judged (n < 3).
    "quick": TieringScale(384 * MiB, phase_s=15, settle_s=10, with_s=20, delete_window_s=35, learn_segment_s=5,
                          learn_limit_s=200, relearn_limit_s=150, replicates=1),
    # full: three independent qcow2 timelines per pool, the least that is judged (science plan §5); the coverage
    # sweep in each replicate (quick has none: its whole-suite budget of 90 minutes is used)
    "full": TieringScale(384 * MiB, phase_s=15, settle_s=10, with_s=20, delete_window_s=35, learn_segment_s=5,
                         learn_limit_s=260, relearn_limit_s=260, replicates=3, coverage_sweep=SWEEP_COVERAGES),
}


def lvmthin_config() -> LvmThinConfig:
    """The array-native contrast: LVM thin with 64 KiB chunks (lvm's default), snapshots of the origin ('fan'), the
    pool twice the volume (a full copy-out after the snapshot fits)."""
    return LvmThinConfig(name=LVM_THIN, chunk_size=64 * KiB, chain="fan", pool_factor=2.0,
                         analogue="array-native snapshot (redirect on write)")


def lvmthin_variant(pool: str) -> str:
    """The LVM thin timeline's variant name on `pool` (the qcow2 timeline's is the pool's own name)."""
    return f"{pool}.{LVM_THIN}"


def pool_of(variant: str) -> str:
    """The pool a variant ran on (of any replicate: `sas_pool@r1` ran on sas_pool)."""
    return split_replicate(variant)[0].split(".")[0]


def engine_of(variant: str) -> str:
    base = split_replicate(variant)[0]
    return base.split(".")[1] if "." in base else "qcow2"


def replicate_of(variant: str) -> int:
    """The replicate a recorded variant belongs to (0 for the first, and for runs made before replicates)."""
    return split_replicate(variant)[1]


def qcow2_variants(s: TieringScale) -> tuple[tuple[str, str, int], ...]:
    """The qcow2 timelines in measuring order: (recorded variant name, pool, replicate).

    Replicate-major, the pools interleaved within each replicate (r0 sas_pool, r0 tier_pool, r1 sas_pool, r1
    tier_pool, ...), as plan.replicated orders other studies' variants: the host's disk and CPU drift over a
    sitting of an hour or more (platform notes: ±30 % between runs), and pool-major order would put all of one
    pool's replicates in one part of the sitting and all of the other's in another, so drift would enter the
    comparison of the two pools (C002-3 is a ratio of their ratios, formed within each replicate). Interleaved,
    each replicate's two timelines are neighbours in time, and drift between sittings falls on both pools alike."""
    return tuple((replicate_name(pool, r), pool, r) for r in range(s.replicates) for pool in POOLS)


def lvmthin_plan(s: TieringScale, pool: str) -> Plan:
    """The LVM thin timeline as one plan: fill, (learn), initial, snapshot, settle, with, delete (lvremove: no load
    window, it copies nothing), after, (relearn, relearned). Runs as long as the qcow2 timeline's on tier_pool;
    on sas_pool as long as there too (not × untiered_factor: the row is a contrast, not a claim)."""
    def run(phase: str, seconds: float, repeat: int = 0) -> Measure:
        return Measure(workload(s, seconds, phase, repeat), phase, repeat)

    def segments(phase: str, limit_s: float) -> list[Step]:
        # Gated runs: the host ends the loop from the pool's counters when the guest asks before a run
        # (measure.LearningGate); the first always runs. One run more than the limit holds, so that the question
        # before the last run always comes after the limit: the loop ends at a question, with its verdict logged,
        # and never by running out of steps.
        n = max(1, math.ceil(limit_s / s.guest_segment_s))
        return [Measure(workload(s, max(2.0, limit_s / n), phase, k), phase, k, gate=phase) for k in range(n + 1)]

    steps: list[Step] = [Measure(fill_job(s), "fill")]
    if tiered(pool):
        steps += segments("learn", s.learn_limit_s)
    steps += [run("initial", s.phase_s), TakeSnapshot(), run("settle", s.settle_s), run("with", s.with_s),
              DeleteSnapshot("newest"), run("after", s.phase_s)]
    if tiered(pool):
        steps += [*segments("relearn", s.relearn_limit_s), run("relearned", s.phase_s)]
    return Plan(tuple(steps))


def scale(profile: profiles.Profile) -> TieringScale:
    return profiles.study_scale(SCALES, profile, STUDY, "tiering scale")


def qcow2_config(s: TieringScale, coverage: Fraction = PRESET_COVERAGE) -> Qcow2Config:
    """The delta: qcow2 with 64 KiB clusters and extended L2 (engines.qcow2's `in-memory-metadata` preset: a 32 KiB
    first write copies nothing, as vmfsSparse's 512-byte grains) with an L2 cache holding `coverage` of its tables:
    the stand-in's operating point (standin_settings.coverage), so a lookup reads the block map from the pool with
    probability 1 − coverage. At the preset (every table cached) it is that preset, as the runs before the point
    were."""
    preset = metadata_configs(s.disk_bytes)[1]
    if coverage == PRESET_COVERAGE:
        return preset
    return dataclasses.replace(preset, name="v7000-redo-log", analogue="vmfsSparse redo log (vSphere 5.5)",
                               l2_cache_size=l2_cache_size_for(preset.l2_bytes_for(s.disk_bytes), coverage,
                                                               preset.cluster_size))


def sweep_variant(replicate: int) -> str:
    """The coverage sweep's recorded variant in `replicate` (`sas_pool.sweep`, `sas_pool.sweep@r1`, ...)."""
    return replicate_name(f"{SWEEP_POOL}.{SWEEP}", replicate)


def sweep_label(c: Fraction) -> str:
    """A coverage in a phase name or value key: '1-12'."""
    return f"{c.numerator}-{c.denominator}"


def sweep_phase(phase: str, c: Fraction) -> str:
    """The sweep's `phase` ('settle' or 'with') at coverage c: 'with-1-12'."""
    return f"{phase}-{sweep_label(c)}"


def sweep_coverage(phase: str) -> tuple[str, Fraction] | None:
    """sweep_phase's inverse: ('with', 1/12) for 'with-1-12'; None for any other phase."""
    base, _, label = phase.partition("-")
    num, _, den = label.partition("-")
    if base not in ("settle", "with") or not (num.isdigit() and den.isdigit()) or int(den) == 0:
        return None
    return base, Fraction(int(num), int(den))


def sweep_order(s: TieringScale, replicate: int) -> tuple[Fraction, ...]:
    """The sweep's coverages in the order `replicate` measures them: up in even replicates, down in odd ones."""
    return s.coverage_sweep if replicate % 2 == 0 else tuple(reversed(s.coverage_sweep))


def realised_coverage(c: Fraction, disk_bytes: int) -> Fraction:
    """The coverage a sweep point's cache realises on the disk (whole slices, at least QEMU's two): engine's
    set_cache rounds so."""
    return nearest_coverage(float(c), disk_bytes)


def workload(s: TieringScale, runtime_s: float, phase: str, repeat: int = 0, name: str = "iometer",
             replicate: int = 0) -> FioJob:
    """Seed 002's IOmeter pattern: 32 KiB, 80 % read, 90 % random, over the whole disk, with the random seed of
    `phase`'s `repeat`-th run in replicate `replicate` (phase_seed).

    The seed's IOmeter ran on through every phase, so each phase met offsets it had not met before. fio's default
    seed would replay one sequence in every phase: the with-snapshot phase would rewrite what the settle phase had
    just written, and after a deletion the load would touch only chunks the snapshot phases had already copied."""
    return FioJob(name, "randrw", bs=BS, iodepth=IODEPTH, numjobs=1, size=s.disk_bytes, runtime_s=runtime_s,
                  rwmixread=READ_PERCENT, percentage_random=RANDOM_PERCENT,
                  randseed=phase_seed(phase, repeat, replicate))


def phase_seed(phase: str, repeat: int = 0, replicate: int = 0) -> int:
    """fio's randseed for the `repeat`-th run of `phase` in replicate `replicate`: CRC-32 of "phase/repeat" (the
    first replicate: the seeds runs have always used) or "phase/repeat/r<replicate>" — fixed from run to run (a
    rerun draws the same offsets), different between phases, repeats and replicates (each replicate is another
    draw of the seed's random load, so the spread between replicates includes the offsets' own)."""
    key = f"{phase}/{repeat}" if replicate == 0 else f"{phase}/{repeat}/r{replicate}"
    return zlib.crc32(key.encode())


def fill_job(s: TieringScale) -> FioJob:
    """The disk written once, 1 MiB at a time: commands above 64 KiB heat no extent."""
    return FioJob("fill", "write", bs=MiB, iodepth=4, numjobs=1, size=s.disk_bytes, time_based=False,
                  runtime_s=None)


def tiered(pool: str) -> bool:
    return pool == TIERED


def phases_of(pool: str) -> tuple[str, ...]:
    return PHASES if tiered(pool) else tuple(p for p in PHASES if p not in ("learn", "relearn", "relearned"))


GUEST_START_S = 20.0       # the TCG guest's boot, LVM set-up and the fill of the LVM thin timeline (about 7 + 3 + 8 s)
GUEST_FIO_START_S = 1.5    # fio's start and exit in the TCG guest, per run


def estimated_seconds(s: TieringScale, lvmthin: bool = True) -> float:
    """Planned time (s), for the ETA: the qcow2 timelines (each pool's `replicates` times) with the tier pool's
    waits at their limits (learning ends earlier when the counters say so), the phases, 5 s per fill and engine
    start; the coverage sweeps (sweep_seconds); then (lvmthin) the LVM thin timelines' fixed plans, once per pool,
    with the guest's start and fio's start in it."""
    per_pool = s.between_cycles_s + 10
    per_replicate = per_pool * (1 + s.untiered_factor) + s.learn_limit_s + s.relearn_limit_s + s.phase_s
    total = (per_replicate + sweep_seconds(s)) * s.replicates
    if lvmthin:
        for pool in POOLS:
            plan = lvmthin_plan(s, pool)
            total += GUEST_START_S + plan.fio_seconds() + GUEST_FIO_START_S * len(list(plan.measurements()))
    return total


SWEEP_POINT_OVERHEAD_S = 10.0     # a sweep point's snapshot, cache reopen and unloaded commit (seconds on the pool)


def sweep_seconds(s: TieringScale) -> float:
    """One replicate's coverage sweep (s): fill and engine start, initial and after, and per coverage settle, with
    and SWEEP_POINT_OVERHEAD_S; 0 without a sweep."""
    if not s.coverage_sweep:
        return 0.0
    run = functools.partial(s.phase_length, SWEEP_POOL)
    return 10 + 2 * run(s.phase_s) + len(s.coverage_sweep) * (run(s.settle_s) + run(s.with_s) +
                                                             SWEEP_POINT_OVERHEAD_S)


def planned_seconds(profile: profiles.Profile, lvmthin: bool = True) -> float:
    """The run time the plan predicts (s), as the run's manifest records it (measure passes it to RunSession)."""
    return estimated_seconds(scale(profile), lvmthin)


def planned_points(s: TieringScale, lvmthin: bool = True) -> int:
    """fio runs at most: every phase of both pools in every replicate, learning segments at their limits, and the
    sweep's (fill, initial, after and two per coverage); the LVM thin plans' runs (once)."""
    learn = -(-s.learn_limit_s // s.learn_segment_s) + -(-s.relearn_limit_s // s.learn_segment_s)
    sweep = 3 + 2 * len(s.coverage_sweep) if s.coverage_sweep else 0
    qcow2 = (len(phases_of("sas_pool")) + len(phases_of(TIERED)) - 2 + int(learn) + sweep) * s.replicates
    return qcow2 + (sum(len(list(lvmthin_plan(s, p).measurements())) for p in POOLS) if lvmthin else 0)


@dataclass(frozen=True)
class TieringParameters(StudyParameters):
    """The study's parameters as the run's manifest records them (read back only by analyse): the scale it ran at
    (the times, sizes and learning rule; checked again by TieringScale when read); devices: pool → the rig device
    serving it; lvmthin: whether the run measured the LVM thin variants (the rig has the engine); operating_points:
    the stand-in's inferred point the qcow2 timelines measured at (empty: the preset; None: a run before operating
    points, at the preset)."""

    scale: TieringScale
    devices: dict[str, str]
    bs: int
    read_percent: int
    random_percent: int
    iodepth: int
    qcow2: str
    disk_scale: float
    lvmthin: bool
    operating_points: tuple[UsedPoint, ...] | None = None


def parameters(s: TieringScale, devices: dict[str, str], lvmthin: bool, coverage: Fraction = PRESET_COVERAGE,
               used: tuple[UsedPoint, ...] = ()) -> TieringParameters:
    return TieringParameters(scale=s, devices=devices, bs=BS, read_percent=READ_PERCENT, random_percent=RANDOM_PERCENT,
                             iodepth=IODEPTH, qcow2=qcow2_config(s, coverage).name,
                             disk_scale=s.disk_bytes / SEED_DISK_BYTES, lvmthin=lvmthin, operating_points=used)


# Disk space the work directory needs while the study runs (plan.DiskNeed; the README's study table, measured at quick
# on the build machine): the 384 MiB disk on each emulated pool with a qcow2 delta; full measures the same volumes
# longer.
DISK = disk_needs(quick=1, full=1)


def describe(profile: profiles.Profile, lvmthin: bool = True) -> str:
    """What a run measures, in words and numbers from the scale (deterministic: checked by nbval)."""
    s = scale(profile)
    t = lvmthin_config()
    return "\n".join([
        f"profile {profile.name}: IOmeter as seed 002, {BS // KiB} KiB, {READ_PERCENT} % read, {RANDOM_PERCENT} % "
        f"random, QD{IODEPTH}, over a {format_size(s.disk_bytes)} disk (the seed's 100 GB scaled by "
        f"{s.disk_bytes / SEED_DISK_BYTES:.2e}), qcow2 redo log ({qcow2_config(s).name}); every run draws its own "
        f"offsets (fio randseed per phase, run and replicate)",
        f"pools {', '.join(POOLS)}; phases {', '.join(phases_of(TIERED))} (sas_pool without learn/relearn)",
        f"replicates: {s.replicates} independent qcow2 timeline{'s' if s.replicates != 1 else ''} per pool (a fresh "
        f"pool, engine and fio processes each, the pools interleaved: "
        f"{', '.join(v for v, _, _ in qcow2_variants(s))}); the claims' intervals are over them"
        + (" (fewer than 3: the claims are not judged)" if s.replicates < 3 else ""),
        f"runs: initial/after/relearned {s.phase_s:g} s, settle {s.settle_s:g} s, with {s.with_s:g} s, "
        f"consolidation window {s.delete_window_s:g} s ({s.between_cycles_s:g} s from learned to after; "
        f"x{s.untiered_factor:g} on sas_pool)",
        f"learning: {s.learn_segment_s:g}-s runs until a cycle has ended and >= {s.learned_fraction:.0%} of I/O is "
        f"SSD-served, at most {s.learn_limit_s:g} s (re-learning at most {s.relearn_limit_s:g} s)",
        (f"coverage sweep on {SWEEP_POOL} in each replicate (the stand-in's operating point is read off it): L2 "
         f"cache {', '.join(str(c) for c in s.coverage_sweep)} of the tables, each on a fresh snapshot (settle, "
         f"with, commit without load), up in even replicates and down in odd ones"
         if s.coverage_sweep else "no coverage sweep at this profile"),
        *([f"then {LVM_THIN} ({t.analogue}) once on each pool (a contrast, not a claim), in the TCG guest where "
            f"the kernel has no device-mapper: "
            f"{t.chunk_size // KiB} KiB chunks, snapshot of the origin, deleted by lvremove (no load window: it "
            f"copies nothing back); learning and re-learning in {s.guest_segment_s:g}-s runs that the host ends by "
            f"the same rule from the pool's counters, asked before each run; the phases as long as qcow2's on "
            f"tier_pool"] if lvmthin else []),
        f"planned at most about {estimated_seconds(s, lvmthin) / 60:.1f} min",
    ])


__all__ = ["STUDY", "POOLS", "TIERED", "PHASES", "BS", "IODEPTH", "SPAN_MODEL_FRACTIONS", "SPAN_MODEL_SEEDS",
           "STAND_IN", "PRESET_COVERAGE", "SWEEP", "SWEEP_POOL", "SWEEP_COVERAGES", "HEAP_BOUND", "SEED_SAS_KEEP_PCT",
           "sweep_variant", "sweep_label", "sweep_phase", "sweep_coverage", "sweep_order", "realised_coverage",
           "sweep_seconds",
           "TieringScale", "HELDOUT_PHASES", "SCALES", "scale",
           "qcow2_config", "workload", "phase_seed", "fill_job", "tiered", "phases_of", "estimated_seconds",
           "planned_seconds", "planned_points", "LVM_THIN", "lvmthin_config", "lvmthin_variant", "pool_of",
           "engine_of", "replicate_of", "qcow2_variants", "lvmthin_plan",
           "TieringParameters", "parameters", "describe"]
