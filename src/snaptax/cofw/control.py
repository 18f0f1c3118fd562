"""Control channel between the engine (client) and the running nbdkit plugin (server). Stdlib only.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import EngineError

_MAX_LINE = 1 << 16


class ControlServer:
    """Serves `handler(request_dict) -> result` on a unix socket from one daemon thread."""

    def __init__(self, path: str | Path, handler: Callable[[dict], Any]) -> None:
        self.path = str(path)
        self.handler = handler
        if os.path.exists(self.path):
            os.unlink(self.path)        # a stale socket from a killed run; the engine owns the directory
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(4)
        self._thread = threading.Thread(target=self._serve, name="cofw-control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return                  # socket closed: shutting down
            with conn:
                try:
                    self._serve_conn(conn)
                except OSError:
                    pass                # client went away

    def _serve_conn(self, conn: socket.socket) -> None:
        f = conn.makefile("rwb")
        for line in f:
            try:
                req = json.loads(line)
                if not isinstance(req, dict) or not isinstance(req.get("op"), str):
                    raise ValueError("request must be a JSON object with a string 'op'")
                reply = {"ok": True, "result": self.handler(req)}
            except Exception as e:     # every failure goes back to the caller as one line
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0]}
            f.write(json.dumps(reply).encode() + b"\n")
            f.flush()

    def close(self) -> None:
        try:
            self._sock.close()
        finally:
            if os.path.exists(self.path):
                os.unlink(self.path)


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
        reply = json.loads(line)
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
