"""qemu-storage-daemon: started, driven over QMP, and exported over NBD on unix sockets.

The daemon is the real I/O path of the qcow2 engine: fio (ioengine=nbd) → NBD unix socket → qsd → block
graph (qcow2 chain over raw regions of a device) → file / host_device / nbd protocol node. Devices are carved
into regions; each region has its own protocol node (with locking off) because two raw offset/size children of
one protocol node conflict once a writable qcow2 sits on top of one of them.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import EngineError
from .procs import ProcessGroup, unix_socket_accepts
from .qmp import QMPClient

# Region boundaries are aligned so that qcow2 clusters (≤ 2 MiB) never straddle a region.
REGION_ALIGN = 2 << 20
# How the daemon's file and host_device nodes submit I/O: Linux native AIO, the interface fio's libaio uses on the
# bench's direct path, so that harness_nbd_over_direct compares the daemon's cost and not two ways of submitting.
# `make bench` measures io_uring beside it (harness_nbd_io_uring_over_direct, same rounds, same bytes): on these
# 2-core machines the two were within the rounds' spread, native ahead in most sessions by a few per cent.
# Native AIO needs O_DIRECT, which every node here opens with.
Aio = Literal["native", "io_uring"]
FILE_AIO: Aio = "native"


@dataclass
class StorageDaemon:
    """One qemu-storage-daemon with a QMP monitor and an NBD server, owned by a ProcessGroup."""

    group: ProcessGroup
    run_dir: Path
    qmp: QMPClient | None = None
    pid: int | None = None

    @property
    def qmp_socket(self) -> Path:
        return self.run_dir / "qmp.sock"

    @property
    def nbd_socket(self) -> Path:
        return self.run_dir / "nbd.sock"

    def start(self) -> StorageDaemon:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.group.own(self.run_dir)
        for sock in (self.qmp_socket, self.nbd_socket):
            if sock.exists():
                sock.unlink()
        argv = ["qemu-storage-daemon",
                "--chardev", f"socket,path={self.qmp_socket},server=on,wait=off,id=qmp0",
                "--monitor", "chardev=qmp0",
                "--nbd-server", f"addr.type=unix,addr.path={self.nbd_socket},max-connections=0"]
        child = self.group.spawn(argv, name="qemu-storage-daemon", log_path=self.run_dir / "qsd.log",
                                 ready=lambda: unix_socket_accepts(self.qmp_socket) and self.nbd_socket.exists())
        self.pid = child.proc.pid
        self.qmp = QMPClient(self.qmp_socket).connect()
        return self

    def execute(self, command: str, **arguments: Any) -> Any:
        if self.qmp is None:
            raise EngineError("qemu-storage-daemon is not running")
        return self.qmp.execute(command, **arguments)

    def export(self, node: str, name: str) -> str:
        """Export `node` writable over NBD as `name`; returns the NBD URI for fio."""
        self.execute("block-export-add", id=f"exp-{name}", type="nbd", **{"node-name": node},
                     name=name, writable=True)
        return self.uri(name)

    def unexport(self, name: str) -> None:
        self.execute("block-export-del", id=f"exp-{name}")

    def uri(self, name: str) -> str:
        return f"nbd+unix:///{name}?socket={self.nbd_socket}"


@dataclass(frozen=True)
class DeviceRegion:
    """A part of a rig device carved out for one image (RegionStore): its place on the device and its block nodes.
    Not spindle.predict.Region, which is a workload's address range and the share of commands that land in it."""

    index: int
    offset: int
    size: int
    protocol_node: str
    node: str  # the raw offset/size node images are placed on


@dataclass
class RegionStore:
    """Carves one device into regions, each a raw offset/size node on its own protocol node.

    `protocol` is the blockdev-add argument set for the device (driver file / host_device / nbd);
    regions are handed out first-fit from a free list so freed space near the start is reused, as a
    filesystem would place a new delta file.
    """

    daemon: StorageDaemon
    protocol: dict[str, Any]
    capacity: int
    regions: dict[str, DeviceRegion] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=itertools.count)

    def allocate(self, size: int, tag: str) -> DeviceRegion:
        size = -(-size // REGION_ALIGN) * REGION_ALIGN
        offset = 0
        for r in sorted(self.regions.values(), key=lambda r: r.offset):
            if r.offset - offset >= size:
                break
            offset = max(offset, r.offset + r.size)
        if offset + size > self.capacity:
            raise EngineError(f"device full: cannot place {size} bytes for {tag} "
                              f"(capacity {self.capacity}, {len(self.regions)} regions in use)")
        index = next(self._ids)
        proto, node = f"dev{index}-{tag}", f"reg{index}-{tag}"
        self.daemon.execute("blockdev-add", **{"node-name": proto, **self.protocol})
        self.daemon.execute("blockdev-add", driver="raw", **{"node-name": node}, file=proto,
                            offset=offset, size=size)
        region = DeviceRegion(index, offset, size, proto, node)
        self.regions[node] = region
        return region

    def free(self, region: DeviceRegion) -> None:
        self.daemon.execute("blockdev-del", **{"node-name": region.node})
        self.daemon.execute("blockdev-del", **{"node-name": region.protocol_node})
        del self.regions[region.node]


def protocol_for(device_kind: str, *, path: Path | str | None = None, nbd_socket: Path | None = None,
                 nbd_export: str | None = None, aio: Aio = FILE_AIO) -> dict[str, Any]:
    """blockdev-add arguments of a device's protocol node; direct I/O so the host page cache is not measured.
    `aio` (file and block only): 'native' or 'io_uring' (the bench's comparison path)."""
    if aio not in ("native", "io_uring"):
        raise EngineError(f"protocol node: aio must be 'native' or 'io_uring', got {aio!r}")
    if device_kind == "file":
        return {"driver": "file", "filename": str(path), "aio": aio, "locking": "off",
                "cache": {"direct": True, "no-flush": False}}
    if device_kind == "block":
        return {"driver": "host_device", "filename": str(path), "aio": aio, "locking": "off",
                "cache": {"direct": True, "no-flush": False}}
    if device_kind == "nbd":
        server = {"type": "unix", "path": str(nbd_socket)}
        return {"driver": "nbd", "server": server, **({"export": nbd_export} if nbd_export else {})}
    raise EngineError(f"no protocol node for device kind {device_kind!r}")


def make_sparse_file(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    os.chmod(path, 0o600)
