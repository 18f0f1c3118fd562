"""Benchmarks of the emulated spindle (issue 3). Each function returns a flat dict name → value.

  emulator_accuracy_qd1 / _qd32  achieved fio IOPS ÷ model-predicted IOPS, sas10k, random 4 KiB reads over
                                 the whole (1 GiB, scaled) drive: the median of ROUNDS rounds, with _min/_max.
                                 Goal: within ±5 % in every round.
  emulator_accuracy_qd1_explained  what QD1 accuracy the harness's own costs leave: the model's mean service time
                                 ÷ (it + the zero-latency round trip + the QD1 release lateness), all measured
                                 here. At QD1 each command waits for both in series; at QD32 they overlap other
                                 commands' service, so QD32 loses nothing.
  emulator_accuracy_qd1_explained_idle  the same with the round trip measured after an idle gap of one service
                                 time (emulator_round_trip_idle_us: fio's thinktime): a QD1 client of a spindle
                                 submits each command after its CPUs sat idle for the whole service time, and
                                 waking them (in a VM: the hypervisor rescheduling the virtual CPU) costs time the
                                 back-to-back round trip does not contain.
  emulator_overhead              per-command cost with the zero-latency profile (fio + NBD + emulator round
                                 trip, QD1 mean completion latency) ÷ the sas10k model's mean QD1 service time.
                                 Goal: < 5 %.
  seek_fit_max_rel_error         largest relative error of the read-seek figures (track-to-track, average, full
                                 stroke) recovered by the calibration's per-request fit (models.seek) from a
                                 QD1 span sweep measured through fio (per-request offset/latency logs), against the
                                 profile's configured figures; the median over ROUNDS independent sweeps, each fitted
                                 alone. seek_fit_max_rel_error_max: the worst round's. Goal: < 5 % in every round.
  emulator_place_us_<device>     CPU time (µs) the Python simulator spends placing one random 4 KiB command
                                 (advance + submit, half reads, half writes) for each named device of rigs/spindles/
                                 devices.yaml, offline: the Python plugin does this under its lock at every arrival.
                                 emulator_place_us_c_<device>: the same for the C model core (the C plugin's).

The compiled emulator's own figures (issue 45), measured where the emulator can answer for them, at the plugin
boundary (the C plugin's counters: per reply the real time from the nbdkit callback's entry to its return, and
the model's time from submission to completion; the transport's round trip is not in either):
  emulator_plugin_accuracy_qd1 / _qd32   model time ÷ plugin-boundary time, random 4 KiB reads at QD1 / QD32 on the
                                 10K, 15K and 7.2K drives (DRIVES), every round: the median over rounds × drives,
                                 _min and _max over all of them, and per drive (_<profile>, the median over rounds).
                                 Goal: within 0.98-1.02 in every round.
  emulator_plugin_accuracy_flash_tier   the same on the tiered pool's flash tier (devices.yaml tier_pool's SSD
                                 volume), random 4 KiB reads and writes at QD1 and QD32: median, _min, _max over
                                 rounds × depths, and _qd1 / _qd32. Goal: within 0.95-1.05.
  emulator_plugin_late_us_<case>  the mean lateness (µs) behind each of those figures.
  emulator_flash_tier_queue_share  on the same flash tier, the tiering study's load (32 KiB, 80 % reads, QD16): the
                                 emulator's mean queue (its model time per wall second) over fio's 16, the median
                                 over rounds with _min and _max. Replies can all be on time while the emulator
                                 starves its clients of CPU; this figure sees that (1.8 of 16, 0.11, when the spin
                                 margin ran away; ~0.8 with it bounded, the rest being NBD's round trip), with
                                 emulator_flash_tier_spin_cpu, the CPUs' share the request threads spent spinning.
  emulator_overhead_us_per_command  mean plugin-boundary time of a command on the zero-latency device at QD1: what
                                 the emulator adds to every command (lock, model, data I/O, reply timing), with
                                 emulator_cpu_us_per_command, the nbdkit process's CPU per command at QD32 there.

The model prediction is the event simulator in simulated time (no harness), for the same workload; the
achieved figure includes every real cost. Every measurement holds the machine-wide measurement lock.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .. import paths
from ..host.procs import ProcessGroup
from ..lock import measurement_lock
from ..models import seek
from ..spindle import measure as sm
from ..spindle.profiles import DriveProfile
from ..spindle.rigfiles import disk, load_profile
from ..spindle.serve import SpindleDevice, fresh_counters, serve

PROFILE = "sas10k"
CAPACITY = 1 << 30
ROUNDS = 3      # each round a fresh emulator and a full measurement: the spread over rounds is reported


def _workdir(work_dir: Path | None) -> Path:
    base = work_dir or paths.work_dir()
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="bench-spindle-", dir=base))


def _accuracy_round(wd: Path, runtime_s: float) -> dict[str, float]:
    """One round of emulator_accuracy: a fresh emulator, QD1 then QD32."""
    out: dict[str, float] = {}
    with ProcessGroup() as group, serve(group, SpindleDevice(disk(PROFILE), CAPACITY, wd, PROFILE)) as s:
        for qd in (1, 32):
            before = fresh_counters(s.counters)
            pt = sm.measure(s.uri, CAPACITY, rw="randread", iodepth=qd, span=1.0, runtime_s=runtime_s,
                             directory=wd / f"fio-qd{qd}", profile=PROFILE)
            after = fresh_counters(s.counters)
            e0, e1 = before.get("emulator", {}), after.get("emulator", {})
            n = e1.get("released", 0) - e0.get("released", 0)
            if n:
                late = (e1.get("release_late_s_sum", 0) - e0.get("release_late_s_sum", 0)) / n
                out[f"emulator_release_late_us_qd{qd}"] = late * 1e6
            predicted = sm.predicted_iops(PROFILE, rw="randread", iodepth=qd, capacity=CAPACITY, ios=20000)
            out[f"emulator_accuracy_qd{qd}"] = pt.iops / predicted
            out[f"emulator_iops_qd{qd}_achieved"] = pt.iops
            out[f"emulator_iops_qd{qd}_predicted"] = predicted
    return out


def over_rounds(rounds: list[dict[str, float]], spread: tuple[str, ...] = ()) -> dict[str, float]:
    """Per key the median over rounds (keys missing from a round are left out of its median); for the keys in
    `spread` also key_min and key_max."""
    import statistics

    out: dict[str, float] = {}
    for key in sorted({k for r in rounds for k in r}):
        xs = [r[key] for r in rounds if key in r]
        out[key] = statistics.median(xs)
        if key in spread:
            out[f"{key}_min"], out[f"{key}_max"] = min(xs), max(xs)
    return out


def emulator_accuracy(work_dir: Path | None = None, *, runtime_s: float = 20.0,
                      rounds: int = ROUNDS) -> dict[str, float]:
    wd = _workdir(work_dir)
    try:
        with measurement_lock():
            per_round = [_accuracy_round(wd / f"round{r}", runtime_s) for r in range(rounds)]
        out = over_rounds(per_round, spread=("emulator_accuracy_qd1", "emulator_accuracy_qd32"))
        out["emulator_accuracy_rounds"] = rounds
        return {k: round(v, 4 if "accuracy" in k else 2) for k, v in out.items()}
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def emulator_overhead(work_dir: Path | None = None, *, runtime_s: float = 10.0) -> dict[str, float]:
    wd = _workdir(work_dir)
    try:
        service = 1.0 / sm.predicted_iops(PROFILE, rw="randread", iodepth=1, capacity=CAPACITY, ios=20000)
        with measurement_lock():
            zero = sm.harness_round_trip(wd, runtime_s=runtime_s)
            idle = sm.harness_round_trip(wd, runtime_s=runtime_s, thinktime_us=round(service * 1e6))
        return {"emulator_overhead": round(zero.clat_mean_s / service, 4),
                "emulator_round_trip_us": round(zero.clat_mean_s * 1e6, 2),
                "emulator_round_trip_idle_us": round(idle.clat_mean_s * 1e6, 2),
                "sas10k_mean_service_ms": round(service * 1e3, 4)}
    finally:
        shutil.rmtree(wd, ignore_errors=True)


SPANS = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
# The short spans' seeks are what pins the track-to-track figure (0.3 ms, the size of the harness's own jitter):
# they run twice as long. Six quiet rounds of 2026-11-26 fitted alone: worst track-to-track error 4.8 %; the same
# rounds refitted with a second round's short-span traces added (three pairs): worst 3.0 % (the other two figures
# stay within 1 % either way).
SPAN_RUNTIME_FACTOR = {0.003: 2.0, 0.01: 2.0}


def _seek_traces(wd: Path, runtime_s: float) -> list[seek.Trace]:
    """One round of seek_fit's measurement: a fresh emulator, the QD1 span sweep."""
    from .. import fio

    traces = []
    with ProcessGroup() as group, serve(group, SpindleDevice(disk(PROFILE), CAPACITY, wd, PROFILE)) as s:
        for span in SPANS:
            before = fresh_counters(s.counters)
            run = fio.run(sm.span_job(span, runtime_s * SPAN_RUNTIME_FACTOR.get(span, 1.0), CAPACITY),
                          fio.FioTarget("nbd", uri=s.uri),
                          wd / f"span{span:g}")
            after = fresh_counters(s.counters)
            off, lat = sm.read_clat_log(sm.clat_log(run.directory))
            traces.append(seek.Trace(off, lat, sm.phase_from_counters(before, after), 0.0, span,
                                     sm.phase_quantiles_from_counters(before, after)))
    return traces


