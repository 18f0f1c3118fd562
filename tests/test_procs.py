"""procs: a child and everything it forks into its process group are gone once it is stopped."""
import os
import subprocess
import time
from pathlib import Path

import pytest

from snaptax import procs


def _alive(pid: int) -> bool:
    try:
        state = procs.stat_fields(Path(f"/proc/{pid}/stat").read_text())[0]
    except OSError:
        return False
    return state != "Z"


def test_a_forked_child_outliving_its_leader_is_killed(tmp_path):
    # The leader exits at once; the child it forked keeps the output pipe open, so the call times out with the
    # leader already gone: the case in which fio's job process once outlived an interrupted run.
    pid_file = tmp_path / "pid"
    with pytest.raises(subprocess.TimeoutExpired):
        procs.run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; exit 0"], timeout=1.0)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


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
