"""nbdkit python plugin: a sparse backing file served with the timing of a simulated drive or array.

Runs under the system python3 inside nbdkit, so it and everything it imports are stdlib only.

    nbdkit -f -U SOCK -t 64 python plugin.py srcdir=SRC spec=SPEC.json file=BACKING [counters=C.json]

Parameters
  srcdir    directory holding the `snaptax` package (added to sys.path)
  spec      JSON from snaptax.spindle.serve: {"spec": <profiles.to_json>, "capacity": bytes, "name": str}
  file      the backing file (created sparse by serve(); data really lives there: os.pread/os.pwrite)
  counters  where host-level counters are written, atomically, every `interval` s (default 0.5) and at exit

Timing. Requests are scheduled in simulated time (= CLOCK_MONOTONIC since start) under one lock, with the
parallel thread model: a request thread advances the Simulator to `now`, submits, does the data I/O,
then waits for its completion event. A pump thread sleeps until the Simulator's next event, advances
it and wakes the requests it completed. Decisions (queue reordering, seek, rotation) depend only on
simulated time, so late wake-ups delay replies but never change the schedule.
"""
from __future__ import annotations

import builtins
import json
import os
import sys
import threading
import time

import nbdkit  # provided by nbdkit-plugin-python

API_VERSION = 2
SPIN_S = 300e-6   # the pump busy-waits (GIL released each turn) for the last 300 µs before an event

_params: dict[str, str] = {}
_state: "_Emulator | None" = None


class _Emulator:
    def __init__(self, spec_json: dict, backing: str, counters_path: str | None, interval: float):
        from snaptax.spindle.arrays import Simulator
        from snaptax.spindle.profiles import spec_from_json

        spec = spec_from_json(spec_json["spec"], source=_params["spec"])
        self.size = int(spec_json["capacity"])
        self.sim = Simulator(spec, self.size, spec_json.get("name", "array"))
        self.fd = os.open(backing, os.O_RDWR)
        self.counters_path = counters_path
        self.interval = interval
        self.cond = threading.Condition(threading.Lock())
        self.events: dict[int, threading.Event] = {}
        self.next_token = 0
        self.t0 = time.monotonic()
        self.stop = False
        self.pump: threading.Thread | None = None
        self.next_dump = 0.0
        # how late (real time after the simulated completion) replies are released: the emulator's own error
        self.late_sum = 0.0
        self.late_n = 0

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> None:
        if self.pump is None:
            self.pump = threading.Thread(target=self._pump, name="spindle-pump", daemon=True)
            self.pump.start()

    def _deliver(self, done) -> None:
        if done:
            now = self.now()
            for token, t_done in done:
                self.late_sum += now - t_done
                self.late_n += 1
                ev = self.events.pop(token, None)
                if ev is not None:
                    ev.set()

    def _pump(self) -> None:
        _timer_slack_1ns()
        with self.cond:
            while not self.stop:
                now = self.now()
                self._deliver(self.sim.advance(now))
                if now >= self.next_dump:
                    self._dump()
                    self.next_dump = now + self.interval
                nt = self.sim.next_event_time()
                wake = self.next_dump if nt is None else min(nt, self.next_dump)
                remaining = wake - self.now()
                if remaining > SPIN_S:
                    # coarse sleep, woken early by any new submission (which may bring an earlier event)
                    self.cond.wait(remaining - SPIN_S)
                elif remaining > 0:
                    # sleeps on this machine overshoot by ~100 µs: spin the last stretch without the lock,
                    # yielding the GIL each turn so request threads keep running
                    self.cond.release()
                    try:
                        while time.monotonic() - self.t0 < wake:
                            time.sleep(0)
                    finally:
                        self.cond.acquire()

    def _dump(self) -> None:
        """Write counters atomically (rename over the old file) so readers never see a partial file."""
        if not self.counters_path:
            return
        data = self.sim.counters()
        data["emulator"] = {"release_late_us_mean": round(self.late_sum / self.late_n * 1e6, 2) if self.late_n else 0.0,
                            "released": self.late_n}
        tmp = f"{self.counters_path}.tmp"
        with builtins.open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.counters_path)

    def request(self, kind: str, offset: int, length: int) -> threading.Event:
        ev = threading.Event()
        with self.cond:
            now = self.now()
            self._deliver(self.sim.advance(now))
            token = self.next_token
            self.next_token += 1
            self.events[token] = ev
            self.sim.submit(token, kind, offset, length, now)
            self._deliver(self.sim.take_done())
            self.cond.notify()   # the pump recomputes its wake-up time
        return ev

    def shutdown(self) -> None:
        with self.cond:
            self.stop = True
            self.cond.notify()
        if self.pump is not None:
            self.pump.join(timeout=5)
        with self.cond:
            self.sim.advance(self.now())
            self._dump()
        os.close(self.fd)


