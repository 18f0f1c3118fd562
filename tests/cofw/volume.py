"""Drive the C plugin from tests the way the old unit tests drove the Python core: a `Volume` starts one nbdkit
running the plugin (through CofwServer) and offers write/read/snapshot calls over NBD and the control socket.

The NBD client is a minimal pure-Python one (fixed newstyle handshake, NBD_OPT_GO, simple replies): the venv
has no libnbd binding, and one blocking connection per thread is what the concurrency tests need.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import threading
from pathlib import Path

from snaptax.cofw.launch import CofwEngineConfig, CofwServer
from snaptax.cofw.spec import allocated_ranges
from snaptax.errors import EngineError
from snaptax.host.procs import ProcessGroup

_IHAVEOPT = 0x49484156454F5054
_OPT_GO, _REP_ACK, _REP_INFO, _INFO_EXPORT = 7, 1, 3, 0
_REQ_MAGIC, _REPLY_MAGIC = 0x25609513, 0x67446698
_CMD_READ, _CMD_WRITE, _CMD_DISC, _CMD_FLUSH = 0, 1, 2, 3


class NbdError(Exception):
    """The server refused the export or failed a request (errno in .errno)."""

    def __init__(self, msg: str, errno: int = 0) -> None:
        super().__init__(msg)
        self.errno = errno


class Nbd:
    """One connection to one export; one request at a time."""

    def __init__(self, sock_path: str | Path, export: str = "live") -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(str(sock_path))
        self._handle = 0
        magic, opt_magic, flags = struct.unpack(">8sQH", self._recv(18))
        assert magic == b"NBDMAGIC" and opt_magic == _IHAVEOPT
        self.s.sendall(struct.pack(">I", 1 | 2))          # FIXED_NEWSTYLE | NO_ZEROES
        name = export.encode()
        data = struct.pack(">I", len(name)) + name + struct.pack(">H", 0)
        self.s.sendall(struct.pack(">QII", _IHAVEOPT, _OPT_GO, len(data)) + data)
        self.size = -1
        while True:
            _, _, rtype, length = struct.unpack(">QIII", self._recv(20))
            payload = self._recv(length)
            if rtype == _REP_ACK:
                break
            if rtype & 0x80000000:
                self.s.close()
                raise NbdError(f"export {export!r} refused: {payload[4:].decode(errors='replace')}")
            if rtype == _REP_INFO and struct.unpack(">H", payload[:2])[0] == _INFO_EXPORT:
                self.size = struct.unpack(">Q", payload[2:10])[0]

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise NbdError("connection closed")
            buf += chunk
        return bytes(buf)

    def _request(self, cmd: int, offset: int, length: int, data: bytes = b"") -> bytes:
        self._handle += 1
        self.s.sendall(struct.pack(">IHHQQI", _REQ_MAGIC, 0, cmd, self._handle, offset, length) + data)
        magic, error, handle = struct.unpack(">IIQ", self._recv(16))
        assert magic == _REPLY_MAGIC and handle == self._handle
        if error:
            raise NbdError(f"NBD command {cmd} at {offset}+{length}: errno {error}", error)
        return self._recv(length) if cmd == _CMD_READ else b""

    def pread(self, length: int, offset: int) -> bytes:
        out = bytearray()
        while len(out) < length:                     # within the server's 32 MiB request limit
            n = min(length - len(out), 16 << 20)
            out += self._request(_CMD_READ, offset + len(out), n)
        return bytes(out)

    def pwrite(self, data: bytes, offset: int) -> None:
        self._request(_CMD_WRITE, offset, len(data), bytes(data))

    def flush(self) -> None:
        self._request(_CMD_FLUSH, 0, 0)

    def close(self) -> None:
        try:
            self.s.sendall(struct.pack(">IHHQQI", _REQ_MAGIC, 0, _CMD_DISC, 0, 0, 0))
        except OSError:
            pass
        self.s.close()


class Volume:
    """The plugin serving `source`, its snapshots in `snapdir` (default: the source's directory, so snapshot
    files sit where the old tests put them), optionally on `snapdev`."""

    def __init__(self, source: Path, *, page_size: int = 8192, durability: str = "sync", direct: bool = False,
                 size: int | None = None, snapdev: Path | str | None = None, snapdir: Path | None = None,
                 extent_size: int = 65536, threads: int = 16, pushers: int = 0,
                 statement_ns: int = 0) -> None:
        self.source = Path(source)
        self.snapdir = Path(snapdir) if snapdir else self.source.parent
        self.config = CofwEngineConfig(name="test", page_size=page_size, durability=durability, direct=direct,
                                       threads=threads, extent_size=extent_size, pushers=pushers,
                                       statement_ns=statement_ns)
        self.size_arg, self.snapdev = size, None if snapdev is None else str(snapdev)
        self.group = ProcessGroup()
        self._local = threading.local()
        self._conns: list[Nbd] = []
        self._lock = threading.Lock()
        self.server: CofwServer | None = None
        try:
            self.start()
        except BaseException:
            self.group.close()
            raise

    def start(self) -> None:
        run_dir = self.snapdir / f"run-{os.getpid()}-{id(self)}"
        self.server = CofwServer(self.group, run_dir, self.source, self.snapdir, self.config, size=self.size_arg,
                                 snapshot_device=self.snapdev).start()
        self.size = self.conn().size
        self.pages = self.size // self.config.page_size

    # ------------------------------------------------------------ NBD
    def conn(self, export: str = "live") -> Nbd:
        """This thread's connection to `export`."""
        conns = self._local.__dict__.setdefault("conns", {})
        c = conns.get(export)
        if c is None:
            assert self.server
            c = conns[export] = Nbd(self.server.nbd_socket, export)
            with self._lock:
                self._conns.append(c)
        return c

    def write(self, data: bytes, offset: int) -> None:
        self.conn().pwrite(data, offset)

    def read(self, offset: int, length: int, snap: str | None = None) -> bytes:
        return self.conn("live" if snap is None else f"snap-{snap}").pread(length, offset)

    def view(self, snap: str | None = None) -> bytes:
        return self.read(0, self.size, snap)

    def flush(self) -> None:
        self.conn().flush()

    # ------------------------------------------------------------ control
    def create_snapshot(self, name: str) -> str:
        assert self.server
        return self.server.call("create", name=name)["path"]

    def delete_snapshot(self, name: str, keep_file: bool = False) -> None:
        assert self.server
        self.server.call("delete", name=name, keep_file=keep_file)

    def counters(self) -> dict:
        assert self.server
        return self.server.counters()

    def copied_pages(self, name: str) -> int:
        return self.counters()["copied_pages"][name]

    # ------------------------------------------------------------ lifecycle
    def _drop_connections(self) -> None:
        with self._lock:
            for c in self._conns:
                c.close()
            self._conns.clear()
        self._local = threading.local()

    def close(self) -> None:
        """Clean shutdown: nbdkit's cleanup syncs and closes everything (SIGTERM)."""
        self._drop_connections()
        if self.server:
            self.server.close()
            self.server = None
        self.group.close()

    def crash(self) -> None:
        """SIGKILL: no cleanup; only what is in the files survives."""
        self._drop_connections()
        assert self.server
        self.server.close()
        self.server = None
        child = self.group.children[-1]
        with contextlib.suppress(ProcessLookupError):       # it may have died already (a test hook)
            os.killpg(child.proc.pid, signal.SIGKILL)
        child.proc.wait(timeout=10)
        self.group.children.remove(child)
        self.group.close()

    def __enter__(self) -> Volume:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def allocated_bytes(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return sum(e - s for s, e in allocated_ranges(fd, os.fstat(fd).st_size))
    finally:
        os.close(fd)


__all__ = ["EngineError", "Nbd", "NbdError", "Volume", "allocated_bytes"]
