"""Throttled devices: a rig device given a rate of its own by a cgroup v1 blkio group (issue 46.6).

This host has one (virtual) disk. Two file devices on it share its bandwidth: a write to one slows the other, which
two separate devices would not do. A device with a `throttle` (rig file) is capped at its own rates
(`blkio.throttle.{read,write}_{bps,iops}_device` on its loop or block node); as long as the caps of the devices
used at once sum to less than the host disk serves, each device runs at its cap whatever the other does: two
devices of one class, each with a rate of its own. The caps bind only the I/O of the processes admitted to the
group (the engine's server), not the loop device's own backing I/O, so they are the device's rate as its user sees
it. cgroup v2's `io.max` would do the same; here the io controller is held by v1 (../shared/notes/platform.md).

A group is made per engine (a process is in one blkio group at a time, and an engine may use two throttled devices),
named `snaptax-<pid>-<n>` under the blkio hierarchy, and removed when the engine's ProcessGroup closes (its
processes have stopped by then, so the group is empty); `remove_stale` removes groups a killed run left.
"""
from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, EngineError
from .procs import ProcessGroup

BLKIO_ROOT = Path("/sys/fs/cgroup/blkio")
PREFIX = "snaptax-"
_serial = itertools.count()


@dataclass(frozen=True)
class DeviceThrottle:
    """A device's own rates (rig file `throttle`): bytes and commands per second, per direction; None leaves a
    direction or unit unlimited. MB is 10^6 bytes, as datasheets count."""

    read_mb_s: float | None = None
    write_mb_s: float | None = None
    read_iops: int | None = None
    write_iops: int | None = None

    FIELDS = ("read_mb_s", "write_mb_s", "read_iops", "write_iops")

    def limits(self) -> dict[str, int]:
        """The blkio files and the values to write for this device (bps rounded to whole bytes)."""
        out = {}
        if self.read_mb_s is not None:
            out["blkio.throttle.read_bps_device"] = round(self.read_mb_s * 1e6)
        if self.write_mb_s is not None:
            out["blkio.throttle.write_bps_device"] = round(self.write_mb_s * 1e6)
        if self.read_iops is not None:
            out["blkio.throttle.read_iops_device"] = self.read_iops
        if self.write_iops is not None:
            out["blkio.throttle.write_iops_device"] = self.write_iops
        return out


def parse_throttle(raw: object, source: str, where: str) -> DeviceThrottle:
    """A rig file's `throttle` mapping, every field checked and named in the error."""
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(source, where, f"expected a mapping with any of {', '.join(DeviceThrottle.FIELDS)}")
    unknown = set(raw) - set(DeviceThrottle.FIELDS)
    if unknown:
        raise ConfigError(source, f"{where}.{sorted(unknown)[0]}", "unknown field")
    values: dict[str, float | int] = {}
    for name, value in raw.items():
        integral = name.endswith("_iops")
        ok = isinstance(value, int) if integral else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok or value <= 0:
            raise ConfigError(source, f"{where}.{name}",
                              f"expected a positive {'whole number' if integral else 'number'}, got {value!r}")
        values[name] = value if integral else float(value)
    return DeviceThrottle(**values)  # type: ignore[arg-type]


def available(root: Path = BLKIO_ROOT) -> bool:
    return (root / "blkio.throttle.write_bps_device").exists() and (root / "cgroup.procs").exists()


def require(source: str, device_name: str, root: Path = BLKIO_ROOT) -> None:
    """ConfigError naming the throttled device's field when this host cannot throttle."""
    if not available(root):
        raise ConfigError(source, f"devices.{device_name}.throttle",
                          f"needs the cgroup v1 blkio controller (blkio.throttle.* under {root}), which this host "
                          "lacks")


def _major_minor(node: Path) -> str:
    st = os.stat(node)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


class BlkioGroup:
    """One engine's blkio group: `limit` a device node, `admit` the processes whose I/O the limits bind."""

    def __init__(self, group: ProcessGroup, root: Path = BLKIO_ROOT) -> None:
        if not available(root):     # open_device names the rig field first; this guards other callers
            raise EngineError(f"no cgroup v1 blkio controller with throttling under {root}")
        self.path = root / f"{PREFIX}{os.getpid()}-{next(_serial)}"
        self.path.mkdir()
        group.defer(self.remove)
        self.limited: dict[str, dict[str, int]] = {}     # major:minor -> the limits written

    def limit(self, node: Path, throttle: DeviceThrottle) -> None:
        majmin = _major_minor(node)
        for name, value in throttle.limits().items():
            (self.path / name).write_text(f"{majmin} {value}\n")
        self.limited[majmin] = throttle.limits()

    def admit(self, pid: int) -> None:
        """Move process `pid` (all its threads: cgroup.procs) into the group."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def remove(self) -> None:
        remove_group(self.path)


def remove_group(path: Path) -> bool:
    """Remove a blkio group, moving any process still in it back to the root first (rmdir refuses a group with
    tasks). False if it could not be removed."""
    procs = path / "cgroup.procs"
    with contextlib.suppress(OSError):
        for pid in procs.read_text().split():
            with contextlib.suppress(OSError):
                (path.parent / "cgroup.procs").write_text(f"{pid}\n")
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def remove_stale(root: Path = BLKIO_ROOT) -> list[str]:
    """Remove blkio groups left by snaptax processes that no longer run (a killed run)."""
    if not root.is_dir():
        return []
    removed = []
    for path in root.glob(f"{PREFIX}*"):
        pid = path.name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and Path(f"/proc/{pid}").exists():
            continue
        if remove_group(path):
            removed.append(path.name)
    return removed


__all__ = ["BLKIO_ROOT", "DeviceThrottle", "parse_throttle", "available", "require", "BlkioGroup", "remove_group",
           "remove_stale"]
