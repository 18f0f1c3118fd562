"""Copy-on-first-write bookkeeping with SQL Server database-snapshot semantics (stdlib only).

The source volume is a plain file written in place. Each snapshot is a sparse file of the same size. Before the
first write to a page after a snapshot was taken, the page's old contents are copied into every live snapshot that
does not have it yet, at the same offset; then the source is written. A snapshot view reads its copied pages from
its sparse file and every other page from the source.

This module is imported by the nbdkit Python plugin, which runs under the *system* python3: keep it stdlib-only.

Concurrency (nbdkit's parallel thread model: many request threads, one GIL, os.pread/os.pwrite release it)
  * A gate (shared/exclusive) orders requests against snapshot create/delete: data requests hold it shared, create
    and delete hold it exclusive, so a snapshot's point in time falls between requests, never inside one, and a
    snapshot's file descriptor is never closed under a reader.
  * Per-page locks (striped: page % stripes) serialise the check-copy-mark step, so two writers to one page never
    both copy it (the second would copy the first's new data).
  * A page is marked in the in-memory bitmap only after its copy is complete (and durable, see below), and the
    source is written only after the mark. Snapshot readers therefore need no page lock: they read the source
    first and then look at the bitmap; a page still unmarked at that moment had not started being overwritten
    when the source was read, a marked one is re-read from the sparse file.

Crash semantics (durability="sync", the default)
  * Ordering: copy old page(s) -> fdatasync(snapshot file) -> mark bitmap -> write source. So for every source page
    written after snapshot S, S's copy of that page is on stable storage before the source changes.
  * The durable record of "which pages are copied" is the sparse file's own allocation map, as in SQL Server (whose
    in-memory bitmap is rebuilt from the sparse file's allocated ranges): nothing but page copies is ever written
    into a snapshot file, and every copy writes whole pages, so a fully allocated page is a copied page. On
    reopen (`attach_snapshot`, which the plugin calls for every snapshot file at start) the bitmap is rebuilt with
    SEEK_DATA/SEEK_HOLE. A page that is only partly allocated is a torn copy; its source write had not been issued
    (it waits for the fdatasync), so its hole is punched and the page counts as not copied.
  * Assumptions, checked where possible: the file system block size divides the page size (checked), the file
    system supports SEEK_DATA/SEEK_HOLE and never exposes a newly allocated block with stale contents after a
    crash (ext4 data=ordered, the default, and XFS do; ext4 data=writeback does not — not checkable from here).
  * Source writes themselves are as durable as on a disk with a volatile write cache: NBD FLUSH/FUA call
    fdatasync on the source. Snapshot create is durable when acknowledged (file created, directory fsynced);
    delete is unlink (a crash mid-delete leaves the snapshot either whole or gone).
  * durability="none" skips the fdatasync (to measure the bare copy cost). A snapshot file is then accompanied by a
    `<file>.unsafe` marker while open; after a crash the marker remains and attach_snapshot refuses the snapshot,
    since its copies may be missing.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import mmap
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError, EngineError
from .extents import (
    MAP_SUFFIX,
    BlockClient,
    ExtentAllocator,
    ExtentStore,
    pread_full as _pread_full,
    pwrite_full as _pwrite_full,
)

SNAPSHOT_SUFFIX = ".snap"
UNSAFE_SUFFIX = ".unsafe"
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
DURABILITY = ("sync", "none")


@dataclass(frozen=True)
class CofwConfig:
    """Typed configuration of one copy-on-first-write volume."""

    page_size: int = 8192          # SQL Server's page; 65536 matches QEMU copy-before-write's cluster
    durability: str = "sync"       # "sync": copy fdatasync'ed before the source write; "none": no ordering
    direct: bool = False           # O_DIRECT on source and snapshot files (bypass the page cache,
                                   # like qsd cache.direct=on)
    stripes: int = 4096            # number of page locks (page % stripes)
    extent_size: int = 65536       # allocation unit on a snapshot device of its own (extents.py; NTFS: 64 KiB)

    def __post_init__(self) -> None:
        src = "cofw config"
        if self.page_size < 512 or self.page_size & (self.page_size - 1):
            raise ConfigError(src, "page_size", f"must be a power of two >= 512, got {self.page_size}")
        if self.durability not in DURABILITY:
            raise ConfigError(src, "durability", f"must be one of {', '.join(DURABILITY)}, got {self.durability!r}")
        if self.stripes < 1:
            raise ConfigError(src, "stripes", f"must be >= 1, got {self.stripes}")
        if self.direct and self.page_size % 4096:
            raise ConfigError(src, "page_size", "must be a multiple of 4096 with direct=True")


@dataclass
class Counters:
    """What the engine did, cumulative since the volume was opened.

    pages_copied   page copies written (a page copied into two snapshots counts twice)
    bytes_copied   pages_copied * page_size
    cow_faults     source pages whose first write after a snapshot triggered copying (once per page and event)
    cow_requests   write requests that had to copy before writing
    syncs          fdatasync calls on snapshot files (each commits the allocation map = the durable bitmap)
    bitmap_marks   bits set in in-memory bitmaps (== pages_copied; recovery marks are not counted)
    metadata_ops   syncs + snapshot creates + deletes + holes punched at recovery: work on bookkeeping, not data
    snap_pages_read  pages a snapshot view served from its sparse file
    *_s            where the time went (see SnapshotTimes; per snapshot in counters_dict()['times'])
    """

    pages_copied: int = 0
    bytes_copied: int = 0
    cow_faults: int = 0
    cow_requests: int = 0
    syncs: int = 0
    bitmap_marks: int = 0
    metadata_ops: int = 0
    snap_pages_read: int = 0
    snapshots_created: int = 0
    snapshots_deleted: int = 0
    recovery_punched_pages: int = 0
    source_write_s: float = 0.0      # live writes to the source (thread-seconds)
    copy_read_s: float = 0.0         # reading old pages out of the source before copying them
    copy_write_s: float = 0.0        # writing them into the snapshots (all snapshots)
    commit_s: float = 0.0            # making the copies durable before the source write (all snapshots)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class FileStore:
    """A snapshot's sparse file on the host file system, pages at their source offsets; its allocation is the
    durable map of copied pages (see the module docstring). The store interface, shared with
    extents.ExtentStore: write/read whole pages at source offsets, commit copied pages, sync, close."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    def write(self, view, offset: int) -> None:
        _pwrite_full(self.fd, view, offset)

    def read(self, view: memoryview, offset: int) -> None:
        _pread_full(self.fd, view, offset)

    def commit(self, pages: list[int], durable: bool) -> None:
        if durable:
            os.fdatasync(self.fd)

    def sync(self) -> None:
        os.fdatasync(self.fd)

    @property
    def allocated_bytes(self) -> int:
        return os.fstat(self.fd).st_blocks * 512

    def close(self, remove: bool = False) -> None:
        os.close(self.fd)
        if remove:
            self.path.unlink(missing_ok=True)
            _fsync_dir(self.path.parent)


