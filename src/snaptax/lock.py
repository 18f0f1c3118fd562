"""Machine-wide exclusion of measurements.

Measurements are timing-sensitive, so no two may overlap — whichever checkout, test run, benchmark or notebook
starts them. Every timed fio run holds this flock; it is re-entrant within one process so a study can hold it for
a whole session while each step takes it again.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from typing import Iterator

from . import paths

_state = threading.local()


@contextlib.contextmanager
def measurement_lock() -> Iterator[None]:
    depth = getattr(_state, "depth", 0)
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
        fcntl.flock(fd, fcntl.LOCK_EX)
        _state.depth = 1
        try:
            yield
        finally:
            _state.depth = 0
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
