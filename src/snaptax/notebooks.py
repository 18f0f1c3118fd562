"""Executing a study notebook with papermill, such that Ctrl-C stops the measurement inside it.

papermill alone does not pass a Ctrl-C on to the kernel, which runs in its own session: the study would go on
measuring after `make paper` was interrupted. Here papermill runs in a worker thread while the main thread waits;
on Ctrl-C (or SIGTERM) the main thread interrupts the kernel the way Jupyter does (SIGINT to the kernel process),
so KeyboardInterrupt rises inside the running cell and the study's `with` blocks stop daemons, detach loop
devices and discard the partial run. A kernel that does not finish within the grace period is killed; its
children die with it (PR_SET_PDEATHSIG, see snaptax.procs).
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from .errors import SnaptaxError

KERNEL = "snaptax"
GRACE_S = 120


class NotebookFailed(SnaptaxError):
    pass


def _kernel_children() -> list[int]:
    me = os.getpid()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == me and b"ipykernel" in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _signal_kernels(sig: int) -> None:
    for pid in _kernel_children():
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def execute(notebook: Path, output: Path, parameters: dict[str, Any], kernel: str = KERNEL) -> Path:
    """Run `notebook` with `parameters` injected by papermill; the executed copy goes to `output`."""
    import papermill

    output.parent.mkdir(parents=True, exist_ok=True)
    outcome: dict[str, BaseException] = {}

    def work() -> None:
        try:
            papermill.execute_notebook(str(notebook), str(output), parameters=parameters, kernel_name=kernel,
                                       progress_bar=False, cwd=str(notebook.parent))
        except BaseException as exc:  # reported to the main thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="papermill", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except (KeyboardInterrupt, SystemExit):
        _signal_kernels(signal.SIGINT)
        worker.join(GRACE_S)
        if worker.is_alive():
            _signal_kernels(signal.SIGKILL)
            worker.join(10)
        raise
    if "error" in outcome:
        exc = outcome["error"]
        first = str(exc).strip().splitlines()
        raise NotebookFailed(f"{notebook.name}: {type(exc).__name__}: {first[-1] if first else ''} "
                             f"(executed copy: {output})")
    return output
