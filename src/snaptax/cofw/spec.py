"""What the Python side and the C plugin (cofw.c) agree on: file names, configuration checks, counter names.

The engine itself - page map, copy-on-first-write, the sparse-file and snapshot-device stores, journals, crash
recovery, counters - is the C nbdkit plugin src/snaptax/cofw/cofw.c (its header comment documents the semantics
and the crash behaviour). This module only validates a configuration before nbdkit is started (so a bad value
is one line naming the field, before any process runs) and names what the plugin writes and reports.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

SNAPSHOT_SUFFIX = ".snap"      # a snapshot's sparse file in snapdir
MAP_SUFFIX = ".map"            # a snapshot's journal in snapdir when its pages are on a snapshot device
UNSAFE_SUFFIX = ".unsafe"      # beside a snapshot opened with durability=none, removed at clean shutdown
DURABILITY = ("sync", "none")

# The plugin's cumulative counters (the "counters" control op), in its order. *_s are thread-seconds:
#   pages_copied   page copies written (a page copied into two snapshots counts twice)
#   bytes_copied   pages_copied * page_size
#   cow_faults     source pages whose first write after a snapshot triggered copying (once per page and event)
#   cow_requests   write requests that had to copy before writing
#   syncs          copy commits made durable (fdatasync of a sparse file; device flush + journal fdatasync)
#   bitmap_marks   bits set in the in-memory bitmaps (== pages_copied; recovery marks are not counted)
#   metadata_ops   syncs + snapshot creates + deletes + holes punched at recovery: bookkeeping, not data
#   snap_pages_read  pages a snapshot view served from its store
#   source_write_s live writes to the source; copy_read_s reading old pages out of the source; copy_write_s
#                  writing them into the snapshots (all); commit_s making them durable (all); push_wait_s
#                  waiting for a pusher (pushers > 0: copies one request at a time, as one statement thread);
#                  statement_s the statement's own work done holding a pusher (statement_ns > 0; wall time, since
#                  pushers hold it one at a time when pushers = 1)
#   push_peak      the most requests that held a pusher at once since the volume opened (a high-water mark: at
#                  most pushers; 0 without pushers)
# Per snapshot the plugin also reports times {NAME: {copy_write_s, commit_s}} (SNAPSHOT_TIMES), copied_pages
# {NAME: n}, the snapshot names, page_size and snapshot_allocated_bytes.
COUNTERS = ("pages_copied", "bytes_copied", "cow_faults", "cow_requests", "syncs", "bitmap_marks",
            "metadata_ops", "snap_pages_read", "snapshots_created", "snapshots_deleted",
            "recovery_punched_pages", "source_write_s", "copy_read_s", "copy_write_s", "commit_s", "push_wait_s",
            "statement_s", "push_peak")
SNAPSHOT_TIMES = ("copy_write_s", "commit_s")


@dataclass(frozen=True)
class CofwConfig:
    """Typed configuration of one copy-on-first-write volume (the plugin's keys of the same names)."""

    page_size: int = 8192          # SQL Server's page; 65536 matches QEMU copy-before-write's cluster
    durability: str = "sync"       # "sync": copy made durable before the source write; "none": no ordering
    direct: bool = False           # O_DIRECT on source, snapshot files and a file snapshot device
    stripes: int = 4096            # number of page locks (page % stripes)
    extent_size: int = 65536       # allocation unit on a snapshot device of its own (NTFS: 64 KiB)
    pushers: int = 0               # requests that may copy at once (0: any number; 1: one statement thread)
    statement_ns: int = 0          # the statement's own work per page written, done holding a pusher (needs pushers)

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
        if self.extent_size < 4096 or self.extent_size & (self.extent_size - 1):
            raise ConfigError(src, "extent_size", f"must be a power of two >= 4096, got {self.extent_size}")
        if self.pushers < 0:
            raise ConfigError(src, "pushers", f"must be >= 0, got {self.pushers}")
        if self.statement_ns < 0:
            raise ConfigError(src, "statement_ns", f"must be >= 0, got {self.statement_ns}")
        if self.statement_ns and not self.pushers:
            raise ConfigError(src, "statement_ns", "needs pushers > 0 (the statement's work is a pusher's)")

    def plugin_args(self) -> list[str]:
        return [f"page_size={self.page_size}", f"durability={self.durability}", f"direct={int(self.direct)}",
                f"stripes={self.stripes}", f"pushers={self.pushers}", f"statement_ns={self.statement_ns}"]


def allocated_ranges(fd: int, size: int) -> list[tuple[int, int]]:
    """(start, end) byte ranges holding data, from SEEK_DATA/SEEK_HOLE (what the plugin rebuilds a sparse
    snapshot's bitmap from; used by validation and tests to look at a snapshot file from outside)."""
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


def allocated_bytes(path: str | Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return sum(e - s for s, e in allocated_ranges(fd, os.fstat(fd).st_size))
    finally:
        os.close(fd)


__all__ = ["COUNTERS", "DURABILITY", "MAP_SUFFIX", "SNAPSHOT_SUFFIX", "SNAPSHOT_TIMES", "UNSAFE_SUFFIX",
           "CofwConfig", "allocated_bytes", "allocated_ranges"]
