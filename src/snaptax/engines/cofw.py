"""The sparse-file copy-on-first-write engine: SQL Server database snapshots, served over NBD by nbdkit.

The live volume is a file (or block device) written in place; each snapshot is a sparse file in `snapshot_dir`
that receives the old contents of a page (default 8 KiB) before that page's first write after the snapshot.
The bookkeeping is snaptax.cofw.core; nbdkit's Python plugin (snaptax/cofw/nbdkit_plugin.py) serves the live
volume as export `live` and each snapshot as read-only `snap-NAME`; snapshots are created and deleted at run time
over a unix control socket (snaptax.cofw.control). Crash semantics: see snaptax.cofw.core.

Delete is SQL Server's DROP DATABASE of a snapshot: the sparse file is discarded; nothing is merged.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .. import fio
from ..cofw.control import ControlClient, try_ping
from ..cofw.core import DURABILITY, SNAPSHOT_SUFFIX, CofwConfig
from ..errors import ConfigError, EngineError
from ..procs import ProcessGroup, require, run
from .base import SnapshotEngine

PLUGIN = Path(__file__).resolve().parents[1] / "cofw" / "nbdkit_plugin.py"


@dataclass(frozen=True)
class CofwEngineConfig:
    """One copy-on-first-write configuration.

    page_size: bytes copied per first write (SQL Server: 8 KiB; QEMU copy-before-write: 64 KiB).
    durability: 'sync' (copy fdatasync'ed before the source write: crash-safe) or 'none' (bare copy cost).
    direct: O_DIRECT on the volume and snapshot files, as qemu-storage-daemon's cache.direct=on for the other
        engines (the host page cache would otherwise absorb the copies).
    threads: nbdkit worker threads per connection.
    """

    name: str = "cofw8k"
    page_size: int = 8192
    durability: str = "sync"
    direct: bool = True
    threads: int = 16
    analogue: str = "SQL Server database snapshot (sparse file, 8 KiB pages)"

    def __post_init__(self) -> None:
        src = f"cofw config {self.name!r}"
        if self.threads < 1:
            raise ConfigError(src, "threads", "must be >= 1")
        if self.durability not in DURABILITY:
            raise ConfigError(src, "durability", f"must be one of {', '.join(DURABILITY)}")
        self.core()  # validates page_size against direct

    def core(self) -> CofwConfig:
        return CofwConfig(page_size=self.page_size, durability=self.durability, direct=self.direct)


def _plugin_available() -> None:
    require("nbdkit")
    # nbdkit's python plugin embeds the system python3; without the Debian package it fails at load time.
    if run(["nbdkit", "python", "--version"], check=False, timeout=30).returncode != 0:
        raise EngineError("nbdkit cannot load its python plugin: install the Debian package 'nbdkit-plugin-python'")


class CofwServer:
    """One nbdkit serving a copy-on-first-write volume; started and stopped through `group`.

    Lower level than CofwEngine (no rig): used by the engine, the integrity tests, the QEMU validation and the bench.
    """

    def __init__(self, group: ProcessGroup, run_dir: Path, source: Path, snapshot_dir: Path,
                 config: CofwEngineConfig, size: int | None = None) -> None:
        self.group, self.run_dir, self.source, self.snapshot_dir = group, Path(run_dir), Path(source), Path(snapshot_dir)
        self.config, self.size = config, size
        self.control: ControlClient | None = None

    @property
    def nbd_socket(self) -> Path:
        return self.run_dir / "nbd.sock"

    @property
    def control_socket(self) -> Path:
        return self.run_dir / "control.sock"

    def uri(self, export: str = "live") -> str:
        return f"nbd+unix:///{export}?socket={self.nbd_socket}"

    def start(self) -> "CofwServer":
        _plugin_available()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        for sock in (self.nbd_socket, self.control_socket):   # nbdkit leaves its socket behind on exit
            if sock.exists():
                sock.unlink()
        c = self.config
        argv = ["nbdkit", "-f", "-U", str(self.nbd_socket), "-t", str(c.threads)]
        if c.direct:
            # O_DIRECT needs 4 KiB-aligned requests; the filter turns unaligned ones into serialised RMW.
            argv += ["--filter=blocksize"]
        argv += ["python", str(PLUGIN), f"source={self.source}", f"snapdir={self.snapshot_dir}",
                 f"control={self.control_socket}", f"page_size={c.page_size}", f"durability={c.durability}",
                 f"direct={int(c.direct)}"]
        if c.direct:
            argv += ["minblock=4096"]
        if self.size is not None:
            argv += [f"size={self.size}"]
        env = dict(os.environ)
        # The plugin runs in nbdkit's embedded system python: a venv's or pyenv's settings must not leak into it.
        for var in ("PYTHONHOME", "PYTHONPATH", "VIRTUAL_ENV"):
            env.pop(var, None)
        log = self.run_dir / "nbdkit.log"
        try:
            self.group.spawn(argv, name="nbdkit-cofw", log_path=log,
                             ready=lambda: self.nbd_socket.exists() and try_ping(self.control_socket), env=env)
        except EngineError as exc:
            # The plugin's failure is a Python traceback in the log; its last line is the one that matters.
            lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
            if lines:
                raise EngineError(f"cofw nbdkit did not start: {lines[-1].strip()} (log: {log})") from exc
            raise
        self.control = ControlClient(self.control_socket)
        return self

    def call(self, op: str, **args: Any) -> Any:
        if self.control is None:
            raise EngineError("the cofw nbdkit is not running")
        return self.control.call(op, **args)

    def create(self, name: str) -> str:
        """Take snapshot `name`; returns its export name."""
        return self.call("create", name=name)["export"]

    def delete(self, name: str) -> None:
        self.call("delete", name=name)

    def counters(self) -> dict[str, Any]:
        return self.call("counters")

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None


class CofwEngine(SnapshotEngine):
    """A live volume of `disk_size` bytes on one rig device, with any number of copy-on-first-write snapshots."""

    kind = "cofw"

    def __init__(self, rig, device, config: CofwEngineConfig, disk_size: int,
                 snapshot_dir: Path | None = None) -> None:
        if disk_size > device.capacity:
            raise ConfigError(rig.source, f"devices.{device.name}.capacity",
                              f"smaller than the study's disk size {disk_size}")
        if disk_size % config.page_size:
            raise ConfigError(f"cofw config {config.name!r}", "page_size",
                              f"does not divide the disk size {disk_size}")
        if device.type not in ("file", "block"):
            # The core needs a file descriptor; an emulated spindle is an NBD export (not done yet).
            raise ConfigError(rig.source, f"devices.{device.name}.type",
                              f"the cofw engine runs on file or block devices, not {device.type!r}")
        self.rig, self.device, self.config, self.disk_size = rig, device, config, disk_size
        self._snapshot_dir = snapshot_dir
        self.group = ProcessGroup()
        self.snapshots: list[str] = []        # oldest first
        self._serial = 0
        self.server: CofwServer | None = None

    def __enter__(self) -> "CofwEngine":
        from ..backends import open_device
        try:
            tag = f"cofw-{self.config.name}"
            backend = open_device(self.rig, self.device, self.group, tag=tag)
            self._host_counters = backend.host_counters
            run_dir = self.group.own(self.rig.rig_work_dir / "run" / tag)
            snap_dir = self._snapshot_dir or run_dir / "snapshots"
            self.server = CofwServer(self.group, run_dir, backend.path, snap_dir, self.config,
                                     size=self.disk_size).start()
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
        """Engine counters (cofw_pages_copied, cofw_bytes_copied, cofw_metadata_ops, ...) and host disk counters."""
        assert self.server
        raw = self.server.counters()
        out: dict[str, float] = {f"cofw_{k}": float(v) for k, v in raw.items() if isinstance(v, (int, float))}
        out.update(self._host_counters())
        return out

    def describe(self) -> dict[str, Any]:
        return {"engine": self.kind, "config": asdict(self.config), "disk_size": self.disk_size,
                "device": self.device.name, "export": "live", "snapshot_suffix": SNAPSHOT_SUFFIX}
