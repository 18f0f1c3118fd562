"""The C model core (spindle_core.c) in-process through ctypes, with the Python Simulator's interface: submit,
advance, take_done, take_etas, next_event_time, counters. No real time anywhere: it replays what it is given.

    with CSimulator(spec, capacity, name) as sim:
        sim.advance(t); sim.submit(token, "read", offset, length, t); done = sim.take_done()

Tokens are integers (the C core keeps 64-bit tokens). The core is the one the nbdkit plugin runs; the
certified-data test (tests/spindle/test_cmodel.py) drives both this and arrays.Simulator with one trace.
"""
from __future__ import annotations

import ctypes
import json
import math
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .cspec import flat_spec
from .profiles import DeviceSpec

KINDS = {"read": 0, "write": 1, "flush": 2}
_BATCH = 256
_lib: ctypes.CDLL | None = None
_lib_path: Path | None = None


def load(path: Path | None = None) -> ctypes.CDLL:
    """The core library (built if missing or stale, unless `path` names one)."""
    global _lib, _lib_path
    if path is None:
        from .build import ensure_core
        path = ensure_core()
    if _lib is not None and _lib_path == path:
        return _lib
    lib = ctypes.CDLL(str(path))
    p, d, i64, u64, sz = ctypes.c_void_p, ctypes.c_double, ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t
    lib.spindle_sim_new.restype = p
    lib.spindle_sim_new.argtypes = [ctypes.c_char_p, ctypes.c_char_p, sz]
    lib.spindle_sim_free.argtypes = [p]
    lib.spindle_sim_submit.restype = ctypes.c_int
    lib.spindle_sim_submit.argtypes = [p, u64, ctypes.c_int, i64, i64, d, ctypes.c_char_p, sz]
    lib.spindle_sim_advance.argtypes = [p, d]
    lib.spindle_sim_next_event_time.restype = d
    lib.spindle_sim_next_event_time.argtypes = [p]
    lib.spindle_sim_now.restype = d
    lib.spindle_sim_now.argtypes = [p]
    for name in ("spindle_sim_take_done_arrays", "spindle_sim_take_etas_arrays"):
        fn = getattr(lib, name)
        fn.restype = sz
        fn.argtypes = [p, ctypes.POINTER(u64), ctypes.POINTER(d), sz]
    lib.spindle_sim_counters_json.restype = ctypes.c_void_p   # freed with spindle_free, so not c_char_p
    lib.spindle_sim_counters_json.argtypes = [p, ctypes.c_int]
    lib.spindle_free.argtypes = [p]
    _lib, _lib_path = lib, path
    return lib


class CSimulator:
    """arrays.Simulator's interface over the C core."""

    def __init__(self, spec: DeviceSpec, capacity: int, name: str = "array", library: Path | None = None):
        self._lib = load(library)
        err = ctypes.create_string_buffer(512)
        self._sim = self._lib.spindle_sim_new(flat_spec(spec, capacity, name).encode(), err, len(err))
        if not self._sim:
            raise ConfigError("spindle spec (C core)", name, err.value.decode())
        self._tok = (ctypes.c_uint64 * _BATCH)()
        self._t = (ctypes.c_double * _BATCH)()

    def close(self) -> None:
        if self._sim:
            self._lib.spindle_sim_free(self._sim)
            self._sim = None

    def __enter__(self) -> CSimulator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    @property
    def now(self) -> float:
        return float(self._lib.spindle_sim_now(self._sim))

    def submit(self, token: int, kind: str, offset: int, length: int, t: float) -> None:
        err = ctypes.create_string_buffer(512)
        if self._lib.spindle_sim_submit(self._sim, token, KINDS[kind], offset, length, t, err, len(err)) != 0:
            raise ValueError(err.value.decode())

    def _drain(self, fn: Any) -> list[tuple[int, float]]:
        out: list[tuple[int, float]] = []
        while True:
            n = fn(self._sim, self._tok, self._t, _BATCH)
            out += [(int(self._tok[i]), float(self._t[i])) for i in range(n)]
            if n < _BATCH:
                return out

    def take_etas(self) -> list[tuple[int, float]]:
        """(token, completion time) fixed since the last call, in the order the core fixed them."""
        return self._drain(self._lib.spindle_sim_take_etas_arrays)

    def take_done(self) -> list[tuple[int, float]]:
        return self._drain(self._lib.spindle_sim_take_done_arrays)

    def advance(self, until: float) -> list[tuple[int, float]]:
        self._lib.spindle_sim_advance(self._sim, until)
        return self.take_done()

    def next_event_time(self) -> float | None:
        t = float(self._lib.spindle_sim_next_event_time(self._sim))
        return None if math.isinf(t) else t

    def counters(self) -> dict:
        ptr = self._lib.spindle_sim_counters_json(self._sim, 1)
        try:
            return json.loads(ctypes.string_at(ptr).decode())
        finally:
            self._lib.spindle_free(ptr)
