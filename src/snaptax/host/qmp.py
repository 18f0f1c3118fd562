"""A small, stdlib-only QMP client (QEMU Machine Protocol over a unix socket).

Commands are synchronous; asynchronous events are queued so that callers can wait for a job's events
(BLOCK_JOB_READY, JOB_STATUS_CHANGE, ...) after issuing the command that starts it.
"""
from __future__ import annotations

import json
import socket
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import EngineError


class QMPError(EngineError):
    def __init__(self, command: str, error: dict):
        self.command, self.error = command, error
        super().__init__(f"QMP {command}: {error.get('class', '?')}: {error.get('desc', error)}")


def block_job_ready(job_id: str) -> Callable[[dict], bool]:
    """A wait_event match for the BLOCK_JOB_READY of block job `job_id` (QEMU names the job in data.device): a
    mirror or active commit has copied everything and mirrors new writes until job-complete pivots it."""
    return lambda ev: ev.get("event") == "BLOCK_JOB_READY" and ev["data"].get("device") == job_id


class QMPClient:
    def __init__(self, path: Path, timeout: float = 60.0):
        self.path = Path(path)
        self.timeout = timeout
        self.events: deque[dict] = deque()
        self._sock: socket.socket | None = None
        self._buf = b""

    def connect(self) -> QMPClient:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(str(self.path))
        self._sock = sock
        greeting = self._read_message()
        if "QMP" not in greeting:
            raise EngineError(f"QMP: unexpected greeting {greeting!r}")
        self.execute("qmp_capabilities")
        return self

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> QMPClient:
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    def _read_message(self) -> dict:
        assert self._sock is not None, "QMP client is not connected"
        while b"\n" not in self._buf:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise EngineError("QMP: connection closed by the daemon")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command: str, **arguments: Any) -> Any:
        """Run a command and return its 'return' value; events arriving meanwhile are queued."""
        assert self._sock is not None, "QMP client is not connected"
        msg: dict[str, Any] = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self._sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read_message()
            if "event" in reply:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise QMPError(command, reply["error"])
            return reply.get("return")

    def wait_event(self, match: Callable[[dict], bool], timeout: float | None = None) -> dict:
        """First queued or arriving event for which match(event) is true; other events stay queued."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while True:
            for ev in list(self.events):
                if match(ev):
                    self.events.remove(ev)
                    return ev
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise EngineError("QMP: timed out waiting for an event")
            assert self._sock is not None
            self._sock.settimeout(remaining)
            try:
                self.events.append(self._read_message())
            except TimeoutError as exc:
                raise EngineError("QMP: timed out waiting for an event") from exc
            finally:
                self._sock.settimeout(self.timeout)

    def wait_block_job_ready(self, job_id: str, timeout: float | None = None) -> dict:
        """Wait for block job `job_id`'s BLOCK_JOB_READY (block_job_ready) and return it; other events stay
        queued. The caller then completes the job (job-complete) and waits for it to conclude (wait_job)."""
        return self.wait_event(block_job_ready(job_id), timeout)

    def wait_job(self, job_id: str, until: str = "concluded", timeout: float | None = None) -> None:
        """Wait for a job's JOB_STATUS_CHANGE to `until`; a job that concluded with an error raises."""
        def is_status(ev: dict, status: str) -> bool:
            return (ev.get("event") == "JOB_STATUS_CHANGE" and ev["data"].get("id") == job_id
                    and ev["data"].get("status") == status)
        self.wait_event(lambda ev: is_status(ev, until) or is_status(ev, "concluded"), timeout)
        if until == "concluded":
            jobs = {j["id"]: j for j in self.execute("query-jobs")}
            err = jobs.get(job_id, {}).get("error")
            self.execute("job-dismiss", id=job_id)
            if err:
                raise EngineError(f"QMP job {job_id} failed: {err}")

    def run_job(self, command: str, job_id: str, timeout: float | None = None, **arguments: Any) -> None:
        """Start a job (blockdev-create, block-commit, ...) and wait until it has concluded and is dismissed."""
        self.execute(command, **{"job-id": job_id, **arguments})
        self.wait_job(job_id, "concluded", timeout)
