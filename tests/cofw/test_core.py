"""Unit tests of the copy-on-first-write core on temp files: no nbdkit, fast, deterministic."""
from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from snaptax.cofw.core import UNSAFE_SUFFIX, CofwConfig, CofwVolume, allocated_ranges
from snaptax.errors import ConfigError, EngineError

MiB = 1 << 20


def make_source(path: Path, size: int, seed: int = 1) -> bytearray:
    data = bytearray(random.Random(seed).randbytes(size))
    path.write_bytes(data)
    return data


def read_view(vol: CofwVolume, snap=None) -> bytes:
    buf = bytearray(vol.size)
    if snap is None:
        vol.read_into(memoryview(buf), 0)
    else:
        vol.snapshot_read_into(snap, memoryview(buf), 0)
    return bytes(buf)


def allocated_bytes(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return sum(e - s for s, e in allocated_ranges(fd, os.fstat(fd).st_size))
    finally:
        os.close(fd)


def random_write(rng: random.Random, size: int, align: int) -> tuple[int, bytes]:
    """Partial-page, multi-page and unaligned requests (aligned to `align`)."""
    n = rng.choice([align, 2 * align, 3 * align, 4096, 8192, 12288, 65536, 3 * 65536 + 4096])
    n = max(align, n // align * align)
    off = rng.randrange(0, (size - n) // align + 1) * align
    return off, rng.randbytes(n)


@pytest.mark.parametrize("page_size,direct,align", [
    (8192, False, 1), (8192, False, 512), (4096, False, 1), (65536, False, 1), (8192, True, 4096),
])
def test_views_match_reference_model(workdir, page_size, direct, align):
    """Random writes, snapshots created and deleted at random points: every view equals the model, byte for byte."""
    size = 4 * MiB
    model = make_source(workdir / "src.img", size)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=page_size, direct=direct))
    rng = random.Random(page_size + align)
    expected: dict[str, bytes] = {}
    serial = 0
    for step in range(400):
        r = rng.random()
        if r < 0.03 or step == 5:
            serial += 1
            name = f"s{serial}"
            vol.create_snapshot(name, workdir / f"{name}.snap")
            expected[name] = bytes(model)
        elif r < 0.045 and expected:
            name = rng.choice(sorted(expected))
            vol.delete_snapshot(name)
            assert not (workdir / f"{name}.snap").exists()
            del expected[name]
        else:
            off, data = random_write(rng, size, align)
            vol.write(data, off)
            model[off:off + len(data)] = data
        if step % 100 == 99:        # random partial reads of every view, mid-run
            for name, want in expected.items():
                snap = vol.snapshot(name)
                for _ in range(20):
                    off = rng.randrange(size - 1)
                    n = rng.randrange(1, min(200_000, size - off) + 1)
                    buf = bytearray(n)
                    vol.snapshot_read_into(snap, memoryview(buf), off)
                    assert buf == want[off:off + n], (name, off, n)
    assert expected, "the run should leave snapshots to check"
    assert read_view(vol) == model
    for name, want in expected.items():
        snap = vol.snapshot(name)
        assert read_view(vol, snap) == want, name
        # Sparse: exactly the copied pages take space in the snapshot file.
        assert allocated_bytes(snap.path) == snap.copied_pages() * page_size
    vol.close()


def test_counters_and_multi_snapshot_copy(workdir):
    make_source(workdir / "src.img", 1 * MiB)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192))
    vol.create_snapshot("a", workdir / "a.snap")
    vol.create_snapshot("b", workdir / "b.snap")
    vol.write(b"x" * 100, 8192 + 50)               # partial write inside page 1: both snapshots get page 1
    c = vol.counters
    assert (c.pages_copied, c.bytes_copied, c.cow_faults, c.cow_requests, c.syncs) == (2, 16384, 1, 1, 2)
    vol.write(b"y" * 8192, 8192)                   # second write to page 1: nothing more to copy
    assert (c.pages_copied, c.cow_requests) == (2, 1)
    vol.write(b"z" * 20000, 16384 - 10)            # pages 1 (done), 2, 3, 4 (spans 16374..36374)
    assert c.pages_copied == 2 + 2 * 3 and c.cow_faults == 4
    vol.create_snapshot("c", workdir / "c.snap")   # only c lacks page 1 now
    vol.write(b"w", 8192)
    assert c.pages_copied == 9 and vol.snapshot("c").copied_pages() == 1
    assert c.metadata_ops == c.syncs + c.snapshots_created
    d = vol.counters_dict()
    assert d["copied_pages"] == {"a": 4, "b": 4, "c": 1} and d["page_size"] == 8192
    vol.close()


