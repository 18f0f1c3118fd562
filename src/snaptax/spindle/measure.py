"""Measuring an emulated spindle with fio through NBD: the jobs, a Plan executor, and what the per-request seek
fit reads back (fio's per-request latency log, the client's turnaround from the emulator's counters).

    from snaptax.spindle.measure import ServedSpindle
    from snaptax.spindle.rigfiles import disk

    with ServedSpindle(disk("sas10k"), 1 << 30, work_dir, "sas10k") as dev, \\
            session.in_variant("sas10k", dev.describe()):
        dev.execute(plan, session)        # every Measure step recorded into the session

A served spindle has no snapshots: a plan for it holds only Measure steps (snapshot engines on emulated rig
devices go through snaptax.engines, which serve the device themselves).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import fio
from ..errors import ConfigError
from ..plan import Measure, Plan, Recorder
from .profiles import DeviceSpec, describe, to_json

if TYPE_CHECKING:
    from ..host.procs import ProcessGroup
    from .serve import Served

BS = 4096
CAPACITY = 1 << 30   # drive profiles are served scaled to 1 GiB over their full stroke (see spindle.model)


# ------------------------------------------------------------------ fio jobs

def qd_job(rw: str, iodepth: int, runtime_s: float, capacity: int = CAPACITY) -> fio.FioJob:
    """Random 4 KiB `rw` at queue depth `iodepth` over the whole device, for `runtime_s` seconds."""
    return fio.FioJob(name=f"{rw}-qd{iodepth}", rw=rw, bs=BS, iodepth=iodepth, size=capacity,  # type: ignore[arg-type]
                      runtime_s=runtime_s, log_avg_msec=None)


def span_size(span: float, capacity: int = CAPACITY) -> int:
    """Bytes of the first `span` (fraction) of the device, whole 4 KiB blocks, at least 16 blocks."""
    return max(BS * 16, int(span * capacity) // BS * BS)


def span_job(span: float, runtime_s: float, capacity: int = CAPACITY) -> fio.FioJob:
    """QD1 random 4 KiB reads in the first `span` of the device, with fio's per-request latency log
    (req_clat.*.log: time, latency, direction, bs, offset; log_offset=1), for `runtime_s` seconds."""
    return fio.FioJob(name=f"span{span:g}", rw="randread", bs=BS, iodepth=1, size=span_size(span, capacity),
                      runtime_s=runtime_s, log_avg_msec=None, extra=(("write_lat_log", "req"), ("log_offset", "1")))


def span_of(job_name: str) -> float:
    """The span a span_job was made for, from its name ('span0.01' → 0.01)."""
    if not job_name.startswith("span"):
        raise ValueError(f"{job_name!r} is not a span job")
    return float(job_name.removeprefix("span"))


# ------------------------------------------------------------------ what fio and the emulator report

def read_clat_log(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """fio's per-request completion-latency log written with log_offset=1 (columns: time ms, clat ns, direction,
    bs, offset, priority): (byte offsets, latencies in s), in log order (at QD1: issue order)."""
    arr = np.loadtxt(path, delimiter=",", ndmin=2)
    return arr[:, 4].astype(np.int64), arr[:, 1] / 1e9


def clat_log(directory: Path) -> Path:
    """The per-request latency log a span_job left in its measurement directory."""
    logs = sorted(Path(directory).glob("req_clat*.log"))
    if not logs:
        raise FileNotFoundError(f"{directory}: no per-request latency log (req_clat*.log)")
    return logs[0]


PHASE_POINTS = 16   # equally likely points the per-request seek fit takes the turnaround's distribution as


def _phase_histogram(before: dict, after: dict) -> tuple[np.ndarray, float]:
    """The emulator's idle-phase histogram over a run (counts; the raw counters after minus before) and its bin
    width (s). Empty when the emulator saw no idle arrival."""
    e0, e1 = before.get("emulator", {}), after.get("emulator", {})
    h1 = np.asarray(e1.get("idle_phase_hist", []), float)
    h0 = np.asarray(e0.get("idle_phase_hist", np.zeros(len(h1))), float)
    h = h1 - h0 if len(h0) == len(h1) else h1
    return (h if h.sum() > 0 else np.zeros(0)), e1.get("idle_phase_bin_us", 2.0) / 1e6


def phase_quantiles_from_counters(before: dict, after: dict, points: int = PHASE_POINTS) -> tuple[float, ...]:
    """The client turnaround's distribution over a run (s; time from a completion to the next arrival with
    nothing outstanding) as `points` equally likely values: the idle-phase histogram's quantiles at
    (j + ½)/points, each at its bin's centre. Empty when the emulator saw no idle arrival."""
    h, width = _phase_histogram(before, after)
    return tuple(_phase_quantile(h, width, (j + 0.5) / points) for j in range(points)) if len(h) else ()


