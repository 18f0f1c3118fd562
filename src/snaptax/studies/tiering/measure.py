"""Measure the tiering study (needs root): the qcow2 redo log's timeline on each pool, `replicates` times
(plan.qcow2_variants: replicate-major, the pools interleaved; each replicate a fresh engine, emulated pool and fio
processes), in one RunSession.

Each timeline is fill → (learn) → initial → snapshot → settle → with → delete (QEMU's active commit under the load)
→ after → (relearn → relearned), every phase one fio run through snaptax.timeline, the pool's counters sampled
every second into `measurements/<pool>/host_series.csv`. A timeline whose daemon hangs at the commit's pivot is
measured again with a fresh engine (snaptax.timeline.attempt; studies.lifecycle.plan.HANG_NOTE).
Learning is ended by the pool's own counters, never by a
fixed wait: the study cannot know when the emulated (or a real) Easy Tier plans, only see that it did.

Each replicate with a coverage sweep (plan: scale.coverage_sweep) also measures it on the SAS-only pool, on a fresh
engine caching every table until each point's cache is set (sweep_timeline), after the replicates' timelines.

Then, where the rig lists the lvmthin engine, each pool's LVM thin timeline (plan.lvmthin_plan) as one script in
the TCG guest (or natively), a fresh pool under it: the same host sampler runs beside the guest, and the guest's step
lines, stamped on the host's clock, put each fio run on the timeline (engines.lvmthin, clock_t0). The guest asks the
host before each learning run, and the host ends the loop by the same rule (LearningGate).
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

from ...engines.lvmthin.engine import LvmThinEngine, execute_variant
from ...engines.qcow2 import Qcow2ChainEngine, delete_active
from ...errors import ConfigError
from ...host import rig as rigmod
from ...profiles import Profile
from ...record import RunSession
from ...spindle.predict import Region, closed_loop, closed_loop_mix
from ...spindle.profiles import DeviceSpec, TierSpec, to_json as spec_to_json
from ...spindle.rigfiles import parse_device
from ...timeline import HostSampler, Timeline, attempt, job_text
from .. import standin_settings
from ..contract import Setup, whole_study
from . import plan as planmod

HOST_KEYS = ("host.reads", "host.writes", "host.ssd_reads", "host.ssd_writes", "host.hdd_reads", "host.hdd_writes",
             "host.split_reads", "host.split_writes", "host.unmapped_reads", "host.promotions", "host.demotions",
             "host.migrated_bytes", "host.tier_cycles", "host.heat_ios")
LATENESS_KEYS = ("emulator.released", "emulator.release_late_s_sum", "host.member_reads", "host.member_writes",
                 "host.latency_s_sum")


def sampled_keys(counters: dict[str, float]) -> tuple[str, ...]:
    """HOST_KEYS and what the emulator's lateness per phase is computed from (record.Measurement.lateness_fraction:
    late seconds per release over busy seconds per member request), with the array's summed command time (its mean
    queue and time per command per phase) and each member's busy time and cache hits, for the runs whose own counters
    are the guest's (LVM thin)."""
    return (*HOST_KEYS, *(k for k in LATENESS_KEYS if k in counters),
            *sorted(k for k in counters if k.startswith("host.member") and k.endswith((".busy_s", ".cache_hits"))))


COMMIT_TIMEOUT_S = 120.0    # a consolidation of a few hundred MiB on the emulated pool takes seconds


def pool_devices(rig: rigmod.Rig) -> dict[str, rigmod.Device]:
    """The rig's device for each pool: an emulated device built on the named array, else a device of that name."""
    out: dict[str, rigmod.Device] = {}
    for pool in planmod.POOLS:
        found = [d for d in rig.devices if d.emulated and d.spindle.get("device") == pool] \
            or [d for d in rig.devices if d.name == pool]
        if not found:
            raise ConfigError(rig.source, "devices", f"no device for the tiering study's {pool} (an emulated "
                              f"`spindle: {{device: {pool}}}` or a device named {pool})")
        out[pool] = found[0]
    return out


