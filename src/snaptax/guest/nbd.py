"""Host-side NBD exports for the guest's disks: qemu-storage-daemon over a sparse raw file.

Any other NBD server on a unix socket (nbdkit's emulated spindle, a qsd serving a region) works too: the guest only
needs an nbd+unix:// URI. This helper covers the common case of a plain sparse file.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError
from ..host.procs import ProcessGroup
from ..host.qsd import FILE_AIO
from .kernel import tool
from .vm import NbdUri


@dataclass(frozen=True)
class RawFileExport:
    path: Path
    size_bytes: int
    direct: bool = True  # O_DIRECT on the host: the host page cache must not absorb the guest's I/O


def serve_raw_file(pg: ProcessGroup, spec: RawFileExport, socket: Path, export: str = "disk") -> str:
    """Create (sparse) or reuse the file, serve it read-write with qemu-storage-daemon; return its NBD URI."""
    if spec.size_bytes <= 0 or spec.size_bytes % 512:
        raise EngineError(f"raw export {spec.path}: size {spec.size_bytes} must be a positive multiple of 512")
    spec.path.parent.mkdir(parents=True, exist_ok=True)
    with open(spec.path, "ab") as f:
        if f.tell() < spec.size_bytes:
            f.truncate(spec.size_bytes)
    socket.unlink(missing_ok=True)
    pg.own(socket)
    file_node = (f"driver=file,node-name=f0,filename={spec.path},"
                 f"cache.direct={'on' if spec.direct else 'off'},aio={FILE_AIO if spec.direct else 'threads'}")
    argv = [tool("qemu-storage-daemon"), "--blockdev", file_node,
            "--nbd-server", f"addr.type=unix,addr.path={socket}",
            "--export", f"type=nbd,id=e0,node-name=f0,name={export},writable=on"]
    log = socket.with_suffix(".log")
    pg.own(log)
    pg.spawn(argv, name=f"qemu-storage-daemon ({spec.path.name})", log_path=log, ready=socket.exists)
    return str(NbdUri(socket=socket, export=export))
