"""Save a running TCG guest's memory to a file with QEMU's migration code, while a guest program dirties it.

The guest program is fio, already in the initramfs (no helper to build). On a tmpfs file (guest RAM):
  fill    writes `fill_mib` MiB once, sequentially, with fio's random (non-zero) buffers: most of the guest's
          memory then holds data that a dump must write (no zero pages to skip);
  dirty   random 4 KiB writes over the filled file at a fixed `dirty_pages_s` (fio rate_iops): the known rate at
          which the guest dirties memory during the dump;
  probe   random 4 KiB writes over a small `probe_kib` file as fast as the vCPU allows: the guest program's
          progress. Its pages per second before a dump and during it give the guest's slowdown.
Both time-based jobs print fio's terse status every `report_s` seconds on the serial console; the host reads the
console as it grows and stamps each status line with its own clock (so a dump's window and the guest's progress
share one time base). The guest never finishes on its own: the host ends it with QMP `quit`.

Dump methods (QMP `migrate` to `exec:cat > FILE`, `max-bandwidth` set, on the host's scratch directory):
  background-snapshot  the migration capability of QEMU ≥ 6.0: guest RAM is write-protected with userfaultfd
                       (UFFDIO_WRITEPROTECT on anonymous memory, host kernel ≥ 5.7); the migration thread writes
                       each page once, and a guest write to a page not yet saved faults, the page is saved first
                       (copy-before-write), then the write proceeds. The guest runs throughout (a short stop at the
                       start only). QEMU's analogue of VMware's lazy checkpoint. Under TCG the vCPU's stores are
                       the QEMU process's own stores to the same anonymous mapping, so they fault like KVM's would.
                       Seen on QEMU 7.2 (Debian), host kernel 6.18, TCG, 2026-11-25: accepted and completes with the
                       guest running, but `max-bandwidth` is not honoured (16 MiB/s and unlimited both saved 384 MiB
                       in ≈2.3 s; unlike the precopy thread, 7.2's bg_migration_thread has no wait on the rate
                       limit), and the guest program ran at ≈0.57 of its speed meanwhile.
  precopy              a plain live migration into the file: pages are sent in passes, re-sent when dirtied again,
                       and the guest is stopped for the last pass (downtime); after `completed` QEMU leaves the
                       guest paused ("postmigrate") and we `cont` it. Converges only if the dirty rate is well
                       below the bandwidth; the file holds every pass (more bytes than the RAM).
`probe_background_snapshot` says whether the first works on this host (QEMU refuses the capability with one line
when userfaultfd write-protection is missing).
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import EngineError
from ..host.procs import ProcessGroup, unix_socket_accepts
from ..host.qmp import QMPClient, QMPError
from .image import GuestImage
from .vm import READY_MARK, ConsoleLines, GuestConfig, GuestError, _console_tail, _write_input, qemu_argv

Method = Literal["background-snapshot", "precopy"]
METHODS: tuple[Method, ...] = ("background-snapshot", "precopy")
PAGE = 4096
MiB = 1 << 20
START_MARK = "SNAPTAX-DIRTY-START"
UNLIMITED_BANDWIDTH = 1 << 40            # max-bandwidth for an unthrottled dump (bytes/s)
_TERSE_WRITE_KB, _TERSE_WRITE_RUNTIME_MS = 46, 49  # 0-based fields of fio's terse v3 line
_TERSE_RE = re.compile(r"^3;fio-[^;]*;(dirty|probe);")


TMP_MARGIN_MIB = 16   # /tmp's room beside the dirtier's files (the init script's own small files)
SMALLEST_GUEST_MIB = 384   # the initramfs alone needs ~200 MiB while it unpacks
UNFILLED_MIB = 224         # the smallest guest's RAM a fill leaves: the unpacked initramfs (~95 MiB), kernel, fio
# What grows with the RAM: what the kernel keeps (its page array alone is 1/64 of the RAM) and the page tables of
# fio's mapping. Measured on a 4 GiB TCG guest (2026-11-30): the kernel kept 181 MiB (MemTotal 3915 MiB), the
# unpacked initramfs and the rest of the system 148; a fill of 3756 MiB (1/32 of the RAM above the smallest guest's)
# was killed by the guest's OOM killer, 3640 (1/16, exact in binary: no last bit to differ between hosts) left
# 126 MiB free after the fill and its dump completed.
UNFILLED_PER_MIB = 1 / 16


def fill_mib_for(memory_mib: int) -> int:
    """The MiB a guest of `memory_mib` fills with its dirtier: all of its RAM but what the kernel and fio need."""
    return memory_mib - UNFILLED_MIB - int((memory_mib - SMALLEST_GUEST_MIB) * UNFILLED_PER_MIB)


@dataclass(frozen=True)
class Dirtier:
    """The guest program. fill_mib: MiB filled before dirtying starts (fill_mib_for: all the kernel and fio leave);
    dirty_pages_s: the known dirty rate; probe_kib: the progress probe's file; report_s: the status interval."""

    fill_mib: int
    dirty_pages_s: int = 256
    probe_kib: int = 1024
    report_s: float = 0.5

    def __post_init__(self) -> None:
        if self.fill_mib < 1 or self.dirty_pages_s < 1 or self.probe_kib < 4 or self.report_s < 0.1:
            raise GuestError(f"guest dirtier: fill_mib ≥ 1, dirty_pages_s ≥ 1, probe_kib ≥ 4, report_s ≥ 0.1 wanted, "
                             f"got {self}")

    def script(self) -> str:
        ms = round(self.report_s * 1000)
        common = "--ioengine=mmap --rw=randwrite --bs=4k --time_based --runtime=86400 --norandommap"
        # /tmp is a tmpfs of the kernel's default size, half the guest's RAM (init.sh); the fill of a large guest
        # needs most of it, so the dirtier sizes /tmp to its two files and a margin (a cap, not a reservation).
        tmp_mib = self.fill_mib + -(-self.probe_kib // 1024) + TMP_MARGIN_MIB
        return "\n".join([
            "set -e",
            f"mount -o remount,size={tmp_mib}m /tmp",
            f"fio --name=fill --ioengine=mmap --filename=/tmp/mem --size={self.fill_mib}m --rw=write --bs=1m "
            "--output-format=terse >/dev/null",
            "grep -E 'MemTotal|MemFree|Shmem:' /proc/meminfo",
            f"echo {START_MARK}",
            f"fio --status-interval={ms}ms --output-format=terse --terse-version=3 "
            f"--name=dirty --filename=/tmp/mem --size={self.fill_mib}m {common} --rate_iops={self.dirty_pages_s} "
            f"--name=probe --filename=/tmp/probe --size={self.probe_kib}k {common}",
            ""])


@dataclass(frozen=True)
class DumpRequest:
    """One dump: method, the bandwidth limit (bytes/s) and the quiet seconds measured just before it (the
    guest's baseline progress)."""

    method: Method
    bandwidth_bytes_s: int
    baseline_s: float = 3.0
    label: str = ""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise GuestError(f"dump method '{self.method}': one of {', '.join(METHODS)}")
        if self.bandwidth_bytes_s < MiB or self.baseline_s < 1.0:
            raise GuestError(f"dump request: bandwidth ≥ 1 MiB/s and baseline ≥ 1 s wanted, got {self}")


@dataclass(frozen=True)
class Sample:
    """One fio status line: host time (s since the guest started), job, cumulative pages written, fio runtime."""

    t: float
    job: str
    pages: float
    runtime_s: float


@dataclass
class DumpResult:
    request: DumpRequest
    start_s: float                    # host s since qemu start: `migrate` issued
    end_s: float                      # host s: query-migrate said completed
    qemu_total_ms: float | None       # query-migrate's total-time
    downtime_ms: float | None
    transferred_bytes: int            # ram.transferred
    file_bytes: int                   # the file's size on the host after the dump
    ram_total_bytes: int
    dirty_sync_count: int | None      # passes over memory (precopy)
    status: str
    # QEMU's own count of the pages it found all-zero and sent as a marker without their data (ram.duplicate), and of
    # those it sent whole (ram.normal), over all passes: how much of this guest's memory a dump that skips zero pages
    # would skip (issue 46.5; None: a run before they were recorded)
    zero_pages: int | None = None
    normal_pages: int | None = None

    @property
    def dump_s(self) -> float:
        return self.end_s - self.start_s


@dataclass
class MemsnapRun:
    memory_mib: int
    dirtier: Dirtier
    dumps: list[DumpResult]
    samples: list[Sample]
    boot_to_start_s: float
    wall_s: float
    console_path: Path
    background_snapshot: bool
    note: str = ""
    meminfo: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"memory_mib": self.memory_mib, "dirtier": asdict(self.dirtier),
                "dumps": [{**asdict(d), "request": asdict(d.request), "dump_s": d.dump_s} for d in self.dumps],
                "samples": [asdict(s) for s in self.samples], "boot_to_start_s": self.boot_to_start_s,
                "wall_s": self.wall_s, "background_snapshot": self.background_snapshot, "note": self.note,
                "meminfo": self.meminfo}