def test_no_snapshot_no_copy_and_durability_none(workdir):
    make_source(workdir / "src.img", 1 * MiB)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192, durability="none"))
    vol.write(b"q" * 4096, 0)
    assert vol.counters.pages_copied == 0
    vol.create_snapshot("a", workdir / "a.snap")
    assert (workdir / ("a.snap" + UNSAFE_SUFFIX)).exists()
    vol.write(b"r" * 4096, 0)
    assert vol.counters.pages_copied == 1 and vol.counters.syncs == 0
    vol.close()                                    # clean close makes it safe
    assert not (workdir / ("a.snap" + UNSAFE_SUFFIX)).exists()


def test_crash_recovery_rebuilds_bitmap_and_discards_torn_pages(workdir):
    size = 2 * MiB
    model = make_source(workdir / "src.img", size)
    cfg = CofwConfig(page_size=8192)
    vol = CofwVolume(workdir / "src.img", cfg)
    vol.create_snapshot("s", workdir / "s.snap")
    at_snapshot = bytes(model)
    rng = random.Random(7)
    for _ in range(60):
        off, data = random_write(rng, size, 1)
        vol.write(data, off)
    copied = vol.snapshot("s").copied_pages()
    # "Crash": the process dies without close(); only what is in the files survives.
    # A torn copy: the first 4 KiB block of a page the engine never copied (its source write never happened).
    torn_page = next(p for p in range(vol.pages) if not vol.snapshot("s").bitmap[p])
    fd = os.open(workdir / "s.snap", os.O_WRONLY)
    os.pwrite(fd, b"\xee" * 4096, torn_page * 8192)
    os.close(fd)
    del vol

    vol2 = CofwVolume(workdir / "src.img", cfg)
    snap = vol2.attach_snapshot("s", workdir / "s.snap")
    assert snap.copied_pages() == copied
    assert vol2.counters.recovery_punched_pages == 1
    assert read_view(vol2, snap) == at_snapshot
    assert allocated_bytes(workdir / "s.snap") == copied * 8192
    # And it keeps working after recovery.
    vol2.write(b"n" * 8192, torn_page * 8192)
    assert read_view(vol2, snap) == at_snapshot
    vol2.close()


def test_attach_refuses_unsafe_snapshot(workdir):
    make_source(workdir / "src.img", 1 * MiB)
    cfg = CofwConfig(page_size=8192, durability="none")
    vol = CofwVolume(workdir / "src.img", cfg)
    vol.create_snapshot("a", workdir / "a.snap")
    vol.write(b"x" * 8192, 0)
    del vol                                        # crash: the .unsafe marker stays
    vol2 = CofwVolume(workdir / "src.img", cfg)
    with pytest.raises(EngineError, match="durability=none"):
        vol2.attach_snapshot("a", workdir / "a.snap")
    vol2.close()


def test_concurrent_writers_and_snapshot_readers(workdir):
    """Threads write disjoint 512-byte sectors of shared pages (so they race on page copies) while readers
    check the snapshot view continuously; a second snapshot is taken mid-run and checked per sector."""
    size, ps, nthreads = 1 * MiB, 8192, 8
    model = make_source(workdir / "src.img", size)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=ps, stripes=64))
    s1 = vol.create_snapshot("s1", workdir / "s1.snap")
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
            buf = bytearray(n)
            vol.snapshot_read_into(s1, memoryview(buf), off)
            if buf != want1[off:off + n]:
                errors.append(f"snapshot read at {off}+{n} differs")
                return

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(nthreads)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads + readers:
        t.start()
    s2 = vol.create_snapshot("s2", workdir / "s2.snap")   # taken while writers run
    for t in threads:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[:3]
    assert read_view(vol, s1) == want1
    # s2 is a point in time between requests: each sector holds the original or a value its thread wrote.
    v2, live = read_view(vol, s2), read_view(vol)
    for i in range(nthreads):
        for off, values in written[i].items():
            assert v2[off:off + 512] == want1[off:off + 512] or v2[off:off + 512] in values
            assert live[off:off + 512] in values
    # Every page overwritten after s1 was copied exactly once into s1 (no double copy under the race).
    assert vol.counters.pages_copied == s1.copied_pages() + s2.copied_pages()
    vol.close()


