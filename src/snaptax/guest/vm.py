"""Boot the guest under TCG with NBD disks, run one script in it, and bring its results back on a disk.

Data path: each disk the script works on is an NBD export of a host-side server (qemu-storage-daemon over a sparse
file, nbdkit's emulated spindle, ...), attached as a virtio disk whose serial names it inside the guest. One more
virtio disk, "xfer", is a sparse file on the host: it carries a tar *into* the guest (run.sh and its inputs) and the
guest overwrites it with a tar of its /out directory before powering off. The serial console is a log, and the way
back for one kind of short line only: the host's answer to a script's gate question (GateAnswers).
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import tarfile
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EngineError
from ..host.procs import Child, ProcessGroup, signals_deferred, threads_report
from .image import GuestImage
from .kernel import tool

READY_MARK = "SNAPTAX-READY"
_SERIAL_RE = re.compile(r"^[a-z][a-z0-9_-]{0,19}$")  # virtio-blk serials are at most 20 bytes


class GuestError(EngineError):
    """The guest did not boot, did not finish, or its script failed; the message carries its log tail."""


class GuestStalled(GuestError):
    """The guest's console stayed silent for longer than the plan's longest step may take (GuestConfig.stall_timeout_s):
    a request that never completes (qemu-storage-daemon 7.2 has been seen to hang) or a stuck guest. Nothing the
    guest measured is returned; a caller may run the plan again on a fresh guest and daemon. processes: what the
    threads of QEMU and of the processes started beside it were doing when the stall was declared
    (procs.threads_report), for tracing it."""

    def __init__(self, message: str, processes: str = "") -> None:
        super().__init__(message)
        self.processes = processes


@dataclass(frozen=True)
class NbdUri:
    """An NBD export over a unix socket: nbd+unix:///EXPORT?socket=PATH (the form libnbd and fio accept)."""

    socket: Path
    export: str = ""

    @classmethod
    def parse(cls, uri: str) -> NbdUri:
        u = urllib.parse.urlsplit(uri)
        if u.scheme != "nbd+unix":
            raise GuestError(f"NBD URI '{uri}': only nbd+unix:///EXPORT?socket=PATH is supported")
        sock = urllib.parse.parse_qs(u.query).get("socket")
        if not sock:
            raise GuestError(f"NBD URI '{uri}': no socket= parameter")
        return cls(socket=Path(sock[0]), export=urllib.parse.unquote(u.path.lstrip("/")))

    def __str__(self) -> str:
        return f"nbd+unix:///{urllib.parse.quote(self.export)}?socket={self.socket}"


@dataclass(frozen=True)
class GuestDisk:
    serial: str          # the name the guest script uses: `disk SERIAL` -> /dev/vdX
    uri: str             # nbd+unix:///EXPORT?socket=PATH

    def __post_init__(self) -> None:
        if not _SERIAL_RE.match(self.serial) or self.serial == "xfer":
            raise GuestError(f"guest disk serial '{self.serial}': want [a-z][a-z0-9_-]*, at most 20, not 'xfer'")
        NbdUri.parse(self.uri)


@dataclass(frozen=True)
class GuestConfig:
    memory_mib: int = 1024
    cpus: int = 1                 # TCG vCPUs; the host's 2 cores also serve the NBD daemons
    boot_timeout_s: float = 90.0  # qemu start to READY
    run_timeout_s: float = 1800.0  # READY to power-off
    # After READY, the longest the console may stay silent (None: no limit). A script that prints a line per step
    # (the LVM thin engine's) sets it from its longest step, so a hang ends in minutes, not at run_timeout_s.
    stall_timeout_s: float | None = None
    xfer_mib: int = 256           # room for the input tar and, afterwards, the results tar
    append: str = ""              # extra kernel command line
    machine: str = "q35"
    cpu: str = "max"              # TCG "max" offers SSE4.2 (crc32c-intel) like the rigs' CPUs

    def __post_init__(self) -> None:
        if self.memory_mib < 256 or self.cpus < 1 or self.xfer_mib < 1:
            raise GuestError(f"guest config: memory_mib >= 256, cpus >= 1, xfer_mib >= 1 wanted, got {self}")


@dataclass
class GuestRun:
    rc: int
    out_dir: Path
    boot_to_ready_s: float | None  # host seconds from qemu start to the guest's READY line
    wall_s: float                  # host seconds from qemu start to its exit
    console_path: Path
    files: list[str] = field(default_factory=list)
    t0: float = 0.0                # host monotonic time (s) at qemu's start
    step_times: dict[str, float] = field(default_factory=dict)  # {TAG: host monotonic s} of `snaptax-step TAG` lines


