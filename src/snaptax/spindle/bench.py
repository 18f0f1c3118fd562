"""Benchmarks of the emulated spindle (issue 3). Each function returns a flat dict name → value.

  emulator_accuracy_qd1 / _qd32  achieved fio IOPS ÷ model-predicted IOPS, sas10k, random 4 KiB reads over
                                 the whole (1 GiB, scaled) drive. Goal: within ±5 %.
  emulator_overhead              per-command cost with the zero-latency profile (fio + NBD + emulator round
                                 trip, QD1 mean completion latency) ÷ the sas10k model's mean QD1 service time.
                                 Goal: < 5 %.
  seek_fit_max_rel_error         largest relative error of the read-seek figures (track-to-track, average, full
                                 stroke) recovered by the calibration's per-request fit (models.seek) from a
                                 QD1 span sweep measured through fio (per-request offset/latency logs), against the
                                 profile's configured figures. Goal: < 5 %.
  emulator_place_us_<device>     CPU time (µs) the simulator spends placing one random 4 KiB command (advance +
                                 submit, half reads, half writes) for each named device of rigs/spindles/
                                 devices.yaml, offline: the emulator does this under its lock at every arrival,
                                 so it must stay well below a command's service time. Goal: < 100 µs.

The model prediction is the event simulator in simulated time (no harness), for the same workload; the
achieved figure includes every real cost. Every measurement holds the machine-wide measurement lock.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .. import paths
from ..lock import measurement_lock
from ..models import seek
from ..procs import ProcessGroup
from . import measure as sm
from .profiles import DriveProfile
from .rigfiles import disk, load_profile
from .serve import SpindleDevice, fresh_counters, serve

PROFILE = "sas10k"
CAPACITY = 1 << 30


def _workdir(workdir: Path | None) -> Path:
    base = workdir or paths.work_dir()
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="bench-spindle-", dir=base))


def emulator_accuracy(workdir: Path | None = None, *, runtime_s: float = 20.0) -> dict[str, float]:
    wd = _workdir(workdir)
    try:
        out: dict[str, float] = {}
        with measurement_lock(), ProcessGroup() as group, \
                serve(group, SpindleDevice(disk(PROFILE), CAPACITY, wd, PROFILE)) as s:
            for qd in (1, 32):
                before = fresh_counters(s.counters)
                pt = sm.measure(s.uri, CAPACITY, rw="randread", iodepth=qd, span=1.0, runtime_s=runtime_s,
                                 directory=wd / f"fio-qd{qd}", profile=PROFILE)
                after = fresh_counters(s.counters)
                e0, e1 = before.get("emulator", {}), after.get("emulator", {})
                n = e1.get("released", 0) - e0.get("released", 0)
                if n:
                    late = (e1.get("release_late_s_sum", 0) - e0.get("release_late_s_sum", 0)) / n
                    out[f"emulator_release_late_us_qd{qd}"] = round(late * 1e6, 2)
                predicted = sm.predicted_iops(PROFILE, rw="randread", iodepth=qd, capacity=CAPACITY, ios=20000)
                out[f"emulator_accuracy_qd{qd}"] = round(pt.iops / predicted, 4)
                out[f"emulator_iops_qd{qd}_achieved"] = round(pt.iops, 2)
                out[f"emulator_iops_qd{qd}_predicted"] = round(predicted, 2)
        return out
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def emulator_overhead(workdir: Path | None = None, *, runtime_s: float = 10.0) -> dict[str, float]:
    wd = _workdir(workdir)
    try:
        with measurement_lock():
            zero = sm.harness_round_trip(wd, runtime_s=runtime_s)
        service = 1.0 / sm.predicted_iops(PROFILE, rw="randread", iodepth=1, capacity=CAPACITY, ios=20000)
        return {"emulator_overhead": round(zero.clat_mean_s / service, 4),
                "emulator_round_trip_us": round(zero.clat_mean_s * 1e6, 2),
                "sas10k_mean_service_ms": round(service * 1e3, 4)}
    finally:
        shutil.rmtree(wd, ignore_errors=True)


SPANS = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def seek_fit(workdir: Path | None = None, *, runtime_s: float = 10.0) -> dict[str, float]:
    from .. import fio

    wd = _workdir(workdir)
    try:
        traces = []
        with measurement_lock(), ProcessGroup() as group, \
                serve(group, SpindleDevice(disk(PROFILE), CAPACITY, wd, PROFILE)) as s:
            for span in SPANS:
                before = fresh_counters(s.counters)
                run = fio.run(sm.span_job(span, runtime_s, CAPACITY), fio.FioTarget("nbd", uri=s.uri),
                              wd / f"span{span:g}")
                after = fresh_counters(s.counters)
                off, lat = sm.read_clat_log(sm.clat_log(run.directory))
                traces.append(seek.Trace(off, lat, sm.phase_from_counters(before, after), 0.0, span))
        p = load_profile(PROFILE)
        assert isinstance(p, DriveProfile)
        fit = seek.fit_seek_requests(traces, p, CAPACITY)
        errs = fit.rel_errors(p.seek_read)
        out = {"seek_fit_max_rel_error": round(max(errs.values()), 4), "seek_fit_requests": fit.points,
               "seek_fit_jitter_us": round(fit.residual_rms_s * 1e6, 2)}
        out.update({f"seek_fit_rel_error_{k.removesuffix('_ms')}": round(v, 4) for k, v in errs.items()})
        out.update({f"seek_fit_{k}": round(getattr(fit, k), 4) for k in seek.FIGURES})
        out.update({f"seek_fit_ci95_{k.removesuffix('_ms')}": round(ci, 4)
                    for k, ci in zip(seek.FIGURES, fit.ci95_ms, strict=True)})
        return out
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def placement_cost(commands: int = 2000, capacity: int = 16 << 30) -> dict[str, float]:
    """emulator_place_us_<device>: mean CPU time of Simulator.advance + submit per command, per named device."""
    import random
    import time

    from .arrays import Simulator
    from .rigfiles import named_devices, parse_device

    out: dict[str, float] = {}
    for name in sorted(named_devices()):
        sim = Simulator(parse_device({"device": name}, "bench"), capacity, name)
        rnd = random.Random(1)
        t, cpu = 0.0, 0.0
        for i in range(commands):
            t += 0.01    # commands 10 ms apart: each finds the array idle or nearly so, as a QD1 client would
            c0 = time.thread_time()
            sim.advance(t)
            sim.submit(i, "read" if i % 2 else "write", rnd.randrange(capacity // 4096) * 4096, 4096, t)
            cpu += time.thread_time() - c0
        out[f"emulator_place_us_{name}"] = round(cpu / commands * 1e6, 1)
    return out


def run(workdir: Path | None = None) -> dict[str, float]:
    """All spindle benchmarks (about 2.5 minutes)."""
    out: dict[str, float] = {}
    out.update(placement_cost())
    out.update(emulator_accuracy(workdir))
    out.update(emulator_overhead(workdir))
    out.update(seek_fit(workdir))
    return out