def phase_from_counters(before: dict, after: dict) -> float:
    """Median client turnaround (s) over a run: the median of the emulator's idle-phase histogram (time from a
    completion to the next arrival with nothing outstanding; bins of idle_phase_bin_us µs) differenced between
    the raw counters before and after. 0 when the emulator saw no idle arrival."""
    h, width = _phase_histogram(before, after)
    return _phase_quantile(h, width, 0.5) if len(h) else 0.0


def _phase_quantile(h: np.ndarray, width: float, p: float) -> float:
    """The turnaround (s) at probability p of a non-empty idle-phase histogram: the centre of the bin it falls in."""
    c = np.cumsum(h)
    return float((int(np.searchsorted(c, c[-1] * p)) + 0.5) * width)


def predicted_iops(spec: DeviceSpec | str, *, rw: str, iodepth: int, capacity: int = CAPACITY, span: float = 1.0,
                   ios: int = 6000) -> float:
    """The model's IOPS for the same workload as qd_job: a closed loop of `iodepth` random 4 KiB commands run in
    simulated time (no harness), over `ios` completions. `spec`: a device spec or a drive profile's name.
    Deterministic (a seeded simulator), so results are cached."""
    from .rigfiles import disk

    return _closed_loop_iops(disk(spec) if isinstance(spec, str) else spec, rw.endswith("write"), iodepth, capacity,
                             span, ios)


@functools.lru_cache(maxsize=1024)
def _closed_loop_iops(spec: DeviceSpec, write: bool, iodepth: int, capacity: int, span: float, ios: int) -> float:
    from .predict import closed_loop

    return closed_loop(spec, capacity, iodepth=iodepth, write=write, span=span, ios=ios).iops


# ------------------------------------------------------------------ one-off measurements (benchmarks)

@dataclass(frozen=True)
class Point:
    """One fio run's summary: IOPS, mean completion latency and its standard error (s), completed I/Os."""

    profile: str
    rw: str
    iodepth: int
    span: float
    iops: float
    clat_mean_s: float
    clat_se_s: float
    ios: int


def measure(uri: str, capacity: int, *, rw: str, iodepth: int, span: float, runtime_s: float, directory: Path,
            profile: str, bs: int = BS, thinktime_us: int = 0) -> Point:
    """One fio run (random `bs` I/O over [0, span·capacity)) through fio's nbd engine; holds the measurement
    lock (fio.run takes it). thinktime_us: fio's pause after each completion before the next submission."""
    extra = (("thinktime", str(thinktime_us)),) if thinktime_us else ()
    job = fio.FioJob(name=f"{rw}-qd{iodepth}-span{span:g}", rw=rw, bs=bs, iodepth=iodepth,  # type: ignore[arg-type]
                     size=span_size(span, capacity), runtime_s=runtime_s, log_avg_msec=None, randrepeat=True,
                     extra=extra)
    run = fio.run(job, fio.FioTarget("nbd", uri=uri), directory)
    d = run.result["jobs"][0]["read" if rw.endswith("read") else "write"]
    n = int(d["total_ios"])
    clat = d["clat_ns"]
    return Point(profile, rw, iodepth, span, float(d["iops"]), clat["mean"] / 1e9,
                 clat["stddev"] / 1e9 / math.sqrt(max(n, 1)), n)