STEP_MARK = "snaptax-step "   # a guest script's line per step (the LVM thin engine's `step TAG`)
# The gate protocol, spoken by the LVM thin engine's script head (engines.lvmthin: `step`, `gate`) and answered by
# GateAnswers: the script prints "snaptax-step TAG-ask NAME", reads "snaptax-go TAG run|skip" from its input and
# prints "snaptax-step TAG-told run|skip". NAME is a shell name (the script keeps a closed gate in a variable).
GATE_NAME = "[a-z][a-z0-9_]*"
GATE_ASK, GATE_TOLD, GATE_GO = "ask", "told", "snaptax-go"


class ConsoleLines:
    """Reads a growing console log and stamps each complete line with the host's monotonic clock (s) at the poll
    that first saw it: within one poll interval of when the guest wrote it, on the clock the host's counter
    samplers use (snaptax.timeline.HostSampler), so a guest's step can be placed among host samples without
    mapping the guest's clock."""

    def __init__(self, path: Path):
        self.path, self.pos, self.partial = path, 0, b""
        self.stamped: list[tuple[float, str]] = []

    @property
    def lines(self) -> list[str]:
        return [line for _, line in self.stamped]

    def poll(self) -> list[tuple[float, str]]:
        """Read what the console gained since the last poll; returns the new complete lines, stamped."""
        if not self.path.exists():
            return []
        now = time.monotonic()
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            data = f.read()
        self.pos += len(data)
        *complete, self.partial = (self.partial + data).split(b"\n")
        new = [(now, raw.decode(errors="replace").strip("\r")) for raw in complete]
        self.stamped += new
        return new

    def seen(self, mark: str) -> bool:
        return any(mark in line for _, line in self.stamped)

    def step_times(self) -> dict[str, float]:
        """{TAG: host monotonic time (s)} of each `snaptax-step TAG [words]` line (the first, if a tag repeats)."""
        out: dict[str, float] = {}
        for t, line in self.stamped:
            i = line.find(STEP_MARK)
            words = line[i + len(STEP_MARK):].split() if i >= 0 else []
            if words:
                out.setdefault(words[0], t)
        return out


_GATE_ASK = re.compile(rf"{re.escape(STEP_MARK)}(\d+)-{GATE_ASK} ({GATE_NAME})\s*$")
_GATE_TOLD = re.compile(rf"{re.escape(STEP_MARK)}(\d+)-{GATE_TOLD} (run|skip)\s*$")
_STEP_OF = re.compile(rf"{re.escape(STEP_MARK)}(\d+)-(\S+)")    # a plan step's line: its tag and first word
GATE_RESEND_S = 3.0


class GateAnswers:
    """The host's side of a script's `gate TAG NAME` (engines.lvmthin): for each "snaptax-step TAG-ask NAME" line
    the script prints, `decide(TAG, NAME)` is asked once and "snaptax-go TAG run|skip" written to the script's input
    (`write`), or nothing if it returns None (no such question: a garbled line; counted in `ignored`). The answer
    is written again every GATE_RESEND_S until the script's "TAG-told ANSWER" line, or any line of a later step (or
    of step TAG's run), shows that answer arrived, and at once if the question comes again (a serial line may drop
    or garble bytes; the script ignores any line that is not an answer for the step it asks about)."""

    def __init__(self, decide: Callable[[str, str], bool | None], write: Callable[[bytes], None],
                 clock: Callable[[], float] = time.monotonic):
        self.decide, self.write, self.clock = decide, write, clock
        self.ignored = 0                        # questions decide() did not answer (None): no step of the script
        self.answered: dict[str, bool] = {}
        self.pending: dict[str, float] = {}     # TAG -> when its answer was last written (clock(), s)

    def _word(self, tag: str) -> str:
        return "run" if self.answered[tag] else "skip"

    def _send(self, tag: str, now: float) -> None:
        self.pending[tag] = now
        with contextlib.suppress(OSError):     # the script is gone: its exit is seen by the caller
            self.write(f"{GATE_GO} {tag} {self._word(tag)}\n".encode())

    def see(self, lines: list[tuple[float, str]]) -> None:
        """Take the console's new lines (ConsoleLines.poll)."""
        for _, line in lines:
            step = _STEP_OF.search(line)
            if step and self.pending:
                # The script has gone past a step whose told line was lost: a later step's line, or (after "run")
                # the step's own run, shows the answer arrived. Resending it would only make the console echo it.
                at, word = int(step.group(1)), step.group(2)
                for tag in [t for t in self.pending
                            if int(t) < at or (int(t) == at and word not in (GATE_ASK, GATE_TOLD))]:
                    del self.pending[tag]
            told = _GATE_TOLD.search(line)
            if told:
                tag, heard = told.groups()
                if tag in self.answered and heard == self._word(tag):
                    self.pending.pop(tag, None)     # what the script heard is what was sent: delivered
                continue
            ask = _GATE_ASK.search(line)
            if not ask:
                continue
            tag, name = ask.groups()
            if tag not in self.answered:
                decision = self.decide(tag, name)
                if decision is None:            # not a question of this script (a garbled line): no answer
                    self.ignored += 1
                    continue
                self.answered[tag] = bool(decision)
            self._send(tag, self.clock())       # an answered step asked again: its answer was missed; again

    def resend(self) -> None:
        """Write again each answer not yet delivered whose last writing is GATE_RESEND_S old."""
        now = self.clock()
        for tag, sent in list(self.pending.items()):
            if now - sent >= GATE_RESEND_S:
                self._send(tag, now)


