"""The machine-wide measurement lock, on a private lock file (never waits on a real measurement).

Every blocking step has a timeout, so a broken lock fails the test instead of hanging it."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from snaptax import lock, paths

TIMEOUT_S = 30

# A child that tries the lock without waiting: exit 0 if it got it, 1 if someone holds it.
TRY = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(1)
""")

# A child that holds the lock through snaptax until told to let go (or TIMEOUT_S passed, so nothing hangs).
HOLD = textwrap.dedent("""
    import select, sys
    from pathlib import Path
    from snaptax import paths
    paths.MEASURE_LOCK = Path(sys.argv[1])
    from snaptax.lock import measurement_lock
    with measurement_lock():
        print("held", flush=True)
        select.select([sys.stdin], [], [], float(sys.argv[2]))
""")


@pytest.fixture
def lock_path(tmp_path, monkeypatch):
    path = tmp_path / "measure.lock"
    monkeypatch.setattr(paths, "MEASURE_LOCK", path)
    return path


def _try_lock(path) -> int:
    return subprocess.run([sys.executable, "-c", TRY, str(path)], timeout=TIMEOUT_S).returncode


def test_excludes_other_processes_while_held_and_not_after(lock_path):
    with lock.measurement_lock():
        assert _try_lock(lock_path) == 1, "another process got the lock while we held it"
    assert _try_lock(lock_path) == 0, "the lock was not released"


def test_reentrant_within_a_process(lock_path):
    with lock.measurement_lock():
        with lock.measurement_lock():
            assert _try_lock(lock_path) == 1
        assert _try_lock(lock_path) == 1, "leaving the inner block released the outer one"
    assert _try_lock(lock_path) == 0


def test_the_holder_names_itself_and_clears_the_name_on_release(lock_path):
    calls = []
    with lock.measurement_lock(waiting=calls.append):
        assert lock.holder().startswith(f"pid {os.getpid()}: ")
    assert calls == [], "waiting was called although the lock was free"
    assert lock.holder() == ""


def test_a_waiter_is_told_once_who_holds_the_lock(lock_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock_path), str(TIMEOUT_S)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert lock.holder().startswith(f"pid {holder.pid}: ") and "python" in lock.holder()
        calls = []

        def waiting(line: str) -> None:
            calls.append(line)
            holder.stdin.write("go\n")   # let the holder finish; we then block until it has released
            holder.stdin.flush()

        with lock.measurement_lock(waiting=waiting):
            assert holder.wait(timeout=TIMEOUT_S) == 0   # we only got here once the holder had let go
            assert lock.holder().startswith(f"pid {os.getpid()}: ")
        assert len(calls) == 1, calls
        assert f"pid {holder.pid}: " in calls[0] and str(lock_path) in calls[0]
    finally:
        holder.kill()
        holder.wait(timeout=TIMEOUT_S)


def test_a_child_of_the_holder_does_not_deadlock(lock_path):
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from snaptax import paths
        paths.MEASURE_LOCK = Path(sys.argv[1])
        from snaptax.lock import measurement_lock
        with measurement_lock():
            print("inside")
    """)
    lock_path.touch()
    out = subprocess.run(["flock", str(lock_path), sys.executable, "-c", code, str(lock_path)],
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert out.stdout.strip() == "inside", out.stderr


def test_a_run_starts_when_it_holds_the_lock_and_records_its_wait(lock_path, data_dir, work_dir):
    from snaptax import profiles
    from snaptax.host import rig as rigmod
    from snaptax.record import RunRecord, RunSession
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock_path), str(TIMEOUT_S)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        session = RunSession(rigmod.load("local"), "unit", profiles.get("smoke"), {})
        asked_utc = session.started_utc
        told: list[str] = []

        def waiting(line: str) -> None:     # told once that it waits: let the holder go a second later
            if "waiting" in line and not told:
                told.append(line)
                time.sleep(1.0)
                holder.stdin.write("go\n")
                holder.stdin.flush()

        session.progress.say = waiting
        with session:
            pass
    finally:
        holder.kill()
        holder.wait(timeout=TIMEOUT_S)
    m = RunRecord.load(session.published).manifest
    assert m.lock_wait_s >= 1.0
    assert m.started_utc > asked_utc      # ISO timestamps of one format compare as times