def pool_spec(rig: rigmod.Rig, dev: rigmod.Device) -> DeviceSpec | None:
    """The emulated pool's device spec as the rig file gives it (a named array resolved in
    rigs/spindles/devices.yaml); None for a real pool. Recorded in the run (`study.spec`), so the analysis reads
    the pool the run measured, not today's devices.yaml."""
    return parse_device(dev.spindle, rig.source, f"devices.{dev.name}.spindle") if dev.emulated else None


def emulated_time_per_io(spec: DeviceSpec | None, capacity: int, s: planmod.TieringScale) -> dict[str, float]:
    """What the emulated pool's own model (spindle.predict, virtual time, no harness) gives for the workload at its
    queue depth, per tier: µs per I/O, the read/write mix of closed loops of reads and of writes
    (τ = f_r/IOPS_read + (1 − f_r)/IOPS_write), over the disk's span of the tier. The served emulator cannot
    deliver the SSD tier's rate on this machine (one Python process per pool); the analysis uses these to say what
    the measured SSD-served shares would cost at the tier's own speed. `spec`: pool_spec's, on a device of
    `capacity` bytes. Empty for a real pool (no spec)."""
    if spec is None:
        return {}
    fr = planmod.READ_PERCENT / 100
    tiers = {"ssd": (spec.ssd, spec.ssd_fraction), "hdd": (spec.hdd, 1 - spec.ssd_fraction)} \
        if isinstance(spec, TierSpec) else {"hdd": (spec, 1.0)}
    out = {}
    for tier, (sub, share) in tiers.items():
        cap = int(capacity * share)
        span = min(1.0, s.disk_bytes / cap)
        r, w = (closed_loop(sub, cap, iodepth=planmod.IODEPTH, write=wr, bs=planmod.BS, span=span, ios=2000).iops
                for wr in (False, True))
        out[f"{tier}_us_per_io"] = 1e6 * (fr / r + (1 - fr) / w)
    return out