def harness_round_trip(work_dir: Path, *, runtime_s: float = 5.0, thinktime_us: int = 0) -> Point:
    """QD1 random reads on the zero-latency device: fio + NBD + emulator cost per command. thinktime_us: each
    command submitted after that long idle (as a QD1 client of a spindle submits after waiting out a service
    time), so that the cost of waking idle CPUs is in the round trip."""
    from ..host.procs import ProcessGroup
    from .profiles import DiskSpec, ZeroProfile
    from .serve import SpindleDevice, serve

    with ProcessGroup() as group, \
            serve(group, SpindleDevice(DiskSpec(ZeroProfile()), CAPACITY, work_dir, "zero")) as s:
        return measure(s.uri, CAPACITY, rw="randread", iodepth=1, span=1.0, runtime_s=runtime_s,
                       directory=work_dir / f"fio-zero-think{thinktime_us}", profile="zero", thinktime_us=thinktime_us)


# ------------------------------------------------------------------ the Plan executor

def record_served(session: Recorder, index: int, step: Measure, served: Served) -> None:
    """One fio run against a served spindle, recorded into `session` with the host and emulator counters
    (catalogue names, snaptax.spindle.serve.flat_counters) before and after, and in Measurement.extra["spindle"]
    the client's turnaround (s; for the per-request seek fit): its median `phase_s` and its distribution
    `phase_quantiles_s` (PHASE_POINTS equally likely values), and the device's `label`."""
    from .serve import flat_counters, fresh_counters

    directory = session.measurement_dir(index, step)
    raw_before = fresh_counters(served.counters)
    run = fio.run(step.job, fio.FioTarget("nbd", uri=served.uri), directory)
    raw_after = fresh_counters(served.counters)
    extra = {"spindle": {"phase_s": phase_from_counters(raw_before, raw_after),
                         "phase_quantiles_s": list(phase_quantiles_from_counters(raw_before, raw_after)),
                         "label": served.label}}
    session.record_measurement(index, step, chain_length=0, fio_run=run, counters_before=flat_counters(raw_before),
                               counters_after=flat_counters(raw_after), extra=extra)


def check_measure_only(plan: Plan) -> None:
    """A served spindle has no snapshots: refuse a plan with any other step than Measure before starting."""
    for index, step in enumerate(plan.steps):
        if not isinstance(step, Measure):
            raise ValueError(f"plan step {index} ({type(step).__name__}) cannot run on a served spindle: "
                             f"it has no snapshots (use a snapshot engine on a rig device)")
        if step.gate is not None:
            raise ConfigError("plan", f"steps[{index}].gate", f"{step.gate!r} ({step.label}): a served spindle has "
                              "no Gate to ask (use a snapshot engine's execute(gate=...))")


class ServedSpindle:
    """An emulated device (drive or array) served over NBD for one variant of a study, executing a Plan of
    Measure steps like snaptax.engines.base.SnapshotEngine.execute, without snapshots. A context manager:
    nbdkit and every file it made are gone after the `with` (also on error and Ctrl-C)."""

    def __init__(self, spec: DeviceSpec, capacity: int, work_dir: Path, name: str) -> None:
        self.spec, self.capacity, self.work_dir, self.name = spec, capacity, Path(work_dir), name
        self.served: Served | None = None
        self._group: ProcessGroup | None = None
        self._serving: Any = None

    def __enter__(self) -> ServedSpindle:
        from ..host.procs import ProcessGroup
        from .serve import SpindleDevice, serve

        self._group = ProcessGroup().__enter__()
        try:
            self._serving = serve(self._group, SpindleDevice(self.spec, self.capacity, self.work_dir, self.name))
            self.served = self._serving.__enter__()
        except BaseException as exc:
            self._group.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._group is not None
        try:
            if self._serving is not None:
                self._serving.__exit__(*exc)
        finally:
            self._group.__exit__(*exc)
            self.served = None

    def describe(self) -> dict[str, Any]:
        """The variant's description for the run's manifest: label, served capacity and the full spec (JSON,
        read back by the analysis with snaptax.spindle.profiles.spec_from_json)."""
        return {"device": describe(self.spec), "capacity": self.capacity, "spec": to_json(self.spec)}

    def execute(self, plan: Plan, session: Recorder) -> None:
        """Run every Measure of `plan` in order against the served device, recording each into `session`
        (measurement index = the step's index in the plan)."""
        check_measure_only(plan)
        if self.served is None:
            raise RuntimeError("ServedSpindle.execute outside its `with`")
        for index, step, _ in plan.measurements():
            record_served(session, index, step, self.served)
