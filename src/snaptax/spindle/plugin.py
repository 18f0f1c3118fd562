"""nbdkit python plugin: a sparse backing file served with the timing of a simulated drive or array.

Since 2026-11-28 the default emulator is the compiled one (spindle_plugin.c with the model core spindle_core.c,
held to this model by tests/spindle/test_cmodel.py); this plugin is kept selectable (serve(..., plugin="python"))
for comparisons and debugging. It writes the same counters file, without the compiled plugin's plugin-boundary
keys (boundary_s_sum, model_s_sum), so runs made with it are judged by the mechanical lateness limit
(snaptax.record.lateness).

Runs under the system python3 inside nbdkit, so it and everything it imports are stdlib only.

    nbdkit -f -U SOCK -t 64 python plugin.py srcdir=SRC spec=SPEC.json file=BACKING [counters=C.json]

Parameters
  srcdir    directory holding the `snaptax` package (added to sys.path)
  spec      JSON from snaptax.spindle.serve: {"spec": <profiles.to_json>, "capacity": bytes, "name": str}
  file      the backing file (created sparse by serve(); data really lives there: os.pread/os.pwrite)
  counters  where host-level counters are written, atomically, every `interval` s (default 0.5) and at exit

Timing. Requests are scheduled in simulated time (= CLOCK_MONOTONIC since start) under one lock, with the
parallel thread model: a request thread advances the Simulator to `now`, submits, and does the data I/O.
As soon as the Simulator has fixed the command's completion time (at dispatch: at once when the drive is
idle, later when it waits in the queue) the request thread finishes its own completion: it sleeps until
that time itself (a coarse sleep, then a spin for the last SELF_SPIN_S; a flush answered after the drive's
overhead only sleeps, see Simulator.sleep_etas) and replies at once — no hand-off
to another thread, whose wake-up would add to the reply's lateness, and no advance of the Simulator either:
the pump (notified) or the next arrival processes the completion and dispatches what is queued, work that
used to sit between the completion time and the reply (mean release lateness on the bench's sas10k, 10 s
of random reads: 47 → 11 µs at QD1, 109 → 12 µs at QD32, 2026-11-27). A pump thread serves
everything else: it sleeps until the next event *not* owned by a waiting request thread (queue
dispatches, destages, a read-modify-write's read phase, tier commands, tiering cycles), advances the
Simulator, and wakes the requests it completed or whose completion time became known. Decisions (queue reordering, seek,
rotation) depend only on simulated time, so late wake-ups delay replies but never change the schedule.

Own timing, in the counters under "emulator": release_late_us_mean (real time after the simulated completion
at which replies leave: the emulator's error) and, for commands that arrived with nothing outstanding,
idle_gap_us_mean (real time from the previous reply to this arrival: the client's turnaround, which sets
the platter's phase at the next command and which the calibration fit needs).
"""
from __future__ import annotations

import builtins
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Hashable

import nbdkit  # provided by nbdkit-plugin-python

API_VERSION = 2
SPIN_S = 300e-6   # the pump busy-waits (GIL released each turn) for the last 300 µs before an event
# a request thread timing its own completion spins longer: timed waits here overshoot by ~100 µs on average
# and by 0.5 ms at the 99th percentile on a loaded 2-core machine (measured with Event.wait(4 ms))
SELF_SPIN_S = 1e-3

_params: dict[str, str] = {}
_state: _Emulator | None = None


class _Req:
    """One outstanding host command: `ev` wakes its thread (completed, or completion time now known)."""

    __slots__ = ("token", "ev", "done", "flush")

    def __init__(self, token: int, flush: bool = False):
        self.token = token
        self.ev = threading.Event()
        self.done = False
        self.flush = flush


