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
