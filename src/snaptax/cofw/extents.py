"""Snapshot stores on a device of their own: a database snapshot's sparse file laid out as NTFS lays it out.

SQL Server keeps a database snapshot in an NTFS sparse file that may sit on any volume. NTFS grows the file in
64 KiB allocation units: the first copied page of a 64 KiB-aligned stretch of the source allocates a whole unit
(room for eight 8 KiB pages), wherever the volume's allocator puts it next, and the unit's later pages land
beside it. On a spindle that decides the seeks the copies cost, so the layout is modelled, not a host file's:

  * an `ExtentAllocator` hands out the device's `extent_size` slots in ascending order, lowest free first (freed
    slots of a dropped snapshot are reused first, as NTFS reuses freed clusters); all snapshots on one device
    share it, so two snapshots' units interleave in the order their pages are first copied;
  * an `ExtentStore` maps a snapshot's source extents to slots: page p of the source lives at
    slot(p's extent) * extent_size + p's offset inside its extent.

The store's durable map is a journal file on the host (NAME.map beside the other snapshots), one line
"page slot" per copied page, appended only after the copied data is stable on the device (a flush), and made
stable (fdatasync) before the source write proceeds — the same order as the sparse-file store's copy, fdatasync,
write. A torn last line (a crash inside the append) has no newline and is ignored: its pages' source writes had
not been issued. NTFS keeps this map in its MFT on the snapshot's own volume and updates it lazily through its
log; here it costs a host fdatasync instead of device writes (stated in the paper as not modelled).

The device is reached through a `BlockClient`: `FileClient` (a file or block device node) or `NbdClient` (an NBD
URI, e.g. an emulated spindle; libnbd's Python binding, which nbdkit's embedded system python3 has and the
project's venv has not). Stdlib only, like core: nbdkit's embedded interpreter imports this module.
"""
from __future__ import annotations

import heapq
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import ConfigError, EngineError

MAP_SUFFIX = ".map"
EXTENT_SIZE = 65536          # NTFS's allocation unit for a database snapshot's sparse file


def pread_full(fd: int, view: memoryview, offset: int) -> None:
    """Fill `view` from fd at offset; short reads loop, EOF is an error (views never extend past the volume)."""
    done, n = 0, len(view)
    while done < n:
        got = os.preadv(fd, [view[done:]] if done else [view], offset + done)
        if got <= 0:
            raise EngineError(f"short read at offset {offset + done}")
        done += got


def pwrite_full(fd: int, view, offset: int) -> None:
    done, n = 0, len(view)
    while done < n:
        done += os.pwrite(fd, view[done:] if done else view, offset + done)


class BlockClient:
    """A byte-addressed device: pread/pwrite of whole buffers, flush (make written data stable), size."""

    size: int

    def pread(self, view: memoryview, offset: int) -> None:
        raise NotImplementedError

    def pwrite(self, view, offset: int) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class FileClient(BlockClient):
    """A file or a block device node, opened read-write (O_DIRECT when `direct`, buffers then page-aligned)."""

    def __init__(self, path: str | Path, direct: bool = False) -> None:
        self.path = Path(path)
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC | (os.O_DIRECT if direct else 0))
        except OSError as e:
            raise EngineError(f"cannot open snapshot device {self.path}: {e.strerror}") from None
        self.size = os.lseek(self.fd, 0, os.SEEK_END)

    def pread(self, view: memoryview, offset: int) -> None:
        pread_full(self.fd, view, offset)

    def pwrite(self, view, offset: int) -> None:
        pwrite_full(self.fd, view, offset)

    def flush(self) -> None:
        os.fdatasync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


