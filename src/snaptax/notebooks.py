"""Executing a study notebook with papermill, such that Ctrl-C stops the measurement inside it.

papermill alone does not pass a Ctrl-C on to the kernel, which runs in its own session: the study would go on
measuring after `make paper` was interrupted. Here papermill runs in a worker thread while the main thread waits;
on Ctrl-C (or SIGTERM) the main thread interrupts the kernel the way Jupyter does (SIGINT to the kernel process),
so KeyboardInterrupt rises inside the running cell and the study's `with` blocks stop daemons, detach loop
devices and discard the partial run. A kernel that does not finish within the grace period is killed; its
children die with it (PR_SET_PDEATHSIG, see snaptax.host.procs).

A notebook executed in place (`make notebooks-commit`) is a committed notebook: papermill's injected-parameters cell
is removed after execution, so that a reader who edits the parameters cell in `make lab` and runs all gets what the
cell says; and only its own defaults may be injected, so that its outputs are what that cell gives (nbval reruns it).
"""
from __future__ import annotations

import ast
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, SnaptaxError
from .host.procs import stat_fields
from .progress import PROGRESS_FILE_ENV

if TYPE_CHECKING:
    from .studies import Study

KERNEL = "snaptax"
GRACE_S = 120
PARAMETERS_TAG = "parameters"                 # the cell a reader edits (papermill's tag)
INJECTED_TAG = "injected-parameters"          # the cell papermill adds after it, overriding it
# The kernel talks to papermill over Unix sockets in a private directory (mode 0700), not over TCP on localhost,
# where any local user could connect: the reason ipykernel warns "Kernel is running over TCP without encryption".
# The directory is a fresh short one, not the Jupyter runtime directory: a socket's path has at most 107 bytes.
KERNEL_TRANSPORT = "ipc"


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


def defaults(notebook: Path) -> dict[str, Any]:
    """The values of a notebook's parameters cell, by name (papermill's reading of it: one `name: type = value  #
    help` per line)."""
    import papermill

    found = papermill.inspect_notebook(str(notebook))
    try:
        return {name: ast.literal_eval(p["default"]) for name, p in found.items()}
    except (ValueError, SyntaxError) as exc:
        raise ConfigError(str(notebook), "parameters", f"a default is not a literal: {exc}") from None


def check_in_place(notebook: Path, parameters: dict[str, Any]) -> None:
    """Refuse, before anything runs, to execute a notebook in place with parameters other than its own defaults:
    its stored outputs would then be another run's than the one its parameters cell (and nbval) opens."""
    own = defaults(notebook)
    for name, value in parameters.items():
        if name not in own:
            raise ConfigError(str(notebook), name, "is not a parameter of its parameters cell")
        if own[name] != value:
            raise ConfigError(str(notebook), name, f"{value!r} is not its default {own[name]!r}: a notebook executed "
                              "in place keeps its own parameters; write the executed copy elsewhere")


def strip_injected(notebook: Path) -> int:
    """Remove papermill's injected-parameters cells from a notebook file; returns how many there were."""
    import nbformat

    nb = nbformat.read(notebook, as_version=nbformat.NO_CONVERT)
    kept = [c for c in nb.cells if INJECTED_TAG not in c.get("metadata", {}).get("tags", [])]
    removed = len(nb.cells) - len(kept)
    if removed:
        nb.cells = kept
        # as papermill writes it (nbformat.writes, no newline at the end), so that stripping changes nothing else
        notebook.write_text(nbformat.writes(nb), encoding="utf-8")
    return removed


def kernel_config(sockets: Path) -> Any:
    """papermill's kernel manager configured to start the kernel on Unix sockets in `sockets` (KERNEL_TRANSPORT)."""
    from traitlets.config import Config

    config = Config()
    config.KernelManager.transport = KERNEL_TRANSPORT
    config.KernelManager.ip = str(sockets / "kernel")      # the sockets are kernel-<port>
    return config


def execute(notebook: Path, output: Path, parameters: dict[str, Any], kernel: str = KERNEL) -> Path:
    """Run `notebook` with `parameters` injected by papermill; the executed copy goes to `output`. Executed in place
    (output is notebook), only the notebook's own defaults are accepted and the injected cell is removed after."""
    import papermill

    in_place = output.resolve() == notebook.resolve()
    if in_place:
        check_in_place(notebook, parameters)
    output.parent.mkdir(parents=True, exist_ok=True)
    outcome: dict[str, BaseException] = {}

    sockets = Path(tempfile.mkdtemp(prefix="snaptax-kernel-"))

    def work() -> None:
        try:
            papermill.execute_notebook(str(notebook), str(output), parameters=parameters, kernel_name=kernel,
                                       progress_bar=False, cwd=str(notebook.parent), config=kernel_config(sockets))
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
        if not worker.is_alive():       # else the kernel may still use them; the system's temp cleaning has them
            shutil.rmtree(sockets, ignore_errors=True)
        if previous is None:
            os.environ.pop(PROGRESS_FILE_ENV, None)
        else:
            os.environ[PROGRESS_FILE_ENV] = previous
    if "error" in outcome:
        exc = outcome["error"]
        first = str(exc).strip().splitlines()
        raise NotebookFailed(f"{notebook.name}: {type(exc).__name__}: {first[-1] if first else ''} "
                             f"(executed copy: {output})")
    if in_place:
        strip_injected(output)
    return output


def _study_of(notebook: Path) -> Study | None:
    """The registered study whose notebook this is, or None."""
    from . import studies

    return next((s for s in studies.REGISTRY if s.notebook == notebook.name), None)


def execute_all(pairs: Sequence[tuple[Path, Path]], rig: str, profile: str, measure: bool) -> list[Path]:
    """Execute each (notebook, output) in turn, saying before each which of how many it is and, when measuring,
    what it should take and how far the whole run is: "[k/n] study — expect N min; total so far M of ≈T min"
    (T: the minutes so far and those the remaining notebooks' studies expect; expect.Expectation)."""
    from . import profiles
    from .expect import Expectation, expect

    parameters = {"rig": rig, "profile": profile, "measure": measure}
    for nb, out in pairs:        # refused before the first notebook runs, not after some have
        if out.resolve() == nb.resolve():
            check_in_place(nb, parameters)
    chosen = [_study_of(nb) for nb, _ in pairs]
    ahead: list[Expectation | None] = [expect(s, rig, profiles.get(profile)) if s and measure else None
                                       for s in chosen]
    t0 = time.monotonic()
    done = []
    for k, ((nb, out), study, e) in enumerate(zip(pairs, chosen, ahead, strict=True), start=1):
        name = study.id if study else nb.stem
        if measure:
            so_far = (time.monotonic() - t0) / 60
            rest = [x.minutes for x in ahead[k - 1:] if x is not None and x.known]
            approx = "≈" if len(rest) == len(ahead[k - 1:]) else "at least "
            print(f"[{k}/{len(pairs)}] {name} — expect {e.minutes_text() if e else '? min'}; total so far "
                  f"{so_far:.1f} of {approx}{so_far + math.fsum(rest):.1f} min", flush=True)
        else:
            print(f"[{k}/{len(pairs)}] {name} — on the published run (rig {rig}, profile {profile})", flush=True)
        done.append(execute(nb, out, parameters))
    return done
