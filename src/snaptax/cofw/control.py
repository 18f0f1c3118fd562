"""Control channel between the engine (client) and the running nbdkit plugin (the server is in cofw.c).

A unix stream socket; each request is one JSON object on one line, answered by one JSON line:
  {"op": "create", "name": "s1"}   -> {"ok": true, "result": {...}}   or {"ok": false, "error": "one line"}
Ops: ping, create(name), delete(name), list, counters.

Why a socket and not a control file the plugin polls: create/delete must be synchronous (the measurement plan's
TakeSnapshot step returns only when the snapshot exists), errors must come back to the caller, and polling would
add latency and a thread that wakes up forever.
"""
from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

from ..errors import EngineError

_MAX_LINE = 1 << 16


class ControlClient:
    """One connection to the plugin's control socket; call() raises EngineError with the plugin's message."""

    def __init__(self, path: str | Path, timeout: float = 120.0) -> None:
        self.path = str(path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Generous: a create waits for in-flight writes (each may be fdatasync-ing copies) to drain.
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(self.path)
        except OSError as e:
            self._sock.close()
            raise EngineError(f"cofw control socket {self.path}: {e.strerror or e}") from None
        self._f = self._sock.makefile("rwb")
        self._lock = threading.Lock()

    def call(self, op: str, **args: Any) -> Any:
        with self._lock:
            try:
                self._f.write(json.dumps({"op": op, **args}).encode() + b"\n")
                self._f.flush()
                line = self._f.readline(_MAX_LINE)
            except OSError as e:
                raise EngineError(f"cofw control {op}: {e}") from None
        if not line:
            raise EngineError(f"cofw control {op}: nbdkit closed the control socket")
        try:
            reply = json.loads(line)
        except ValueError:          # not JSON, not UTF-8, or cut at _MAX_LINE
            reply = None
        if not isinstance(reply, dict):
            raise EngineError(f"cofw control {op}: not a JSON object reply: {line[:200]!r}")
        if not reply.get("ok"):
            raise EngineError(f"cofw {op}: {reply.get('error')}")
        return reply.get("result")

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def try_ping(path: str | Path) -> bool:
    """True once the plugin answers (readiness probe for ProcessGroup.spawn)."""
    if not os.path.exists(path):
        return False
    try:
        with ControlClient(path, timeout=2.0) as c:
            return c.call("ping") == "pong"
    except (EngineError, OSError, ValueError):
        return False
