"""Snapshots on a device of their own (extents.py): NTFS-like 64 KiB allocation, byte-exact views with one and two
snapshots, the journal as the durable map across a crash, and refusals. The device here is a file (FileClient);
the same store over an emulated spindle's NBD export is tested in test_integration."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from snaptax.cofw.core import UNSAFE_SUFFIX, CofwConfig, CofwVolume
from snaptax.cofw.extents import ExtentAllocator, FileClient, open_client
from snaptax.errors import ConfigError, EngineError
from tests.cofw.test_core import make_source, random_write, read_view

MiB = 1 << 20
KiB = 1 << 10


def device(path: Path, size: int) -> FileClient:
    with open(path, "wb") as f:
        f.truncate(size)
    return FileClient(path)


def test_allocator_lowest_free_first_reuses_freed_and_refuses_when_full():
    a = ExtentAllocator(4 * 64 * KiB)
    assert [a.allocate() for _ in range(3)] == [0, 1, 2]
    a.free([1])
    assert a.allocate() == 1 and a.allocate() == 3
    with pytest.raises(EngineError, match="full"):
        a.allocate()
    b = ExtentAllocator(8 * 64 * KiB)
    b.reserve({0, 2, 5})
    assert [b.allocate() for _ in range(4)] == [1, 3, 4, 6]
    assert b.used == 7
    with pytest.raises(ConfigError, match="extent_size"):
        ExtentAllocator(MiB, 3000)


@pytest.mark.parametrize("direct", [False, True])
def test_views_with_one_and_two_snapshots_on_a_device_are_byte_exact(workdir, direct):
    size = 4 * MiB
    model = make_source(workdir / "src.img", size)
    dev = device(workdir / "dev.img", 2 * size)
    if direct:
        dev.close()
        dev = FileClient(workdir / "dev.img", direct=True)
    cfg = CofwConfig(page_size=8192, direct=direct)
    vol = CofwVolume(workdir / "src.img", cfg, snapshot_device=dev)
    rng = random.Random(11)
    align = 4096 if direct else 1
    expected = {}
    for step in range(300):
        if step in (20, 150):
            name = f"s{len(expected) + 1}"
            vol.create_snapshot(name, workdir / f"{name}.map")
            expected[name] = bytes(model)
        off, data = random_write(rng, size, align)
        vol.write(data, off)
        model[off:off + len(data)] = data
    assert read_view(vol) == model
    for name, want in expected.items():
        snap = vol.snapshot(name)
        assert read_view(vol, snap) == want, name
        # 64 KiB units: at least one page per unit, at most eight
        units = snap.store.allocated_bytes // (64 * KiB)
        assert units * 1 <= snap.copied_pages() <= units * 8
    d = vol.counters_dict()
    assert d["snapshot_allocated_bytes"] == sum(vol.snapshot(n).store.allocated_bytes for n in expected)
    assert set(d["times"]) == {"s1", "s2"} and d["times"]["s1"]["copy_write_s"] > 0
    assert d["copy_write_s"] == pytest.approx(sum(t["copy_write_s"] for t in d["times"].values()))
    assert d["source_write_s"] > 0 and d["copy_read_s"] > 0 and d["commit_s"] > 0
    vol.delete_snapshot("s1")
    assert not (workdir / "s1.map").exists()
    assert read_view(vol, vol.snapshot("s2")) == expected["s2"]
    vol.close()
    dev.close()


def test_pages_of_one_extent_sit_together_and_two_snapshots_interleave(workdir):
    make_source(workdir / "src.img", MiB)
    dev = device(workdir / "dev.img", MiB)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192), snapshot_device=dev)
    a = vol.create_snapshot("a", workdir / "a.map")
    vol.write(b"1" * 8192, 3 * 8192)            # extent 0 of a -> slot 0, page 3 at 24 KiB
    b = vol.create_snapshot("b", workdir / "b.map")
    vol.write(b"2" * 8192, 10 * 8192)           # extent 1: a -> slot 1, b -> slot 2 (allocation order)
    vol.write(b"3" * 8192, 4 * 8192)            # extent 0 again: a has slot 0, b gets slot 3
    assert a.store._map == {0: 0, 1: 1} and b.store._map == {1: 2, 0: 3}
    raw = (workdir / "dev.img").read_bytes()
    src_at_snapshot = make_source(workdir / "ref.img", MiB)
    assert raw[3 * 8192:4 * 8192] == src_at_snapshot[3 * 8192:4 * 8192]          # a's page 3 in slot 0
    assert raw[3 * 64 * KiB + 4 * 8192:3 * 64 * KiB + 5 * 8192] == src_at_snapshot[4 * 8192:5 * 8192]
    vol.close()
    dev.close()


def test_a_crash_keeps_the_journal_s_pages_and_drops_a_torn_line(workdir):
    size = 2 * MiB
    model = make_source(workdir / "src.img", size)
    cfg = CofwConfig(page_size=8192)
    dev = device(workdir / "dev.img", size)
    vol = CofwVolume(workdir / "src.img", cfg, snapshot_device=dev)
    vol.create_snapshot("s", workdir / "s.map")
    at_snapshot = bytes(model)
    rng = random.Random(3)
    for _ in range(60):
        off, data = random_write(rng, size, 1)
        vol.write(data, off)
    copied = vol.snapshot("s").copied_pages()
    used = vol.snapshot("s").store.allocated_bytes
    # "Crash" mid-append: the last record of a copy whose source write never happened is half written.
    with open(workdir / "s.map", "ab") as f:
        f.write(b"17")
    del vol

    vol2 = CofwVolume(workdir / "src.img", cfg, snapshot_device=FileClient(workdir / "dev.img"))
    snap = vol2.attach_snapshot("s", workdir / "s.map")
    assert snap.copied_pages() == copied and snap.store.allocated_bytes == used
    assert read_view(vol2, snap) == at_snapshot
    vol2.write(b"n" * 8192, 0)                   # and it keeps working: new copies go to fresh slots
    assert read_view(vol2, snap) == at_snapshot
    assert (workdir / "s.map").read_bytes().endswith(b"\n")
    vol2.close()


def test_a_contradictory_journal_is_refused_in_one_line(workdir):
    make_source(workdir / "src.img", MiB)
    (workdir / "s.map").write_bytes(b"0 0\n1 5\n")       # pages 0 and 1 share extent 0: one slot, not two
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192),
                     snapshot_device=device(workdir / "dev.img", MiB))
    with pytest.raises(EngineError, match=r"s\.map:2"):
        vol.attach_snapshot("s", workdir / "s.map")
    vol.close()


def test_durability_none_on_a_device_is_refused_after_a_crash(workdir):
    make_source(workdir / "src.img", MiB)
    cfg = CofwConfig(page_size=8192, durability="none")
    vol = CofwVolume(workdir / "src.img", cfg, snapshot_device=device(workdir / "dev.img", MiB))
    vol.create_snapshot("a", workdir / "a.map")
    assert (workdir / ("a.map" + UNSAFE_SUFFIX)).exists()
    vol.write(b"x" * 8192, 0)
    assert vol.counters.syncs == 0
    del vol
    vol2 = CofwVolume(workdir / "src.img", cfg, snapshot_device=FileClient(workdir / "dev.img"))
    with pytest.raises(EngineError, match="durability=none"):
        vol2.attach_snapshot("a", workdir / "a.map")
    vol2.close()


def test_a_full_device_fails_the_write_before_the_source_changes(workdir):
    model = make_source(workdir / "src.img", MiB)
    vol = CofwVolume(workdir / "src.img", CofwConfig(page_size=8192),
                     snapshot_device=device(workdir / "dev.img", 64 * KiB))    # room for one extent
    vol.create_snapshot("a", workdir / "a.map")
    vol.write(b"x" * 8192, 0)
    with pytest.raises(EngineError, match="full"):
        vol.write(b"y" * 8192, 64 * KiB)
    assert read_view(vol)[64 * KiB:72 * KiB] == model[64 * KiB:72 * KiB]
    vol.close()


def test_open_client_names_the_missing_binding_or_path(workdir, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_nbd(name, *args, **kwargs):
        if name == "nbd":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_nbd)
    with pytest.raises(EngineError, match="python3-libnbd"):
        open_client("nbd+unix:///?socket=/nonexistent.sock")
    with pytest.raises(EngineError, match="cannot open snapshot device"):
        open_client(str(workdir / "missing.img"))
    assert os.path.exists(workdir)
