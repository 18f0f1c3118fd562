"""Launching the copy-on-first-write volume: one nbdkit running the Python plugin (nbdkit_plugin.py), driven over
the control socket (control.py).

Lower level than the engine (snaptax.engines.cofw, which adds a rig device and the SnapshotEngine interface):
used by the engine, the integrity tests, the QEMU validation (validate.py) and the bench (bench.py). Nothing here
imports from snaptax.engines: the engine imports this module, never the reverse.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, EngineError
from ..procs import ProcessGroup, require, run
from .control import ControlClient, try_ping
from .core import DURABILITY, CofwConfig

PLUGIN = Path(__file__).resolve().parent / "nbdkit_plugin.py"


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
    """

    name: str = "cofw8k"
    page_size: int = 8192
    durability: str = "sync"
    direct: bool = True
    threads: int = 16
    extent_size: int = 65536
    snapdev_connections: int = 16            # as many as nbdkit threads: every request thread can copy at once
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
                          extent_size=self.extent_size)


def plugin_available() -> None:
    """Raise EngineError unless nbdkit and its python plugin can run."""
    require("nbdkit")
    # nbdkit's python plugin embeds the system python3; without the Debian package it fails at load time.
    if run(["nbdkit", "python", "--version"], check=False, timeout=30).returncode != 0:
        raise EngineError("nbdkit cannot load its python plugin: install the Debian package 'nbdkit-plugin-python'")


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

    @property
    def nbd_socket(self) -> Path:
        return self.run_dir / "nbd.sock"

    @property
    def control_socket(self) -> Path:
        return self.run_dir / "control.sock"

    def uri(self, export: str = "live") -> str:
        return f"nbd+unix:///{export}?socket={self.nbd_socket}"

    def start(self) -> CofwServer:
        plugin_available()
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
        if self.snapshot_device is not None:
            argv += [f"snapdev={self.snapshot_device}", f"snapdev_connections={c.snapdev_connections}",
                     f"extent_size={c.extent_size}"]
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
        """The plugin's cumulative counters (snaptax.cofw.core.Counters) plus page_size and per-snapshot pages."""
        return self.call("counters")

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None


__all__ = ["PLUGIN", "CofwEngineConfig", "CofwServer", "plugin_available"]