def is_gate_echo(text: str) -> bool:
    """True for a console line (or a line's start) that is the guest tty's echo of an answer written to its input
    ("snaptax-go ..."), or blank: no sign that the script is alive, so it does not reset the stall timer."""
    text = text.strip()
    return not text or text.startswith(GATE_GO) or GATE_GO.startswith(text)


def pipe_writer(proc: subprocess.Popen) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.flush()
    return write


def _console_tail(path: Path, lines: int = 25) -> str:
    if not path.exists():
        return "(no console output)"
    text = path.read_text(errors="replace").replace("\r", "")
    return "\n".join(text.strip().splitlines()[-lines:])


def qemu_argv(image: GuestImage, disks: list[GuestDisk], xfer: Path, config: GuestConfig,
              in_bytes: int) -> list[str]:
    argv = [
        tool("qemu-system-x86_64"), "-accel", "tcg", "-machine", config.machine, "-cpu", config.cpu,
        "-m", str(config.memory_mib), "-smp", str(config.cpus),
        "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none", "-serial", "stdio",
        "-no-reboot",  # with panic=-1 a kernel panic ends qemu instead of looping
        "-kernel", str(image.kernel), "-initrd", str(image.initrd),
        # loglevel=5: kernel warnings reach the console (dm-thin reports a full pool, the block layer a stuck request)
        "-append", f"console=ttyS0 panic=-1 loglevel=5 mitigations=off snaptax.in_bytes={in_bytes} "
                   f"{config.append}".strip(),
    ]
    for i, d in enumerate(disks):
        u = NbdUri.parse(d.uri)
        node = {"driver": "nbd", "node-name": f"d{i}", "server": {"type": "unix", "path": str(u.socket)},
                "export": u.export}
        argv += ["-blockdev", json.dumps(node), "-device", f"virtio-blk-pci,drive=d{i},serial={d.serial}"]
    argv += ["-blockdev", json.dumps({"driver": "file", "filename": str(xfer), "node-name": "xfer-file"}),
             "-blockdev", json.dumps({"driver": "raw", "file": "xfer-file", "node-name": "xfer"}),
             "-device", "virtio-blk-pci,drive=xfer,serial=xfer"]
    return argv


def _write_input(xfer: Path, size: int, script: str, files: dict[str, bytes], serials: list[str]) -> int:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        entries = {"run.sh": script.encode(), "disks": ("\n".join(serials) + "\n").encode(), **files}
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755 if name.endswith(".sh") else 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    if len(data) > size // 2:
        raise GuestError(f"guest input is {len(data)} bytes; raise xfer_mib (now {size >> 20} MiB)")
    with open(xfer, "wb") as f:
        f.truncate(size)  # sparse
        f.write(data)
    return len(data)


