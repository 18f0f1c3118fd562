"""procs: a child and everything it forks into its process group are gone once it is stopped; /proc/stat's CPU
seconds (cpu_times) from literal lines."""
import os
import re
import subprocess
import time

import pytest

from snaptax.errors import MeasurementError
from snaptax.host import procs


def test_a_forked_child_outliving_its_leader_is_killed(tmp_path):
    # The leader exits at once; the child it forked keeps the output pipe open, so the call times out with the
    # leader already gone: the case in which fio's job process once outlived an interrupted run.
    pid_file = tmp_path / "pid"
    with pytest.raises(subprocess.TimeoutExpired):
        procs.run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; exit 0"], timeout=1.0)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while procs._alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not procs._alive(pid)


def test_group_members_lists_the_forked_child_not_the_leader():
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 5
        while not procs.group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        members = procs.group_members(proc.pid)
        assert len(members) == 1 and proc.pid not in members
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_stop_leaves_a_reused_number_alone(monkeypatch):
    # If a process with the leader's number exists, the number was reused: nothing is killed.
    killed = []
    monkeypatch.setattr(procs, "group_members", lambda pgid: [12345])
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append(pid))
    procs._kill_left_in_group(os.getpid())
    assert killed == []


def test_stop_returns_only_when_what_was_left_in_the_group_has_exited(monkeypatch):
    # A SIGKILLed fio job waiting on a device request lives on until the request returns; stop_group must not
    # return (and let the engine tear down what serves the request) before it is gone. Here the member "dies"
    # on the third look.
    looks = []
    monkeypatch.setattr(procs, "group_members", lambda pgid: [4242])
    monkeypatch.setattr(os, "kill", lambda pid, sig: None)
    monkeypatch.setattr(procs, "_alive", lambda pid: looks.append(pid) or len(looks) < 3)
    procs._kill_left_in_group(2 ** 22 + 1)       # above pid_max's default: no process holds the number
    assert looks == [4242, 4242, 4242]


def test_alive_is_false_for_a_zombie_and_for_no_process():
    proc = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while procs._alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not procs._alive(proc.pid)            # exited, not yet reaped: a zombie
    proc.wait()
    assert not procs._alive(proc.pid)
    assert procs._alive(os.getpid())


def _gone(text: str, within: float = 5.0) -> bool:
    """No live process has `text` in its command line (arguments joined by NUL, as /proc keeps them)."""
    from tests.processes import processes_mentioning
    deadline = time.monotonic() + within
    while processes_mentioning(text) and time.monotonic() < deadline:
        time.sleep(0.05)
    return processes_mentioning(text) == []


def test_a_ctrl_c_while_a_child_starts_leaves_no_process(monkeypatch):
    """Ctrl-C arrives while popen_owned holds it off: it lands as the hold ends, before the caller has the child;
    popen_owned stops the child's group (the script and what it forked) and lets the interrupt go on."""
    import signal
    real = subprocess.Popen
    started: list[subprocess.Popen] = []

    def popen_then_ctrl_c(*args, **kwargs):
        started.append(real(*args, **kwargs))
        os.kill(os.getpid(), signal.SIGINT)         # held off until the child is bound
        return started[-1]

    # As from a terminal: a test run started as a background job of a non-interactive shell (how a CI runner may
    # start `make test`) inherits SIGINT ignored, and the redelivered Ctrl-C would be ignored too (see
    # tests/test_interrupt.py). Reproduced: `bash -c 'pytest tests/test_procs.py & wait'` failed without this.
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(procs.subprocess, "Popen", popen_then_ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt):
            procs.popen_owned(["sh", "-c", "sleep 43.25 & sleep 43.5; wait"])
    finally:
        signal.signal(signal.SIGINT, old_handler)
    monkeypatch.undo()
    assert len(started) == 1 and started[0].returncode is not None
    assert _gone("sleep\x0043.25") and _gone("sleep\x0043.5")


# A real /proc/stat first line (two CPUs of a VM) with a non-zero steal, guest and guest_nice made up to show that
# they are left out: user nice system idle iowait irq softirq steal guest guest_nice, ticks of 1/100 s.
PROC_STAT_CPU = "cpu  5256696 66 1729676 9103375 102935 0 163869 44471 2500 7\n"


def test_cpu_times_busy_is_user_nice_system_irq_softirq_idle_is_idle_iowait():
    busy, idle, steal = procs.cpu_times(PROC_STAT_CPU, 100)
    assert busy == pytest.approx((5256696 + 66 + 1729676 + 0 + 163869) / 100)      # 71503.07 s
    assert idle == pytest.approx((9103375 + 102935) / 100)                           # 92063.10 s
    assert steal == pytest.approx(44471 / 100)                                        # reported on its own


def test_cpu_times_steal_is_neither_busy_nor_idle_and_guest_is_not_counted_twice():
    base = procs.cpu_times("cpu  100 0 50 1000 10 5 5 0 0 0", 100)
    stolen = procs.cpu_times("cpu  100 0 50 1000 10 5 5 700 0 0", 100)
    assert stolen[:2] == base[:2] == (1.6, 10.1) and (base.steal_s, stolen.steal_s) == (0.0, 7.0)
    # guest time is already inside user: a guest column does not add to busy
    assert procs.cpu_times("cpu  100 0 50 1000 10 5 5 0 80 20", 100) == base


def test_cpu_times_divides_by_user_hz_and_accepts_a_line_without_steal():
    assert procs.cpu_times("cpu 250 0 0 500 0 0 0", 250) == (1.0, 2.0, 0.0)   # 7 fields: kernels before steal


@pytest.mark.parametrize(("line", "message"), [
    ("cpu0 1 2 3 4 5 6 7 0 0 0", "expected the aggregate 'cpu' line"),
    ("", "expected the aggregate 'cpu' line"),
    ("cpu  1 2 3 4 5 6", "field 'softirq' missing"),
    ("cpu  1 2 x 4 5 6 7", "field 'system' is not a whole number: 'x'"),
])
def test_cpu_times_names_the_field_of_a_malformed_line(line, message):
    with pytest.raises(MeasurementError, match=message):
        procs.cpu_times(line, 100)


def test_cpu_times_refuses_a_tick_rate_of_zero():
    with pytest.raises(MeasurementError, match="user_hz must be > 0"):
        procs.cpu_times(PROC_STAT_CPU, 0)


def test_threads_tells_what_each_child_s_threads_are_doing_and_names_one_that_is_gone(tmp_path):
    """For a stall report (guest.vm.GuestStalled): per child its threads' name, state, CPU time and wait channel;
    a child that has exited is named as gone, not an error."""
    with procs.ProcessGroup() as group:
        child = group.spawn(["sleep", "30"], name="sleeper")
        time.sleep(0.2)
        report = procs.threads_report([child])
        assert re.fullmatch(r"sleeper \(pid \d+\):\n  \d+ 'sleep' S cpu 0\.\d\ds wchan \S+(\n  main thread.*)?",
                            report), report
        group.stop(child)
        assert procs.threads_report([child]) == f"sleeper (pid {child.proc.pid}): gone"
