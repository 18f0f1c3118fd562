"""A timeline measured again when the daemon hangs: the failed attempt's diagnosis is kept in the run, and the last
attempt's error carries it."""
import os

import pytest

from snaptax import profiles, timeline
from snaptax.errors import MeasurementError
from snaptax.host import rig as rigmod
from snaptax.host.procs import threads as _threads
from snaptax.record import RunSession


class FakeEngine:
    """What attempt() needs of an engine: a context, describe() and diagnose()."""

    entered = 0

    def __enter__(self):
        FakeEngine.entered += 1
        self.open = True
        return self

    def __exit__(self, *exc):
        self.open = False

    def describe(self):
        return {"engine": "fake"}

    def diagnose(self):
        # read before the engine closes: the hung request is still where it hung
        assert self.open
        return {"device_progress": {"host.reads": 0.0}, "qmp_block_jobs": "no reply within 5 s"}


def _session():
    return RunSession(rigmod.load("local"), "unit", profiles.get("smoke"), {"p": 1})


def test_a_hung_attempt_is_diagnosed_dropped_and_measured_again(data_dir, work_dir):
    calls = []

    def body(session, engine):
        calls.append(1)
        if len(calls) == 1:
            raise MeasurementError("fio still running 65 s after its start")

    with _session() as s:
        timeline.attempt(s, "v", body, FakeEngine, {"pool": "p"})
        failed = [e for e in s.events if e["event"] == "attempt_failed"]
    assert len(calls) == 2 and len(failed) == 1
    assert failed[0]["diagnosis"]["qmp_block_jobs"] == "no reply within 5 s"
    assert "fio still running" in failed[0]["error"]


def test_the_last_attempts_error_carries_the_diagnosis(data_dir, work_dir):
    def body(session, engine):
        raise MeasurementError("no QMP reply")

    with pytest.raises(MeasurementError, match=r"no QMP reply \[diagnosis: .*no reply within 5 s"):
        with _session() as s:
            timeline.attempt(s, "v", body, FakeEngine, {})


def test_threads_of_a_process_have_a_state_and_a_wait_channel():
    threads = _threads(os.getpid())
    assert threads and all(t["state"] in "RSDTtZIX" and t["wchan"] and t["cpu_s"] >= 0 for t in threads)
    assert _threads(2 ** 22 + 7) == []          # a process that has gone
    assert str(os.getpid()) in {t["tid"] for t in threads}


def test_the_host_series_ends_after_what_ran_inside_it():
    reads = iter(range(1000))
    with timeline.HostSampler(lambda: {"host.reads": float(next(reads))}, 0.0, ("host.reads",),
                              interval_s=10.0) as sampler:
        pass
    # the loop's first reading (if it came before the exit), and one at the exit, after everything inside
    assert 1 <= len(sampler.rows) <= 2 and sampler.rows[-1][1]["host.reads"] == len(sampler.rows) - 1