def seek_fit_figures(fit: seek.SeekFit, truth: DriveProfile) -> dict[str, float]:
    """One fit's bench figures: the fitted values, 95 % half-widths, relative errors against the profile's
    configured read-seek figures, the largest of them, the fitted jitter and the requests used."""
    errs = fit.rel_errors(truth.seek_read)
    out = {"seek_fit_max_rel_error": max(errs.values()), "seek_fit_requests": float(fit.points),
           "seek_fit_jitter_us": fit.residual_rms_s * 1e6}
    out.update({f"seek_fit_rel_error_{k.removesuffix('_ms')}": v for k, v in errs.items()})
    out.update({f"seek_fit_{k}": getattr(fit, k) for k in seek.FIGURES})
    out.update({f"seek_fit_ci95_{k.removesuffix('_ms')}": ci for k, ci in zip(seek.FIGURES, fit.ci95_ms, strict=True)})
    return out


def seek_fit(work_dir: Path | None = None, *, runtime_s: float = 10.0, rounds: int = ROUNDS) -> dict[str, float]:
    """ROUNDS independent sweeps, each fitted alone (the measurements hold the lock; the fits run after)."""
    wd = _workdir(work_dir)
    try:
        with measurement_lock():
            sweeps = [_seek_traces(wd / f"round{r}", runtime_s) for r in range(rounds)]
        p = load_profile(PROFILE)
        assert isinstance(p, DriveProfile)
        out = over_rounds([seek_fit_figures(seek.fit_seek_requests(t, p, CAPACITY), p) for t in sweeps],
                          spread=("seek_fit_max_rel_error",))
        out["seek_fit_rounds"] = rounds
        return {k: round(v, 4) for k, v in out.items()}
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def placement_cost(commands: int = 2000, capacity: int = 16 << 30, c_library: Path | None = None) -> dict[str, float]:
    """emulator_place_us_<device>: mean CPU time of Simulator.advance + submit per command, per named device;
    emulator_place_us_c_<device>: the same through the C model core (ctypes' own call cost included)."""
    import random
    import time

    from ..spindle.arrays import Simulator
    from ..spindle.cmodel import CSimulator
    from ..spindle.rigfiles import named_devices, parse_device

    out: dict[str, float] = {}
    for name in sorted(named_devices()):
        spec = parse_device({"device": name}, "bench")
        for label, sim in (("", Simulator(spec, capacity, name)),
                           ("c_", CSimulator(spec, capacity, name, library=c_library))):
            rnd = random.Random(1)
            t, cpu = 0.0, 0.0
            for i in range(commands):
                t += 0.01    # commands 10 ms apart: each finds the array idle or nearly so, as a QD1 client would
                c0 = time.thread_time()
                sim.advance(t)
                sim.submit(i, "read" if i % 2 else "write", rnd.randrange(capacity // 4096) * 4096, 4096, t)
                cpu += time.thread_time() - c0
            out[f"emulator_place_us_{label}{name}"] = round(cpu / commands * 1e6, 1)
    return out


DRIVES = ("sas10k", "sas15k", "nlsas7k2")
PLUGIN_RUNTIME_S = 10.0


def emulator_delta(before: dict, after: dict, key: str) -> float:
    """How much one counter of the C plugin's emulator block grew between two counter snapshots (0 where neither
    has it)."""
    return after.get("emulator", {}).get(key, 0.0) - before.get("emulator", {}).get(key, 0.0)


def plugin_accuracy(before: dict, after: dict) -> tuple[float, float]:
    """(model time ÷ plugin-boundary time, mean lateness in s) of the replies between two counter snapshots of the C
    plugin (its emulator block's model_s_sum, boundary_s_sum, released, release_late_s_sum); nan without replies."""
    n, boundary, model, late = (emulator_delta(before, after, key) for key in (
        "released", "boundary_s_sum", "model_s_sum", "release_late_s_sum"))
    if n <= 0 or boundary <= 0:
        return float("nan"), float("nan")
    return model / boundary, late / n


def _plugin_case(s, wd: Path, name: str, rw: str, qd: int, runtime_s: float) -> tuple[float, float]:
    before = fresh_counters(s.counters)
    sm.measure(s.uri, CAPACITY, rw=rw, iodepth=qd, span=1.0, runtime_s=runtime_s, directory=wd / f"fio-{name}-qd{qd}",
               profile=name)
    return plugin_accuracy(before, fresh_counters(s.counters))


def _plugin_round(wd: Path, runtime_s: float) -> dict[str, float]:
    """One round of the plugin-boundary figures: each drive at QD1 and QD32, then the flash tier, each on a fresh
    emulator (the C plugin)."""
    from ..spindle.profiles import TierSpec
    from ..spindle.rigfiles import parse_device

    out: dict[str, float] = {}
    for drive in DRIVES:
        with ProcessGroup() as group, serve(group, SpindleDevice(disk(drive), CAPACITY, wd, drive)) as s:
            for qd in (1, 32):
                acc, late = _plugin_case(s, wd, drive, "randread", qd, runtime_s)
                out[f"emulator_plugin_accuracy_qd{qd}_{drive}"] = acc
                out[f"emulator_plugin_late_us_qd{qd}_{drive}"] = late * 1e6
    pool = parse_device({"device": "tier_pool"}, "bench")
    assert isinstance(pool, TierSpec)
    with ProcessGroup() as group, serve(group, SpindleDevice(pool.ssd, CAPACITY, wd, "flash")) as s:
        for qd in (1, 32):
            acc, late = _plugin_case(s, wd, "flash", "randrw", qd, runtime_s)
            out[f"emulator_plugin_accuracy_flash_tier_qd{qd}"] = acc
            out[f"emulator_plugin_late_us_flash_tier_qd{qd}"] = late * 1e6
        out.update(_flash_tier_load(s, wd, runtime_s))
    return out


def _flash_tier_load(s, wd: Path, runtime_s: float) -> dict[str, float]:
    """emulator_flash_tier_queue_share and _spin_cpu (the module's docstring) on the served flash tier `s`."""
    from .. import fio

    iodepth = 16
    job = fio.FioJob(name="iometer-flash", rw="randrw", bs=32768, iodepth=iodepth, size=CAPACITY,
                     runtime_s=runtime_s, log_avg_msec=None, randrepeat=True, extra=(("rwmixread", "80"),))
    before = fresh_counters(s.counters)
    fio.run(job, fio.FioTarget("nbd", uri=s.uri), wd / "fio-flash-load")
    after = fresh_counters(s.counters)
    model, spin = (emulator_delta(before, after, key) for key in ("model_s_sum", "spin_s_sum"))
    return {"emulator_flash_tier_queue_share": model / runtime_s / iodepth,
            "emulator_flash_tier_spin_cpu": spin / runtime_s / len(os.sched_getaffinity(0))}


def _spread(name: str, xs: list[float]) -> dict[str, float]:
    import statistics

    return {name: statistics.median(xs), f"{name}_min": min(xs), f"{name}_max": max(xs)}


def plugin_figures(per_round: list[dict[str, float]]) -> dict[str, float]:
    """The rounds' per-case figures → per-case medians, and each headline figure over rounds × its cases."""
    out = over_rounds(per_round)
    for qd in (1, 32):
        out.update(_spread(f"emulator_plugin_accuracy_qd{qd}",
                           [r[f"emulator_plugin_accuracy_qd{qd}_{d}"] for r in per_round for d in DRIVES]))
    out.update(_spread("emulator_plugin_accuracy_flash_tier",
                       [r[f"emulator_plugin_accuracy_flash_tier_qd{qd}"] for r in per_round for qd in (1, 32)]))
    if shares := [r["emulator_flash_tier_queue_share"] for r in per_round if "emulator_flash_tier_queue_share" in r]:
        out.update(_spread("emulator_flash_tier_queue_share", shares))
    return out


# The digits each plugin-boundary figure is kept to, by figure (its per-case, _min and _max keys alike): ratios and
# shares to 4, lateness in µs to 2.
PLUGIN_DIGITS = {"emulator_plugin_accuracy": 4, "emulator_flash_tier_queue_share": 4,
                 "emulator_flash_tier_spin_cpu": 4, "emulator_plugin_late_us": 2, "emulator_plugin_rounds": 0}


def plugin_digits(key: str) -> int:
    """The digits of the figure `key` belongs to (PLUGIN_DIGITS; KeyError for a key of none)."""
    figure = max((f for f in PLUGIN_DIGITS if key == f or key.startswith(f + "_")), key=len, default=None)
    if figure is None:
        raise KeyError(f"{key}: no digits are set for this figure (bench.spindle.PLUGIN_DIGITS)")
    return PLUGIN_DIGITS[figure]


def emulator_plugin(work_dir: Path | None = None, *, runtime_s: float = PLUGIN_RUNTIME_S,
                    rounds: int = ROUNDS) -> dict[str, float]:
    wd = _workdir(work_dir)
    try:
        with measurement_lock():
            per_round = [_plugin_round(wd / f"round{r}", runtime_s) for r in range(rounds)]
        out = plugin_figures(per_round)
        out["emulator_plugin_rounds"] = rounds
        return {k: round(v, plugin_digits(k)) for k, v in out.items()}
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def emulator_overhead_per_command(work_dir: Path | None = None, *, runtime_s: float = 5.0) -> dict[str, float]:
    """The zero-latency device on the C plugin: mean plugin-boundary time per command at QD1, and the nbdkit
    process's CPU per command at QD32."""
    from ..host import procs as procsmod
    from ..spindle.profiles import DiskSpec, ZeroProfile

    wd = _workdir(work_dir)
    out: dict[str, float] = {}
    try:
        with measurement_lock(), ProcessGroup() as group, \
                serve(group, SpindleDevice(DiskSpec(ZeroProfile()), CAPACITY, wd, "zero")) as s:
            pid = group.children[-1].proc.pid
            for qd in (1, 32):
                before = fresh_counters(s.counters)
                cpu0 = procsmod.cpu_seconds(Path(f"/proc/{pid}/stat").read_text())
                sm.measure(s.uri, CAPACITY, rw="randread", iodepth=qd, span=1.0, runtime_s=runtime_s,
                           directory=wd / f"fio-zero-qd{qd}", profile="zero")
                cpu = procsmod.cpu_seconds(Path(f"/proc/{pid}/stat").read_text()) - cpu0
                after = fresh_counters(s.counters)
                n = emulator_delta(before, after, "released")
                if n and qd == 1:
                    boundary = emulator_delta(before, after, "boundary_s_sum")
                    out["emulator_overhead_us_per_command"] = round(boundary / n * 1e6, 2)
                if n and qd == 32:
                    out["emulator_cpu_us_per_command"] = round(cpu / n * 1e6, 2)
        return out
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def explained_accuracy(service_ms: float, round_trip_us: float, late_us: float) -> float:
    """QD1 accuracy the harness leaves when its costs add to each command in series (dimensionless):
    s / (s + r + l), s the model's mean service time, r the zero-latency round trip, l the mean release lateness."""
    s = service_ms * 1e3
    return s / (s + round_trip_us + late_us)


def run(work_dir: Path | None = None) -> dict[str, float]:
    """All spindle benchmarks (about 12 minutes: three rounds of accuracy, of the plugin-boundary figures and of the
    seek sweep)."""
    out: dict[str, float] = {}
    out.update(placement_cost())
    out.update(emulator_accuracy(work_dir))
    out.update(emulator_plugin(work_dir))
    out.update(emulator_overhead(work_dir))
    out.update(emulator_overhead_per_command(work_dir))
    out.update(seek_fit(work_dir))
    out["emulator_accuracy_qd1_explained"] = round(explained_accuracy(
        out["sas10k_mean_service_ms"], out["emulator_round_trip_us"], out.get("emulator_release_late_us_qd1", 0.0)), 4)
    out["emulator_accuracy_qd1_explained_idle"] = round(explained_accuracy(
        out["sas10k_mean_service_ms"], out["emulator_round_trip_idle_us"],
        out.get("emulator_release_late_us_qd1", 0.0)), 4)
    return out
