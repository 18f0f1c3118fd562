"""Launching the copy-on-first-write volume: one nbdkit running the C plugin (cofw.c, built by build.py), driven
over the control socket (control.py).

Lower level than the engine (snaptax.engines.cofw, which adds a rig device and the SnapshotEngine interface):
used by the engine, the integrity tests, the QEMU validation (validate.py) and the bench (snaptax.bench.cofw).
Nothing here imports from snaptax.engines: the engine imports this module, never the reverse.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, EngineError
from ..host.procs import ProcessGroup, require
from ..paths import COFW_PLUGIN
from .build import ensure_plugin
from .control import ControlClient, try_ping
from .spec import DURABILITY, CofwConfig

PLUGIN = COFW_PLUGIN


@dataclass(frozen=True)
class CofwEngineConfig:
    """One copy-on-first-write configuration.

    page_size: bytes copied per first write (SQL Server: 8 KiB; QEMU copy-before-write: 64 KiB).
    durability: 'sync' (copy fdatasync'ed before the source write: crash-safe) or 'none' (bare copy cost).
    direct: O_DIRECT on the volume and snapshot files, as qemu-storage-daemon's cache.direct=on for the other
        engines (the host page cache would otherwise absorb the copies).
    threads: nbdkit worker threads per connection.
    extent_size: allocation unit when the snapshots have a device of their own (NTFS: 64 KiB).
    snapdev_connections: NBD connections to such a device (concurrent copies; a libnbd call holds its handle).
    pushers: requests that may copy at once (0: any number); 1 is a database statement running in one thread,
        which pushes each page's copies itself before changing the page (cofw.c).
    statement_ns: that statement's own work per page written (ns), done by the pusher before the page's copies, with
        or without snapshots (0: none; needs pushers > 0).
    """

    name: str = "cofw8k"
    page_size: int = 8192
    durability: str = "sync"
    direct: bool = True
    threads: int = 16
    extent_size: int = 65536
    snapdev_connections: int = 16            # as many as nbdkit threads: every request thread can copy at once
    pushers: int = 0
    statement_ns: int = 0
    analogue: str = "SQL Server database snapshot (sparse file, 8 KiB pages)"

    def __post_init__(self) -> None:
        src = f"cofw config {self.name!r}"
        if self.threads < 1:
            raise ConfigError(src, "threads", "must be >= 1")
        if self.durability not in DURABILITY:
            raise ConfigError(src, "durability", f"must be one of {', '.join(DURABILITY)}")
        self.core()  # validates page_size against direct

    def core(self) -> CofwConfig:
        return CofwConfig(page_size=self.page_size, durability=self.durability, direct=self.direct,
                          extent_size=self.extent_size, pushers=self.pushers,
                          statement_ns=self.statement_ns)


def plugin_available() -> Path:
    """The built plugin (rebuilt if its source is newer); MissingTool naming the package when nbdkit, the
    compiler or a header package is missing."""
    require("nbdkit")
    return ensure_plugin()


class CofwServer:
    """One nbdkit serving a copy-on-first-write volume; started and stopped through `group`."""

    def __init__(self, group: ProcessGroup, run_dir: Path, source: Path, snapshot_dir: Path,
                 config: CofwEngineConfig, size: int | None = None, snapshot_device: str | None = None) -> None:
        """`snapshot_device`: an NBD URI or a path for the snapshots' pages (plugin parameter snapdev)."""
        self.group, self.run_dir = group, Path(run_dir)
        self.snapshot_device = snapshot_device
        self.source, self.snapshot_dir = Path(source), Path(snapshot_dir)
        self.config, self.size = config, size
        self.control: ControlClient | None = None
        self.pid: int | None = None        # the nbdkit's, once started (the engine admits it to its blkio group)

    @property
    def nbd_socket(self) -> Path:
        return self.run_dir / "nbd.sock"

    @property
    def control_socket(self) -> Path:
        return self.run_dir / "control.sock"

    def uri(self, export: str = "live") -> str:
        return f"nbd+unix:///{export}?socket={self.nbd_socket}"

    def start(self) -> CofwServer:
        plugin = plugin_available()
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
        argv += [str(plugin), f"source={self.source}", f"snapdir={self.snapshot_dir}",
                 f"control={self.control_socket}", *c.core().plugin_args()]
        if c.direct:
            argv += ["minblock=4096"]
        if self.size is not None:
            argv += [f"size={self.size}"]
        if self.snapshot_device is not None:
            argv += [f"snapdev={self.snapshot_device}", f"snapdev_connections={c.snapdev_connections}",
                     f"extent_size={c.extent_size}"]
        log = self.run_dir / "nbdkit.log"
        try:
            child = self.group.spawn(argv, name="nbdkit-cofw", log_path=log,
                             ready=lambda: self.nbd_socket.exists() and try_ping(self.control_socket))
        except EngineError as exc:
            # The plugin reports why in nbdkit's "error:" line (nbdkit: PLUGIN[1]: error: MESSAGE).
            lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
            errors = [ln.split("error: ", 1)[1] for ln in lines if "error: " in ln]
            if errors or lines:
                why = errors[-1] if errors else lines[-1].strip()   # the log may hold earlier runs
                raise EngineError(f"cofw nbdkit did not start: {why} (log: {log})") from exc
            raise
        self.pid = child.proc.pid
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
        """The plugin's cumulative counters (snaptax.cofw.spec.COUNTERS) plus page_size, the snapshots, their copied
        pages and times, and snapshot_allocated_bytes."""
        return self.call("counters")

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None


__all__ = ["PLUGIN", "CofwEngineConfig", "CofwServer", "plugin_available"]
