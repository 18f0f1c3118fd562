"""An attached rig made of loop devices, built at test time (tests/test_attached_rig.py).

Each "attached disk" is a sparse file in a private temporary directory under /var/tmp (not tmpfs: the devices are
opened with O_DIRECT), attached as a direct-I/O loop device. The rig file, written into the same directory, is
enabled and allows destruction, and names each device by a link the test creates to its loop device.

Stable ids. The rig schema and the guards (snaptax.host.rig.is_stable_id) accept only names under /dev/disk/by-id,
because /dev/sdX and /dev/loopN names change across boots. These machines have no udev and no /dev/disk at all,
and a link the test put into /dev/disk/by-id would be shared, machine-wide state: another checkout's test run
could see or remove it, and a killed run would leave it in /dev. So the links live in the test's own directory
(`<tmp>/by-id/snaptax-test-<device>`), and while the rig exists `stable_ids_under` adds exactly that directory
to snaptax.host.rig.STABLE_ID_PREFIXES — in this process only, restored afterwards. The production guard is not
weakened: no rig-file field, environment variable or setting widens it, and everything after that one prefix
test (link resolution, block-device check, holders, mounts, swap, exclusive open) runs unchanged on the loop
devices. A child process that needs the rig (the interrupt test) enters the same context itself.

Cleanup. `loop_rig` undoes everything it made, in reverse: helper processes, mounts, swap, stacked devices,
partitions and loop devices (only those whose backing file is ours: loop numbers are reused), then the
directory. It runs in a `finally` with SIGINT/SIGTERM deferred, so a Ctrl-C during the test (pytest runs fixture
finalizers on KeyboardInterrupt) or during the cleanup itself does not leave half of it. `leftovers` lists what
would have been left behind; the tests assert it is empty.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from snaptax.host import rig as rigmod
from snaptax.host.procs import signals_deferred

GiB = 1 << 30
LINK_PREFIX = "snaptax-test-"
_HOLD_EXCLUSIVE = ("import os, sys, time\n"
                   "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)\n"
                   "print('held', flush=True)\n"
                   "time.sleep(3600)\n")


def _sh(*argv: str, check: bool = True) -> str:
    cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
    if check and cp.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {cp.returncode}: {cp.stderr.strip()}")
    return cp.stdout


def _die_with_parent() -> None:  # between fork and exec: a helper must not outlive a killed test
    import ctypes
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def backing_file(loop: Path) -> str:
    try:
        return (Path("/sys/block") / loop.name / "loop" / "backing_file").read_text().strip()
    except OSError:
        return ""


@dataclass
class LoopRig:
    root: Path
    capacity: int
    loops: dict[str, Path] = field(default_factory=dict)      # device name -> /dev/loopN
    links: dict[str, Path] = field(default_factory=dict)      # device name -> root/by-id/snaptax-test-NAME
    rig_file: Path | None = None
    engines: tuple[str, ...] = ("qcow2", "lvmthin")
    mounts: list[Path] = field(default_factory=list)
    swaps: list[Path] = field(default_factory=list)
    stacked: list[str] = field(default_factory=list)          # dm names
    helpers: list[subprocess.Popen] = field(default_factory=list)
    held: dict[str, subprocess.Popen] = field(default_factory=dict)
    partitioned: dict[str, Path] = field(default_factory=dict)

    @property
    def links_dir(self) -> Path:
        return self.root / "by-id"

    @property
    def work_dir(self) -> Path:
        return self.root / "work"

    def rig(self) -> rigmod.Rig:
        assert self.rig_file is not None
        return rigmod.load(self.rig_file)

    # ------------------------------------------------------------ building
    def attach(self, image: Path, partitions: bool = False) -> Path:
        argv = ["losetup", "--find", "--show", "--direct-io=on", *(["--partscan"] if partitions else []), str(image)]
        loop = Path(_sh(*argv).strip())
        if backing_file(loop) != str(image):
            raise RuntimeError(f"{loop} is not backed by {image}")
        return loop

    def add_device(self, name: str) -> None:
        image = self.root / "images" / f"{name}.img"
        image.parent.mkdir(parents=True, exist_ok=True)
        with open(image, "wb") as f:
            f.truncate(self.capacity)
        self.loops[name] = self.attach(image)
        link = self.links_dir / f"{LINK_PREFIX}{name}"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(self.loops[name])
        self.links[name] = link

    def write_rig_file(self) -> Path:
        import yaml
        raw = {"name": "loop-test", "kind": "attached",
               "description": "loop devices standing in for attached disks (tests/attached.py)",
               "enabled": True, "allow_destroy": True, "work_dir": str(self.work_dir),
               "engines": list(self.engines),
               "devices": {name: {"type": "block", "medium": "hdd" if "hdd" in name else "ssd",
                                  "capacity": self.capacity,
                                  "path": str(link), "description": f"loop device over {name}.img"}
                           for name, link in self.links.items()}}
        self.rig_file = self.root / "loop-test.yaml"
        self.rig_file.write_text(yaml.safe_dump(raw, sort_keys=False))
        return self.rig_file

    # ------------------------------------------------------------ the states the guards must refuse
    def mount(self, name: str) -> Path:
        """mkfs.ext4 on the device and mount it in the test's directory."""
        return self._mount(self.loops[name], name)

    def _mount(self, node: Path, tag: str) -> Path:
        point = self.root / "mnt" / tag
        if point in self.mounts:   # idempotent: each test may ask for the state it needs
            return point
        _sh("mkfs.ext4", "-q", "-F", str(node))
        point.mkdir(parents=True, exist_ok=True)
        _sh("mount", str(node), str(point))
        self.mounts.append(point)
        return point

    def swap(self, name: str, node: Path | None = None) -> None:
        node = node or self.loops[name]
        if node in self.swaps:
            return
        _sh("mkswap", "-f", str(node))
        _sh("swapon", str(node))
        self.swaps.append(node)

    def mount_via(self, name: str, node: Path) -> Path:
        return self._mount(node, name)

    def alias(self, name: str) -> Path:
        """A second device node of the device (same major:minor) in the test's directory: what mount or swapon
        print as the source when they were given that node instead of /dev/loopN."""
        st = os.stat(self.loops[name])
        node = self.root / "nodes" / name
        if node.exists():
            return node
        node.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(node, 0o600 | stat.S_IFBLK, st.st_rdev)
        return node

    def hold_exclusive(self, name: str) -> subprocess.Popen:
        """A helper process that holds the device open with O_EXCL (as a mounted filesystem or mdadm would)."""
        if name in self.held:
            return self.held[name]
        proc = subprocess.Popen([sys.executable, "-c", _HOLD_EXCLUSIVE, str(self.loops[name])], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
        self.helpers.append(proc)
        self.held[name] = proc
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "held":
            raise RuntimeError(f"the O_EXCL helper failed: {proc.stderr.read() if proc.stderr else ''}")
        return proc

    def partition(self, name: str) -> Path:
        """Give the device's image one MBR partition (from 1 MiB to the end) and re-attach it with partition
        scanning. Replaces the device's loop by the partitioned one (and re-points its link); returns the
        partition's node."""
        if name in self.partitioned:
            return self.partitioned[name]
        old = self.loops[name]
        image = Path(backing_file(old))
        _sh("losetup", "-d", str(old))
        sectors = self.capacity // 512
        with open(image, "r+b") as f:
            f.seek(446)
            f.write(bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + struct.pack("<II", 2048, sectors - 2048))
            f.seek(510)
            f.write(b"\x55\xaa")
            f.flush()
            os.fsync(f.fileno())
        loop = self.attach(image, partitions=True)
        self.loops[name] = loop
        part = Path(f"{loop}p1")
        # Without udev the kernel's own scan at attach time may miss the table; partx asks again.
        for _ in range(20):
            if part.exists():
                break
            _sh("partx", "-a", str(loop), check=False)
            time.sleep(0.1)
        if not part.exists():
            raise RuntimeError(f"no partition {part} appeared")
        self.links[name].unlink()
        self.links[name].symlink_to(loop)
        self.partitioned[name] = part
        return part

    def partition_mounted(self, name: str) -> Path:
        """The device partitioned (see partition) and its partition mounted; returns the partition's node."""
        part = self.partition(name)
        self._mount(part, f"{name}-p1")
        return part

    def link_to(self, tag: str, node: Path) -> Path:
        """One more stable-id link in the test's directory, to any node."""
        link = self.links_dir / f"{LINK_PREFIX}{tag}"
        link.symlink_to(node)
        return link

    def stack(self, name: str) -> str | None:
        """A device-mapper linear device on top of the device, so that /sys/block/loopN/holders lists it. Only
        device-mapper (or MD RAID, bcache) fills `holders` (the kernel's bd_link_disk_holder); loop devices,
        partitions and filesystems never do. None when this kernel has no device-mapper."""
        from snaptax.engines.lvmthin.engine import host_has_device_mapper
        if not (host_has_device_mapper() and shutil.which("dmsetup")):
            return None
        dm = f"{LINK_PREFIX}{self.root.name}-{name}"
        sectors = self.capacity // 512
        _sh("dmsetup", "create", dm, "--table", f"0 {sectors} linear {self.loops[name]} 0")
        self.stacked.append(dm)
        return dm

    # ------------------------------------------------------------ cleanup
    def cleanup(self) -> list[str]:
        """Undo everything, newest first; returns what failed (the caller reports it).

        Mounts, swap areas and loop devices are found by scanning the kernel's tables for what is ours (mount
        points under our directory; swap on, and loop devices backed by, our images), not from the records
        above, so that a Ctrl-C between a command and its record still leaves nothing."""
        errors: list[str] = []

        def attempt(what: str, *argv: str) -> None:
            cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
            if cp.returncode != 0:
                errors.append(f"{what}: {cp.stderr.strip()}")

        for proc in self.helpers:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
        for point in sorted(_mount_points_under(self.root), key=len, reverse=True):
            attempt(f"umount {point}", "umount", point)
        ours = our_loops(self.root)
        for name in _swaps():
            if name.startswith(f"{self.root}/") or _devnum_of(name) in _devnums(ours):
                attempt(f"swapoff {name}", "swapoff", name)
        for dm in reversed(self.stacked):
            attempt(f"dmsetup remove {dm}", "dmsetup", "remove", dm)
        for loop in ours:   # only ours: loop numbers are reused, and other checkouts' tests use loop devices too
            attempt(f"losetup -d {loop}", "losetup", "-d", loop)
        shutil.rmtree(self.root, ignore_errors=True)
        return errors


def our_loops(root: Path) -> list[str]:
    """Loop devices whose backing file lies under `root`."""
    out = subprocess.run(["losetup", "--list", "--json", "-O", "NAME,BACK-FILE"], capture_output=True,
                         text=True, timeout=30).stdout
    return [e["name"] for e in json.loads(out or "{}").get("loopdevices", [])
            if (e.get("back-file") or "").startswith(f"{root}/")]


def _devnums(loops: list[str]) -> set[str]:
    """major:minor of each loop device and of its partitions."""
    nums: set[str] = set()
    for loop in loops:
        name = Path(loop).name
        for d in [Path("/sys/class/block") / name, *(Path("/sys/class/block") / name).glob(f"{name}p*")]:
            with contextlib.suppress(OSError):
                nums.add((d / "dev").read_text().strip())
    return nums


def _devnum_of(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" if stat.S_ISBLK(st.st_mode) else None


def _mount_points_under(root: Path) -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(f"{root}/"):
            points.append(point)
    return points


def _swaps() -> set[str]:
    return {line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:] if line.strip()}


@contextlib.contextmanager
def stable_ids_under(directory: Path) -> Iterator[None]:
    """Accept links under `directory` as stable ids, in this process, for the duration (see the module doc)."""
    before = rigmod.STABLE_ID_PREFIXES
    rigmod.STABLE_ID_PREFIXES = (*before, f"{directory}/")
    try:
        yield
    finally:
        rigmod.STABLE_ID_PREFIXES = before


@contextlib.contextmanager
def loop_rig(names: tuple[str, ...] = ("ssd", "hdd"), capacity: int = GiB,
             parent: Path = Path("/var/tmp"), engines: tuple[str, ...] = ("qcow2", "lvmthin")) -> Iterator[LoopRig]:
    """An enabled, destroyable attached rig of loop devices (its rig file lists `engines`); everything it made is
    gone afterwards."""
    root = Path(tempfile.mkdtemp(prefix="snaptax-attached-", dir=parent))
    lr = LoopRig(root=root, capacity=capacity, engines=engines)
    try:
        # a Ctrl-C here lands once the rig is whole (and is then cleaned up), as the same signal
        with signals_deferred(redeliver=True):
            for name in names:
                lr.add_device(name)
            lr.write_rig_file()
        with stable_ids_under(lr.links_dir):
            yield lr
    finally:
        with signals_deferred(redeliver=True):
            errors = lr.cleanup()
        if errors:
            raise RuntimeError("attached-rig cleanup: " + "; ".join(errors))


def leftovers(root: Path, directory: bool = True) -> list[str]:
    """Anything under `root` still alive: loop devices backed by its files, mounts (under it, or of those loop
    devices), swap on them, processes naming it, and (unless `directory` is false) the directory itself."""
    loops = our_loops(root)
    nums = _devnums(loops)
    found = [f"loop device {loop}" for loop in loops]
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4].startswith(f"{root}/") or fields[2] in nums:
            found.append(f"mount {fields[2]} on {fields[4]}")
    found += [f"swap {s}" for s in _swaps() if s.startswith(f"{root}/") or _devnum_of(s) in nums]
    procs = subprocess.run(["pgrep", "-af", str(root)], capture_output=True, text=True).stdout
    found += [f"process {p}" for p in procs.splitlines() if "pytest" not in p]
    if directory and root.exists():
        found.append(f"directory {root}")
    return found
