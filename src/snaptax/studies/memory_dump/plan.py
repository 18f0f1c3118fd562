"""What the memory-dump study measures: seed 003's lazy-checkpoint page-walker as a fio job, over a grid of
(ioBlockPages, ioWait) on two rig devices.

The study id is `memory_dump` (issue 11 spells it `memory-dump`; the repository has one spelling per study, with an
underscore, for the package, the CLI argument, the notebook, data/<rig>/memory_dump/ and the value keys).

The page-walker: sequential writes of B = ioBlockPages × 4 KiB, each followed by a wait of ioWait ms (fio
`thinktime` in µs with `thinktime_blocks=1`: the wait starts when the write has completed), at queue depth 1 with
direct I/O, until the memory size M is written (`size` = M, not time-based). The dump time is fio's runtime of the
job. The grid is ioBlockPages ∈ {64, 256, 1024, 2048} × ioWait ∈ {0, 2, 10, 25} ms (the seed's default is 64 pages
and 25 ms, its tuned setting 2048 pages and 2 ms); M scales with the profile (MemoryDumpScale).

Variants (one per device role, in this order; each device is a raw region exported by qemu-storage-daemon over NBD:
the qcow2 engine's base volume with no snapshot, the "memory file" the dump writes):
  ssd        the rig's SSD-class device (on rig `local`, a sparse file on the host disk behind a direct-I/O loop
             device);
  raid1_10k  the stand-in for the seed's unnamed array: the rig's emulated 10K SAS RAID1 (rigs/spindles/devices.yaml,
             two Savvio 10K.4 without write cache). Why this one: the seed (an ESX host's `vps.vmx` on one datastore,
             2012) names no array, so we take the one its own tuned timing points to. 2048 pages (8 MiB) and 2 ms
             took 83.9 s for 4 GiB, i.e. 164 ms per 8 MiB iteration, about 51 MB/s: a slow array for large
             sequential writes. Of the rig's emulated arrays the 10K mirror is the slowest for them (it writes at one
             drive's media rate, ≤ 141 MB/s; the RAID5 pools stripe an 8 MiB write over 5–7 drives and are 3–4×
             faster), and a local two-disk mirror of 10K SAS is the typical datastore of a single ESX host of that
             time (seed 000's setup). It is still faster than the seed's array; the claims and the model say by how
             much.
Guest phase (issue 11 part 2, after the page-walker): a real VM memory dump by QEMU. A TCG guest of
GuestDumpScale.memory_mib MiB fills most of its RAM with non-zero data (fio on tmpfs), keeps dirtying it at a
known rate, and reports its own progress (snaptax.guest.memsnap); while it runs, QEMU saves its memory to a file in
the rig's work directory (on the host's SSD-class disk, like the `ssd` role's file), `repeats` times per dump:
  background  the `background-snapshot` migration capability (userfaultfd write-protection): QEMU 7.2 accepts it
              here under TCG (host kernel 6.x) and it completes with the guest running, but it does NOT honour
              `max-bandwidth` (measured 2026-11-25: 16 MiB/s and unlimited both took ≈2.3 s for 384 MiB; QEMU 7.2's
              bg_migration_thread never sleeps on the rate limit as the precopy thread does), so it is measured
              once per pass, unthrottled: the dump as fast as QEMU, the vCPU and the disk allow;
  precopy     a live migration into the file (`exec:cat > FILE`), `max-bandwidth` set to the rate a page-walker
              point implies on the ssd role (B / (s(B) + w), NOMINAL service time): the lazy checkpoint at that
              (ioBlockPages, ioWait) with the guest running; its last pass stops the guest for milliseconds.
`snapshot-save` is not used: it stops the guest's CPUs for the whole save (a stun, not a lazy checkpoint).
Passes are independent replicates (issue 47.3): each pass over the grid runs on a fresh engine (a new memory file,
daemon and fio process; plan.replicated, replicate-major: both roles' pass 0, then both roles' pass 1, ...), so that
drift over the minutes of a run hits all points of a device alike and every point gets a 95 % interval over its
passes. The claims read only the seed's two settings on the spindle role, so `extra_replicates` further replicates
measure just those two points there: the claims get the three replicates the verdict rule needs for about the time
of one point, not of a whole pass.
The overlapped walker (issue 46.5; overlap_job): on the array, each pass also runs the seed's two points with the
wait counted from each write's start (model `overlap`), paced by fio's rate limit, so that that explanation of the
seed's timing is measured, not only fitted. It is an explanation no claim reads, so it runs in the passes only, not
in the extra replicates (quick: 2 replicates; it ran in all 3 before 20261130T100712Z-quick, the science plan §18).
The half-memory walker (C003-5, "the dump time scales with the amount of memory"): on the array each replicate also
runs the grid's walker at HALF_POINT over half the memory (HALF_PHASE); twice the memory over it, within the
replicate, is the claim's value (a zone-recorded drive writes its inner half more slowly: it need not be 2). Runs
before 20261130T100712Z-quick (the science plan §18) ran it at the defaults; the analysis reads the point from the
run.
The skipping walker (issue 46.5; skip_job): where the rig has the stand-in's inferred operating point (the share z of
the memory skipped as all-zero, standins.checkpoint_walker, `snaptax infer`), each replicate on the array also runs
the seed's two points over the memory less its zero share, each skipped block skipped with its wait (the grid's
walker over the first (1 − z)·M bytes: the zero memory taken as one contiguous run, so that both block sizes skip the
same bytes), in a phase of its own (SKIP_PHASE). The seed's default timing then calibrates (the statement z was
inferred from) and its tuned timing tests the inference.
Parts (issue 49.1): at full the study takes longer than one measuring window, so it may be measured in parts (parts):
one per device role and replicate (plan.replicate_parts, e.g. 'raid1_10k.r1'), each on its own fresh engine as in a
whole run, and one more, 'guest', for the guest phase. No ratio the analysis forms pairs points of two replicates,
so no paired value crosses two parts.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import operatingpoints, profiles
from ...engines.qcow2 import Qcow2Config
from ...errors import ConfigError
from ...fio import FioJob
from ...guest.memsnap import SMALLEST_GUEST_MIB, fill_mib_for
from ...models import memory_dump as model
from ...operatingpoints import UsedPoint
from ...plan import (
    Measure,
    Plan,
    StudyPlan,
    VariantPlan,
    disk_needs,
    replicate_name,
    replicate_part,
    replicate_parts,
    replicated,
    split_replicate,
)
from ...studyparams import StudyParameters

STUDY = "memory_dump"
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
PAGE = model.PAGE
SSD = "ssd"
SPINDLE = "raid1_10k"              # the rig device (rigs/spindles/devices.yaml) standing in for the seed's array
ROLES = (SSD, SPINDLE)
PHASE = "dump"
# The walker whose wait runs from each write's start (model `overlap`, issue 46.5): measured at the seed's two points
# beside the grid's walker, in a phase of its own so that the grid's fits never read it.
OVERLAP_PHASE = "dump-overlap"
# The walker that skips the zero memory (issue 46.5, skip_job): measured where the rig has the stand-in's inferred
# share, in a phase of its own; STAND_IN is the stand-in whose operating point it measures at (snaptax.standins).
SKIP_PHASE = "dump-skip"
STAND_IN = "checkpoint_walker"
# The grid's walker at HALF_POINT over half the memory (seed 003: the dump time "scales with the amount of
# memory", C003-5): on the array in every replicate, paired with the replicate's whole-memory run at that point.
HALF_PHASE = "dump-half"
DEFAULT = model.WalkerPoint(64, 25)     # VMware's defaults (seed 003): 64 pages, 25 ms
TUNED = model.WalkerPoint(2048, 2)      # the seed's tuned setting: 2048 pages (8 MiB), 2 ms
# The half-memory walker's point: the tuned one. At the defaults the fixed 25-ms wait is 70 % of each iteration, so
# the time scales with the memory by the walker's construction; at the tuned point the device's writing is 97 % of it,
# so the test is of the device (and it costs 1 s per replicate at quick, not 16: issue 49's 90 minutes).
HALF_POINT = TUNED
SEED_MEMORY = 4 * GiB                   # the seed's VM: 1,048,576 pages
# The memory file: a raw region of the device, served by qemu-storage-daemon (the qcow2 engine's base volume; no
# snapshot is ever taken, so the qcow2 settings are unused).
MEMORY_FILE = Qcow2Config("memory-file", analogue="the checkpoint's memory file (.vmem) on the datastore")
# Planning only (the ETA and describe()): nominal service s(B) = s0 + B/bw per role, ASSUMED, not measured.
#   ssd        0.5 ms per write through fio, NBD and qemu-storage-daemon; 300 MiB/s
#   raid1_10k  6 ms = one revolution at 10,000 rpm (the next sequential write arrives just after its first sector
#              has passed the head); 134.6 MiB/s = the Savvio 10K.4's outer-zone 141.1 MB/s (rigs/spindles/sas10k.yaml)
# Held-out test of the dump-time models (issue 48), declared before any held-out error was computed: leave one
# grid point out. Each model is fitted per device role on every other grid point (all their repeats) and predicts the
# left-out point's dump time; every grid point is held out once. (The walker calibrated on one of the seed's timings
# predicting the other belongs to the stand-ins, issue 46.)
HELDOUT = "leave-one-out over the grid"
NOMINAL = {SSD: (0.5e-3, 300 * MiB), SPINDLE: (6.0e-3, 134.6 * MiB)}


@dataclass(frozen=True)
class MemoryDumpScale:
    """How much the memory-dump study measures at one profile.

    memory_bytes: M, the memory the walker writes per measurement (the seed's 4 GiB at full); repeats: passes over
    the whole grid, each an independent replicate (a fresh engine); tuned_repeats: runs of the seed's tuned point
    per replicate (its pass's, then the rest back to back after it: a 2-s run is noisier than the others);
    block_pages / waits_ms: the grid (every pair of them is measured); extra_replicates: further replicates of the
    seed's two settings alone on the spindle role (the claims' points), after the passes.
    Runs recorded before 2026-11-28's replicates ran their passes on one engine and counted tuned_repeats in all."""

    memory_bytes: int
    repeats: int
    tuned_repeats: int
    block_pages: tuple[int, ...] = (64, 256, 1024, 2048)
    waits_ms: tuple[float, ...] = (0, 2, 10, 25)
    extra_replicates: int = 0

    def __post_init__(self) -> None:
        src = "memory-dump scale"
        if self.repeats < 1:
            raise ConfigError(src, "repeats", f"must be at least 1, got {self.repeats}")
        if self.tuned_repeats < 1:
            raise ConfigError(src, "tuned_repeats", f"must be at least 1 (each pass measures the tuned point), got "
                              f"{self.tuned_repeats}")
        if self.extra_replicates < 0:
            raise ConfigError(src, "extra_replicates", f"must be at least 0, got {self.extra_replicates}")
        pts = self.points()       # each point validates ioBlockPages and ioWait
        if not pts:
            raise ConfigError(src, "block_pages", "the grid is empty")
        if self.memory_bytes <= 0 or any(self.memory_bytes % p.block_bytes for p in pts) \
                or (self.memory_bytes // 2) % HALF_POINT.block_bytes:
            raise ConfigError(src, "memory_bytes", f"{self.memory_bytes} is not a positive multiple of every block "
                              f"size, with its half one of {HALF_POINT.label}'s (the walker writes whole blocks)")
        for p in (DEFAULT, TUNED):
            if p not in pts:
                raise ConfigError(src, "block_pages", f"the grid must hold the seed's setting {p.label}")

    def points(self) -> list[model.WalkerPoint]:
        return [model.WalkerPoint(b, w) for b in self.block_pages for w in self.waits_ms]


SCALES: dict[str, MemoryDumpScale] = {
    # smoke: the whole run (both devices, 64 fio runs) in about a minute
    "smoke": MemoryDumpScale(16 * MiB, repeats=2, tuned_repeats=1),
    # quick: ~6 min of fio (describe() gives the plan's estimate): two passes over the grid and one replicate of the
    # seed's two settings alone, so each claim rests on 3 independent replicates (quick as a whole stays under 90
    # min). The tuned point twice per replicate: the quick runs of 2026-11-23 measured it on the mirror at s ≈ 3 %
    # between passes; its replicate's mean of two halves that.
    "quick": MemoryDumpScale(256 * MiB, repeats=2, tuned_repeats=2, extra_replicates=1),
    # full: the seed's 4 GiB VM (its slowest point, 64 pages / 25 ms on the mirror, ~9 min per run), 3 passes
    "full": MemoryDumpScale(4 * GiB, repeats=3, tuned_repeats=2),
}


def scale(profile: profiles.Profile) -> MemoryDumpScale:
    return profiles.study_scale(SCALES, profile, "memory_dump", "memory-dump scale")


GUEST = "guest"                    # the guest phase's name in the run (events)
GUEST_FILE = "guest_dump.json"     # the guest phase's record in the run: planned and measured dumps, progress samples
GUEST_CONSOLE = "guest_console.log"
BACKGROUND, PRECOPY = "background-snapshot", "precopy"
GUEST_DIRTY_PAGES_S = 256          # the known dirty rate (1 MiB/s): far below every precopy bandwidth, so it converges
GUEST_BASELINE_S = 2.0             # quiet seconds before each dump: the guest's progress without a dump
# Planning only (the ETA): measured 2026-11-25 on the 2-core machine with a 384 MiB guest.
GUEST_BOOT_S = 9.0                 # qemu start to the dirtier's start, fill of GUEST_BOOT_FILL_MIB included
GUEST_BOOT_FILL_MIB = 160
# The fill beyond that, at the rate a 4 GiB guest filled 3640 MiB (2026-11-30: 30.5 s from qemu start to the
# dirtier's start, against 9 s for 160 MiB): (3640 − 160) MiB / 21.5 s.
GUEST_FILL_MIB_S = 160.0
GUEST_CPU_BOUND_MIB_S = 150.0      # an unthrottled dump's rate (background-snapshot: 363 MB in 2.2–2.4 s)


@dataclass(frozen=True)
class GuestDumpScale:
    """The guest phase at one profile. memory_mib: the guest's RAM (≥ 384: the initramfs alone needs ~200 MiB
    while it unpacks); repeats: passes over the dumps (interleaved); precopy_points: the page-walker points whose
    implied ssd bandwidth each precopy dump is limited to; background: whether each pass also takes an unthrottled
    background snapshot."""

    memory_mib: int
    repeats: int
    precopy_points: tuple[model.WalkerPoint, ...]
    background: bool = True

    def __post_init__(self) -> None:
        src = "memory-dump guest scale"
        if self.memory_mib < SMALLEST_GUEST_MIB:
            raise ConfigError(src, "memory_mib", f"at least {SMALLEST_GUEST_MIB} MiB (the initramfs unpacks in RAM), "
                              f"got {self.memory_mib}")
        if self.repeats < 2:
            raise ConfigError(src, "repeats", f"at least 2 (a 95 % interval over repeats), got {self.repeats}")
        if not (self.precopy_points or self.background):
            raise ConfigError(src, "precopy_points", "no dump at all")

    @property
    def fill_mib(self) -> int:
        return fill_mib_for(self.memory_mib)


GUEST_SCALES: dict[str, GuestDumpScale] = {
    # smoke: one boot, 2 × (background + precopy at the tuned point's rate): ~35 s
    "smoke": GuestDumpScale(384, repeats=2, precopy_points=(TUNED,)),
    # quick: 3 passes, precopy at the tuned rate and at 256 pages / 25 ms (the seed's wait, ~35 MiB/s): ~80 s
    "quick": GuestDumpScale(384, repeats=3, precopy_points=(TUNED, model.WalkerPoint(256, 25))),
    # full: the seed's 4 GiB VM at its two settings (the default's ~9.5 MiB/s: ~7 min per dump)
    "full": GuestDumpScale(4096, repeats=3, precopy_points=(TUNED, DEFAULT)),
}


def guest_scale(profile: profiles.Profile) -> GuestDumpScale:
    return profiles.study_scale(GUEST_SCALES, profile, "memory_dump", "memory-dump guest scale")


def implied_bandwidth(point: model.WalkerPoint, role: str = SSD) -> float:
    """Bytes per second a page-walker at `point` writes on `role` by the NOMINAL service time: B / (s(B) + w)."""
    s0, bw = NOMINAL[role]
    return point.block_bytes / (float(model.service_s(point.block_bytes, s0, bw)) + point.wait_s)


@dataclass(frozen=True)
class GuestDump:
    """One planned dump: method, the page-walker point it stands for (None: unthrottled), bandwidth (bytes/s,
    None: unthrottled), pass."""

    method: str
    point: model.WalkerPoint | None
    bandwidth_bytes_s: float | None
    repeat: int

    @property
    def label(self) -> str:
        return "background" if self.point is None else f"precopy-{self.point.label}"


def guest_dumps(profile: profiles.Profile) -> list[GuestDump]:
    """The guest phase's dumps in order: per pass the background snapshot, then each precopy point."""
    g = guest_scale(profile)
    out = []
    for r in range(g.repeats):
        if g.background:
            out.append(GuestDump(BACKGROUND, None, None, r))
        out += [GuestDump(PRECOPY, p, implied_bandwidth(p), r) for p in g.precopy_points]
    return out


def guest_estimated_seconds(profile: profiles.Profile) -> float:
    """Planned seconds of the guest phase: boot and fill (the fill beyond the small guest's at the measured rate),
    then per dump its baseline and the memory at the lesser of its bandwidth and the CPU-bound rate (ASSUMED, not
    measured)."""
    g = guest_scale(profile)
    cap = GUEST_CPU_BOUND_MIB_S * MiB
    boot = GUEST_BOOT_S + max(g.fill_mib - GUEST_BOOT_FILL_MIB, 0) / GUEST_FILL_MIB_S
    return boot + 2.0 + sum(GUEST_BASELINE_S + g.memory_mib * MiB / min(d.bandwidth_bytes_s or cap, cap)
                            for d in guest_dumps(profile))


def walker_job(point: model.WalkerPoint, memory_bytes: int) -> FioJob:
    """The page-walker at one grid point: sequential B-byte writes at QD1, each followed by the wait, M bytes."""
    return FioJob(point.label, "write", bs=point.block_bytes, iodepth=1, numjobs=1, direct=True, size=memory_bytes,
                  time_based=False, runtime_s=None, log_avg_msec=None,
                  extra=(("thinktime", str(round(point.wait_ms * 1000))), ("thinktime_blocks", "1")))


def overlap_job(point: model.WalkerPoint, memory_bytes: int) -> FioJob:
    """The page-walker whose wait runs from each write's start, not its end (model `overlap`): the wait overlaps the
    write in flight, so an iteration takes max(s(B), w) where the grid's walker takes s(B) + w. fio's thinktime
    cannot express it: fio waits for every write in flight before it thinks (backend.c, handle_thinktime calls
    io_u_quiesce; thinktime_blocks_type=issue only moves where the blocks are counted), so the writes are paced by
    fio's rate limit at one B-byte write per wait (rate = B / w bytes/s, rate_process linear): write k is issued
    k·w after the job's start or when write k − 1 completes, whichever is later (QD1). A point without a wait is
    the grid's walker itself and is refused."""
    if point.wait_ms <= 0:
        raise ConfigError(f"overlapped walker {point.label}", "ioWait", "must be > 0 (without a wait the walker is "
                          "the grid's)")
    rate = point.block_bytes * 1000 / point.wait_ms
    if rate != round(rate):
        raise ConfigError(f"overlapped walker {point.label}", "ioWait", f"B / w = {rate:g} bytes/s is not a whole "
                          "number (fio's rate is in bytes per second)")
    return FioJob(point.label, "write", bs=point.block_bytes, iodepth=1, numjobs=1, direct=True, size=memory_bytes,
                  time_based=False, runtime_s=None, log_avg_msec=None, extra=(("rate", str(round(rate))),))


def kept_bytes(memory_bytes: int, zero_fraction: float, block_bytes: int) -> int:
    """The bytes the skipping walker writes of `memory_bytes` with `zero_fraction` of it all-zero: (1 − z)·M rounded
    to whole `block_bytes` (the grid's largest block, so that every point writes the same bytes: the nearest setting
    the walker can realise). A share outside [0, 1), or one that leaves nothing to write, is refused."""
    if not 0.0 <= zero_fraction < 1.0:
        raise ConfigError(f"skipping walker ({STAND_IN})", "zero_fraction", f"{zero_fraction:g} is not in [0, 1)")
    kept = round((1.0 - zero_fraction) * memory_bytes / block_bytes) * block_bytes
    if kept <= 0:
        raise ConfigError(f"skipping walker ({STAND_IN})", "zero_fraction", f"{zero_fraction:g} leaves no whole "
                          f"{block_bytes // MiB} MiB block of {memory_bytes // MiB} MiB to write")
    return kept


def realised_zero_fraction(s: MemoryDumpScale, zero_fraction: float) -> float:
    """The share the skipping walker realises at scale `s` (1 − kept_bytes / M): what the run records as its
    operating point's realised setting."""
    return 1.0 - kept_bytes(s.memory_bytes, zero_fraction, max(s.block_pages) * PAGE) / s.memory_bytes


def skip_job(point: model.WalkerPoint, s: MemoryDumpScale, zero_fraction: float) -> FioJob:
    """The walker at `point` over the memory less its zero share (kept_bytes): the grid's walker job, shorter. The
    analysis scales its time by the whole memory M, as the seed's checkpoint of its 4 GiB VM is timed."""
    return walker_job(point, kept_bytes(s.memory_bytes, zero_fraction, max(s.block_pages) * PAGE))


def point_of(job: FioJob) -> model.WalkerPoint:
    """The grid point a walker job was made for (from its options, not its name): the wait is the grid walker's
    thinktime, or the overlapped walker's rate period B / rate."""
    opts = dict(job.options())
    if "thinktime" in opts:
        return model.WalkerPoint(job.bs // PAGE, int(opts["thinktime"]) / 1000)
    return model.WalkerPoint(job.bs // PAGE, round(job.bs * 1000 / int(opts["rate"]), 6))


def role_plan(profile: profiles.Profile, claims_only: bool = False, on_array: bool = True,
              zero_fraction: float | None = None) -> Plan:
    """One pass of one device role (one replicate): the whole grid (claims_only: only the seed's two settings),
    then the tuned point's further runs up to `tuned_repeats` (repeat 1, 2, ...: the pass's own runs are repeat
    0), then (on_array) the walker at HALF_POINT over half the memory (HALF_PHASE) and, in a pass (not
    claims_only), the overlapped walker (overlap_job) at the seed's two points, once each (OVERLAP_PHASE), then
    (zero_fraction not None) the skipping walker (skip_job) at them, once each (SKIP_PHASE)."""
    s = scale(profile)
    points = [DEFAULT, TUNED] if claims_only else s.points()
    grid = [Measure(walker_job(p, s.memory_bytes), PHASE, 0) for p in points]
    tuned = [Measure(walker_job(TUNED, s.memory_bytes), PHASE, r) for r in range(1, s.tuned_repeats)]
    half = [Measure(walker_job(HALF_POINT, s.memory_bytes // 2), HALF_PHASE, 0)] if on_array else []
    overlapped = [Measure(overlap_job(p, s.memory_bytes), OVERLAP_PHASE, 0) for p in (DEFAULT, TUNED)] \
        if on_array and not claims_only else []
    skipping = [Measure(skip_job(p, s, zero_fraction), SKIP_PHASE, 0) for p in (DEFAULT, TUNED)] \
        if zero_fraction is not None else []
    return Plan(tuple(grid + tuned + half + overlapped + skipping))


def build_plan(profile: profiles.Profile, *, part: str | None = None,
               zero_fraction: float | None = None) -> StudyPlan:
    """Per pass (an independent replicate) one VariantPlan per device role: the SSD-class device, then the emulated
    array standing in for the seed's; then the extra replicates of the seed's two settings on the array. The
    half-memory, the overlapped and the skipping walker (the last where `zero_fraction`, the stand-in's inferred zero
    share, is given) run on the array only: the claims read the array, and quick stays within its 90 minutes
    (issue 49).
    part: only that role's pass (parts); the guest part's plan has no page-walker runs."""
    s = scale(profile)
    passes = replicated(StudyPlan(tuple(
        VariantPlan(role, role_plan(profile, on_array=role == SPINDLE,
                                    zero_fraction=zero_fraction if role == SPINDLE else None))
        for role in ROLES)), s.repeats)
    extra = tuple(VariantPlan(replicate_name(SPINDLE, s.repeats + i),
                              role_plan(profile, claims_only=True, zero_fraction=zero_fraction))
                  for i in range(s.extra_replicates))
    whole = StudyPlan(passes.variants + extra)
    if part is None:
        return whole
    check_part(profile, part)
    return StudyPlan(()) if part == GUEST_PART else replicate_part(whole, part, f"{STUDY} study")


GUEST_PART = "guest"   # the part that measures the guest phase (and no page-walker run)


def parts(profile: profiles.Profile) -> tuple[str, ...]:
    """The parts the study may be measured in: one per device role and replicate, in the plan's order, then the
    guest phase's (GUEST_PART)."""
    return (*replicate_parts(build_plan(profile)), GUEST_PART)


def check_part(profile: profiles.Profile, part: str) -> None:
    """Refuse, in one ConfigError line naming the valid parts, a part the study does not have at `profile`."""
    if part not in (names := parts(profile)):
        raise ConfigError(f"{STUDY} study", "part", f"unknown part {part!r} (one of: {', '.join(names)})")


def measures_guest(part: str | None) -> bool:
    """Whether a run of `part` (None: the whole study) measures the guest phase."""
    return part in (None, GUEST_PART)


def estimated_seconds(profile: profiles.Profile, *, part: str | None = None,
                      zero_fraction: float | None = None) -> dict[str, float]:
    """Planned fio time per role (s) of the plan (of `part`; None: the whole study; zero_fraction: build_plan's): the
    `after` model (the overlapped walker's: `overlap`) with the NOMINAL service times (an estimate for the ETA, not a
    measurement), summed over the plan's runs."""
    study = build_plan(profile, part=part, zero_fraction=zero_fraction)
    out: dict[str, float] = {}
    for vp in study.variants:
        role = split_replicate(vp.variant)[0]
        s0, bw = NOMINAL[role]
        out[role] = out.get(role, 0.0) + sum(
            float(model.dump_time_s("overlap" if m.phase == OVERLAP_PHASE else "after", m.job.size, m.job.bs,
                                    point_of(m.job).wait_s, s0_s=s0, bw_bytes_s=bw))
            for _, m, _ in vp.plan.measurements())
    return out


def planned_seconds(profile: profiles.Profile, *, part: str | None = None,
                    zero_fraction: float | None = None) -> float:
    """The run time the plan (of `part`; None: the whole study; zero_fraction: build_plan's) predicts (s), as the
    run's manifest records it (measure passes it to RunSession): the walker grid's estimate on the roles it measures
    and, where it measures the guest phase, that phase's."""
    guest = guest_estimated_seconds(profile) if measures_guest(part) else 0.0
    return sum(estimated_seconds(profile, part=part, zero_fraction=zero_fraction).values()) + guest


def zero_share_on(rig: str) -> operatingpoints.OperatingPoint | None:
    """The stand-in's inferred zero share on `rig` (rigs/operating-points, `snaptax infer`): the skipping walker
    measures at it; None where the rig has none (then no skipping walker runs)."""
    return operatingpoints.read(rig).get(STAND_IN)


def planned_seconds_on(profile: profiles.Profile, rig: str, *, part: str | None = None) -> float:
    """planned_seconds (of `part`) as measure.setup plans it on `rig` (zero_share_on), so that a run's recorded plan
    and the artifact table's prediction for that rig are one figure."""
    point = zero_share_on(rig)
    return planned_seconds(profile, part=part, zero_fraction=point.value if point is not None else None)


def wait_seconds(profile: profiles.Profile) -> float:
    """The plan's waits alone, Σ n·w over its runs (s): a lower bound of its fio time."""
    return sum(float(model.seed_estimate_s(m.job.size, m.job.bs, point_of(m.job).wait_s))
               for v in build_plan(profile).variants for _, m, _ in v.plan.measurements())


@dataclass(frozen=True)
class GuestParameters(StudyParameters):
    """The guest phase's parameters as the manifest records them: the guest scale it ran at (checked again by
    GuestDumpScale when read), the memory it filled, the study's constants; nominal_ssd: the bandwidth role's
    (service time s, bytes/s)."""

    scale: GuestDumpScale
    fill_mib: int
    dirty_pages_s: int
    baseline_s: float
    bandwidth_role: str
    nominal_ssd: tuple[float, float]


@dataclass(frozen=True)
class MemoryDumpParameters(StudyParameters):
    """The study's parameters as the run's manifest records them (read back only by analyse): the scale it ran at
    (checked again by MemoryDumpScale when read); devices: role → the rig device measured in that role; default,
    tuned: the walker points (block pages, wait ms); guest: the guest phase's (None: a run without one)."""

    scale: MemoryDumpScale
    page_bytes: int
    devices: dict[str, str]
    spindle_role: str
    default: tuple[int, float]
    tuned: tuple[int, float]
    seed_memory_bytes: int
    guest: GuestParameters | None
    # the stand-in's inferred zero share the skipping walker measured at, realised (None or (): a run without it)
    operating_points: tuple[UsedPoint, ...] | None = None


def parameters(profile: profiles.Profile, devices: dict[str, str],
               used: tuple[UsedPoint, ...] = ()) -> MemoryDumpParameters:
    return MemoryDumpParameters(scale=scale(profile), page_bytes=PAGE, devices=devices,
                                spindle_role=SPINDLE, default=(DEFAULT.block_pages, DEFAULT.wait_ms),
                                tuned=(TUNED.block_pages, TUNED.wait_ms), seed_memory_bytes=SEED_MEMORY,
                                guest=guest_parameters(profile), operating_points=used)


def guest_parameters(profile: profiles.Profile) -> GuestParameters:
    g = guest_scale(profile)
    return GuestParameters(scale=g, fill_mib=g.fill_mib, dirty_pages_s=GUEST_DIRTY_PAGES_S,
                           baseline_s=GUEST_BASELINE_S, bandwidth_role=SSD, nominal_ssd=NOMINAL[SSD])


# Disk space the work directory needs while the study runs (plan.DiskNeed; the README's study table, measured at quick
# on the build machine): the walker's memory file and the 384 MiB guest's dumps; full ~8 GiB (the seed's 4 GiB VM).
DISK = disk_needs(quick=0.5, full=8)


def describe(profile: profiles.Profile) -> str:
    """What a run measures, in words and counts from the plan (deterministic: shown in the notebook and checked
    by nbval)."""
    s = scale(profile)
    study = build_plan(profile)
    est = estimated_seconds(profile)
    per_pass = {split_replicate(vp.variant)[0]: sum(1 for _ in vp.plan.measurements()) for vp in study.variants[:2]}
    job = walker_job(DEFAULT, s.memory_bytes)
    lines = [f"profile {profile.name}: memory {s.memory_bytes // MiB} MiB written per fio run; grid ioBlockPages "
             f"{', '.join(map(str, s.block_pages))} x ioWait {', '.join(f'{w:g}' for w in s.waits_ms)} ms "
             f"({len(s.points())} points), {s.repeats} pass(es) over the grid, each an independent replicate on a "
             f"fresh engine, the tuned point {s.tuned_repeats} times per replicate, on {SPINDLE} {HALF_POINT.label} "
             f"over half the memory once per replicate, the overlapped walker (its wait from each write's start) at "
             f"{DEFAULT.label} and {TUNED.label} once per pass (and the walker skipping the zero memory at them once "
             f"per replicate where the rig has the inferred zero share); "
             f"{s.extra_replicates} further replicate(s) of {DEFAULT.label} and {TUNED.label} alone on {SPINDLE}",
             f"{study.points()} fio runs in {len(study.variants)} replicates of the device roles (per pass: "
             + ", ".join(f"{n} on {role}" for role, n in per_pass.items()) + "): "
             + ", ".join(vp.variant for vp in study.variants),
             f"fio time: at least {wait_seconds(profile):.0f} s of waits; estimated {sum(est.values()):.0f} s "
             f"(" + ", ".join(f"{k} {v:.0f} s" for k, v in est.items()) + ") from nominal service times",
             f"default point {DEFAULT.label}: {int(model.iterations(s.memory_bytes, DEFAULT.block_bytes))} writes "
             f"of {DEFAULT.block_bytes // KiB} KiB; tuned point {TUNED.label}: "
             f"{int(model.iterations(s.memory_bytes, TUNED.block_bytes))} writes of {TUNED.block_bytes // KiB} KiB",
             "walker job: " + " ".join(f"{k}={v}" for k, v in job.options()),
             "overlapped walker job: " + " ".join(f"{k}={v}"
                                                  for k, v in overlap_job(DEFAULT, s.memory_bytes).options())]
    g = guest_scale(profile)
    dumps = guest_dumps(profile)
    rates = ", ".join(f"{p.label} {implied_bandwidth(p) / MiB:.1f} MiB/s" for p in g.precopy_points)
    lines.append(f"guest phase: a {g.memory_mib} MiB TCG guest ({g.fill_mib} MiB filled, {GUEST_DIRTY_PAGES_S} "
                 f"pages/s dirtied), {len(dumps)} dumps in {g.repeats} passes: "
                 + ("background-snapshot unthrottled, " if g.background else "")
                 + f"precopy at {rates}; estimated {guest_estimated_seconds(profile):.0f} s")
    return "\n".join(lines)


__all__ = ["STUDY", "SSD", "SPINDLE", "ROLES", "PHASE", "OVERLAP_PHASE", "overlap_job", "SKIP_PHASE", "STAND_IN",
           "HALF_PHASE", "HALF_POINT",
           "kept_bytes", "realised_zero_fraction", "skip_job",
           "DEFAULT", "TUNED", "SEED_MEMORY", "MEMORY_FILE", "NOMINAL",
           "HELDOUT",
           "MemoryDumpScale", "SCALES", "scale", "walker_job", "point_of", "role_plan", "build_plan",
           "estimated_seconds", "planned_seconds", "planned_seconds_on", "zero_share_on", "wait_seconds", "GUEST_PART",
           "parts", "check_part",
           "measures_guest", "parameters", "describe", "GUEST", "GUEST_FILE",
           "GUEST_CONSOLE",
           "BACKGROUND", "PRECOPY",
           "GuestDumpScale", "GUEST_SCALES", "guest_scale", "implied_bandwidth", "GuestDump", "guest_dumps",
           "guest_estimated_seconds", "guest_parameters", "GuestParameters", "MemoryDumpParameters"]