def span_model(spec: DeviceSpec | None, capacity: int, s: planmod.TieringScale) -> dict[str, list]:
    """What the emulated (untiered) pool's own model gives for the load once a share f of the volume's data lies in
    a second region right after the first: the layout LVM thin leaves behind after a snapshot's deletion (the
    chunks written under the snapshot were allocated after the volume's; thin pools allocate upwards). Regions
    [0, D) with weight 1 − f and [D, D + f·D) with weight f, D the disk's bytes; the load's read share, block size
    and queue depth, random offsets (its 10 % sequential runs left out: they are the same in both layouts). Per f in
    plan.SPAN_MODEL_FRACTIONS: IOPS(f) / IOPS(0) in %, the mean over plan.SPAN_MODEL_SEEDS (each seed the same
    random numbers for every f) and its range over them. `spec`: pool_spec's, on a device of `capacity` bytes.
    Empty for a real (no spec) or a tiered pool (there the SSD share dominates)."""
    if spec is None or isinstance(spec, TierSpec):
        return {}
    d = s.disk_bytes
    by_seed = []
    for seed in planmod.SPAN_MODEL_SEEDS:
        iops = []
        for f in planmod.SPAN_MODEL_FRACTIONS:
            regions = [Region(0, d, 1 - f)] + ([Region(d, int(f * d) // planmod.BS * planmod.BS, f)] if f else [])
            iops.append(closed_loop_mix(spec, capacity, iodepth=planmod.IODEPTH, regions=regions,
                                        read_fraction=planmod.READ_PERCENT / 100, bs=planmod.BS,
                                        ios=s.span_model_ios,
                                        seed=seed).iops)
        by_seed.append([100 * x / iops[0] for x in iops])
    by_f = list(zip(*by_seed, strict=True))
    return {"fraction": list(planmod.SPAN_MODEL_FRACTIONS), "seeds": list(planmod.SPAN_MODEL_SEEDS),
            "ratio_pct": [sum(col) / len(col) for col in by_f],
            "ratio_low": [min(col) for col in by_f],
            "ratio_high": [max(col) for col in by_f]}


def ssd_share(before: dict[str, float], after: dict[str, float]) -> float:
    """Share of the host I/Os between two counter readings that SSD extents served (nan: no I/O)."""
    def d(k: str) -> float:
        return after.get(k, 0.0) - before.get(k, 0.0)
    total = d("host.reads") + d("host.writes")
    return (d("host.ssd_reads") + d("host.ssd_writes")) / total if total > 0 else float("nan")


@dataclass(frozen=True)
class LearningVerdict:
    """Has the tier pool learned, from two counter readings around the last run: `learned` when a tiering cycle
    has ended past `cycles_needed` (cycles counted from the emulator's start) and the run's SSD-served share is at
    least s.learned_fraction."""

    learned: bool
    ssd_share: float
    tier_cycles: float


def learning_verdict(before: dict[str, float], after: dict[str, float], cycles_needed: float,
                     s: planmod.TieringScale) -> LearningVerdict:
    """The one learning rule of both engines' loops (wait_until_learned for qcow2, LearningGate for LVM thin)."""
    share = ssd_share(before, after)
    cycles = after.get("host.tier_cycles", 0.0)
    return LearningVerdict(cycles >= cycles_needed and share >= s.learned_fraction, share, cycles)


def wait_until_learned(tl: Timeline[Qcow2ChainEngine], s: planmod.TieringScale, phase: str, limit_s: float,
                       cycles_needed: float, replicate: int = 0) -> bool:
    """Run the workload in short runs until a cycle ended past `cycles_needed` and a run's SSD-served share is at
    least s.learned_fraction, or `limit_s` passed. Returns whether the pool learned; logs the decision."""
    t0 = tl.now()
    repeat = 0
    while True:
        job = planmod.workload(s, s.learn_segment_s, phase, repeat, replicate=replicate)
        repeat += 1
        before = tl.engine.counters()
        tl.run(job_text(job), job, phase)
        after = tl.engine.counters()
        v = learning_verdict(before, after, cycles_needed, s)
        if v.learned or tl.now() - t0 >= limit_s:
            tl.event(f"{phase}_done", learned=v.learned, seconds=tl.now() - t0, ssd_share=v.ssd_share,
                     tier_cycles=v.tier_cycles)
            return v.learned


def timeline(session: RunSession, engine: Qcow2ChainEngine, s: planmod.TieringScale, pool: str,
             replicate: int = 0) -> None:
    """One qcow2 timeline on `pool` (replicate `replicate`: its fio offsets, plan.phase_seed), on `engine`, fresh."""
    tl = Timeline[Qcow2ChainEngine](session, engine, session.variant)

    def steady(phase: str, seconds: float) -> None:
        job = planmod.workload(s, s.phase_length(pool, seconds), phase, replicate=replicate)
        tl.run(job_text(job), job, phase)

    with HostSampler(engine._host_counters, tl.t0, sampled_keys(engine.counters())) as sampler:
        fill = planmod.fill_job(s)
        tl.run(job_text(fill), fill, "fill")
        if planmod.tiered(pool):
            wait_until_learned(tl, s, "learn", s.learn_limit_s, 1, replicate)
        steady("initial", s.phase_s)
        tl.event("snapshot", name=engine.take_snapshot())
        steady("settle", s.settle_s)
        steady("with", s.with_s)
        cycles_before = engine.counters().get("host.tier_cycles", 0.0)
        job = planmod.workload(s, s.phase_length(pool, s.delete_window_s), "delete", replicate=replicate)
        load = tl.start(job_text(job), job, "delete")
        info = delete_active(tl, load)
        tl.finish(load, {"deletion": info})
        steady("after", s.phase_s)
        if planmod.tiered(pool):
            wait_until_learned(tl, s, "relearn", s.relearn_limit_s, cycles_before + 1, replicate)
            steady("relearned", s.phase_s)
    sampler.write(host_series_path(session))


def sweep_timeline(session: RunSession, engine: Qcow2ChainEngine, s: planmod.TieringScale, replicate: int = 0) \
        -> None:
    """One coverage sweep on the SAS-only pool (plan's docstring): fill, initial, then per coverage (sweep_order) a
    snapshot, its cache set to the coverage, settle, with and the commit without load; then after. The pool's
    counters are sampled as in a timeline."""
    tl = Timeline[Qcow2ChainEngine](session, engine, session.variant)
    pool = planmod.SWEEP_POOL

    def steady(phase: str, seconds: float) -> None:
        # offsets of its own (plan.phase_seed of 'sweep-<phase>'): not those of the replicate's timeline phases
        job = planmod.workload(s, s.phase_length(pool, seconds), f"{planmod.SWEEP}-{phase}", replicate=replicate)
        tl.run(job_text(job), job, phase)

    with HostSampler(engine._host_counters, tl.t0, sampled_keys(engine.counters())) as sampler:
        fill = planmod.fill_job(s)
        tl.run(job_text(fill), fill, "fill")
        steady("initial", s.phase_s)
        for c in planmod.sweep_order(s, replicate):
            name = engine.take_snapshot()
            tl.event("snapshot", name=name, coverage=str(c), **engine.set_cache(c))
            steady(planmod.sweep_phase("settle", c), s.settle_s)
            steady(planmod.sweep_phase("with", c), s.with_s)
            t = tl.now()
            engine.delete_snapshot("newest")
            tl.event("commit", coverage=str(c), seconds=tl.now() - t)
        steady("after", s.phase_s)
    sampler.write(host_series_path(session))


def host_series_path(session: RunSession):
    return session.variant_dir() / "host_series.csv"


class LearningGate:
    """The host's end of the LVM thin guest's learning loops (plan.lvmthin_plan's gated runs), by learning_verdict
    (wait_until_learned's rule), from the pool's counters read when the guest asks before each run: the first run of
    a phase always goes; after that, another one until a tiering cycle has ended past the phase's need and the run
    just finished had an SSD-served share of at least s.learned_fraction, or the phase's limit has passed. `learn`
    needs the pool's first cycle (its cycles count from the emulator's start, as for qcow2). `relearn` needs a cycle
    that ended after its own first question, when the guest's after phase was over; qcow2's re-learning counts from
    before its consolidation instead (a cycle that ended during the consolidation or the after phase counts). The
    decision goes to `log_event` as `<phase>_done` on
    the timeline's clock (t0: host monotonic s)."""

    PHASES = ("learn", "relearn")

    def __init__(self, counters: Callable[[], dict[str, float]], s: planmod.TieringScale,
                 log_event: Callable[..., None], t0: float):
        self.counters, self.s, self.log_event, self.t0 = counters, s, log_event, t0
        self.started: dict[str, tuple[float, float]] = {}     # phase -> (its first question's time, tier cycles)
        self.last: dict[str, dict[str, float]] = {}           # phase -> counters at its latest question

    def __call__(self, phase: str, repeat: int) -> bool:
        if phase not in self.PHASES:
            raise ConfigError("plan", "gate", f"{phase!r}: the tiering plan's gates are {', '.join(self.PHASES)}")
        now, c = time.monotonic(), self.counters()
        cycles = c.get("host.tier_cycles", 0.0)
        if phase not in self.started:
            self.started[phase], self.last[phase] = (now, cycles), c
            return True
        first_s, first_cycles = self.started[phase]
        needed = 1.0 if phase == "learn" else first_cycles + 1.0
        v = learning_verdict(self.last[phase], c, needed, self.s)
        self.last[phase] = c
        limit = self.s.learn_limit_s if phase == "learn" else self.s.relearn_limit_s
        if v.learned or now - first_s >= limit:
            self.log_event(f"{phase}_done", t_s=round(now - self.t0, 3), learned=v.learned, seconds=now - first_s,
                           ssd_share=v.ssd_share, tier_cycles=v.tier_cycles, runs=repeat)
            return False
        return True


def lvmthin_timeline(engine: LvmThinEngine, session: RunSession, plan, s: planmod.TieringScale) -> None:
    """The LVM thin plan on one pool, the pool's counters sampled every second on the clock the guest's steps are
    stamped on; the host ends its learning loops (LearningGate). The gate's decisions are logged once the plan has
    run: an attempt the guest stalled in (execute_variant measures again) leaves none on another attempt's clock."""
    t0 = time.monotonic()
    decisions: list[tuple[str, dict]] = []
    gate = LearningGate(engine.counters, s, lambda kind, **data: decisions.append((kind, data)), t0)
    with HostSampler(engine.counters, t0, sampled_keys(engine.counters())) as sampler:
        engine.execute(plan, session, clock_t0=t0, gate=gate)
    sampler.write(host_series_path(session))
    for kind, data in decisions:
        session.log_event(kind, **data)


def setup(rig: rigmod.Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """Both pools (`device` is not used: the study needs one device per pool, named by the rig)."""
    whole_study("tiering", part)
    devices = pool_devices(rig)
    s = planmod.scale(profile)
    # the stand-in's operating point on this rig, or the preset (standin_settings)
    coverage, used = standin_settings.coverage(rig.name, planmod.STAND_IN, s.disk_bytes, planmod.PRESET_COVERAGE)
    cfg = planmod.qcow2_config(s, coverage)
    lvmthin = planmod.LVM_THIN in rig.engines

    def measure(session: RunSession) -> None:
        specs = {pool: pool_spec(rig, dev) for pool, dev in devices.items()}
        study = {pool: {"pool": pool, "device": dev.name, "emulated": dev.emulated,
                        "spec": spec_to_json(spec) if (spec := specs[pool]) is not None else None,
                        "model_time_per_io": emulated_time_per_io(specs[pool], dev.capacity, s)}
                 for pool, dev in devices.items()}
        span = {pool: span_model(specs[pool], dev.capacity, s) for pool, dev in devices.items()} if lvmthin else {}
        # each replicate a timeline on a fresh engine: attempt opens the device anew (the emulated pool starts
        # afresh, its tiering cycles counted from its start), in plan.qcow2_variants' order
        for name, pool, replicate in planmod.qcow2_variants(s):
            dev = devices[pool]
            attempt(session, name, functools.partial(timeline, s=s, pool=pool, replicate=replicate),
                    functools.partial(Qcow2ChainEngine, rig, dev, cfg, s.disk_bytes, commit_timeout_s=COMMIT_TIMEOUT_S),
                    {**study[pool], "replicate": replicate})
        # the coverage sweeps: every table cached until each point sets its cache
        sweep_dev = devices[planmod.SWEEP_POOL]
        for replicate in range(s.replicates) if s.coverage_sweep else ():
            attempt(session, planmod.sweep_variant(replicate),
                    functools.partial(sweep_timeline, s=s, replicate=replicate),
                    functools.partial(Qcow2ChainEngine, rig, sweep_dev, planmod.qcow2_config(s), s.disk_bytes,
                                      commit_timeout_s=COMMIT_TIMEOUT_S),
                    {**study[planmod.SWEEP_POOL], "replicate": replicate,
                     "coverages": [str(c) for c in planmod.sweep_order(s, replicate)]})
        if lvmthin:      # the contrast: once per pool, after every qcow2 replicate
            for pool, dev in devices.items():
                plan = planmod.lvmthin_plan(s, pool)
                execute_variant(rig, dev, planmod.lvmthin_config(), s.disk_bytes, planmod.lvmthin_variant(pool),
                                plan, session, {"study": {**study[pool], "span_model": span[pool]}},
                                functools.partial(lvmthin_timeline, session=session, plan=plan, s=s))
    return Setup(planmod.parameters(s, {p: d.name for p, d in devices.items()}, lvmthin, coverage,
                                    (used,) if used else ()),
                 tuple(d.name for d in devices.values()), planmod.planned_points(s, lvmthin),
                 planmod.planned_seconds(profile, lvmthin), measure)


__all__ = ["HOST_KEYS", "LATENESS_KEYS", "sampled_keys", "pool_devices",
           "pool_spec", "emulated_time_per_io", "span_model", "ssd_share", "LearningVerdict", "learning_verdict",
           "wait_until_learned", "timeline", "sweep_timeline",
           "LearningGate", "lvmthin_timeline", "host_series_path", "setup"]
