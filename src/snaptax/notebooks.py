"""Executing a study notebook with papermill, such that Ctrl-C stops the measurement inside it.

papermill alone does not pass a Ctrl-C on to the kernel, which runs in its own session: the study would go on
measuring after `make paper` was interrupted. Here papermill runs in a worker thread while the main thread waits;
on Ctrl-C (or SIGTERM) the main thread interrupts the kernel the way Jupyter does (SIGINT to the kernel process),
so KeyboardInterrupt rises inside the running cell and the study's `with` blocks stop daemons, detach loop
devices and discard the partial run. A kernel that does not finish within the grace period is killed; its
children die with it (PR_SET_PDEATHSIG, see snaptax.host.procs).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from .errors import SnaptaxError
from .host.procs import stat_fields
from .progress import PROGRESS_FILE_ENV

KERNEL = "snaptax"
GRACE_S = 120


class NotebookFailed(SnaptaxError):
    pass


def _kernel_children(proc: Path = Path("/proc")) -> list[int]:
    """The pids of our child processes that are Jupyter kernels (ipykernel in their command line)."""
    me = os.getpid()
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat_fields(stat)[1])
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


def _echo_new_lines(path: Path, shown: int) -> int:
    """Print the progress lines the kernel appended since the last call; returns the bytes consumed."""
    try:
        with open(path, "rb") as f:
            f.seek(shown)
            chunk = f.read()
    except OSError:
        return shown
    complete = chunk.rfind(b"\n") + 1
    if complete:
        sys.stderr.write(chunk[:complete].decode(errors="replace"))
        sys.stderr.flush()
    return shown + complete


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

    # The kernel's output goes into the notebook, not to the terminal: its progress lines come through a file.
    progress_file = (output.parent / f".{output.name}.progress").resolve()   # the kernel runs elsewhere
    progress_file.write_text("")
    previous = os.environ.get(PROGRESS_FILE_ENV)
    os.environ[PROGRESS_FILE_ENV] = str(progress_file)
    worker = threading.Thread(target=work, name="papermill", daemon=True)
    worker.start()
    shown = 0
    try:
        while worker.is_alive():
            worker.join(0.5)
            shown = _echo_new_lines(progress_file, shown)
        _echo_new_lines(progress_file, shown)
    except (KeyboardInterrupt, SystemExit):
        _signal_kernels(signal.SIGINT)
        worker.join(GRACE_S)
        if worker.is_alive():
            _signal_kernels(signal.SIGKILL)
            worker.join(10)
        raise
    finally:
        progress_file.unlink(missing_ok=True)
        if previous is None:
            os.environ.pop(PROGRESS_FILE_ENV, None)
        else:
            os.environ[PROGRESS_FILE_ENV] = previous
    if "error" in outcome:
        exc = outcome["error"]
        first = str(exc).strip().splitlines()
        raise NotebookFailed(f"{notebook.name}: {type(exc).__name__}: {first[-1] if first else ''} "
                             f"(executed copy: {output})")
    return output
