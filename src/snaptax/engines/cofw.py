"""The sparse-file copy-on-first-write engine: SQL Server database snapshots, served over NBD by nbdkit.

The live volume is a file (or block device) written in place; each snapshot is a sparse file in `snapshot_dir`
that receives the old contents of a page (default 8 KiB) before that page's first write after the snapshot.
The engine is a C nbdkit plugin (src/snaptax/cofw/cofw.c, built by make setup) serving the live volume as export
`live` and each snapshot as read-only `snap-NAME`; snapshots are created and deleted at run time over a unix
control socket (snaptax.cofw.control); snaptax.cofw.launch starts the nbdkit. Crash semantics: cofw.c's header.

Delete is SQL Server's DROP DATABASE of a snapshot: the sparse file is discarded; nothing is merged.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import fio, paths
from ..cofw.launch import CofwEngineConfig, CofwServer
from ..cofw.spec import COUNTERS, SNAPSHOT_SUFFIX
from ..errors import ConfigError, EngineError
from ..host.procs import ProcessGroup
from .base import SnapshotEngine

# The plugin's counters (snaptax.cofw.spec.COUNTERS) recorded per measurement, as engine.<name>. Its constants
# (page_size) and per-snapshot listings are not counters: the page size is in describe().
ENGINE_COUNTERS = COUNTERS


class CofwEngine(SnapshotEngine):
    """A live volume of `disk_size` bytes on one rig device, with any number of copy-on-first-write snapshots."""

    kind = "cofw"

    def __init__(self, rig, device, config: CofwEngineConfig, disk_size: int,
                 snapshot_dir: Path | None = None, snapshot_device=None) -> None:
        """`snapshot_device`: a rig device of its own for the snapshots' pages (SQL Server's sparse files on
        another volume: an emulated spindle, a block device or a file), laid out in 64 KiB extents
        (see cofw.c); default: sparse files beside the run, on the host file system."""
        if disk_size > device.capacity:
            raise ConfigError(rig.source, f"devices.{device.name}.capacity",
                              f"smaller than the study's disk size {disk_size}")
        if disk_size % config.page_size:
            raise ConfigError(f"cofw config {config.name!r}", "page_size",
                              f"does not divide the disk size {disk_size}")
        if device.type not in ("file", "block"):
            # The plugin writes the source through a file descriptor; a spindle source would be an NBD export.
            raise ConfigError(rig.source, f"devices.{device.name}.type",
                              f"the cofw engine runs on file or block devices, not {device.type!r}")
        if snapshot_device is not None and snapshot_device.name == device.name:
            raise ConfigError(rig.source, "snapshot_device",
                              f"is the source device {device.name!r}: snapshots need a device of their own")
        self.rig, self.device, self.config, self.disk_size = rig, device, config, disk_size
        self.snapshot_device = snapshot_device
        # the devices with rates of their own (rig `throttle`): capped in a blkio group the nbdkit joins
        self.throttled = [d for d in (device, snapshot_device) if d is not None and d.throttle is not None]
        self._snapshot_dir = snapshot_dir
        self.group = ProcessGroup()
        self.snapshots: list[str] = []        # oldest first
        self._serial = 0
        self.server: CofwServer | None = None

    def __enter__(self) -> CofwEngine:
        from ..host import blkio
        from ..host.backends import open_device
        try:
            tag = f"cofw-{self.config.name}"
            # A throttled device (seed 004's "storage as fast as the source": two devices of one class on the host's
            # one disk) is capped in a blkio group the nbdkit joins: it does every I/O of the source and the
            # snapshots (snaptax.host.blkio).
            throttles = None
            if self.throttled:
                blkio.require(self.rig.source, self.throttled[0].name)
                throttles = blkio.BlkioGroup(self.group)
            backend = open_device(self.rig, self.device, self.group, tag=tag, throttles=throttles)
            self._host_counters = backend.host_counters
            run_dir = self.group.own(paths.engine_run_dir(self.rig.rig_work_dir, tag))
            snap_dir = self._snapshot_dir or run_dir / "snapshots"
            if backend.path is None:     # open_device gives file and block devices a path (spindles are refused)
                raise EngineError(f"cofw: rig device {self.device.name!r} has no file or block node")
            snapdev = None
            if self.snapshot_device is not None:
                snap_backend = open_device(self.rig, self.snapshot_device, self.group, tag=f"{tag}-snapshots",
                                           throttles=throttles)
                snapdev = snapshot_target(snap_backend)
                host = self._host_counters
                snap_counters = snap_backend.host_counters
                # The snapshot device's own counters, as snapdev.* beside the source's host.*. Its emulator's
                # lateness counters are kept as emulator.* when the source has no emulator of its own (an SSD-class
                # source, snapshots on an emulated array: seed 004), so the run's timing flags judge the one
                # emulated device; with two emulated devices the source's are kept.
                self._host_counters = lambda: _merge_snapdev(host(), snap_counters())
            self.server = CofwServer(self.group, run_dir, backend.path, snap_dir, self.config,
                                     size=self.disk_size, snapshot_device=snapdev).start()
            if throttles is not None:
                assert self.server.pid is not None
                throttles.admit(self.server.pid)
        except BaseException:
            self.group.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.server:
            self.server.close()
        self.group.close()

    @property
    def chain_length(self) -> int:
        return len(self.snapshots)

    def fio_target(self) -> fio.FioTarget:
        assert self.server
        return fio.FioTarget("nbd", uri=self.server.uri("live"))

    def snapshot_uri(self, name: str) -> str:
        """Read-only NBD URI of a snapshot's point-in-time view."""
        assert self.server
        return self.server.uri(f"snap-{name}")

    def take_snapshot(self) -> str:
        assert self.server
        self._serial += 1
        name = f"snap{self._serial}"
        self.server.create(name)
        self.snapshots.append(name)
        return name

    def delete_snapshot(self, which: str = "newest") -> str:
        assert self.server
        if not self.snapshots:
            raise EngineError("no snapshot to delete")
        if which == "newest":
            name = self.snapshots[-1]
        elif which == "oldest":
            name = self.snapshots[0]
        else:
            raise ConfigError("delete_snapshot", "which", f"{which!r} is not 'newest' or 'oldest'")
        self.server.delete(name)
        self.snapshots.remove(name)
        return name

    def counters(self) -> dict[str, float]:
        """Host disk counters (host.*), the engine's copy counters (engine.pages_copied, engine.bytes_copied,
        engine.metadata_ops, ...) and engine.snapshot_allocated_bytes: the bytes the host file system allocated
        to the snapshots' sparse files (0 without snapshots)."""
        assert self.server
        raw = self.server.counters()
        out = self._host_counters()
        out.update({f"engine.{k}": float(raw[k]) for k in ENGINE_COUNTERS})
        for name, times in raw.get("times", {}).items():
            out.update({f"engine.{name}.{k}": float(v) for k, v in times.items()})
        out["engine.snapshot_allocated_bytes"] = float(raw["snapshot_allocated_bytes"])
        return out

    def describe(self) -> dict[str, Any]:
        return {"engine": self.kind, "config": asdict(self.config), "disk_size": self.disk_size,
                "device": self.device.name, "throttled": sorted(d.name for d in self.throttled),
                "snapshot_device": self.snapshot_device.name if self.snapshot_device is not None else None,
                "export": "live", "snapshot_suffix": SNAPSHOT_SUFFIX,
                "page_size": self.config.page_size}


def _merge_snapdev(source: dict[str, float], snapdev: dict[str, float]) -> dict[str, float]:
    """The source's counters plus the snapshot device's host.* as snapdev.*, and its emulator.* when the source
    has none."""
    out = {**source, **{"snapdev." + k[5:]: v for k, v in snapdev.items() if k.startswith("host.")}}
    if not any(k.startswith("emulator.") for k in source):
        out.update({k: v for k, v in snapdev.items() if k.startswith("emulator.")})
    return out


def snapshot_target(backend) -> str:
    """What the plugin's snapdev= takes for a rig device's backend: an NBD URI (emulated spindle) or a path."""
    if backend.kind == "nbd":
        return f"nbd+unix:///{backend.nbd_export or ''}?socket={backend.nbd_socket}"
    if backend.path is None:
        raise EngineError(f"cofw: snapshot device {backend.device.name!r} has no file, block node or NBD export")
    return str(backend.path)
