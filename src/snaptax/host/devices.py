"""Block-device identity, host I/O counters, and the safety checks guarding real devices.

A real device is touched only if (1) the rig file names it by /dev/disk/by-id, (2) the rig is enabled and sets
allow_destroy: true, and (3) the device is not mounted, not a swap device, has no holders (LVM, RAID, dm) and can
be opened exclusively. Anything else raises DeviceRefused before a single byte is written.
"""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import asdict
from pathlib import Path

from ..errors import DeviceRefused
from .rig import Device, Rig, is_stable_id


def block_name_of_path(path: Path) -> str | None:
    """Kernel name ('vda', 'nvme0n1') of the whole disk holding the filesystem of `path`, if any."""
    st = os.stat(path)
    sysdev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not sysdev.exists():
        return None
    real = sysdev.resolve()
    # A partition's sysfs directory sits inside its disk's directory.
    if (real / "partition").exists():
        real = real.parent
    return real.name


def _sys_read(name: str, rel: str) -> str | None:
    # /sys/class/block has partitions too (sda1, nvme0n1p2, loop0p1); /sys/block has whole disks only.
    try:
        return (Path("/sys/class/block") / name / rel).read_text().strip()
    except OSError:
        return None


def _whole_disk(name: str) -> str:
    """The disk a partition belongs to ('sda' for 'sda1'); a whole disk's own name."""
    real = (Path("/sys/class/block") / name).resolve()
    return real.parent.name if (real / "partition").exists() else name


def disk_identity(name: str) -> dict:
    """What the kernel says a disk or partition is: model, serial/wwid, size, rotational, scheduler (a
    partition's model, serial, queue are its disk's; its size is its own)."""
    disk = _whole_disk(name)
    sectors = _sys_read(name, "size")
    return {
        "kernel_name": name,
        **({"partition_of": disk} if disk != name else {}),
        "model": _sys_read(disk, "device/model"),
        "vendor": _sys_read(disk, "device/vendor"),
        "serial": _sys_read(disk, "device/serial") or _sys_read(disk, "serial"),
        "wwid": _sys_read(disk, "device/wwid") or _sys_read(disk, "wwid"),
        "size_bytes": int(sectors) * 512 if sectors else None,
        "rotational": _sys_read(disk, "queue/rotational"),
        "scheduler": _sys_read(disk, "queue/scheduler"),
    }


_DISKSTAT_FIELDS = ("reads", "reads_merged", "sectors_read", "read_ms", "writes", "writes_merged",
                    "sectors_written", "write_ms", "in_flight", "io_ms", "weighted_io_ms")


def diskstats(name: str) -> dict[str, int]:
    """Cumulative counters of /sys/class/block/NAME/stat, a disk's or a partition's (Documentation/block/stat.rst)."""
    text = _sys_read(name, "stat")
    if text is None:
        return {}
    values = [int(v) for v in text.split()]
    return dict(zip(_DISKSTAT_FIELDS, values, strict=False))


def _mounted_sources() -> set[str]:
    """What is mounted: each mount's source as written (/dev/loop0) and its device number ('7:0').

    The number catches a device mounted under another name (a second device node, a path in another tree):
    mountinfo prints the source as the mount was asked for, the number is the kernel's."""
    out = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        parts = line.split(" - ", 1)
        if len(parts) == 2:
            out.add(parts[1].split()[1])
            out.add(parts[0].split()[2])
    return out


def _swaps() -> set[str]:
    """Swap areas by name as /proc/swaps prints them and, for block devices, by device number ('7:0')."""
    lines = Path("/proc/swaps").read_text().splitlines()[1:]
    out = set()
    for line in lines:
        if not line.strip():
            continue
        name = line.split()[0].replace("\\040", " ")
        out.add(name)
        try:
            st = os.stat(name)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            out.add(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
    return out


def _devnum(name: str) -> str | None:
    """'major:minor' of a disk or partition by kernel name ('7:0', '259:1')."""
    try:
        return (Path("/sys/class/block") / name / "dev").read_text().strip()
    except OSError:
        return None


def check_destroyable(rig: Rig, device: Device) -> Path:
    """Resolve a `block` device and prove it is safe to overwrite; returns the /dev node. Raises DeviceRefused."""
    where = f"{rig.source}: devices.{device.name}"
    if device.type != "block" or not device.path:
        raise DeviceRefused(f"{where}: not a block device")
    if not rig.enabled:
        raise DeviceRefused(f"{where}: the rig is disabled (set enabled: true once you have read the README)")
    if not rig.allow_destroy:
        raise DeviceRefused(f"{where}: allow_destroy is not true; refusing to overwrite {device.path}")
    if not is_stable_id(device.path):
        raise DeviceRefused(f"{where}: {device.path} is not a /dev/disk/by-id name")
    link = Path(device.path)
    if not link.exists():
        raise DeviceRefused(f"{where}: {device.path} does not exist")
    node = link.resolve()
    # A stable-id link to anything but a block device (a regular file, a directory) would otherwise pass every
    # check below (no holders, not mounted, opens exclusively) and be handed to qemu-storage-daemon as one.
    if not stat.S_ISBLK(os.stat(node).st_mode):
        raise DeviceRefused(f"{where}: {device.path} -> {node} is not a block device")
    name = node.name
    holders = Path("/sys/class/block") / name / "holders"
    if holders.exists() and any(holders.iterdir()):
        raise DeviceRefused(f"{where}: {node} is held by {', '.join(p.name for p in holders.iterdir())}")
    parts = [p.name for p in (Path("/sys/class/block") / name).glob(f"{name}*") if p.name != name]
    mounted, swaps = _mounted_sources(), _swaps()
    for kernel_name, candidate in [(name, str(node)), *((p, f"/dev/{p}") for p in parts)]:
        number = _devnum(kernel_name)
        if candidate in mounted or (number and number in mounted):
            raise DeviceRefused(f"{where}: {candidate} is mounted")
        if candidate in swaps or (number and number in swaps):
            raise DeviceRefused(f"{where}: {candidate} is a swap device")
    try:
        fd = os.open(node, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise DeviceRefused(f"{where}: {node} is in use (exclusive open failed)") from exc
        raise DeviceRefused(f"{where}: cannot open {node}: {exc.strerror}") from exc
    os.close(fd)
    size = os.stat(node).st_size or (disk_identity(name).get("size_bytes") or 0)
    if size and device.capacity > size:
        raise DeviceRefused(f"{where}: capacity {device.capacity} exceeds the device's {size} bytes")
    return node


def identity(rig: Rig, device: Device) -> dict:
    """Provenance of a rig device: what it is and, for files, which disk holds them."""
    info: dict = {"name": device.name, "type": device.type, "medium": device.medium,
                  "capacity_bytes": device.capacity, "emulated": device.emulated,
                  "description": device.description}
    if device.type == "block" and device.path:
        info["path"] = device.path
        node = Path(device.path).resolve()
        info["disk"] = disk_identity(node.name) if node.exists() else None
    else:
        rig.work_dir.mkdir(parents=True, exist_ok=True)
        name = block_name_of_path(rig.work_dir)
        info["work_dir"] = str(rig.work_dir)
        info["host_disk"] = disk_identity(name) if name else None
    if device.spindle:
        info["spindle"] = device.spindle
    if device.throttle is not None:     # the device's own rates (snaptax.host.blkio), as the rig file gave them
        info["throttle"] = {k: v for k, v in asdict(device.throttle).items() if v is not None}
    return info
