"""A measurement on one clock: fio in the background while the engine changes under it, the device's counters
sampled every second, and the deletion of a snapshot by QEMU's active commit under that load.

Shared by the studies whose phases are a timeline (lifecycle, tiering); an engine's own deletion under load
(engines.qcow2.delete_active) runs on it. fio runs as a background process of the
engine's ProcessGroup (so a deletion can be driven over QMP while the load runs, and Ctrl-C stops fio before the
daemons it talks to); the device's counters are sampled every second by a thread that only reads the emulator's
counter file (QMP stays in the main thread). Each phase's fio run is recorded through the session like any
measurement (job file, fio JSON, logs, counters), with its start time on the timeline and fio's per-second IOPS
parsed by fiologparser in `extra`.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from . import fio, fiolog
from .errors import EngineError, MeasurementError
from .host import procs
from .host.procs import Child, ProcessGroup
from .plan import Measure
from .record import RunSession


class TimelineEngine(Protocol):
    """What a timeline drives: an engine (snaptax.engines) serving the volume fio runs against, whose processes are
    its own group's. Typed here, not imported: the engines use the timeline (an engine's deletion under load, a
    guest's steps on the host's clock), never the other way round."""

    group: ProcessGroup

    @property
    def chain_length(self) -> int: ...

    def fio_target(self) -> fio.FioTarget: ...

    def counters(self) -> dict[str, float]: ...

    def describe(self) -> dict[str, Any]: ...

    def diagnose(self) -> dict[str, Any]: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> Any: ...


E = TypeVar("E", bound=TimelineEngine)
STUN_SETTLE_S = 0.1     # after stopping the guest: requests already sent to the device complete


def wait_event(q, match: Callable[[dict], bool], timeout_s: float, on_wait: Callable[[], None]) -> dict:
    """Wait for a QMP event, calling on_wait about once a second meanwhile (the load's bookkeeping)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return q.wait_event(match, timeout=min(1.0, max(0.05, deadline - time.monotonic())))
        except EngineError:
            if time.monotonic() > deadline:
                raise EngineError(f"QMP: no matching event within {timeout_s:.0f} s") from None
            on_wait()




# ------------------------------------------------------------------ host series sampler

@dataclass
class HostSampler:
    """Samples cumulative host counters every `interval_s` in a thread: (t since t0, counters)."""

    read: Callable[[], dict[str, float]]
    t0: float
    keys: tuple[str, ...]
    interval_s: float = 1.0
    rows: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> HostSampler:
        self._thread = threading.Thread(target=self._loop, name="host-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        nxt = time.monotonic()
        while not self._stop.is_set():
            self._sample()
            nxt += self.interval_s
            self._stop.wait(max(0.0, nxt - time.monotonic()))

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        # one reading after everything inside has ended, so the series covers the last run's end (a guest's run
        # ends with its step line, up to a sampling interval after the loop's last reading)
        self._sample()

    def _sample(self) -> None:
        try:
            c = self.read()
            self.rows.append((time.monotonic() - self.t0, {k: c.get(k, 0.0) for k in self.keys}))
        except (OSError, ValueError):
            pass

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", *self.keys])
            for t, c in self.rows:
                w.writerow([f"{t:.3f}", *(c[k] for k in self.keys)])


# ------------------------------------------------------------------ fio in the background

@dataclass
class Load:
    """One fio run in the background."""

    child: Child
    directory: Path
    started: float
    step: Measure
    index: int
    before: dict[str, float]
    cpu_before: procs.CpuTimes

    def running(self) -> bool:
        return self.child.proc.poll() is None

    def stop_guest(self) -> None:
        os.killpg(self.child.proc.pid, signal.SIGSTOP)

    def resume_guest(self) -> None:
        os.killpg(self.child.proc.pid, signal.SIGCONT)


class Timeline(Generic[E]):
    """One variant's fio runs, events and host series against one clock."""

    def __init__(self, session: RunSession, engine: E, variant: str):
        self.session, self.engine, self.variant = session, engine, variant
        self.t0 = time.monotonic()
        self.index = 0

    def now(self) -> float:
        return time.monotonic() - self.t0

    def event(self, kind: str, **data: Any) -> None:
        self.session.log_event(kind, t_s=round(self.now(), 3), **data)

    def start(self, text_of: Callable[[fio.FioTarget, str], str], job: fio.FioJob, phase: str,
              repeat: int = 0) -> Load:
        step = Measure(job, phase, repeat)
        self.index += 1
        directory = self.session.measurement_dir(self.index, step)
        job_file = directory / fio.JOB_FILE
        target = self.engine.fio_target()
        job_file.write_text(text_of(target, str(directory / "fio")))
        env = {**os.environ, **target.environment()}
        before = self.engine.counters()
        cpu_before = procs.machine_cpu_times()
        child = self.engine.group.spawn(["fio", "--output-format=json", f"--output={directory / fio.JSON_FILE}",
                                         str(job_file)], name=f"fio[{step.label}]",
                                        log_path=directory / "fio.stderr", env=env)
        return Load(child, directory, self.now(), step, self.index, before, cpu_before)

    def finish(self, load: Load, extra: dict[str, Any] | None = None, margin_s: float = 60) -> None:
        limit = (load.step.job.runtime_s or 600) + margin_s
        try:
            load.child.proc.wait(timeout=max(1.0, load.started + limit - self.now()))
        except subprocess.TimeoutExpired:
            raise MeasurementError(f"fio {load.step.label} still running {limit:.0f} s after its start: a request "
                                   "is stuck (see the qemu-storage-daemon drain note in timeline.stunned)") from None
        self.engine.group.stop(load.child)
        wall = self.now() - load.started
        if load.child.proc.returncode != 0 or not (load.directory / fio.JSON_FILE).exists():
            raise MeasurementError(f"fio {load.step.label} exited {load.child.proc.returncode}: "
                                   f"{load.child.log_tail(3)}")
        result = fio.read_result(load.directory, load.step.label)
        after = self.engine.counters()
        self.session.record_measurement(load.index, load.step, chain_length=self.engine.chain_length,
                                        fio_run=fio.FioRun(load.directory, result, wall, load.cpu_before,
                                                           procs.machine_cpu_times()),
                                        counters_before=load.before,
                                        counters_after=after,
                                        extra={"t_start_s": load.started, "t_end_s": self.now(),
                                               "vm_series": vm_series(load.directory, result),
                                               **(extra or {})})

    def run(self, text_of, job: fio.FioJob, phase: str, extra: dict[str, Any] | None = None) -> None:
        load = self.start(text_of, job, phase)
        self.finish(load, extra)


def job_text(job: fio.FioJob) -> Callable[[fio.FioTarget, str], str]:
    """What Timeline.run and Timeline.start take as `text_of` for a plain fio job: its job file for the engine's
    target, with logs under the measurement's prefix."""
    return lambda target, prefix: job.job_file(target, log_prefix=prefix)


def vm_series(directory: Path, result: dict) -> dict[str, list[list[float]]]:
    """fio's per-second IOPS of a run (all directions, fiologparser), per job: what a measurement's extra
    `vm_series` holds."""
    return {_log_name(log, result): [list(r) for r in fiolog.per_second(log)]
            for log in sorted(directory.glob("fio_iops*.log"))}


def _log_name(log: Path, result: dict) -> str:
    """fio_iops.1.log → the first job's name (per_job_logs=1 numbers the jobs from 1); fio_iops.log → 'all'."""
    parts = log.name.split(".")
    if len(parts) == 3 and parts[1].isdigit():
        jobs = result.get("jobs", [])
        i = int(parts[1]) - 1
        return str(jobs[i].get("jobname")) if i < len(jobs) else parts[1]
    return "all"




def stunned(load: Load, op: Callable[[], object]) -> float:
    """Run a graph change (snapshot, the pivot or finalization of a commit or mirror) with the guest stopped, as
    VMware stuns a VM for them: fio's processes are stopped, requests already sent complete (STUN_SETTLE_S), the
    operation runs, fio resumes. Without it, QEMU 7.2's drain at such a change under load sometimes left a guest
    request stuck for good (blockdev-snapshot got no QMP reply in 60 s; a reader hung after an active commit's
    pivot). Returns the stun time (s)."""
    t0 = time.monotonic()
    running = load.running()
    if running:
        load.stop_guest()
    try:
        time.sleep(STUN_SETTLE_S if running else 0.0)
        op()
    finally:
        if running:
            load.resume_guest()
    return time.monotonic() - t0



# per timeline: qemu-storage-daemon 7.2 sometimes hangs at a graph change under load (studies.lifecycle.plan.HANG_NOTE)
ATTEMPTS = 3


def attempt(session: RunSession, name: str, body: Callable[[RunSession, E], None],
            make_engine: Callable[[], E], study: dict[str, Any]) -> None:
    """Measure one timeline with a fresh engine; if the daemon hangs (a QMP reply or a guest request that never
    comes), read where the request is held (Qcow2ChainEngine.diagnose), stop everything, drop what this attempt
    recorded, log an `attempt_failed` event with the error and the diagnosis, and measure the timeline again, at
    most ATTEMPTS times (then the error stands, with the diagnosis in its message)."""
    for k in range(1, ATTEMPTS + 1):
        diagnosis: dict[str, Any] = {}
        try:
            engine = make_engine()
            with engine:        # (not `as`: __enter__ is typed as the base engine)
                with session.in_variant(name, {**engine.describe(), "study": study, "attempt": k}):
                    try:
                        body(session, engine)
                    except (MeasurementError, EngineError, TimeoutError):
                        # read while the hung request is still where it hung (closing the engine ends it)
                        diagnosis = engine.diagnose()
                        raise
            return
        except (MeasurementError, EngineError, TimeoutError) as exc:
            if k == ATTEMPTS:
                raise type(exc)(f"{exc} [diagnosis: {json.dumps(diagnosis)[:2000]}]") from exc
            dropped = session.discard_variant(name)
            with session.in_variant(name, session.variants[name]):
                session.log_event("attempt_failed", attempt=k, dropped_measurements=dropped,
                                  error=f"{type(exc).__name__}: {exc}"[:300], diagnosis=diagnosis)
