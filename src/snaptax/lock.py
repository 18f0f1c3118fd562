"""Machine-wide exclusion of measurements.

Measurements are timing-sensitive, so no two may overlap — whichever checkout, test run, benchmark or notebook
starts them. Every timed fio run holds this flock; it is re-entrant within one process so a study can hold it for
a whole session while each step takes it again, and it counts as held when an ancestor process holds it
(`flock /var/tmp/snaptax-measure.lock make bench` must not deadlock against the code it runs).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Iterator

from . import paths
from .host import procs

_state = threading.local()


def _ancestors() -> set[int]:
    pids, pid = set(), os.getppid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            stat = open(f"/proc/{pid}/stat").read()
            pid = int(procs.stat_fields(stat)[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def held_by_ancestor(path=None) -> bool:
    """True if a process above us holds the flock on the lock file (per /proc/locks)."""
    path = path or paths.MEASURE_LOCK
    try:
        st = os.stat(path)
        lines = open("/proc/locks").read().splitlines()
    except OSError:
        return False
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    holders = set()
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        if fields[5] == ident:
            holders.add(int(fields[4]))
    return bool(holders & _ancestors())


def holder(path=None) -> str:
    """Who holds the lock, as written into the lock file by the holder: 'pid N: command line' ('' if unknown)."""
    try:
        return open(path or paths.MEASURE_LOCK).read().strip()
    except OSError:
        return ""


def _describe_self() -> str:
    try:
        cmd = open("/proc/self/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"pid {os.getpid()}: {cmd[:200]}"


@contextlib.contextmanager
def measurement_lock(waiting: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the machine-wide measurement lock. If another process holds it, `waiting` is told who, once, before
    this blocks until it is free."""
    depth = getattr(_state, "depth", 0)
    if not depth and held_by_ancestor():
        depth = _state.depth = 1
        try:
            yield
        finally:
            _state.depth = 0
        return
    if depth:
        _state.depth = depth + 1
        try:
            yield
        finally:
            _state.depth -= 1
        return
    paths.MEASURE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.MEASURE_LOCK, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting(f"waiting for the machine-wide measurement lock {paths.MEASURE_LOCK}, held by "
                        f"{holder() or 'an unknown process'}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, (_describe_self() + "\n").encode(), 0)
        _state.depth = 1
        try:
            yield
        finally:
            _state.depth = 0
            os.ftruncate(fd, 0)  # a holder written by an earlier process would mislead the next waiter
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