GAP_BIN_S = 2e-6
GAP_BINS = 2000         # 0 … 4 ms; the last bin holds everything beyond
OWNED_GRACE_S = 2e-3   # the pump looks at an event owned by a request thread only this long after it


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
        self.reqs: dict[Hashable, _Req] = {}
        self.next_token = 0
        self.t0 = time.monotonic()
        self.stop = False
        self.pump: threading.Thread | None = None
        self.next_dump = 0.0
        # how late (real time after the simulated completion) replies are released: the emulator's own error
        self.late_sum = 0.0
        self.late_n = 0
        # the same for flushes alone: their replies are timed differently (a flush with nothing to destage is
        # answered after a command overhead, by sleeping: Simulator.sleep_etas), and where they are half the
        # commands the mean hides which kind is late
        self.flush_late_sum = 0.0
        self.flush_late_n = 0
        # client turnaround: real time from a reply to the next arrival when nothing else was outstanding
        self.last_release: float | None = None
        self.gap_sum = 0.0
        self.gap_n = 0
        self.self_timed = 0
        # commands whose thread replied at their fixed completion time before the Simulator processed it
        self.released: set[Hashable] = set()
        self.errors = 0                 # commands the simulator refused (an exception in submit)
        self.last_error = ""
        # phase of an idle arrival: simulated time from the last completion to the arrival (reply lateness +
        # client turnaround), as a histogram of GAP_BIN_S bins (cumulative: readers diff two snapshots)
        self.last_done_t: float | None = None
        self.phase_hist = [0] * GAP_BINS

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> None:
        if self.pump is None:
            self.pump = threading.Thread(target=self._pump, name="spindle-pump", daemon=True)
            self.pump.start()

    def _deliver(self, done) -> None:
        """Under the lock: mark completed commands done and wake their threads; wake threads whose
        completion time became known so they can time it themselves."""
        if done:
            now = self.now()
            for token, t_done in done:
                if token in self.released:
                    self.released.discard(token)   # its thread replied at its eta (finish) and was counted then
                    continue
                req = self._complete(token, t_done, now)
                if req is not None:
                    req.ev.set()
        for token in self.sim.take_etas():
            req = self.reqs.get(token)
            if req is not None:
                req.ev.set()

    def _complete(self, token: Hashable, t_done: float, now: float) -> _Req | None:
        """Under the lock: count the command completed at t_done as released at `now` (lateness, client-gap
        and phase bookkeeping) and mark its request done; the request, or None if none waits for it."""
        self.late_sum += now - t_done
        self.late_n += 1
        self.last_release = now
        if self.last_done_t is None or t_done > self.last_done_t:
            self.last_done_t = t_done
        req = self.reqs.pop(token, None)
        if req is not None:
            req.done = True
            if req.flush:
                self.flush_late_sum += now - t_done
                self.flush_late_n += 1
        return req

    def _release(self, req: _Req, t_done: float) -> None:
        """Under the lock: count `req` as completed at its fixed time t_done and let its thread reply; the
        Simulator's own completion of it (at a later advance) is then skipped by _deliver."""
        self._complete(req.token, t_done, self.now())
        self.released.add(req.token)

    def _pump(self) -> None:
        _timer_slack_1ns()
        with self.cond:
            while not self.stop:
                now = self.now()
                self._deliver(self.sim.advance(now))
                if now >= self.next_dump:
                    self._dump()
                    self.next_dump = now + self.interval
                owned = set(self.sim.etas.values())
                times = self.sim.event_times()
                free = [t for t in times if t not in owned]
                wake = min([self.next_dump] + free + [t + OWNED_GRACE_S for t in times if t in owned])
                precise = bool(free) and wake == min(free)
                remaining = wake - self.now()
                if remaining > SPIN_S or (remaining > 0 and not precise):
                    # coarse sleep, woken early by any new submission or self-timed completion
                    self.cond.wait(remaining - SPIN_S if precise else remaining)
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
        data["emulator"] = {
            "release_late_us_mean": round(self.late_sum / self.late_n * 1e6, 2) if self.late_n else 0.0,
            "released": self.late_n, "release_late_s_sum": round(self.late_sum, 9),
            "flushes_released": self.flush_late_n, "flush_late_s_sum": round(self.flush_late_sum, 9),
            "idle_gap_us_mean": round(self.gap_sum / self.gap_n * 1e6, 2) if self.gap_n else 0.0,
            "idle_arrivals": self.gap_n, "idle_gap_s_sum": round(self.gap_sum, 9),
            "self_timed": self.self_timed, "idle_phase_bin_us": GAP_BIN_S * 1e6,
            # commands the plugin holds (submitted, not yet returned to nbdkit): a level, for hang diagnoses
            "outstanding": len(self.reqs),
            "errors": self.errors, "last_error": self.last_error,
            "idle_phase_hist": self.phase_hist}
        tmp = f"{self.counters_path}.tmp"
        with builtins.open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.counters_path)

    def request(self, kind: str, offset: int, length: int) -> _Req:
        with self.cond:
            now = self.now()
            self._deliver(self.sim.advance(now))
            if not self.reqs and self.last_release is not None:
                self.gap_sum += now - self.last_release
                self.gap_n += 1
                if self.last_done_t is not None:
                    self.phase_hist[min(GAP_BINS - 1, int((now - self.last_done_t) / GAP_BIN_S))] += 1
            token = self.next_token
            self.next_token += 1
            req = self.reqs[token] = _Req(token, flush=kind == "flush")
            try:
                self.sim.submit(token, kind, offset, length, now)
            except Exception:
                # the simulator refused the command: nbdkit answers the client with an error, and the plugin
                # must not keep waiting for a completion that will never come (kept for a hang's diagnosis)
                self.reqs.pop(token, None)
                self.errors += 1
                self.last_error = f"{kind} offset={offset} length={length}: {traceback.format_exc()[-1500:]}"
                raise
            self._deliver(self.sim.take_done())
            self.cond.notify()   # the pump recomputes its wake-up time
        return req

    def finish(self, req: _Req) -> None:
        """Return once `req` has completed in simulated time (and real time has caught up with it)."""
        _thread_timer_slack()
        while True:
            with self.cond:
                if req.done:
                    return
                eta = self.sim.etas.get(req.token)
                sleep_only = req.token in self.sim.sleep_etas
                req.ev.clear()   # from here on, set only by a delivery (or a newly known eta)
            if eta is None:
                req.ev.wait()
                continue
            # our completion time is fixed: time it ourselves
            remaining = eta - self.now()
            if sleep_only:
                # a flush answered a command overhead ahead (nothing to destage): a timed sleep,
                # whose overshoot is this reply's lateness; spinning for it, as many flushes at once would, keeps
                # the other threads from the GIL
                if remaining > 0:
                    req.ev.wait(remaining)
            elif remaining > SELF_SPIN_S:
                req.ev.wait(remaining - SELF_SPIN_S)   # the pump may deliver first (then ev is set)
            # spin without yielding the CPU (time.sleep(0) hands it to any other runnable process, which on a
            # busy machine costs a scheduler slice); the interpreter still switches threads every 100 µs
            deadline = self.t0 + eta
            while not req.done and time.monotonic() < deadline:
                pass
            with self.cond:
                if not req.done:
                    # reply now and leave advancing the Simulator (which may dispatch the next queued command,
                    # choosing among all of them) to the pump or the next arrival: that work would otherwise sit
                    # between our completion time and our reply. Safe because the completion time is fixed and
                    # every decision depends on simulated time only.
                    self.self_timed += 1
                    self._release(req, eta)
                    self.cond.notify()   # the pump advances past our completion

    def shutdown(self) -> None:
        with self.cond:
            self.stop = True
            self.cond.notify()
        if self.pump is not None:
            self.pump.join(timeout=5)
        with self.cond:
            self._deliver(self.sim.advance(self.now()))
            self._dump()
        os.close(self.fd)


_tls = threading.local()


def _thread_timer_slack() -> None:
    if not getattr(_tls, "slack", False):
        _timer_slack_1ns()
        _tls.slack = True


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
        # deliver what the advance completes: those are other clients' commands, whose threads wait for them (an
        # advance whose completions were dropped here left a request unanswered for ever: the daemon hangs of
        # studies.lifecycle.plan.HANG_NOTE, at graph changes, when qemu-storage-daemon closes a connection)
        _state._deliver(_state.sim.advance(_state.now()))
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
    req = _state.request("read", offset, len(buf))
    n = os.preadv(_state.fd, [buf], offset)
    if n < len(buf):
        buf[n:] = bytes(len(buf) - n)   # beyond the file's end: zeros
    _state.finish(req)


def pwrite(h, buf, offset: int, flags: int) -> None:
    assert _state is not None
    req = _state.request("write", offset, len(buf))
    os.pwrite(_state.fd, buf, offset)
    _state.finish(req)


def flush(h, flags: int) -> None:
    assert _state is not None
    # no fsync: the emulated device's durability is not under test, and a host fsync would add the host
    # disk's latency to the model's
    _state.finish(_state.request("flush", 0, 0))
