"""The copy-on-first-write semantics, driven through the C plugin over NBD and its control socket (these were
unit tests of the Python core; the same scenarios and checks, through nbdkit)."""
from __future__ import annotations

import os
import random
import subprocess
import threading
from pathlib import Path

import pytest

from snaptax.cofw.build import ensure_plugin
from snaptax.cofw.spec import UNSAFE_SUFFIX, CofwConfig, allocated_ranges
from snaptax.errors import ConfigError, EngineError
from tests.cofw.volume import NbdError, Volume, allocated_bytes

MiB = 1 << 20

pytestmark = pytest.mark.integration


def make_source(path: Path, size: int, seed: int = 1) -> bytearray:
    data = bytearray(random.Random(seed).randbytes(size))
    path.write_bytes(data)
    return data


def random_write(rng: random.Random, size: int, align: int) -> tuple[int, bytes]:
    """Partial-page, multi-page and unaligned requests (aligned to `align`)."""
    n = rng.choice([align, 2 * align, 3 * align, 4096, 8192, 12288, 65536, 3 * 65536 + 4096])
    n = max(align, n // align * align)
    off = rng.randrange(0, (size - n) // align + 1) * align
    return off, rng.randbytes(n)


def uncopied_page(path: Path, page_size: int) -> int:
    """A page with no allocation in a sparse snapshot file (one the engine never copied)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        used = {p for s, e in allocated_ranges(fd, size) for p in range(s // page_size, -(-e // page_size))}
    finally:
        os.close(fd)
    return next(p for p in range(size // page_size) if p not in used)


@pytest.mark.parametrize("page_size,direct,align", [
    (8192, False, 1), (8192, False, 512), (4096, False, 1), (65536, False, 1), (8192, True, 4096),
])
def test_views_match_reference_model(disk_dir, page_size, direct, align):
    """Random writes, snapshots created and deleted at random points: every view equals the model, byte for byte."""
    size = 4 * MiB
    model = make_source(disk_dir / "src.img", size)
    rng = random.Random(page_size + align)
    expected: dict[str, bytes] = {}
    serial = 0
    with Volume(disk_dir / "src.img", page_size=page_size, direct=direct) as vol:
        for step in range(400):
            r = rng.random()
            if r < 0.03 or step == 5:
                serial += 1
                name = f"s{serial}"
                vol.create_snapshot(name)
                expected[name] = bytes(model)
            elif r < 0.045 and expected:
                name = rng.choice(sorted(expected))
                vol.delete_snapshot(name)
                assert not (disk_dir / f"{name}.snap").exists()
                del expected[name]
            else:
                off, data = random_write(rng, size, align)
                vol.write(data, off)
                model[off:off + len(data)] = data
            if step % 100 == 99:        # random partial reads of every view, mid-run
                for name, want in expected.items():
                    for _ in range(20):
                        off = rng.randrange(size - 1)
                        n = rng.randrange(1, min(200_000, size - off) + 1)
                        if direct:      # the blocksize filter serves unaligned reads too; keep them aligned anyway
                            off, n = off // 4096 * 4096, max(4096, n // 4096 * 4096)
                            n = min(n, size - off)
                        assert vol.read(off, n, name) == want[off:off + n], (name, off, n)
        assert expected, "the run should leave snapshots to check"
        assert vol.view() == model
        for name, want in expected.items():
            assert vol.view(name) == want, name
            # Sparse: exactly the copied pages take space in the snapshot file.
            assert allocated_bytes(disk_dir / f"{name}.snap") == vol.copied_pages(name) * page_size


def test_counters_and_multi_snapshot_copy(disk_dir):
    make_source(disk_dir / "src.img", 1 * MiB)
    with Volume(disk_dir / "src.img", page_size=8192) as vol:
        def c():
            return vol.counters()
        vol.create_snapshot("a")
        vol.create_snapshot("b")
        vol.write(b"x" * 100, 8192 + 50)               # partial write inside page 1: both snapshots get page 1
        k = c()
        assert (k["pages_copied"], k["bytes_copied"], k["cow_faults"], k["cow_requests"], k["syncs"]) == \
            (2, 16384, 1, 1, 2)
        vol.write(b"y" * 8192, 8192)                   # second write to page 1: nothing more to copy
        k = c()
        assert (k["pages_copied"], k["cow_requests"]) == (2, 1)
        vol.write(b"z" * 20000, 16384 - 10)            # pages 1 (done), 2, 3, 4 (spans 16374..36374)
        k = c()
        assert k["pages_copied"] == 2 + 2 * 3 and k["cow_faults"] == 4
        vol.create_snapshot("c")                       # only c lacks page 1 now
        vol.write(b"w", 8192)
        k = c()
        assert k["pages_copied"] == 9 and k["copied_pages"]["c"] == 1
        assert k["metadata_ops"] == k["syncs"] + k["snapshots_created"]
        assert k["copied_pages"] == {"a": 4, "b": 4, "c": 1} and k["page_size"] == 8192
        assert k["bitmap_marks"] == k["pages_copied"] and k["source_write_s"] > 0 and k["commit_s"] > 0
        assert set(k["times"]) == {"a", "b", "c"}
        assert k["copy_write_s"] == pytest.approx(sum(t["copy_write_s"] for t in k["times"].values()), abs=1e-8)


def test_no_snapshot_no_copy_and_durability_none(disk_dir):
    make_source(disk_dir / "src.img", 1 * MiB)
    vol = Volume(disk_dir / "src.img", page_size=8192, durability="none")
    vol.write(b"q" * 4096, 0)
    assert vol.counters()["pages_copied"] == 0
    vol.create_snapshot("a")
    assert (disk_dir / ("a.snap" + UNSAFE_SUFFIX)).exists()
    vol.write(b"r" * 4096, 0)
    k = vol.counters()
    assert k["pages_copied"] == 1 and k["syncs"] == 0
    vol.close()                                    # clean shutdown makes it safe
    assert not (disk_dir / ("a.snap" + UNSAFE_SUFFIX)).exists()


def test_crash_recovery_rebuilds_bitmap_and_discards_torn_pages(disk_dir):
    size = 2 * MiB
    model = make_source(disk_dir / "src.img", size)
    vol = Volume(disk_dir / "src.img", page_size=8192)
    vol.create_snapshot("s")
    at_snapshot = bytes(model)
    rng = random.Random(7)
    for _ in range(60):
        off, data = random_write(rng, size, 1)
        vol.write(data, off)
    copied = vol.copied_pages("s")
    vol.crash()                                    # SIGKILL: only what is in the files survives
    # A torn copy: the first 4 KiB block of a page the engine never copied (its source write never happened).
    torn_page = uncopied_page(disk_dir / "s.snap", 8192)
    fd = os.open(disk_dir / "s.snap", os.O_WRONLY)
    os.pwrite(fd, b"\xee" * 4096, torn_page * 8192)
    os.close(fd)

    with Volume(disk_dir / "src.img", page_size=8192) as vol2:
        k = vol2.counters()
        assert k["snapshots"] == ["s"] and k["copied_pages"]["s"] == copied
        assert k["recovery_punched_pages"] == 1
        assert vol2.view("s") == at_snapshot
        assert allocated_bytes(disk_dir / "s.snap") == copied * 8192
        # And it keeps working after recovery.
        vol2.write(b"n" * 8192, torn_page * 8192)
        assert vol2.view("s") == at_snapshot


def test_attach_refuses_unsafe_snapshot(disk_dir):
    make_source(disk_dir / "src.img", 1 * MiB)
    vol = Volume(disk_dir / "src.img", page_size=8192, durability="none")
    vol.create_snapshot("a")
    vol.write(b"x" * 8192, 0)
    vol.crash()                                    # the .unsafe marker stays
    with pytest.raises(EngineError, match="durability=none") as exc:
        Volume(disk_dir / "src.img", page_size=8192, durability="none")
    assert "\n" not in str(exc.value)


def test_concurrent_writers_and_snapshot_readers(disk_dir):
    """Threads write disjoint 512-byte sectors of shared pages (so they race on page copies) while readers
    check the snapshot view continuously; a second snapshot is taken mid-run and checked per sector."""
    size, ps, nthreads = 1 * MiB, 8192, 8
    model = make_source(disk_dir / "src.img", size)
    vol = Volume(disk_dir / "src.img", page_size=ps)
    vol.create_snapshot("s1")
    want1 = bytes(model)
    stop = threading.Event()
    errors: list[str] = []
    written: list[dict[int, set[bytes]]] = [dict() for _ in range(nthreads)]   # per thread: sector -> values

    def writer(i: int) -> None:
        rng = random.Random(100 + i)
        for _ in range(1500):
            page = rng.randrange(size // ps)
            off = page * ps + i * 512                  # thread i owns sector i of every page
            data = bytes([rng.randrange(256)]) * 512
            vol.write(data, off)
            written[i].setdefault(off, set()).add(data)

    def reader() -> None:
        rng = random.Random(5)
        while not stop.is_set():
            off = rng.randrange(size // 512) * 512
            n = min(rng.choice([512, 8192, 40960]), size - off)
            if vol.read(off, n, "s1") != want1[off:off + n]:
                errors.append(f"snapshot read at {off}+{n} differs")
                return

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(nthreads)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads + readers:
        t.start()
    vol.create_snapshot("s2")                          # taken while writers run
    for t in threads:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[:3]
    assert vol.view("s1") == want1
    # s2 is a point in time between requests: each sector holds the original or a value its thread wrote.
    v2, live = vol.view("s2"), vol.view()
    for i in range(nthreads):
        for off, values in written[i].items():
            assert v2[off:off + 512] == want1[off:off + 512] or v2[off:off + 512] in values
            assert live[off:off + 512] in values
    # Every page overwritten after s1 was copied exactly once into s1 (no double copy under the race).
    k = vol.counters()
    assert k["pages_copied"] == k["copied_pages"]["s1"] + k["copied_pages"]["s2"]
    vol.close()


def test_one_pusher_copies_one_request_at_a_time(disk_dir):
    """pushers=1 (a statement running in one thread pushes every copy itself): eight writers each first-write
    extents after two snapshots; the requests' copies never overlap, so their summed time (read, write into each
    snapshot, commit) fits in the burst's wall-clock time, and writers waited for the pusher. Every page is still
    copied into both snapshots exactly once."""
    size, extent, nthreads = 4 * MiB, 65536, 8
    model = make_source(disk_dir / "src.img", size)
    with Volume(disk_dir / "src.img", page_size=8192, pushers=1) as vol:
        vol.create_snapshot("s1")
        vol.create_snapshot("s2")
        wall = _burst(vol, size, extent, nthreads)
        k = vol.counters()
        assert k["cow_requests"] == size // extent
        assert k["copied_pages"] == {"s1": size // 8192, "s2": size // 8192}
        assert k["copy_read_s"] + k["copy_write_s"] + k["commit_s"] <= wall
        assert k["push_wait_s"] > 0
        assert k["push_peak"] == 1                              # never two requests copying at once
        assert vol.view("s1") == bytes(model) and vol.view("s2") == bytes(model)


@pytest.mark.parametrize("pushers", [0, 2])
def test_the_pusher_limit_holds_and_is_counted_as_a_high_water_mark(disk_dir, pushers):
    """push_peak: the most requests that held a pusher at once, at most `pushers` under eight writers' burst
    (and 0 without pushers: nothing takes one)."""
    size, extent, nthreads = 2 * MiB, 65536, 8
    make_source(disk_dir / "src.img", size)
    with Volume(disk_dir / "src.img", page_size=8192, pushers=pushers) as vol:
        vol.create_snapshot("s1")
        _burst(vol, size, extent, nthreads)
        k = vol.counters()
        assert (1 <= k["push_peak"] <= pushers) if pushers else k["push_peak"] == 0


def _burst(vol, size: int, extent: int, nthreads: int) -> float:
    """`nthreads` writers first-write `size` bytes in `extent`-sized requests, all starting together; the wall
    time (s)."""
    import time
    per_thread = size // extent // nthreads
    barrier = threading.Barrier(nthreads)

    def writer(i: int) -> None:
        vol.conn()                                 # connect before the burst starts
        barrier.wait()
        for j in range(per_thread):
            vol.write(b"w" * extent, (i * per_thread + j) * extent)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(nthreads)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0


@pytest.mark.parametrize("snapshots", [0, 1])
def test_statement_work_is_serial_with_and_without_copies(disk_dir, snapshots):
    """statement_ns (the statement's own work per page, done holding the one pusher): eight writers' requests
    cannot overlap it, so a burst takes at least pages x statement_ns, with or without snapshots; the engine
    counts that work (statement_s) at its planned length, not far above (a sleep to an absolute deadline with
    1 ns timer slack), and the copies still come after it, one request at a time."""
    size, extent, nthreads, per_page = 2 * MiB, 65536, 8, 200_000
    pages = size // 8192
    model = make_source(disk_dir / "src.img", size)
    with Volume(disk_dir / "src.img", page_size=8192, pushers=1, statement_ns=per_page) as vol:
        for i in range(snapshots):
            vol.create_snapshot(f"s{i}")
        wall = _burst(vol, size, extent, nthreads)
        k = vol.counters()
        planned = pages * per_page / 1e9                        # 0.05 s
        assert planned <= k["statement_s"] < planned * 1.5, k["statement_s"]
        assert k["statement_s"] + k["copy_read_s"] + k["copy_write_s"] + k["commit_s"] <= wall
        assert k["push_wait_s"] > 0
        assert k["push_peak"] == 1
        assert k["cow_requests"] == (size // extent if snapshots else 0)
        if snapshots:
            assert vol.view("s0") == bytes(model)


def test_deleted_snapshot_is_gone_and_others_unaffected(disk_dir):
    model = make_source(disk_dir / "src.img", 1 * MiB)
    with Volume(disk_dir / "src.img", page_size=8192) as vol:
        vol.create_snapshot("a")
        a = vol.conn("snap-a")                         # a view open across the delete
        vol.write(b"1" * 30000, 1000)
        vol.create_snapshot("b")
        want_b = vol.view("b")
        vol.write(b"2" * 30000, 5000)
        vol.delete_snapshot("a")
        assert not (disk_dir / "a.snap").exists()
        with pytest.raises(NbdError):                  # "snapshot 'a' was deleted"
            a.pread(10, 0)
        with pytest.raises(NbdError, match="refused"):
            vol.read(0, 10, "a-again")
        with pytest.raises(EngineError, match="no snapshot named"):
            vol.delete_snapshot("a")
        assert vol.view("b") == want_b
        model[1000:31000] = b"1" * 30000
        model[5000:35000] = b"2" * 30000
        assert vol.view() == model


@pytest.mark.parametrize("kwargs,field", [
    (dict(page_size=3000), "page_size"), (dict(page_size=256), "page_size"),
    (dict(durability="maybe"), "durability"), (dict(stripes=0), "stripes"),
    (dict(page_size=2048, direct=True), "page_size"), (dict(extent_size=3000), "extent_size"),
    (dict(pushers=-1), "pushers"), (dict(pushers=1, statement_ns=-1), "statement_ns"),
    (dict(statement_ns=1000), "statement_ns"),
])
def test_bad_config_is_one_clear_line(kwargs, field):
    with pytest.raises(ConfigError) as exc:
        CofwConfig(**kwargs)
    assert f"field '{field}'" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("args,field", [
    (["page_size=3000"], "page_size"), (["durability=maybe"], "durability"), (["stripes=0"], "stripes"),
    (["page_size=2048", "direct=1"], "page_size"), (["extent_size=3000"], "extent_size"),
    (["pushers=-1"], "pushers"), (["pushers=1", "statement_ns=-1"], "statement_ns"),
    (["statement_ns=1000"], "statement_ns"),
])
def test_the_plugin_refuses_bad_config_itself(disk_dir, args, field):
    """Started by hand (not through CofwConfig's checks), the plugin names the field in one error line."""
    make_source(disk_dir / "src.img", MiB)
    proc = subprocess.run(["nbdkit", "--run", "true", str(ensure_plugin()), f"source={disk_dir / 'src.img'}",
                           f"snapdir={disk_dir}", f"control={disk_dir / 'c.sock'}", *args],
                          capture_output=True, text=True, timeout=60)
    errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert proc.returncode != 0 and len(errors) == 1 and f"field '{field}'" in errors[0], proc.stderr


def test_bad_inputs(disk_dir):
    (disk_dir / "odd.img").write_bytes(b"\0" * 10000)
    with pytest.raises(EngineError, match="multiple of the page size"):
        Volume(disk_dir / "odd.img")
    with pytest.raises(EngineError, match="cannot open source"):
        Volume(disk_dir / "missing.img")
    make_source(disk_dir / "src.img", 1 * MiB)
    with pytest.raises(EngineError, match="exceeds"):
        Volume(disk_dir / "src.img", size=2 * MiB)
    with Volume(disk_dir / "src.img", page_size=8192) as vol:
        with pytest.raises(EngineError, match="name"):
            vol.create_snapshot("../evil")
        vol.create_snapshot("a")
        with pytest.raises(EngineError, match="already exists"):
            vol.create_snapshot("a")
        with pytest.raises(NbdError):                  # nbdkit refuses requests outside the export
            vol.write(b"x" * 10, 1 * MiB - 5)
    (disk_dir / "a.snap").unlink()
    # 1 KiB pages on a 4 KiB-block file system: allocation could not tell a copied page.
    with Volume(disk_dir / "src.img", page_size=1024) as small:
        with pytest.raises(EngineError, match="file system block"):
            small.create_snapshot("b")


def test_volume_can_be_a_prefix_of_a_larger_file(disk_dir):
    make_source(disk_dir / "big.img", 2 * MiB)
    with Volume(disk_dir / "big.img", page_size=8192, size=1 * MiB) as vol:
        assert vol.size == 1 * MiB and vol.pages == 128
        with pytest.raises(NbdError):
            vol.write(b"x", 1 * MiB)


def test_the_plugin_is_compiled_and_parallel():
    """The engine is the C plugin (no Python in the data path), and nbdkit runs it with the parallel model."""
    out = subprocess.run(["nbdkit", str(ensure_plugin()), "--dump-plugin"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert "thread_model=parallel" in out.splitlines()
    assert "python" not in out.lower()