@dataclass
class SnapshotTimes:
    """Where a snapshot's copy-on-write time went, in seconds summed over the request threads (the analogue of
    SQL Server's wait statistics: copy writes ~ PREEMPTIVE_OS_WRITEFILE / FCB_REPLICA_WRITE, commits ~
    WRITE_COMPLETION)."""

    copy_write_s: float = 0.0        # writing old pages into this snapshot
    commit_s: float = 0.0            # making them durable (fdatasync; device flush + journal for extent stores)


@dataclass
class Snapshot:
    name: str
    path: Path
    store: FileStore | ExtentStore
    bitmap: bytearray                 # one byte per page: 1 = copied (bytes, not bits: no read-modify-write races)
    alive: bool = True
    times: SnapshotTimes = field(default_factory=SnapshotTimes)

    def copied_pages(self) -> int:
        return self.bitmap.count(1)


class _Gate:
    """Shared/exclusive gate: requests enter shared, snapshot create/delete take it exclusive (and win over new
    requests, so a create under a heavy writer does not starve)."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._shared = 0
        self._exclusive = False

    def enter(self) -> None:
        with self._cv:
            while self._exclusive:
                self._cv.wait()
            self._shared += 1

    def leave(self) -> None:
        with self._cv:
            self._shared -= 1
            if self._shared == 0 and self._exclusive:
                self._cv.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cv:
            while self._exclusive:
                self._cv.wait()
            self._exclusive = True
            while self._shared:
                self._cv.wait()
        try:
            yield
        finally:
            with self._cv:
                self._exclusive = False
                self._cv.notify_all()


_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02


def _punch_hole(fd: int, offset: int, length: int) -> None:
    if _libc.fallocate(fd, _FALLOC_FL_KEEP_SIZE | _FALLOC_FL_PUNCH_HOLE, offset, length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"fallocate(PUNCH_HOLE) failed: {os.strerror(err)}")


def allocated_ranges(fd: int, size: int) -> list[tuple[int, int]]:
    """(start, end) byte ranges holding data, from SEEK_DATA/SEEK_HOLE."""
    out, pos = [], 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:          # ENXIO: no data after pos
            break
        if start >= size:
            break
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        out.append((start, end))
        pos = end
    return out


class CofwVolume:
    """A source file plus any number of copy-on-first-write snapshots. Thread-safe (see module docstring)."""

    def __init__(self, source: str | Path, config: CofwConfig = CofwConfig(), size: int | None = None,
                 snapshot_device: BlockClient | None = None) -> None:
        """`size`: bytes of the source that form the volume (default: all of it; block devices: their size).
        `snapshot_device`: put the snapshots' pages on this device, in extents (extents.py), each snapshot's map
        in the journal file its create/attach names; default: a sparse file per snapshot at that path."""
        self.config = config
        self.snapshot_device = snapshot_device
        self._allocator = (ExtentAllocator(snapshot_device.size, config.extent_size)
                           if snapshot_device is not None else None)
        self.source = Path(source)
        self.page_size = ps = config.page_size
        self._shift = ps.bit_length() - 1
        self._flags = os.O_RDWR | os.O_CLOEXEC | (os.O_DIRECT if config.direct else 0)
        try:
            self._src = os.open(self.source, self._flags)
        except OSError as e:
            raise EngineError(f"cannot open source {self.source}: {e.strerror}") from None
        whole = os.lseek(self._src, 0, os.SEEK_END)       # also right for block devices (st_size is 0)
        self.size = whole if size is None else size
        if self.size > whole:
            os.close(self._src)
            raise ConfigError(str(self.source), "size", f"{self.size} bytes exceeds the source's {whole}")
        if self.size <= 0 or self.size % ps:
            os.close(self._src)
            raise ConfigError(str(self.source), "size",
                              f"{self.size} bytes is not a positive multiple of the page size {ps}")
        self.pages = self.size >> self._shift
        self._snaps: tuple[Snapshot, ...] = ()       # replaced, never mutated, under the exclusive gate
        self._by_name: dict[str, Snapshot] = {}
        self._gate = _Gate()
        self._page_locks = [threading.Lock() for _ in range(min(config.stripes, self.pages))]
        self._nstripes = len(self._page_locks)
        self._count_lock = threading.Lock()
        self.counters = Counters()
        self._tls = threading.local()
        self._closed = False

    # ---------------------------------------------------------------- buffers
    def _scratch(self, nbytes: int) -> memoryview:
        """Per-thread page-aligned buffer (mmap), grown on demand: no allocation per request, and valid for
        O_DIRECT, which needs aligned memory that nbdkit's request buffers do not guarantee."""
        buf = getattr(self._tls, "buf", None)
        if buf is None or len(buf) < nbytes:
            size = max(nbytes, 1 << 20)
            size = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
            self._tls.mm = mmap.mmap(-1, size)
            self._tls.buf = buf = memoryview(self._tls.mm)
        return buf

    # ---------------------------------------------------------------- snapshots
    @property
    def snapshots(self) -> tuple[Snapshot, ...]:
        return self._snaps

    def snapshot(self, name: str) -> Snapshot:
        snap = self._by_name.get(name)
        if snap is None:
            raise EngineError(f"no snapshot named {name!r}")
        return snap

    def _check_new(self, name: str, path: Path) -> None:
        if not _NAME_RE.match(name):
            raise ConfigError("snapshot", "name", f"{name!r} must match {_NAME_RE.pattern}")
        if name in self._by_name:
            raise EngineError(f"snapshot {name!r} already exists")
        if self.snapshot_device is not None:
            return
        fs_block = os.statvfs(path.parent).f_bsize
        if self.page_size % fs_block:
            # A page must be a whole number of file-system blocks, or allocation cannot tell a copied page.
            raise ConfigError("snapshot", "page_size", f"{self.page_size} is not a multiple of the file system block "
                                                       f"{fs_block} of {path.parent}")

    def create_snapshot(self, name: str, path: str | Path) -> Snapshot:
        """Take a snapshot now: a new sparse file at `path` (must not exist), or with a snapshot device a new
        journal at `path` for the snapshot's extents there."""
        path = Path(path)
        self._check_new(name, path)
        with self._gate.exclusive():
            if self._allocator is not None:
                assert self.snapshot_device is not None
                if self.config.durability == "none":
                    Path(str(path) + UNSAFE_SUFFIX).touch()
                store: FileStore | ExtentStore = ExtentStore.create(path, self.snapshot_device, self._allocator,
                                                                    self.page_size)
                _fsync_dir(path.parent)
            else:
                store = self._create_sparse_file(path)
            snap = Snapshot(name, path, store, bytearray(self.pages))
            self._add(snap)
            with self._count_lock:
                self.counters.snapshots_created += 1
                self.counters.metadata_ops += 1
        return snap

    def _create_sparse_file(self, path: Path) -> FileStore:
        try:
            fd = os.open(path, self._flags | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as e:
            raise EngineError(f"cannot create snapshot file {path}: {e.strerror}") from None
        try:
            if self.config.durability == "none":
                Path(str(path) + UNSAFE_SUFFIX).touch()
            os.ftruncate(fd, self.size)
            os.fsync(fd)
            _fsync_dir(path.parent)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        return FileStore(path, fd)

    def attach_snapshot(self, name: str, path: str | Path) -> Snapshot:
        """Reopen an existing snapshot file (restart, or recovery after a crash): rebuild its bitmap from the file's
        allocation, punching torn (partly allocated) pages. See the module docstring for why this is sound."""
        path = Path(path)
        self._check_new(name, path)
        if Path(str(path) + UNSAFE_SUFFIX).exists():
            raise EngineError(f"snapshot {name!r} was open with durability=none when the engine stopped uncleanly;"
                              f" its contents are undefined (remove {path} to discard it)")
        if self._allocator is not None:
            assert self.snapshot_device is not None
            store, bitmap = ExtentStore.attach(path, self.snapshot_device, self._allocator, self.page_size,
                                               self.pages)
            snap = Snapshot(name, path, store, bitmap)
            with self._gate.exclusive():
                self._add(snap)
            return snap
        try:
            fd = os.open(path, self._flags)
        except OSError as e:
            raise EngineError(f"cannot open snapshot file {path}: {e.strerror}") from None
        if os.fstat(fd).st_size != self.size:
            size = os.fstat(fd).st_size
            os.close(fd)
            raise EngineError(f"snapshot file {path} is {size} bytes, the source {self.size}")
        bitmap = bytearray(self.pages)
        ps, punched = self.page_size, 0
        for start, end in allocated_ranges(fd, self.size):
            first_full = -(-start // ps)        # ceil
            end_full = end // ps                 # exclusive
            if first_full < end_full:
                bitmap[first_full:end_full] = b"\x01" * (end_full - first_full)
            # Edges of the range that cover a page only partly are torn copies: discard them.
            for page in {start // ps, (end - 1) // ps}:
                if not (first_full <= page < end_full):
                    _punch_hole(fd, page * ps, ps)
                    punched += 1
        if punched:
            os.fdatasync(fd)
        snap = Snapshot(name, path, FileStore(path, fd), bitmap)
        with self._gate.exclusive():
            self._add(snap)
        with self._count_lock:
            self.counters.recovery_punched_pages += punched
            self.counters.metadata_ops += punched
        return snap

    def _add(self, snap: Snapshot) -> None:
        self._by_name[snap.name] = snap
        self._snaps = self._snaps + (snap,)

    def delete_snapshot(self, name: str, *, remove_file: bool = True) -> None:
        """Drop a snapshot: it stops receiving copies at once; its file is unlinked (or kept, for inspection)."""
        snap = self.snapshot(name)
        with self._gate.exclusive():
            snap.alive = False
            self._snaps = tuple(s for s in self._snaps if s is not snap)
            del self._by_name[name]
            snap.store.close(remove=remove_file)
        Path(str(snap.path) + UNSAFE_SUFFIX).unlink(missing_ok=True)
        with self._count_lock:
            self.counters.snapshots_deleted += 1
            self.counters.metadata_ops += 1

    # ---------------------------------------------------------------- data path
    def _check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise EngineError(f"request [{offset}, +{length}) outside the volume of {self.size} bytes")

    def write(self, data, offset: int) -> None:
        """Write to the live volume, copying first-written pages into the snapshots that lack them."""
        n = len(data)
        if n == 0:
            return
        self._check_range(offset, n)
        if self.config.direct and (offset | n) & 4095:
            # O_DIRECT needs aligned writes; a read-modify-write here would race with neighbours in the block.
            # The nbdkit plugin runs behind nbdkit's blocksize filter, which does that RMW serialised.
            raise EngineError(f"unaligned write [{offset}, +{n}) with direct=True (4096-byte alignment needed)")
        first, last = offset >> self._shift, (offset + n - 1) >> self._shift
        gate = self._gate
        gate.enter()
        try:
            for snap in self._snaps:
                # find(0) runs in C: any page of the request this snapshot has not copied yet?
                if snap.bitmap.find(0, first, last + 1) != -1:
                    self._copy_out(first, last)
                    break
            t0 = time.perf_counter()
            if self.config.direct:
                buf = self._scratch(n)[:n]
                buf[:] = data
                _pwrite_full(self._src, buf, offset)
            else:
                _pwrite_full(self._src, data, offset)
            dt = time.perf_counter() - t0
            with self._count_lock:
                self.counters.source_write_s += dt
        finally:
            gate.leave()

    def _copy_out(self, first: int, last: int) -> None:
        """Copy the old contents of pages first..last into every snapshot lacking them, durably, then mark them."""
        ps, shift, snaps = self.page_size, self._shift, self._snaps
        locks = self._page_locks
        stripes = sorted({p % self._nstripes for p in range(first, last + 1)})   # ascending order: no deadlock
        for i in stripes:
            locks[i].acquire()
        try:
            # Recheck under the page locks: another writer may have copied these pages meanwhile.
            todo = [(s, [p for p in range(first, last + 1) if not s.bitmap[p]]) for s in snaps]
            todo = [(s, missing) for s, missing in todo if missing]
            if not todo:
                return
            need = sorted(set().union(*(m for _, m in todo)))
            base = first << shift
            buf = self._scratch((last - first + 1) << shift)
            t0 = time.perf_counter()
            for start, end in _runs(need):                       # read each run of old pages once
                lo, hi = (start << shift) - base, (end << shift) - base
                _pread_full(self._src, buf[lo:hi], start << shift)
            t_read = time.perf_counter() - t0
            copies = 0
            write_s: list[float] = []
            commit_s: list[float] = []
            for snap, missing in todo:
                t0 = time.perf_counter()
                for start, end in _runs(missing):
                    lo, hi = (start << shift) - base, (end << shift) - base
                    snap.store.write(buf[lo:hi], start << shift)
                copies += len(missing)
                write_s.append(time.perf_counter() - t0)
            durable = self.config.durability == "sync"
            syncs = 0
            for snap, missing in todo:                           # the copy must be stable before the source changes
                t0 = time.perf_counter()
                snap.store.commit(missing, durable)
                commit_s.append(time.perf_counter() - t0)
                syncs += durable
            for snap, missing in todo:
                bm = snap.bitmap
                for p in missing:
                    bm[p] = 1
            with self._count_lock:
                c = self.counters
                c.pages_copied += copies
                c.bytes_copied += copies * ps
                c.bitmap_marks += copies
                c.cow_faults += len(need)
                c.cow_requests += 1
                c.syncs += syncs
                c.metadata_ops += syncs
                c.copy_read_s += t_read
                for (snap, _), t_write, t_commit in zip(todo, write_s, commit_s, strict=True):
                    snap.times.copy_write_s += t_write
                    snap.times.commit_s += t_commit
                    c.copy_write_s += t_write
                    c.commit_s += t_commit
        finally:
            for i in reversed(stripes):
                locks[i].release()

    def read_into(self, buf: memoryview, offset: int) -> None:
        """Read the live volume."""
        n = len(buf)
        self._check_range(offset, n)
        if self.config.direct:
            lo = offset & ~4095
            hi = (offset + n + 4095) & ~4095
            tmp = self._scratch(hi - lo)[:hi - lo]
            _pread_full(self._src, tmp, lo)
            buf[:] = tmp[offset - lo:offset - lo + n]
        else:
            _pread_full(self._src, buf, offset)

    def snapshot_read_into(self, snap: Snapshot, buf: memoryview, offset: int) -> None:
        """Read a snapshot's point-in-time view: copied pages from its sparse file, the rest from the source."""
        n = len(buf)
        if n == 0:
            return
        self._check_range(offset, n)
        first, last = offset >> self._shift, (offset + n - 1) >> self._shift
        direct = self.config.direct
        self._gate.enter()
        try:
            if not snap.alive:
                raise EngineError(f"snapshot {snap.name!r} was deleted")
            bm = snap.bitmap
            # Read into an aligned scratch window covering whole pages (O_DIRECT needs it, and it keeps the
            # page arithmetic simple); copy the requested span out at the end.
            base = first << self._shift
            span = (last - first + 1) << self._shift
            if direct:   # tmp is bound, and used, only when direct
                tmp = self._scratch(span)[:span]
            if bm.find(0, first, last + 1) == -1:                # all copied: the sparse file alone
                if direct:
                    snap.store.read(tmp, base)
                else:
                    snap.store.read(buf, offset)
                    self._count_snap_pages(last - first + 1)
                    return
                copied_pages = last - first + 1
            else:
                # Source first, bitmap second (see module docstring): a page unmarked *after* the source read was
                # not yet being overwritten when it was read.
                if direct:
                    _pread_full(self._src, tmp, base)
                else:
                    _pread_full(self._src, buf, offset)
                copied_pages = 0
                p = bm.find(1, first, last + 1)
                while p != -1:
                    q = p
                    while q < last and bm[q + 1]:
                        q += 1
                    lo, hi = p << self._shift, (q + 1) << self._shift
                    if direct:
                        snap.store.read(tmp[lo - base:hi - base], lo)
                    else:
                        lo2, hi2 = max(lo, offset), min(hi, offset + n)
                        snap.store.read(buf[lo2 - offset:hi2 - offset], lo2)
                    copied_pages += q - p + 1
                    p = bm.find(1, q + 1, last + 1) if q < last else -1
            if direct:
                buf[:] = tmp[offset - base:offset - base + n]
            if copied_pages:
                self._count_snap_pages(copied_pages)
        finally:
            self._gate.leave()

    def _count_snap_pages(self, n: int) -> None:
        with self._count_lock:
            self.counters.snap_pages_read += n

    def flush(self) -> None:
        """Make everything acknowledged so far durable (NBD FLUSH)."""
        self._gate.enter()
        try:
            if self.config.durability == "none":
                for snap in self._snaps:        # copies first, then the source that depends on them
                    snap.store.sync()
            os.fdatasync(self._src)
        finally:
            self._gate.leave()

    def counters_dict(self) -> dict:
        """Counters, plus per snapshot its copied pages and times, and the space all snapshots take (under the
        gate: a concurrent delete must not close a store while its space is read)."""
        self._gate.enter()
        try:
            snaps = self._snaps
            with self._count_lock:
                d = self.counters.as_dict()
                times = {s.name: dict(s.times.__dict__) for s in snaps}
            d.update(page_size=self.page_size, snapshots=[s.name for s in snaps],
                     copied_pages={s.name: s.copied_pages() for s in snaps}, times=times,
                     snapshot_allocated_bytes=sum(s.store.allocated_bytes for s in snaps))
        finally:
            self._gate.leave()
        return d

    def close(self) -> None:
        """Clean shutdown: sync and close everything; durability=none snapshots become safe (marker removed)."""
        if self._closed:
            return
        with self._gate.exclusive():
            self._closed = True
            for snap in self._snaps:
                snap.store.sync()
            os.fdatasync(self._src)
            for snap in self._snaps:
                snap.store.close()
                Path(str(snap.path) + UNSAFE_SUFFIX).unlink(missing_ok=True)
            os.close(self._src)
            self._snaps = ()
            self._by_name.clear()


def _runs(pages: list[int]) -> Iterator[tuple[int, int]]:
    """Sorted page numbers -> (start, end_exclusive) runs of consecutive pages."""
    it = iter(pages)
    start = prev = next(it)
    for p in it:
        if p != prev + 1:
            yield start, prev + 1
            start = p
        prev = p
    yield start, prev + 1


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def snapshot_files(snapdir: str | Path, suffix: str = SNAPSHOT_SUFFIX) -> list[tuple[str, Path]]:
    """Existing snapshot files (sparse files, or with `suffix` MAP_SUFFIX the journals of snapshots on a device of
    their own) in a directory, by name. Order does not matter: snapshots are independent (each holds the pages
    overwritten since *its* creation)."""
    files = sorted(p for p in Path(snapdir).glob("*" + suffix) if p.is_file())
    return [(p.name[: -len(suffix)], p) for p in files]


__all__ = ["DURABILITY", "MAP_SUFFIX", "SNAPSHOT_SUFFIX", "UNSAFE_SUFFIX", "CofwConfig", "CofwVolume", "Counters",
           "FileStore", "Snapshot", "SnapshotTimes", "allocated_ranges", "snapshot_files"]