class _Console(ConsoleLines):
    """The guest's console, stamped (vm.ConsoleLines), with fio's terse status lines kept as Samples (s since t0)."""

    def __init__(self, path: Path, t0: float):
        super().__init__(path)
        self.t0 = t0
        self.samples: list[Sample] = []

    def poll(self) -> list[tuple[float, str]]:
        new = super().poll()
        for now, line in new:
            m = _TERSE_RE.match(line)
            if m:
                f_ = line.split(";")
                if len(f_) > _TERSE_WRITE_RUNTIME_MS:
                    self.samples.append(Sample(now - self.t0, m.group(1), int(f_[_TERSE_WRITE_KB]) / 4,
                                               int(f_[_TERSE_WRITE_RUNTIME_MS]) / 1000))
        return new


def _wait(console: _Console, child, until, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        console.poll()
        if child.proc.poll() is not None:
            raise GuestError(f"guest exited ({child.proc.returncode}) while waiting for {what}; console tail:\n"
                             f"{_console_tail(console.path)}")
        if console.seen("SNAPTAX-GUEST-FAILED"):
            raise GuestError(f"guest failed while waiting for {what}; console tail:\n{_console_tail(console.path)}")
        if time.monotonic() > deadline:
            raise GuestError(f"no {what} after {timeout:.0f} s; console tail:\n{_console_tail(console.path)}")
        time.sleep(0.05)


def _sleep_polling(console: _Console, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        console.poll()
        time.sleep(min(0.05, max(0.0, end - time.monotonic())))


def _dump(qmp: QMPClient, console: _Console, req: DumpRequest, dest: Path, t0: float, timeout_s: float) -> DumpResult:
    qmp.execute("migrate-set-capabilities", capabilities=[
        {"capability": "background-snapshot", "state": req.method == "background-snapshot"}])
    qmp.execute("migrate-set-parameters", **{"max-bandwidth": int(req.bandwidth_bytes_s)})
    dest.unlink(missing_ok=True)
    start = time.monotonic()
    qmp.execute("migrate", uri=f"exec:cat > {dest}")
    deadline = start + timeout_s
    info: dict = {}
    while True:
        console.poll()
        info = qmp.execute("query-migrate")
        status = info.get("status", "?")
        if status in ("completed", "failed", "cancelled"):
            end = time.monotonic()
            break
        if time.monotonic() > deadline:
            qmp.execute("migrate_cancel")
            raise GuestError(f"{req.method} dump at {req.bandwidth_bytes_s / MiB:.1f} MiB/s not finished after "
                             f"{timeout_s:.0f} s (status {status}; dirty rate too high for the bandwidth?)")
        time.sleep(0.02)
    if status != "completed":
        raise GuestError(f"{req.method} dump {status}: {info.get('error-desc', 'no reason given')}")
    run_state = qmp.execute("query-status").get("status")
    if run_state != "running":          # precopy leaves the source paused ("postmigrate")
        qmp.execute("cont")
    # `cat` may still be flushing when QEMU reports completion; wait until the file stops growing (≤ 2 s).
    size, stable_since = -1, time.monotonic()
    while time.monotonic() - stable_since < 0.2 and time.monotonic() - end < 2.0:
        now_size = dest.stat().st_size if dest.exists() else 0
        if now_size != size:
            size, stable_since = now_size, time.monotonic()
        time.sleep(0.02)
    ram = info.get("ram", {})
    result = DumpResult(req, start - t0, end - t0, info.get("total-time"), info.get("downtime"),
                        int(ram.get("transferred", 0)), max(size, 0), int(ram.get("total", 0)),
                        ram.get("dirty-sync-count"), status, _count(ram, "duplicate"), _count(ram, "normal"))
    dest.unlink(missing_ok=True)
    return result


def _count(ram: dict, name: str) -> int | None:
    """A page count of query-migrate's `ram` statistics (None where QEMU does not report it)."""
    value = ram.get(name)
    return None if value is None else int(value)


def probe_background_snapshot(qmp: QMPClient) -> tuple[bool, str]:
    """Whether this QEMU, host kernel and accelerator accept the background-snapshot capability (QEMU checks for
    userfaultfd write-protect support on the guest's RAM when it is set)."""
    try:
        qmp.execute("migrate-set-capabilities",
                    capabilities=[{"capability": "background-snapshot", "state": True}])
    except QMPError as exc:
        return False, str(exc)
    qmp.execute("migrate-set-capabilities", capabilities=[{"capability": "background-snapshot", "state": False}])
    return True, "accepted"


def run_memsnap(image: GuestImage, dirtier: Dirtier, dumps: list[DumpRequest], *, memory_mib: int,
                scratch: Path, warmup_s: float = 2.0, dump_timeout_s: float | None = None,
                config: GuestConfig | None = None, pg: ProcessGroup | None = None) -> MemsnapRun:
    """Boot the guest with `memory_mib`, start the dirtier, then run each dump in turn (each after its baseline
    window), on the running guest; stop the guest. `scratch` (on the rig's SSD-class device) holds the dump file,
    the xfer disk, the console log and the QMP socket; all but the console log are removed when this returns,
    whatever happens (an exception, Ctrl-C). A background-snapshot request on a host where the capability is
    refused raises with QEMU's reason. dump_timeout_s: how long one dump may take (default: three times the RAM at
    the lesser of its bandwidth and 50 MiB/s, plus a minute)."""
    cfg = config or GuestConfig(memory_mib=memory_mib, boot_timeout_s=120.0)
    if cfg.memory_mib != memory_mib:
        raise GuestError(f"memory_mib {memory_mib} differs from the config's {cfg.memory_mib}")
    scratch.mkdir(parents=True, exist_ok=True)
    own = pg is None
    group = pg or ProcessGroup()
    try:
        xfer = group.own(scratch / "memsnap-xfer.img")
        sock = group.own(scratch / "memsnap-qmp.sock")
        dest = group.own(scratch / "memsnap-dump.bin")
        console_path = scratch / "memsnap-console.log"
        console_path.unlink(missing_ok=True)
        sock.unlink(missing_ok=True)
        in_bytes = _write_input(xfer, cfg.xfer_mib << 20, dirtier.script(), {}, [])
        argv = qemu_argv(image, [], xfer, cfg, in_bytes) + ["-qmp", f"unix:{sock},server=on,wait=off"]
        t0 = time.monotonic()
        child = group.spawn(argv, name="qemu-system-x86_64 (TCG guest, memory dump)", log_path=console_path,
                            ready=lambda: unix_socket_accepts(sock))
        console = _Console(console_path, t0)
        with QMPClient(sock, timeout=30.0) as qmp:
            ok, why = probe_background_snapshot(qmp)
            if not ok and any(d.method == "background-snapshot" for d in dumps):
                raise GuestError(f"background-snapshot refused by QEMU here: {why}")
            _wait(console, child, lambda: console.seen(READY_MARK), cfg.boot_timeout_s, "READY line")
            _wait(console, child, lambda: console.seen(START_MARK), 60.0 + dirtier.fill_mib / 20,
                  "dirtier start (fill too large?)")
            started = time.monotonic() - t0
            _wait(console, child, lambda: sum(s.job == "probe" for s in console.samples) >= 2, 30.0,
                  "fio status lines")
            _sleep_polling(console, warmup_s)
            results = []
            for req in dumps:
                _sleep_polling(console, req.baseline_s)
                limit = dump_timeout_s or 60.0 + 3 * memory_mib * MiB / min(req.bandwidth_bytes_s, 50 * MiB)
                results.append(_dump(qmp, console, req, dest, t0, limit))
            _sleep_polling(console, dirtier.report_s * 2)   # the status line after the last dump's end
            meminfo = {ln.split(":")[0]: int(ln.split()[1]) for ln in console.lines
                       if re.match(r"^(MemTotal|MemFree|Shmem):\s+\d+ kB", ln)}
            try:
                qmp.execute("quit")
            except EngineError:
                pass            # the connection may close before the reply
        group.stop(child)
        wall = time.monotonic() - t0
        return MemsnapRun(memory_mib, dirtier, results, console.samples, started, wall, console_path, ok, why,
                          meminfo)
    finally:
        if own:
            group.close()


def progress_rate(samples: list[Sample], job: str, t_from: float, t_to: float) -> float | None:
    """Pages per second of `job` between host times t_from and t_to: from the first status line at or after
    t_from to the last at or before t_to (fio's own runtime as the clock); None if fewer than two lines fall
    inside."""
    inside = [s for s in samples if s.job == job and t_from <= s.t <= t_to]
    if len(inside) < 2 or inside[-1].runtime_s <= inside[0].runtime_s:
        return None
    return (inside[-1].pages - inside[0].pages) / (inside[-1].runtime_s - inside[0].runtime_s)


def main() -> None:
    """python -m snaptax.guest.memsnap [MEMORY_MIB [MIB_PER_S ...]]: one background snapshot per bandwidth given
    (a quick look at what a host's QEMU does with the capability)."""
    import sys

    from .image import build_image
    mem = int(sys.argv[1]) if len(sys.argv) > 1 else 384
    with ProcessGroup() as pg:
        run = run_memsnap(build_image(), Dirtier(fill_mib=max(16, fill_mib_for(mem))),
                          [DumpRequest("background-snapshot", int(float(a) * MiB)) for a in sys.argv[2:]],
                          memory_mib=mem, scratch=Path("/var/tmp/memsnap-try"), pg=pg)
        print(json.dumps({k: v for k, v in run.to_json().items() if k != "samples"}, indent=1, default=str))
        for d in run.dumps:
            before = progress_rate(run.samples, "probe", d.start_s - d.request.baseline_s, d.start_s)
            during = progress_rate(run.samples, "probe", d.start_s, d.end_s)
            print(d.request.method, f"{d.dump_s:.2f} s", d.file_bytes, "probe before", before, "during", during)


if __name__ == "__main__":
    main()