def _timer_slack_1ns() -> None:
    """Linux coalesces timer wake-ups by 50 µs by default; the pump wants them exact (PR_SET_TIMERSLACK)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").prctl(29, 1)
    except (OSError, AttributeError):
        pass


# ------------------------------------------------------------------ nbdkit callbacks

def config(key: str, value: str) -> None:
    if key not in ("srcdir", "spec", "file", "counters", "interval"):
        raise RuntimeError(f"unknown parameter {key!r} (srcdir, spec, file, counters, interval)")
    _params[key] = value


def config_complete() -> None:
    global _state
    for required in ("srcdir", "spec", "file"):
        if required not in _params:
            raise RuntimeError(f"missing parameter {required}=")
    if _params["srcdir"] not in sys.path:
        sys.path.insert(0, _params["srcdir"])
    with builtins.open(_params["spec"]) as f:
        spec_json = json.load(f)
    _state = _Emulator(spec_json, _params["file"], _params.get("counters"), float(_params.get("interval", 0.5)))
    if os.fstat(_state.fd).st_size < _state.size:
        raise RuntimeError(f"backing file {_params['file']} is smaller than the device ({_state.size} bytes)")


def thread_model() -> int:
    # threads waiting for the GIL would otherwise wait up to the 5 ms default switch interval
    sys.setswitchinterval(1e-4)
    return nbdkit.THREAD_MODEL_PARALLEL


def after_fork() -> None:
    # threads must start after nbdkit daemonizes (a fork keeps only the forking thread)
    assert _state is not None
    _state.start()


def cleanup() -> None:
    # nbdkit ≥ 1.28 calls this once, after the last connection closed, before unloading (the python
    # plugin has no `unload` callback)
    if _state is not None:
        _state.shutdown()


def close(h) -> None:
    assert _state is not None
    with _state.cond:   # a client is done: make its work visible in the counters at once
        _state.sim.advance(_state.now())
        _state._dump()


def open(readonly: bool):  # noqa: A001 - nbdkit's callback name
    assert _state is not None
    _state.start()
    return 1


def get_size(h) -> int:
    assert _state is not None
    return _state.size


def is_rotational(h) -> bool:
    return True


def can_write(h) -> bool:
    return True


def can_flush(h) -> bool:
    return True


def can_multi_conn(h) -> bool:
    return True   # one simulator behind all connections: flush on one covers writes of all


def pread(h, buf, offset: int, flags: int) -> None:
    assert _state is not None
    ev = _state.request("read", offset, len(buf))
    n = os.preadv(_state.fd, [buf], offset)
    if n < len(buf):
        buf[n:] = bytes(len(buf) - n)   # beyond the file's end: zeros
    ev.wait()


def pwrite(h, buf, offset: int, flags: int) -> None:
    assert _state is not None
    ev = _state.request("write", offset, len(buf))
    os.pwrite(_state.fd, buf, offset)
    ev.wait()


def flush(h, flags: int) -> None:
    assert _state is not None
    # no fsync: the emulated device's durability is not under test, and a host fsync would add the host
    # disk's latency to the model's
    _state.request("flush", 0, 0).wait()