def test_deleted_snapshot_is_gone_and_others_unaffected(workdir):
    model = make_source(workdir / "src.img", 1 * MiB)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192))
    a = vol.create_snapshot("a", workdir / "a.snap")
    vol.write(b"1" * 30000, 1000)
    b = vol.create_snapshot("b", workdir / "b.snap")
    want_b = read_view(vol, b)
    vol.write(b"2" * 30000, 5000)
    vol.delete_snapshot("a")
    with pytest.raises(EngineError, match="deleted"):
        vol.snapshot_read_into(a, memoryview(bytearray(10)), 0)
    with pytest.raises(EngineError, match="no snapshot named"):
        vol.snapshot("a")
    assert read_view(vol, b) == want_b
    model[1000:31000] = b"1" * 30000
    model[5000:35000] = b"2" * 30000
    assert read_view(vol) == model
    vol.close()


@pytest.mark.parametrize("kwargs,field", [
    (dict(page_size=3000), "page_size"), (dict(page_size=256), "page_size"),
    (dict(durability="maybe"), "durability"), (dict(stripes=0), "stripes"),
    (dict(page_size=2048, direct=True), "page_size"),
])
def test_bad_config_is_one_clear_line(kwargs, field):
    with pytest.raises(ConfigError) as exc:
        CofwConfig(**kwargs)
    assert f"field '{field}'" in str(exc.value) and "\n" not in str(exc.value)


def test_bad_inputs(workdir):
    (workdir / "odd.img").write_bytes(b"\0" * 10000)
    with pytest.raises(ConfigError, match="multiple of the page size"):
        CofwVolume(workdir / "odd.img")
    with pytest.raises(EngineError, match="cannot open source"):
        CofwVolume(workdir / "missing.img")
    make_source(workdir / "src.img", 1 * MiB)
    with pytest.raises(ConfigError, match="exceeds"):
        CofwVolume(workdir / "src.img", size=2 * MiB)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192))
    with pytest.raises(ConfigError, match="name"):
        vol.create_snapshot("../evil", workdir / "x.snap")
    vol.create_snapshot("a", workdir / "a.snap")
    with pytest.raises(EngineError, match="already exists"):
        vol.create_snapshot("a", workdir / "a2.snap")
    with pytest.raises(EngineError, match="outside the volume"):
        vol.write(b"x" * 10, 1 * MiB - 5)
    vol.close()
    small = CofwVolume(workdir / "src.img", CofwConfig(page_size=1024))
    with pytest.raises(ConfigError, match="file system block"):
        small.create_snapshot("b", workdir / "b.snap")     # 1 KiB pages on a 4 KiB-block file system
    small.close()


def test_volume_can_be_a_prefix_of_a_larger_file(workdir):
    make_source(workdir / "big.img", 2 * MiB)
    vol = CofwVolume(workdir / "big.img", CofwConfig(page_size=8192), size=1 * MiB)
    assert vol.size == 1 * MiB and vol.pages == 128
    with pytest.raises(EngineError, match="outside"):
        vol.write(b"x", 1 * MiB)
    vol.close()


def test_plugin_side_is_stdlib_only():
    """nbdkit's python plugin runs under the system python3: what it imports must be stdlib (or snaptax)."""
    import subprocess
    import sys
    src = Path(__file__).resolve().parents[2] / "src"
    code = (f"import sys; sys.path.insert(0, {str(src)!r}); import snaptax.cofw.core, snaptax.cofw.control; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names "
            "and m.split('.')[0] not in ('snaptax', '__main__', '_distutils_hack', 'sitecustomize')); print(bad)")
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    out = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out
