"""From a rig device to something an engine can put images on: a protocol node and host-level counters.

  file    → a sparse image file in the rig's work directory, attached as a direct-I/O loop device so that
            /sys/block/loopN/stat counts exactly the I/O the "disk" received (host level, as perfmon does);
            file and loop device are removed when the group closes
  block   → the real device, after snaptax.host.devices.check_destroyable has proved it safe
  spindle → an emulated mechanical disk or array served by nbdkit (snaptax.spindle)
A file or block device with a `throttle` gets its rates on its node in the engine's blkio group (snaptax.host.blkio),
binding the processes the engine admits to it; an engine that admits none cannot use a throttled device.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from . import blkio, devices, procs, qsd
from .procs import ProcessGroup
from .rig import Device, Rig


@dataclass(frozen=True)
class DeviceBackend:
    device: Device
    kind: str                       # 'file', 'block' or 'nbd'
    path: Path | None               # file or block node
    nbd_socket: Path | None
    nbd_export: str | None
    host_counters: Callable[[], dict[str, float]]
    # an emulated device's levels (commands queued now, per member and in the emulator), which counters leave out:
    # what a diagnosis of a hung request reads (None: not emulated)
    levels: Callable[[], dict[str, Any]] | None = None

    def protocol(self, aio: qsd.Aio = qsd.FILE_AIO) -> dict[str, Any]:
        return qsd.protocol_for(self.kind, path=self.path, nbd_socket=self.nbd_socket,
                                nbd_export=self.nbd_export, aio=aio)


def _disk_counters(name: str | None) -> Callable[[], dict[str, float]]:
    def read() -> dict[str, float]:
        stats = devices.diskstats(name) if name else {}
        return {f"host.{k}": v for k, v in stats.items() if k in
                ("reads", "writes", "sectors_read", "sectors_written", "io_ms")}
    return read


def attach_loop(path: Path, group: ProcessGroup) -> Path:
    """Attach `path` as a direct-I/O loop device, detached again when `group` closes."""
    out = procs.run(["losetup", "--find", "--show", "--direct-io=on", str(path)], timeout=30)
    loop = Path(out.stdout.decode().strip())
    group.defer(lambda: procs.run(["losetup", "-d", str(loop)], check=False, timeout=30))
    return loop


def detach_stale_loops(work_dir: Path) -> list[str]:
    """Detach loop devices left behind (e.g. by a killed run) whose backing file lies under `work_dir`."""
    try:
        out = procs.run(["losetup", "--list", "--json", "-O", "NAME,BACK-FILE"], timeout=30, check=False)
        entries = json.loads(out.stdout or b"{}").get("loopdevices", [])
    except (ValueError, OSError):
        return []
    stale = [e["name"] for e in entries
             if (e.get("back-file") or "").split(" (deleted)")[0].startswith(str(work_dir) + "/")]
    for name in stale:
        procs.run(["losetup", "-d", name], check=False, timeout=30)
    return stale


def open_device(rig: Rig, device: Device, group: ProcessGroup, tag: str = "",
                throttles: blkio.BlkioGroup | None = None) -> DeviceBackend:
    """Prepare `device` for one engine; everything made here is removed when `group` closes. `throttles`: the
    engine's blkio group, where a throttled device's rates are set (the engine admits its server to it)."""
    if device.throttle is not None and throttles is None:   # a BlkioGroup exists only where the host has blkio
        raise ConfigError(rig.source, f"devices.{device.name}.throttle",
                          "this engine does not confine its I/O to a blkio group: use an unthrottled device")
    if device.type == "file":
        path = rig.rig_work_dir / "devices" / f"{device.name}{('-' + tag) if tag else ''}.img"
        group.own(path)
        qsd.make_sparse_file(path, device.capacity)
        loop = attach_loop(path, group)
        if device.throttle is not None and throttles is not None:
            throttles.limit(loop, device.throttle)
        return DeviceBackend(device, "block", loop, None, None, _disk_counters(loop.name))
    if device.type == "block":
        node = devices.check_destroyable(rig, device)
        if device.throttle is not None and throttles is not None:
            throttles.limit(node, device.throttle)
        return DeviceBackend(device, "block", node, None, None, _disk_counters(node.name))
    if device.type == "spindle":
        from ..spindle.serve import serve_device  # the emulator is only needed on rigs that have spindles
        served = serve_device(rig, device, group, tag=tag)
        return DeviceBackend(device, "nbd", None, served.socket, served.export, served.counters, served.levels)
    raise ValueError(f"unknown device type {device.type!r}")
