"""Validation of the copy-on-first-write engine against QEMU's copy-before-write filter.

What both can express: one snapshot, 64 KiB grains (QEMU 7.2's copy-before-write copies 64 KiB clusters into a
sparse raw target at the same offsets, exactly what the engine does with page_size=64 KiB). The same source, the
same write sequence after the snapshot; then
  * the point-in-time views (QEMU: snapshot-access node; engine: export snap-NAME) must be byte-identical to each
    other and to the source as it was at the snapshot,
  * the live volumes must be byte-identical,
  * the copy targets must have the same allocated size (bytes of data extents, SEEK_DATA/SEEK_HOLE).
The source is fully allocated random data: QEMU's block-copy skips or zero-writes unallocated source areas,
which would make allocation differ for reasons unrelated to copy-on-write.
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from ..host.procs import ProcessGroup, run
from .launch import CofwEngineConfig, CofwServer
from .spec import allocated_ranges

NBDIO = Path(__file__).resolve().parent / "nbdio.py"
SYSTEM_PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class ValidationResult:
    size: int
    writes: int
    views_identical: bool
    view_equals_source_at_snapshot: bool
    live_identical: bool
    qemu_target_allocated: int
    engine_snapshot_allocated: int
    engine_pages_copied: int

    @property
    def ok(self) -> bool:
        return (self.views_identical and self.view_equals_source_at_snapshot and self.live_identical
                and self.qemu_target_allocated == self.engine_snapshot_allocated)


def write_sequence(seed: int, size: int, count: int) -> tuple[list[tuple[int, int]], bytes]:
    """A deterministic mix: sub-grain, grain-sized, multi-grain and unaligned writes, some to the same grain."""
    rng = random.Random(seed)
    ops, payload = [], bytearray()
    for _ in range(count):
        n = rng.choice([512, 4096, 4096, 8192, 65536, 3 * 65536, 5000])
        off = rng.randrange(0, size - n)
        if rng.random() < 0.7:
            off -= off % 512
        ops.append((off, n))
        payload += rng.randbytes(n)
    return ops, bytes(payload)


def replay(uri: str, ops: list[tuple[int, int]], payload: bytes, scratch: Path) -> None:
    (scratch / "ops.json").write_text(json.dumps(ops))
    (scratch / "data.bin").write_bytes(payload)
    run([SYSTEM_PYTHON, str(NBDIO), uri, str(scratch / "ops.json"), str(scratch / "data.bin")], timeout=600)


def fetch(uri: str, out: Path) -> bytes:
    run(["nbdcopy", uri, str(out)], timeout=600)
    return out.read_bytes()


def allocated(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return sum(e - s for s, e in allocated_ranges(fd, os.fstat(fd).st_size))
    finally:
        os.close(fd)


def validate_against_qemu(work_dir: Path, *, size: int = 32 << 20, writes: int = 300,
                          seed: int = 4) -> ValidationResult:
    """Run the same write sequence through QEMU copy-before-write and the engine (64 KiB pages) and compare."""
    from ..host.qsd import StorageDaemon

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    original = random.Random(seed).randbytes(size)
    ops, payload = write_sequence(seed + 1, size, writes)
    with ProcessGroup() as group:
        group.own(work_dir)
        # --- QEMU: source file -> copy-before-write (target: sparse raw file) -> snapshot-access view
        q_src, q_tgt = work_dir / "qemu-src.img", work_dir / "qemu-target.img"
        q_src.write_bytes(original)
        with open(q_tgt, "wb") as f:
            f.truncate(size)
        qsd = StorageDaemon(group, work_dir / "qsd").start()
        file_opts = {"driver": "file", "aio": "io_uring", "cache": {"direct": True, "no-flush": False}}
        qsd.execute("blockdev-add", **{"node-name": "src"}, filename=str(q_src), **file_opts)
        qsd.execute("blockdev-add", **{"node-name": "tgt"}, filename=str(q_tgt), **file_opts)
        qsd.execute("blockdev-add", driver="copy-before-write", **{"node-name": "cbw"}, file="src", target="tgt")
        qsd.execute("blockdev-add", driver="snapshot-access", **{"node-name": "view"}, file="cbw")
        live_uri = qsd.export("cbw", "live")
        qsd.execute("block-export-add", id="exp-view", type="nbd", **{"node-name": "view"}, name="view",
                    writable=False)
        replay(live_uri, ops, payload, work_dir)
        q_view = fetch(qsd.uri("view"), work_dir / "qemu-view.out")
        q_live = fetch(live_uri, work_dir / "qemu-live.out")
        if qsd.qmp:
            qsd.qmp.close()

        # --- engine: 64 KiB pages, one snapshot
        e_src = work_dir / "cofw-src.img"
        e_src.write_bytes(original)
        server = CofwServer(group, work_dir / "cofw", e_src, work_dir / "cofw-snaps",
                            CofwEngineConfig(name="cofw64k", page_size=65536)).start()
        export = server.create("s1")
        replay(server.uri("live"), ops, payload, work_dir)
        e_view = fetch(server.uri(export), work_dir / "cofw-view.out")
        e_live = fetch(server.uri("live"), work_dir / "cofw-live.out")
        counters = server.counters()
        result = ValidationResult(
            size=size, writes=writes,
            views_identical=q_view == e_view,
            view_equals_source_at_snapshot=e_view == original,
            live_identical=q_live == e_live,
            qemu_target_allocated=allocated(q_tgt),
            engine_snapshot_allocated=allocated(work_dir / "cofw-snaps" / "s1.snap"),
            engine_pages_copied=int(counters["pages_copied"]),
        )
        server.close()
    return result
