"""What the lifecycle study measures: seed 000's whole snapshot lifecycle on the emulated 10K RAID1 (timelines at
two load levels, three ways to delete a snapshot under load) and a grid of guest write rates for the consolidation
convergence model (snaptax.models.consolidation).

Device and engine: the rig's `raid1_10k` (two emulated Savvio 10K.4, RAID1), with the qcow2 redo log as the VMware
delta stand-in (its L2 tables cached: see qcow2_config for why not the on-disk-metadata preset);
the base volume and every delta are regions of the one device, so they share its heads (qemu-storage-daemon's
RegionStore: base at the start, each delta in the next free region).

Workload, as the seed's IOmeter (Table 1): two workers, both 4 KiB and 70 % random (fio `percentage_random=70`),
a reader (100 % read) over the first test-file region and a writer (100 % write) over the second. Outstanding I/Os:
one per worker (IOmeter's default; the seed names no other, and its 25 ms test ran ≈32 ROPS + 32 WOPS, which is
one I/O at a time: 1 / (25 ms + ≈6 ms service)). Load levels: `light` with 25 ms between I/Os (fio `thinktime`,
after each completion, as IOmeter's delay) and `saturated` with none.

Test-file size, scaled with the device: the seed's 1 GiB files sat on a 600 GB mirror; the rig's raid1_10k spans
the same stroke with 16 GiB of LBA space, so a file covering the same fraction of the stroke is
1 GiB × 16 GiB / 600 GB ≈ 29 MiB → 32 MiB (quick, full); smoke uses 8 MiB. The volume (the seed's 4 GB disk, scaled
the same way: ≈109 MiB) is 128 MiB (32 MiB at smoke). The sizes of deltas and their commit times scale with the
files; rates (IOPS, commit bytes/s) are the device's own.

Timeline of one variant (load × deletion method), each phase one fio run with per-second IOPS logs, the emulated
array's counters sampled every second throughout:
  create   the test files written sequentially (IOmeter creating its file), no snapshot
  before   the workload, no snapshot
  (snapshot taken)
  refill   the test files written again: the delta fills (IOmeter recreated its file after the snapshot)
  with     the workload with the snapshot
  delete   the workload for `delete_window_s` while the snapshot is deleted; a deletion still running when the
           load stops goes on without load and its remaining time is recorded (seed step 11)
  after    the workload once the snapshot is gone
Deletion methods: `active` (QEMU's active commit: a mirror in background mode that must converge before it
pivots), `iterative` (VMware's: helper snapshot, commit the older delta, repeat while the helper is above the
threshold, final commit with the guest stopped; bounded by max_iterations and max_consolidate_s), `mirror`
(blockdev-mirror of the active layer onto the base in copy-mode=write-blocking, vSphere 6.0's mirror driver idea).

Model grid: the iterative deletion of a full delta beside the workload with the writer limited to fio `rate_iops`
(and the reader at 25 ms), one rate after the other, each on a fresh snapshot.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ... import profiles
from ...engines.qcow2 import Qcow2Config, metadata_configs
from ...errors import ConfigError
from ...fio import FioJob, FioTarget, format_size
from ...operatingpoints import UsedPoint
from ...plan import disk_needs
from ...studyparams import StudyParameters
from ..standin_settings import esx35_config

STUDY = "lifecycle"
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SPINDLE = "raid1_10k"
LOADS = ("light", "saturated")
THINKTIME_MS = {"light": 25.0, "saturated": 0.0}
METHODS = ("active", "iterative", "mirror")
PHASES = ("create", "before", "refill", "with", "delete", "after")
GRID = "grid"
IODEPTH = 1                     # outstanding I/Os per worker (IOmeter's default)
RANDOM_PERCENT = 70
BS = 4 * KiB
SEED_FILE_BYTES = GiB
# VMware's consolidation bounds, scaled like the test files (device_scale = file_bytes / SEED_FILE_BYTES; the
# files cover the seed's fraction of the stroke, see the module docstring):
SEED_HELPER_THRESHOLD = 16 * MiB     # seed 000: the remaining snapshot is committed "16MB at max"
SEED_MAX_CONSOLIDATE_S = 12.0        # snapshot.maxConsolidateTime, about 12 s by default (issue 9)
# A commit's fixed cost on the emulated device (job start, image metadata, pivot): the smoke run's iterations took
# 0.4-0.7 s beyond their data (fitted t0). It does not shrink with the data, so it is not scaled.
FIXED_COMMIT_S = 1.0
MAX_ITERATIONS = 10                  # snapshot.maxIterations: our choice (no default is given in the seeds)
# Held-out test of the consolidation model (issue 48), declared on 2026-11-29 after the committed quick runs had been
# measured but before any held-out error was computed: leave one iterative deletion out. The model is fitted on the
# iterations of every other iterative deletion of the run and predicts the held-out one's commit times, helper growth
# and outcome (lifecycle.heldout). Its parameters are not measured separately (device throughput from calibration,
# the writer's rate from fio alone): issue 48 asks for that; this run's own other deletions are what it had.
HELDOUT = "leave one iterative deletion out"
# The same model with its parameters measured apart (issue 48.3), declared on 2026-11-29 before any run measured the
# apart variant: t0 from commits of an empty overlay and c0 from commits of a full one beside the reader alone (no
# writer), the writer's saturated rate r_max beside that reader (b = c0/r_max: the commit gets the time the writer
# leaves), the helper's growth from the write pattern (models.consolidation.dirty_bytes: 4 KiB writes, 70 % random,
# over the writer's file, in 64 KiB clusters). Nothing is fitted on a deletion: every iterative deletion of the run
# is held out (each iteration's commit time and growth, each deletion's time and outcome: lifecycle.apart).
# Its first run (20261129T212424Z-quick) measured c0 on an overlay the writer had filled in part before the refill,
# and every held-out test was descriptive only: that overlay committed at 11.8 MiB/s beside the reader alone, where
# the deletions' first commits of a delta filled in order ran at ≈ 20-25 MiB/s beside the writer too, and their
# helpers (clusters allocated in the order random writes reached them) at ≈ 1 MiB/s. Declared on 2026-11-29 after
# that run and before the next: the commit's throughput depends on the overlay's layout, so c0 is measured on an
# overlay filled in order (delta_commit, the layout of the delta a deletion starts with) and c_helper on one the
# writer alone filled (helper_commit, every helper's layout); the model commits the first iteration at c0 and the
# later ones and the stun at c_helper (models.consolidation.ApartParameters).
HELDOUT_APART = "every iterative deletion, from parameters measured apart"
APART = "apart"
APART_STEPS = ("empty_commit", "refill", "delta_commit", "writer_alone", "helper_commit")


@dataclass(frozen=True)
class LifecycleScale:
    """How much the lifecycle study measures at one profile.

    file_bytes: each worker's test-file region; disk_bytes: the volume; steady_s: each steady phase's fio run
    under the saturating load; light_steady_s: under the light load, which issues ~6x fewer requests per second
    (≈66 against ≈350), so its phases run longer to measure a per-request mean to a comparable precision (the
    light after/with service ratio, claim C000-5, had a 95 % interval of ±4-5 % from three 6-s pairs, and its
    verdict flipped between two runs with the same estimate; 3x the time, ~1/√3 the interval);
    delete_window_s: how long the load runs while a snapshot is deleted; grid_rates: the writer's rate_iops
    values of the model grid; grid_window_s: the load window of one grid point; repeats_per_load: how many
    timelines of each (load, method) are measured (interleaved); apart_repeats: how many times the consolidation
    model's parameters are measured apart (APART: empty commit, writer alone, refill, idle commit), each repeat
    on a fresh overlay, so their intervals are over independent repeats."""

    file_bytes: int
    disk_bytes: int
    steady_s: float
    delete_window_s: float
    light_steady_s: float
    grid_rates: tuple[int, ...]
    grid_window_s: float
    max_iterations: int = MAX_ITERATIONS
    apart_repeats: int | None = 3      # None: a run before the apart variant (its manifest has none)

    def __post_init__(self) -> None:
        src = "lifecycle scale"
        if self.file_bytes <= 0 or self.file_bytes % MiB:
            raise ConfigError(src, "file_bytes", f"must be a positive whole number of MiB, got {self.file_bytes}")
        if self.disk_bytes < 2 * self.file_bytes:
            raise ConfigError(src, "disk_bytes", "must hold both test files")
        if self.steady_s < 2 or self.delete_window_s < self.steady_s:
            raise ConfigError(src, "steady_s", "steady phases need ≥ 2 s and the delete window at least as long")
        if self.light_steady_s < self.steady_s:
            raise ConfigError(src, "light_steady_s", "light phases need at least the saturated phases' time")
        if any(r <= 0 for r in self.grid_rates):
            raise ConfigError(src, "grid_rates", "rate_iops must be positive")
        if self.max_iterations < 1:
            raise ConfigError(src, "max_iterations", "must be at least 1")
        if self.apart_repeats is not None and self.apart_repeats < 2:
            raise ConfigError(src, "apart_repeats", "needs at least 2 (an interval over repeats)")

    def steady_for(self, load: str) -> float:
        """Length (s) of a steady phase at load level `load`."""
        return self.light_steady_s if load == "light" else self.steady_s

    @property
    def device_scale(self) -> float:
        """Test-file bytes per seed byte: the fraction of the stroke is kept (file / 1 GiB)."""
        return self.file_bytes / SEED_FILE_BYTES

    @property
    def helper_threshold_bytes(self) -> int:
        """The seed's 16 MB helper scaled like the files, at least one 64 KiB cluster."""
        return max(64 * KiB, int(SEED_HELPER_THRESHOLD * self.device_scale) // (64 * KiB) * (64 * KiB))

    @property
    def max_consolidate_s(self) -> float:
        """maxConsolidateTime scaled: the part that moves data scales like the data (the device's rates are not
        scaled), the fixed cost of a commit does not: FIXED_COMMIT_S + 12 s × scale."""
        return FIXED_COMMIT_S + SEED_MAX_CONSOLIDATE_S * self.device_scale


SCALES: dict[str, LifecycleScale] = {
    # smoke: every variant once with short phases, two grid rates (≈1.5 min)
    "smoke": LifecycleScale(8 * MiB, 32 * MiB, steady_s=2, delete_window_s=5, light_steady_s=2,
                            grid_rates=(20, 400),
                            grid_window_s=5, max_iterations=4, apart_repeats=2),
    # quick: the seed's files scaled with the device, longer phases and five grid rates (7 min; 8.7 with a
    # timeline measured again after a daemon hang)
    "quick": LifecycleScale(32 * MiB, 128 * MiB, steady_s=6, delete_window_s=15, light_steady_s=18,
                            grid_rates=(10, 40, 80, 160, 400), grid_window_s=12, max_iterations=6),
    "full": LifecycleScale(32 * MiB, 128 * MiB, steady_s=20, delete_window_s=60, light_steady_s=60,
                           grid_rates=(5, 10, 20, 40, 60, 80, 120, 160, 250, 400), grid_window_s=40,
                           apart_repeats=5),
}


def scale(profile: profiles.Profile) -> LifecycleScale:
    return profiles.study_scale(SCALES, profile, STUDY, "lifecycle scale")


HANG_NOTE = (
    "Timelines sometimes hung during a deletion under load: a guest request never completed after an active "
    "commit's or a mirror's pivot, or a helper snapshot got no QMP reply, while qemu-storage-daemon sat idle in poll "
    "and the emulated array had no request queued; QEMU 10.0's daemon hung the same way. The cause was in our "
    "emulator (found 2026-11-26 from the diagnosis each failed attempt records: the plugin held one command its "
    "simulator had completed): when the daemon closed one of its connections to the emulated array, at a graph "
    "change, the plugin's close callback advanced the simulator and dropped the completions that advance produced, "
    "which belonged to other connections' commands; their threads waited for ever. Fixed in "
    "snaptax.spindle.plugin.close (tests/spindle/test_plugin.py). Runs measured before the fix needed repeats; a "
    "timeline whose daemon hangs is still stopped and measured again with a fresh daemon (at most three attempts), "
    "as a guard, and every run reports how many repeats it needed. Each failed attempt records, before anything is "
    "stopped, where the request is held: whether the emulated device still completes commands, how many it has "
    "queued and how many its plugin holds, whether the daemon answers QMP within 5 s, and the state, kernel wait "
    "channel and CPU time of each thread of every process the engine started (the run's attempt_failed events).")


# Seed 000's redo-log stand-in (standins.esx35_redolog) and its preset where no operating point is inferred on the
# rig: an L2 cache covering every table (the runs before operating points: no block-map reads at all).
STAND_IN = "esx35_redolog"
PRESET_COVERAGE = Fraction(1)


def qcow2_config(s: LifecycleScale, coverage: Fraction = PRESET_COVERAGE) -> Qcow2Config:
    """The delta: qcow2 (64 KiB clusters, extended L2) with an L2 cache holding `coverage` of its tables (the
    stand-in's inferred operating point: standin_settings.coverage), so a lookup reads the block map from the
    device with probability 1 − coverage, as the seed's redo log does ('reads double')."""
    # the runs before operating points: every table cached (the in-memory-metadata preset)
    return esx35_config(metadata_configs(s.disk_bytes)[1], s.disk_bytes, coverage, PRESET_COVERAGE)


def variants() -> list[tuple[str, str]]:
    """(load, method) of every timeline, in measuring order."""
    return [(load, method) for method in METHODS for load in LOADS]


def variant_name(load: str, method: str) -> str:
    return f"{load}-{method}"


@dataclass(frozen=True)
class Workload:
    """The two IOmeter workers as one fio run (two job sections, one group): reader on file 0, writer on file 1.
    thinktime_ms: delay after each completion (0: saturating); rate_iops: the writer's limit (None: none)."""

    name: str
    file_bytes: int
    runtime_s: float
    thinktime_ms: float = 0.0
    rate_iops: int | None = None
    reader_thinktime_ms: float | None = None    # None: as the writer
    extra: tuple[tuple[str, str], ...] = ()     # further fio options of both workers (tests: verify patterns)
    writer: bool = True                         # False: the reader alone (the apart variant's idle commits)

    def jobs(self) -> list[FioJob]:
        rt = self.thinktime_ms if self.reader_thinktime_ms is None else self.reader_thinktime_ms
        common = dict(bs=BS, iodepth=IODEPTH, numjobs=1, direct=True, size=self.file_bytes,
                      runtime_s=self.runtime_s, percentage_random=RANDOM_PERCENT, group_reporting=False)
        wextra: tuple[tuple[str, str], ...] = (("thinktime", str(round(self.thinktime_ms * 1000))),)
        if self.rate_iops:
            wextra += (("rate_iops", str(self.rate_iops)),)
        rextra = (("thinktime", str(round(rt * 1000))),) + self.extra
        reader = FioJob("reader", "randread", offset=0, extra=rextra, **common)  # type: ignore[arg-type]
        if not self.writer:
            return [reader]
        return [reader, FioJob("writer", "randwrite", offset=self.file_bytes, extra=wextra + self.extra,
                               **common)]  # type: ignore[arg-type]

    def summary_job(self) -> FioJob:
        """One FioJob standing for the pair in the run's coordinates (results.csv job, rw, bs, iodepth): the
        job file written beside the results is the two-section file fio read (the reader's alone)."""
        if not self.writer:
            return FioJob(self.name, "randread", bs=BS, iodepth=IODEPTH, numjobs=1, size=self.file_bytes,
                          runtime_s=self.runtime_s, percentage_random=RANDOM_PERCENT)
        return FioJob(self.name, "randrw", bs=BS, iodepth=IODEPTH, numjobs=2, size=2 * self.file_bytes,
                      runtime_s=self.runtime_s, percentage_random=RANDOM_PERCENT, rwmixread=50)

    def job_file(self, target: FioTarget, log_prefix: str) -> str:
        lines = ["# written by snaptax; fio reads exactly this file", "[global]"]
        lines += [f"{k}={v}" for k, v in target.options().items()]
        lines += [f"write_iops_log={log_prefix}", f"write_lat_log={log_prefix}", "log_avg_msec=1000",
                  "per_job_logs=1"]
        for job in self.jobs():
            lines.append(f"[{job.name}]")
            lines += [f"{k}={v}" for k, v in job.options()]
        return "\n".join(lines) + "\n"


def fill_job(s: LifecycleScale, name: str) -> FioJob:
    """Both test files written once, sequentially, 1 MiB at a time (IOmeter creating its test file)."""
    return FioJob(name, "write", bs=MiB, iodepth=4, numjobs=1, size=2 * s.file_bytes, time_based=False,
                  runtime_s=None, log_avg_msec=1000)


def workload(s: LifecycleScale, load: str, runtime_s: float, name: str) -> Workload:
    if load not in THINKTIME_MS:
        raise ConfigError("lifecycle plan", "load", f"{load!r} is not one of {', '.join(LOADS)}")
    return Workload(name, s.file_bytes, runtime_s, THINKTIME_MS[load])


def grid_workload(s: LifecycleScale, rate: int) -> Workload:
    """A grid point's load: the writer at `rate` writes/s (saturating otherwise), the reader at 25 ms."""
    return Workload(f"rate{rate}", s.file_bytes, s.grid_window_s, 0.0, rate, THINKTIME_MS["light"])


def reader_alone(s: LifecycleScale, runtime_s: float) -> Workload:
    """The apart variant's load while it commits: the reader at 25 ms, no writer (r = 0), for `runtime_s` (long
    enough that the commit ends before it: a helper's commit seeks per cluster and takes seconds)."""
    return Workload("reader-alone", s.file_bytes, runtime_s, THINKTIME_MS["light"], writer=False)


def writer_alone(s: LifecycleScale) -> Workload:
    """The apart variant's writer at its saturated rate beside the 25-ms reader, into a fresh overlay (r_max)."""
    return Workload("writer-alone", s.file_bytes, s.steady_s, 0.0, None, THINKTIME_MS["light"])


def planned_points(s: LifecycleScale) -> int:
    apart = 1 + len(APART_STEPS) * s.apart_repeats if s.apart_repeats else 0
    return len(variants()) * len(PHASES) + 2 * len(s.grid_rates) + 1 + apart


def estimated_seconds(s: LifecycleScale) -> float:
    """Planned time (s), an estimate for the ETA: steady phases and windows, plus ≈3 s per fill at the
    emulated mirror's ≈30 MB/s for 1 MiB writes through the qcow2 layer, plus 3 s per engine start."""
    fill = 2 * s.file_bytes / (30e6) + 1
    per_variant = [3 * s.steady_for(load) + s.delete_window_s + 2 * fill + 3 + 5 for load, _ in variants()]
    apart = 3 + fill + s.apart_repeats * (3 * s.steady_s + s.delete_window_s + fill + 2) if s.apart_repeats \
        else 0.0
    return sum(per_variant) + len(s.grid_rates) * (s.grid_window_s + fill + 3) + 3 + fill + apart


def planned_seconds(profile: profiles.Profile) -> float:
    """The run time the plan predicts (s), as the run's manifest records it (measure passes it to RunSession)."""
    return estimated_seconds(scale(profile))


@dataclass(frozen=True)
class LifecycleParameters(StudyParameters):
    """The study's parameters as the run's manifest records them (read back by analyse and present): the scale it
    ran at (checked again by LifecycleScale when read) and the consolidation limits it gives
    (helper_threshold_bytes, max_consolidate_s, device_scale); device_capacity: the rig device's LBA space (bytes;
    the seek-span prediction's denominator); thinktime_ms: per load."""

    scale: LifecycleScale
    device_capacity: int
    helper_threshold_bytes: int
    max_consolidate_s: float
    device: str
    loads: tuple[str, ...]
    methods: tuple[str, ...]
    thinktime_ms: dict[str, float]
    iodepth: int
    random_percent: int
    bs: int
    device_scale: float
    qcow2: str
    # the stand-in's inferred operating point it measured at (None: the runs before operating points, at the preset)
    operating_points: tuple[UsedPoint, ...] | None = None


def parameters(s: LifecycleScale, device: str, capacity: int = 16 << 30, coverage: Fraction = PRESET_COVERAGE,
               used: tuple[UsedPoint, ...] = ()) -> LifecycleParameters:
    return LifecycleParameters(scale=s, device_capacity=capacity, helper_threshold_bytes=s.helper_threshold_bytes,
                               max_consolidate_s=s.max_consolidate_s, device=device, loads=LOADS, methods=METHODS,
                               thinktime_ms=THINKTIME_MS, iodepth=IODEPTH, random_percent=RANDOM_PERCENT, bs=BS,
                               device_scale=s.device_scale, qcow2=qcow2_config(s, coverage).name,
                               operating_points=used)


# Disk space the work directory needs while the study runs (plan.DiskNeed; the README's study table, measured at quick
# on the build machine): the seed's files scaled, a qcow2 delta; full measures the same volumes longer.
DISK = disk_needs(quick=0.3, full=0.3)


def describe(profile: profiles.Profile) -> str:
    s = scale(profile)
    return "\n".join([
        f"profile {profile.name}: two workers (reader, writer), 4 KiB, {RANDOM_PERCENT} % random, QD{IODEPTH} "
        f"each, over test files of {format_size(s.file_bytes)} each on a {format_size(s.disk_bytes)} volume "
        f"(the seed's 1 GiB scaled by {s.device_scale:.4f})",
        f"{len(variants())} timelines: loads {', '.join(LOADS)} (thinktime 25 / 0 ms) x deletion methods "
        f"{', '.join(METHODS)}; phases {', '.join(PHASES)}; steady phases {s.light_steady_s:g} s (light), "
        f"{s.steady_s:g} s (saturated), delete window "
        f"{s.delete_window_s:g} s",
        f"iterative deletion: helper threshold {s.helper_threshold_bytes // KiB} KiB, maxIterations "
        f"{s.max_iterations}, maxConsolidateTime {s.max_consolidate_s:.2f} s (scaled)",
        f"model grid: writer rate_iops {', '.join(map(str, s.grid_rates))}, window {s.grid_window_s:g} s each",
        f"model parameters measured apart, {s.apart_repeats} repeats: commits of an empty overlay, of one filled in "
        f"order and of one the writer alone filled for {s.steady_s:g} s, each beside the reader alone",
        f"planned about {estimated_seconds(s) / 60:.1f} min",
    ])


__all__ = ["STUDY", "HELDOUT", "HELDOUT_APART", "APART", "APART_STEPS", "reader_alone", "writer_alone",
           "SPINDLE", "LOADS", "METHODS", "PHASES", "GRID", "THINKTIME_MS", "IODEPTH",
           "LifecycleScale", "SCALES", "scale", "qcow2_config", "variants", "variant_name", "Workload",
           "fill_job", "workload", "grid_workload", "planned_points", "estimated_seconds",
           "planned_seconds", "LifecycleParameters", "parameters",
           "describe"]
