"""The one place where long-lived child processes (daemons, guests, fio) are started and stopped.

Every child is
  * started in its own session, so a Ctrl-C on the terminal reaches only us and we stop children in order;
  * given PR_SET_PDEATHSIG=SIGKILL, so it dies even if we are killed without a chance to clean up;
  * registered with a ProcessGroup whose close() terminates it (SIGTERM, then SIGKILL) and removes its files.
SIGTERM to the Python process is turned into SystemExit so that all `with` blocks unwind.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import EngineError, MeasurementError, MissingTool

_PR_SET_PDEATHSIG = 1

# Debian package providing each executable the project starts; used for the one-line "missing" error.
PACKAGE_OF = {
    "fio": "fio",
    "qemu-storage-daemon": "qemu-system-common",
    "qemu-img": "qemu-utils",
    "qemu-system-x86_64": "qemu-system-x86",
    "nbdkit": "nbdkit",
    "nbdinfo": "libnbd-bin",
    "nbdcopy": "libnbd-bin",
    "nbdsh": "libnbd-bin",
    "latexmk": "latexmk",
    "lvm": "lvm2",
    "losetup": "mount",
    "chromium": "chromium",
}


def require(tool: str) -> str:
    """Absolute path of an executable, or MissingTool naming its Debian package."""
    path = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")  # sbin may be off PATH for non-login shells
    if not path:
        raise MissingTool(tool, PACKAGE_OF.get(tool, tool))
    return path


def unix_socket_accepts(path: Path) -> bool:
    """True once a server listens on the unix socket at `path` (a daemon's readiness probe)."""
    import socket
    if not Path(path).exists():
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _child_setup() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def run(argv: Sequence[str], *, check: bool = True, timeout: float | None = None,
        cwd: Path | None = None, input: bytes | None = None,
        env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A short-lived command, captured; raises EngineError with its stderr tail on failure. env_extra: variables
    set on top of this process's environment."""
    require(argv[0])
    env = {**os.environ, **env_extra} if env_extra else None
    proc: subprocess.Popen | None = None
    try:
        # A signal between the fork and `proc` being bound would leave the child (and what it forks) unowned.
        with signals_deferred(redeliver=True):
            proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    cwd=cwd, start_new_session=True, preexec_fn=_child_setup, env=env)
        out, err = proc.communicate(input=input, timeout=timeout)
    except BaseException:
        if proc is not None:
            stop_group(proc, grace=2.0)
        raise
    cp = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    if check and proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise EngineError(f"{Path(argv[0]).name} exited {proc.returncode}: {' | '.join(tail)}")
    return cp


def popen_owned(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """Popen in its own session (stop it and what it starts with stop_group), killed if this process dies, and
    started with Ctrl-C held off until `proc` exists (as run() does). A Ctrl-C that came meanwhile lands when the
    hold ends, before the caller has `proc`: then the child's group is stopped here and the interrupt goes on."""
    proc: subprocess.Popen | None = None
    try:
        with signals_deferred(redeliver=True):
            proc = subprocess.Popen(list(argv), start_new_session=True, preexec_fn=_child_setup, **kwargs)
    except BaseException:
        if proc is not None:
            with signals_deferred():
                stop_group(proc, grace=2.0)
        raise
    return proc


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """Stop a child started in its own session and everything left in its process group (SIGTERM, after `grace`
    seconds SIGKILL), and close the pipe to its input if there is one."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    _kill_left_in_group(proc.pid)
    if proc.stdin is not None:       # a pipe we wrote the child's input into (spawn(stdin_pipe=True))
        with contextlib.suppress(OSError):
            proc.stdin.close()


def group_members(pgid: int) -> list[int]:
    """Processes still in the process group `pgid` other than its leader. The kernel does not hand out a number
    while a process group of that number has members, so once the leader is gone these are all the leader's own
    (fio's forked job processes, which PR_SET_PDEATHSIG does not reach: it is not inherited by fork)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == pgid:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat_fields(stat)[2]) == pgid:
            members.append(int(entry.name))
    return members


def _kill_left_in_group(pgid: int) -> None:
    """SIGKILL what the reaped leader `pgid` left in its group and wait for it to exit (_wait_gone). Only while
    nothing holds its number: if a process numbered `pgid` exists, the number was reused and the group is someone
    else's."""
    if Path(f"/proc/{pgid}").exists():
        return
    left = group_members(pgid)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    _wait_gone(left, timeout=30.0)


def _wait_gone(pids: Sequence[int], timeout: float) -> None:
    """Wait, at most `timeout` seconds, until each of `pids` has exited (gone or a zombie awaiting its new parent).
    A SIGKILLed process lives on until its device request in flight returns, and what
    serves that request (a daemon, a loop device) is stopped after this: the caller's clean-up must not go on while
    the process still holds it. One that outlives the wait is stuck in the kernel, beyond what a kill can do."""
    deadline = time.monotonic() + timeout
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        waiting = [pid for pid in waiting if _alive(pid)]
        if waiting:
            time.sleep(0.01)


def _alive(pid: int) -> bool:
    try:
        return stat_fields(Path(f"/proc/{pid}/stat").read_text())[0] != "Z"
    except (OSError, IndexError):
        return False


@dataclass
class Child:
    name: str
    proc: subprocess.Popen
    log_path: Path | None

    def log_tail(self, lines: int = 5) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-lines:])


@dataclass
class ProcessGroup:
    """Context manager owning children and scratch paths; close() is idempotent and runs on any exit."""

    children: list[Child] = field(default_factory=list)
    scratch: list[Path] = field(default_factory=list)
    callbacks: list[Callable[[], object]] = field(default_factory=list)
    _closed: bool = False

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def spawn(self, argv: Sequence[str], *, name: str, log_path: Path | None = None,
              ready: Callable[[], bool] | None = None, ready_timeout: float = 30.0,
              env: dict | None = None, stdin_pipe: bool = False) -> Child:
        """Start a daemon; if `ready` is given, poll it until true (or raise with the daemon's log tail).
        stdin_pipe: its standard input is a pipe the caller writes to (child.proc.stdin), else /dev/null."""
        exe = require(argv[0])
        log = open(log_path, "ab") if log_path else subprocess.DEVNULL
        try:
            proc = subprocess.Popen([exe, *argv[1:]], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                                    start_new_session=True,
                                    preexec_fn=_child_setup, env=env)
        finally:
            if not isinstance(log, int):     # an opened log file, not subprocess.DEVNULL
                log.close()
        child = Child(name, proc, log_path)
        self.children.append(child)
        if ready is not None:
            deadline = time.monotonic() + ready_timeout
            while not ready():
                if proc.poll() is not None:
                    raise EngineError(f"{name} exited {proc.returncode} at start: {child.log_tail()}")
                if time.monotonic() > deadline:
                    raise EngineError(f"{name} not ready after {ready_timeout:.0f} s: {child.log_tail()}")
                time.sleep(0.02)
        return child

    def stop(self, child: Child, grace: float = 5.0) -> None:
        stop_group(child.proc, grace)
        if child in self.children:
            self.children.remove(child)

    def own(self, path: Path) -> Path:
        """Register a file or directory to be removed on close()."""
        self.scratch.append(Path(path))
        return Path(path)

    def defer(self, callback: Callable[[], object]) -> None:
        """Run `callback` on close(), after the children have stopped (e.g. detach a loop device)."""
        self.callbacks.append(callback)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Reverse order: the last started (e.g. fio) stops before what it talks to (the daemon).
        with signals_deferred():
            for child in reversed(self.children):
                stop_group(child.proc, 5.0)
            self.children.clear()
            for callback in reversed(self.callbacks):
                with contextlib.suppress(Exception):
                    callback()
            self.callbacks.clear()
            for path in reversed(self.scratch):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()


def threads_report(children: Sequence[Child]) -> str:
    """What each child process's threads are doing (threads), for a report when a guest or daemon stops answering:
    per thread its name, state (R running, S sleeping, D waiting on I/O), CPU seconds so far and kernel wait channel;
    and the main thread's kernel stack where it can be read (root). Tells a stuck device request (D, a block-layer
    wait channel) from a process idling in its event loop (S, poll) or spinning (R, CPU rising). Best effort: a
    process that is gone is named so."""
    out = []
    for c in children:
        pid = c.proc.pid
        found = threads(pid)
        if not found:
            out.append(f"{c.name} (pid {pid}): gone")
            continue
        out.append(f"{c.name} (pid {pid}):")
        out += [f"  {t['tid']} {t['comm']!r} {t['state']} cpu {t['cpu_s']:.2f}s wchan {t['wchan'] or '-'}"
                for t in found]
        with contextlib.suppress(OSError):
            stack = [ln.split()[-1] for ln in Path(f"/proc/{pid}/stack").read_text().splitlines() if ln.split()]
            if stack:
                out.append("  main thread's kernel stack: " + " < ".join(stack[:8]))
    return "\n".join(out)


@contextlib.contextmanager
def signals_deferred(redeliver: bool = False) -> Iterator[None]:
    """Hold off Ctrl-C and SIGTERM for the block, so that what it does (a clean-up, building something that must
    be whole to be cleaned up) is not interrupted half-way. A signal that came meanwhile lands at the end: as
    KeyboardInterrupt, or (redeliver) as the same signal sent again to this process, so its own handler (pytest's,
    a default SIGTERM) sees it. Outside the main thread signals cannot be handled: the block just runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {s: signal.signal(s, lambda n, f: pending.append(n)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if pending and redeliver:
            for n in pending:
                os.kill(os.getpid(), n)
        elif pending:
            raise KeyboardInterrupt


def install_sigterm_as_exit() -> None:
    """Make SIGTERM unwind `with` blocks like Ctrl-C does (call from the main thread of a CLI)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda n, f: (_ for _ in ()).throw(SystemExit(128 + n)))