class NbdClient(BlockClient):
    """An NBD export through libnbd, `connections` handles used one request at a time each: a synchronous libnbd
    call holds its handle for the round trip, so concurrent copies need several (as SQL Server issues its
    copies from many worker threads)."""

    def __init__(self, uri: str, connections: int = 4) -> None:
        try:
            import nbd  # python3-libnbd (Debian): the system python's, not the venv's
        except ImportError:
            raise EngineError("the snapshot device is an NBD export and libnbd's Python binding is missing:"
                              " install the Debian package 'python3-libnbd'") from None
        if connections < 1:
            raise ConfigError("snapshot device", "connections", "must be >= 1")
        self.uri = uri
        self._pool: queue.SimpleQueue = queue.SimpleQueue()
        self._handles = []
        for _ in range(connections):
            h = nbd.NBD()
            try:
                h.connect_uri(uri)
            except nbd.Error as e:
                self.close()
                raise EngineError(f"cannot connect to the snapshot device {uri}: {e}") from None
            self._handles.append(h)
            self._pool.put(h)
        self.size = self._handles[0].get_size()
        # multi-conn: one flush covers the writes of every connection (the emulated spindles offer it)
        self._multi_conn = bool(self._handles[0].can_multi_conn())

    def _call(self, fn, *args):
        h = self._pool.get()
        try:
            return fn(h, *args)
        finally:
            self._pool.put(h)

    def pread(self, view: memoryview, offset: int) -> None:
        view[:] = self._call(lambda h: h.pread(len(view), offset))

    def pwrite(self, view, offset: int) -> None:
        data = bytes(view)
        self._call(lambda h: h.pwrite(data, offset))

    def flush(self) -> None:
        if self._multi_conn:
            self._call(lambda h: h.flush())
            return
        # Else every handle (libnbd handles are thread-safe): a flush covers only its own connection's writes.
        for h in self._handles:
            h.flush()

    def close(self) -> None:
        for h in self._handles:
            try:
                h.shutdown()
            except Exception:      # noqa: BLE001 - closing on an error path; the server may be gone
                pass
        self._handles = []


def open_client(target: str, direct: bool = False, connections: int = 4) -> BlockClient:
    """An NBD URI (nbd://, nbd+unix://) or a path."""
    if target.startswith(("nbd:", "nbd+unix:", "nbds:")):
        return NbdClient(target, connections)
    return FileClient(target, direct)


class ExtentAllocator:
    """The snapshot device's allocation: slots of `extent_size` bytes, lowest free first."""

    def __init__(self, device_size: int, extent_size: int = EXTENT_SIZE) -> None:
        if extent_size < 4096 or extent_size & (extent_size - 1):
            raise ConfigError("cofw config", "extent_size", f"must be a power of two >= 4096, got {extent_size}")
        self.extent_size = extent_size
        self.slots = device_size // extent_size
        self._lock = threading.Lock()
        self._next = 0                 # every slot >= _next is free
        self._freed: list[int] = []    # heap of freed slots below _next

    def allocate(self) -> int:
        with self._lock:
            if self._freed:
                return heapq.heappop(self._freed)
            if self._next >= self.slots:
                raise EngineError(f"the snapshot device is full ({self.slots} extents of {self.extent_size} bytes)")
            self._next += 1
            return self._next - 1

    def reserve(self, used: set[int]) -> None:
        """At start: slots a re-attached snapshot holds are taken; free ones below the highest go on the heap."""
        with self._lock:
            taken = {s for s in range(self._next)} - set(self._freed)
            taken |= used
            self._next = max(taken) + 1 if taken else 0
            self._freed = sorted(set(range(self._next)) - taken)

    def free(self, slots) -> None:
        with self._lock:
            for s in slots:
                heapq.heappush(self._freed, s)

    @property
    def used(self) -> int:
        with self._lock:
            return self._next - len(self._freed)