def _read_output(xfer: Path, out_dir: Path) -> list[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(xfer, mode="r:") as tar:
            members = tar.getmembers()
            if not any(m.name.lstrip("./") == "rc" for m in members):
                return []  # still the input tar: the guest never wrote its results
            tar.extractall(out_dir, filter="data")
    except tarfile.TarError:
        return []  # the guest died while writing its results
    return sorted(m.name.lstrip("./") for m in members if m.isfile())


def run_guest(image: GuestImage, disks: list[GuestDisk], script: str, out_dir: Path, *,
              files: dict[str, bytes] | None = None, config: GuestConfig = GuestConfig(),
              run_dir: Path, pg: ProcessGroup | None = None, check: bool = True,
              gate: Callable[[str, str], bool | None] | None = None) -> GuestRun:
    """Boot, run `script` (POSIX sh, under `sh -e`, with $IN, $OUT and /etc/snaptax/lib.sh), collect $OUT.

    `run_dir` holds the xfer disk and the console log (kept, so a failure can be inspected). The NBD servers
    behind `disks` must be running; they belong to the caller. qemu is always gone when this returns.
    gate: answers the script's gate questions (GateAnswers) over the serial console's input, QEMU's stdin.
    """
    serials = [d.serial for d in disks]
    if len(set(serials)) != len(serials):
        raise GuestError(f"guest disk serials must be unique: {serials}")
    for d in disks:
        sock = NbdUri.parse(d.uri).socket
        if not sock.exists():
            raise GuestError(f"NBD socket {sock} for guest disk '{d.serial}' does not exist (server not running?)")
    run_dir.mkdir(parents=True, exist_ok=True)
    xfer = run_dir / "xfer.img"
    console = run_dir / "console.log"
    console.unlink(missing_ok=True)
    in_bytes = _write_input(xfer, config.xfer_mib << 20, script, files or {}, serials)
    own = pg is None
    group = pg or ProcessGroup()
    child: Child | None = None
    try:
        t0 = time.monotonic()
        child = group.spawn(qemu_argv(image, disks, xfer, config, in_bytes), name="qemu-system-x86_64 (TCG guest)",
                            log_path=console, stdin_pipe=gate is not None)
        answers = GateAnswers(gate, pipe_writer(child.proc)) if gate is not None else None
        ready_at: float | None = None
        heard_size, heard_at = -1, t0   # the console's size, and when it last grew by more than echoed answers
        reader = ConsoleLines(console)
        while child.proc.poll() is None:
            now = time.monotonic()
            size = console.stat().st_size if console.exists() else 0
            if size != heard_size:
                heard_size, partial = size, reader.partial
                new = reader.poll()
                # The console grew; the stall timer restarts unless all it gained is the echo of resent answers.
                gained = [line for _, line in new] + ([reader.partial.decode(errors="replace")]
                                                      if reader.partial != partial else [])
                if not all(map(is_gate_echo, gained)):
                    heard_at = now
                if answers is not None:
                    answers.see(new)
            if answers is not None:
                answers.resend()
            if ready_at is None:
                if reader.seen(READY_MARK):
                    ready_at = now
                elif now - t0 > config.boot_timeout_s:
                    group.stop(child)
                    raise GuestError(f"guest not ready after {config.boot_timeout_s:.0f} s; console tail:\n"
                                     f"{_console_tail(console)}")
            elif now - ready_at > config.run_timeout_s:
                group.stop(child)
                raise GuestError(f"guest script still running after {config.run_timeout_s:.0f} s; console "
                                 f"tail:\n{_console_tail(console)}")
            elif config.stall_timeout_s is not None and now - heard_at > config.stall_timeout_s:
                # before anything stops: what QEMU and the NBD servers beside it were doing (a stall is rare and
                # has not been traced; see GuestStalled)
                processes = threads_report(group.children)
                group.stop(child)
                raise GuestStalled(f"guest console silent for {now - heard_at:.0f} s (stall limit "
                                   f"{config.stall_timeout_s:.0f} s); console tail:\n{_console_tail(console)}",
                                   processes)
            time.sleep(0.05)
        wall = time.monotonic() - t0
        group.stop(child)
        reader.poll()
        if ready_at is None and reader.seen(READY_MARK):
            ready_at = wall + t0  # READY and power-off fell within one poll
    except BaseException:
        # An error here (the gate's answer raised, say) or Ctrl-C: QEMU stops now, also in the caller's group.
        if child is not None:
            with signals_deferred():
                group.stop(child)
        raise
    finally:
        if own:
            group.close()
    files_out = _read_output(xfer, out_dir)
    if not files_out:
        raise GuestError(f"guest wrote no results (qemu exit {child.proc.returncode}); console tail:\n"
                         f"{_console_tail(console)}")
    rc = int((out_dir / "rc").read_text().strip() or 255)
    result = GuestRun(rc=rc, out_dir=out_dir, boot_to_ready_s=None if ready_at is None else ready_at - t0,
                      wall_s=wall, console_path=console, files=files_out, t0=t0, step_times=reader.step_times())
    if check and rc != 0:
        log = out_dir / "script.log"
        tail = _console_tail(log, 25) if log.exists() else _console_tail(console)
        raise GuestError(f"guest script exited {rc}; log tail:\n{tail}")
    return result