def stat_fields(stat: str) -> list[str]:
    """The fields of a /proc/PID/stat line after "pid (comm)": [state, ppid, pgrp, ...]. comm may hold spaces and
    parentheses, so the line is split after its last ')'."""
    return stat.rsplit(")", 1)[1].split()


def cpu_seconds(stat: str) -> float:
    """User + system CPU seconds from a /proc/PID/stat (or /proc/PID/task/TID/stat) line: fields 14 and 15."""
    fields = stat_fields(stat)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuTimes(NamedTuple):
    """CPU seconds summed over all CPUs, as cpu_times defines them."""

    busy_s: float
    idle_s: float
    steal_s: float = 0.0


# The aggregate line's fields, in order (proc(5)); those after softirq are absent on old kernels.
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


def cpu_times(line: str, user_hz: float) -> CpuTimes:
    """Busy and idle CPU seconds, summed over all CPUs, from /proc/stat's aggregate line ("cpu  user nice ...").

    The fields are cumulative ticks of USER_HZ (sysconf(SC_CLK_TCK); 100 per second on x86 whatever the kernel's
    HZ), divided by `user_hz` into seconds:
        busy_s = user + nice + system + irq + softirq
        idle_s = idle + iowait
    guest and guest_nice are not added: the kernel already counts them inside user and nice.
    steal is in neither. It is time the hypervisor gave this machine's CPUs to someone else while they had work:
    not work done here, so counting it as busy would charge a neighbour's load to the CPU per I/O (or the guest's
    CPU share) we report, and it varies from run to run with that load; nor idle, since the CPU was not free for
    us. busy_s / (busy_s + idle_s) is then the share of the time we held the CPUs that we kept them busy. steal_s
    is returned on its own (0 when the kernel does not report it): the emulated spindles keep time only when they
    get the CPU, so a measurement's steal explains its emulator lateness. (A TCG guest has no steal clock: its
    steal is always 0.)

    Raises MeasurementError naming the field when the line is not an aggregate cpu line or a field up to softirq
    is missing or not a whole number.
    """
    parts = line.split()
    if not parts or parts[0] != "cpu":
        raise MeasurementError(f"/proc/stat: expected the aggregate 'cpu' line, got {line.strip()[:80]!r}")
    if not user_hz > 0:
        raise MeasurementError(f"/proc/stat: user_hz must be > 0, got {user_hz}")
    ticks: dict[str, int] = {}
    for name, value in zip(_CPU_FIELDS, parts[1:], strict=False):
        try:
            ticks[name] = int(value)
        except ValueError:
            raise MeasurementError(f"/proc/stat cpu line: field '{name}' is not a whole number: {value!r}") from None
    for name in _CPU_FIELDS[:7]:
        if name not in ticks:
            raise MeasurementError(f"/proc/stat cpu line: field '{name}' missing in {line.strip()!r}")
    busy = ticks["user"] + ticks["nice"] + ticks["system"] + ticks["irq"] + ticks["softirq"]
    return CpuTimes(busy / user_hz, (ticks["idle"] + ticks["iowait"]) / user_hz, ticks.get("steal", 0) / user_hz)


def machine_cpu_times() -> CpuTimes:
    """This machine's CPU times so far (/proc/stat's aggregate line, as cpu_times defines them)."""
    from pathlib import Path

    return cpu_times(Path("/proc/stat").read_text().splitlines()[0], os.sysconf("SC_CLK_TCK"))


def threads(pid: int) -> list[dict]:
    """Each thread of process `pid`: name, state (R, S, D, ...), kernel wait channel and CPU seconds so far (user +
    system), from /proc; empty when the process has gone."""
    from pathlib import Path
    out: list[dict] = []
    try:
        tasks = sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name))
    except OSError:
        return out
    for task in tasks:
        def read(name: str, task: Path = task) -> str:
            try:
                return (task / name).read_text().strip()
            except OSError:
                return "?"
        stat = read("stat")
        ok = ")" in stat
        out.append({"tid": task.name, "comm": read("comm"), "state": stat_fields(stat)[0] if ok else "?",
                    "wchan": read("wchan"), "cpu_s": cpu_seconds(stat) if ok else float("nan")})
    return out