class ExtentStore:
    """One snapshot's copied pages on the snapshot device, mapped extent by extent; its journal at `path`."""

    def __init__(self, path: Path, device: BlockClient, allocator: ExtentAllocator, page_size: int,
                 journal_fd: int, extent_map: dict[int, int]) -> None:
        if allocator.extent_size % page_size:
            raise ConfigError("cofw config", "extent_size",
                              f"{allocator.extent_size} is not a multiple of the page size {page_size}")
        self.path, self.device, self.allocator = path, device, allocator
        self.page_size = page_size
        self._pages_per_extent = allocator.extent_size // page_size
        self._fd = journal_fd
        self._map = extent_map                     # source extent -> device slot
        self._lock = threading.Lock()              # allocation of one extent's slot, journal appends

    @classmethod
    def create(cls, path: Path, device: BlockClient, allocator: ExtentAllocator, page_size: int) -> ExtentStore:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise EngineError(f"cannot create snapshot map {path}: {e.strerror}") from None
        os.fsync(fd)
        return cls(path, device, allocator, page_size, fd, {})

    @classmethod
    def attach(cls, path: Path, device: BlockClient, allocator: ExtentAllocator, page_size: int,
               pages: int) -> tuple[ExtentStore, bytearray]:
        """Reopen a journal: the copied pages' bitmap and the extents they hold (a torn last line is dropped)."""
        text = path.read_bytes()
        complete = text[: text.rfind(b"\n") + 1]
        bitmap = bytearray(pages)
        extent_map: dict[int, int] = {}
        ppe = allocator.extent_size // page_size
        for number, line in enumerate(complete.splitlines(), 1):
            try:
                page, slot = (int(x) for x in line.split())
            except ValueError:
                raise EngineError(f"{path}:{number}: not a 'page slot' line: {line[:40]!r}") from None
            if not (0 <= page < pages) or extent_map.get(page // ppe, slot) != slot:
                raise EngineError(f"{path}:{number}: page {page} slot {slot} contradicts the volume or the map")
            bitmap[page] = 1
            extent_map[page // ppe] = slot
        if len(complete) != len(text):            # drop the torn tail, so later appends start on a line
            os.truncate(path, len(complete))
        allocator.reserve(set(extent_map.values()))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        return cls(path, device, allocator, page_size, fd, extent_map), bitmap

    def _pieces(self, offset: int, length: int, allocate: bool) -> Iterator[tuple[int, int, int]]:
        """(position in the buffer, device offset, bytes) for the source range, split at extent boundaries."""
        e = self.allocator.extent_size
        pos = 0
        while pos < length:
            src = offset + pos
            extent, within = divmod(src, e)
            n = min(length - pos, e - within)
            slot = self._map.get(extent)
            if slot is None:
                if not allocate:
                    raise EngineError(f"snapshot map {self.path}: extent {extent} read but never copied")
                with self._lock:
                    slot = self._map.get(extent)
                    if slot is None:
                        slot = self._map[extent] = self.allocator.allocate()
            yield pos, slot * e + within, n
            pos += n

    def write(self, view, offset: int) -> None:
        """Copy pages (whole pages, at their source offset) to their extents, allocating extents on first use."""
        for pos, dev, n in self._pieces(offset, len(view), allocate=True):
            self.device.pwrite(view[pos:pos + n], dev)

    def read(self, view: memoryview, offset: int) -> None:
        for pos, dev, n in self._pieces(offset, len(view), allocate=False):
            self.device.pread(view[pos:pos + n], dev)

    def commit(self, pages: list[int], durable: bool) -> None:
        """Record copied pages: device flush, journal append, journal fdatasync (durable); else the append alone."""
        if durable:
            self.device.flush()
        ppe = self._pages_per_extent
        lines = "".join(f"{p} {self._map[p // ppe]}\n" for p in pages).encode()
        with self._lock:
            os.write(self._fd, lines)
        if durable:
            os.fdatasync(self._fd)

    def sync(self) -> None:
        self.device.flush()
        os.fdatasync(self._fd)

    @property
    def allocated_bytes(self) -> int:
        return len(self._map) * self.allocator.extent_size

    def close(self, remove: bool = False) -> None:
        os.close(self._fd)
        if remove:
            self.allocator.free(self._map.values())
            self.path.unlink(missing_ok=True)
