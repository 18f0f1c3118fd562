"""Snapshots on a device of their own (the plugin's snapdev=): NTFS-like 64 KiB allocation, byte-exact views with
one and two snapshots, the journal as the durable map across a crash, and refusals. The device here is a file;
the same store over an emulated spindle's NBD export is tested in test_integration and tests/engines."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from snaptax.cofw.spec import UNSAFE_SUFFIX
from snaptax.errors import EngineError
from tests.cofw.test_core import make_source, random_write
from tests.cofw.volume import NbdError, Volume

MiB = 1 << 20
KiB = 1 << 10

pytestmark = pytest.mark.integration


def device(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def journal(path: Path) -> list[tuple[int, int]]:
    return [tuple(int(x) for x in line.split()) for line in path.read_text().splitlines()]  # type: ignore[misc]


def slots(path: Path, ppe: int = 8) -> dict[int, int]:
    """source extent -> device slot, from a journal"""
    return {page // ppe: slot for page, slot in journal(path)}


def test_allocator_lowest_free_first_reuses_freed_and_refuses_when_full(disk_dir):
    make_source(disk_dir / "src.img", MiB)
    dev = device(disk_dir / "dev.img", 4 * 64 * KiB)
    with Volume(disk_dir / "src.img", snapdev=dev) as vol:
        vol.create_snapshot("a")
        for extent in (0, 1):                             # slots 0, 1 for a
            vol.write(b"a" * 8192, extent * 64 * KiB)
        vol.create_snapshot("b")
        vol.write(b"b" * 8192, 2 * 64 * KiB)              # slot 2 for a, slot 3 for b
        assert slots(disk_dir / "a.map") == {0: 0, 1: 1, 2: 2} and slots(disk_dir / "b.map") == {2: 3}
        vol.delete_snapshot("a")                          # slots 0..2 freed: lowest first again
        vol.write(b"c" * 8192, 5 * 64 * KiB)
        vol.write(b"d" * 8192, 6 * 64 * KiB)
        assert slots(disk_dir / "b.map") == {2: 3, 5: 0, 6: 1}
        vol.write(b"e" * 8192, 7 * 64 * KiB)              # slot 2
        before = vol.view()
        with pytest.raises(NbdError) as exc:              # no slot left
            vol.write(b"f" * 8192, 8 * 64 * KiB)
        assert exc.value.errno == 28                      # ENOSPC
        assert vol.view() == before                       # the source did not change
    # At start, slots the re-attached snapshots hold are taken; the free ones below the highest are used first.
    (disk_dir / "b.map").unlink()
    device(disk_dir / "dev8.img", 8 * 64 * KiB)
    (disk_dir / "r.map").write_text("0 0\n8 2\n40 5\n")
    with Volume(disk_dir / "src.img", snapdev=disk_dir / "dev8.img") as vol:
        vol.create_snapshot("n")
        for page in (0, 8, 40, 1):                        # r holds these extents: only n allocates
            vol.write(b"g" * 8192, page * 8192)
        assert slots(disk_dir / "n.map") == {0: 1, 1: 3, 5: 4}
        vol.write(b"h" * 8192, 24 * 8192)                 # extent 3 is new to both: r (older) first, then n
        assert slots(disk_dir / "r.map")[3] == 6 and slots(disk_dir / "n.map")[3] == 7
        assert vol.counters()["snapshot_allocated_bytes"] == 8 * 64 * KiB


@pytest.mark.parametrize("direct", [False, True])
def test_views_with_one_and_two_snapshots_on_a_device_are_byte_exact(disk_dir, direct):
    size = 4 * MiB
    model = make_source(disk_dir / "src.img", size)
    dev = device(disk_dir / "dev.img", 2 * size)
    rng = random.Random(11)
    align = 4096 if direct else 1
    expected = {}
    with Volume(disk_dir / "src.img", snapdev=dev, direct=direct) as vol:
        for step in range(300):
            if step in (20, 150):
                name = f"s{len(expected) + 1}"
                vol.create_snapshot(name)
                expected[name] = bytes(model)
            off, data = random_write(rng, size, align)
            vol.write(data, off)
            model[off:off + len(data)] = data
        assert vol.view() == model
        d = vol.counters()
        for name, want in expected.items():
            assert vol.view(name) == want, name
            # 64 KiB units: at least one page per unit, at most eight
            units = len(set(slots(disk_dir / f"{name}.map").values()))
            assert units <= d["copied_pages"][name] <= units * 8
        assert d["snapshot_allocated_bytes"] == sum(len(slots(disk_dir / f"{n}.map")) for n in expected) * 64 * KiB
        assert set(d["times"]) == {"s1", "s2"} and d["times"]["s1"]["copy_write_s"] > 0
        assert d["copy_write_s"] == pytest.approx(sum(t["copy_write_s"] for t in d["times"].values()), abs=1e-8)
        assert d["source_write_s"] > 0 and d["copy_read_s"] > 0 and d["commit_s"] > 0
        vol.delete_snapshot("s1")
        assert not (disk_dir / "s1.map").exists()
        assert vol.view("s2") == expected["s2"]


def test_pages_of_one_extent_sit_together_and_two_snapshots_interleave(disk_dir):
    src_at_snapshot = make_source(disk_dir / "src.img", MiB)
    dev = device(disk_dir / "dev.img", MiB)
    with Volume(disk_dir / "src.img", snapdev=dev) as vol:
        vol.create_snapshot("a")
        vol.write(b"1" * 8192, 3 * 8192)            # extent 0 of a -> slot 0, page 3 at 24 KiB
        vol.create_snapshot("b")
        vol.write(b"2" * 8192, 10 * 8192)           # extent 1: a -> slot 1, b -> slot 2 (allocation order)
        vol.write(b"3" * 8192, 4 * 8192)            # extent 0 again: a has slot 0, b gets slot 3
        assert slots(disk_dir / "a.map") == {0: 0, 1: 1} and slots(disk_dir / "b.map") == {1: 2, 0: 3}
        vol.flush()
    raw = (disk_dir / "dev.img").read_bytes()
    assert raw[3 * 8192:4 * 8192] == src_at_snapshot[3 * 8192:4 * 8192]          # a's page 3 in slot 0
    assert raw[3 * 64 * KiB + 4 * 8192:3 * 64 * KiB + 5 * 8192] == src_at_snapshot[4 * 8192:5 * 8192]


def test_a_crash_keeps_the_journal_s_pages_and_drops_a_torn_line(disk_dir):
    size = 2 * MiB
    model = make_source(disk_dir / "src.img", size)
    dev = device(disk_dir / "dev.img", size)
    vol = Volume(disk_dir / "src.img", snapdev=dev)
    vol.create_snapshot("s")
    at_snapshot = bytes(model)
    rng = random.Random(3)
    for _ in range(60):
        off, data = random_write(rng, size, 1)
        vol.write(data, off)
    k = vol.counters()
    copied, used = k["copied_pages"]["s"], k["snapshot_allocated_bytes"]
    vol.crash()
    # "Crash" mid-append: the last record of a copy whose source write never happened is half written.
    with open(disk_dir / "s.map", "ab") as f:
        f.write(b"17")
    with Volume(disk_dir / "src.img", snapdev=dev) as vol2:
        k = vol2.counters()
        assert k["copied_pages"]["s"] == copied and k["snapshot_allocated_bytes"] == used
        assert vol2.view("s") == at_snapshot
        vol2.write(b"n" * 8192, 0)                   # and it keeps working: new copies go to fresh slots
        assert vol2.view("s") == at_snapshot
    assert (disk_dir / "s.map").read_bytes().endswith(b"\n")


@pytest.mark.parametrize("text,line", [(b"0 0\n1 5\n", 2), (b"0 0\nzz\n", 2), (b"99999 0\n", 1)])
def test_a_contradictory_journal_is_refused_in_one_line(disk_dir, text, line):
    make_source(disk_dir / "src.img", MiB)
    (disk_dir / "s.map").write_bytes(text)       # two slots for one extent; not a line; a page outside the volume
    with pytest.raises(EngineError, match=rf"s\.map:{line}") as exc:
        Volume(disk_dir / "src.img", snapdev=device(disk_dir / "dev.img", MiB))
    assert "\n" not in str(exc.value)


def test_durability_none_on_a_device_is_refused_after_a_crash(disk_dir):
    make_source(disk_dir / "src.img", MiB)
    dev = device(disk_dir / "dev.img", MiB)
    vol = Volume(disk_dir / "src.img", durability="none", snapdev=dev)
    vol.create_snapshot("a")
    assert (disk_dir / ("a.map" + UNSAFE_SUFFIX)).exists()
    vol.write(b"x" * 8192, 0)
    assert vol.counters()["syncs"] == 0
    vol.crash()
    with pytest.raises(EngineError, match="durability=none"):
        Volume(disk_dir / "src.img", durability="none", snapdev=dev)


def test_a_full_device_fails_the_write_before_the_source_changes(disk_dir):
    model = make_source(disk_dir / "src.img", MiB)
    with Volume(disk_dir / "src.img", snapdev=device(disk_dir / "dev.img", 64 * KiB)) as vol:   # one extent
        vol.create_snapshot("a")
        vol.write(b"x" * 8192, 0)
        with pytest.raises(NbdError):
            vol.write(b"y" * 8192, 64 * KiB)
        assert vol.view()[64 * KiB:72 * KiB] == model[64 * KiB:72 * KiB]


def test_an_unreachable_or_missing_device_is_named_in_one_line(disk_dir):
    make_source(disk_dir / "src.img", MiB)
    with pytest.raises(EngineError, match="cannot connect to the snapshot device") as exc:
        Volume(disk_dir / "src.img", snapdev="nbd+unix:///?socket=/nonexistent.sock")
    assert "\n" not in str(exc.value)
    with pytest.raises(EngineError, match="cannot open snapshot device"):
        Volume(disk_dir / "src.img", snapdev=disk_dir / "missing.img")


@pytest.mark.parametrize("on_device", [False, True], ids=["sparse-file", "snapshot-device"])
def test_a_kill_between_copy_and_source_write_leaves_a_consistent_snapshot(disk_dir, monkeypatch, on_device):
    """The plugin dies (SIGKILL, its test hook) after the first copy is durable and before its source write: the
    restarted engine has the page in the snapshot, the snapshot view and the live volume both as before."""
    size = 2 * MiB
    model = make_source(disk_dir / "src.img", size)
    dev = device(disk_dir / "dev.img", size) if on_device else None
    vol = Volume(disk_dir / "src.img", snapdev=dev)
    vol.create_snapshot("s")
    vol.write(b"p" * 8192, 0)                          # a copy and its write, before the hook is armed
    model[0:8192] = b"p" * 8192
    at_snapshot = bytes(make_source(disk_dir / "ref.img", size))
    vol.close()
    monkeypatch.setenv("SNAPTAX_COFW_KILL_AFTER_COPY", "1")
    vol = Volume(disk_dir / "src.img", snapdev=dev)
    with pytest.raises(NbdError, match="closed"):
        vol.write(b"k" * 12288, 5 * 8192 + 4096)       # pages 5 and 6: copied, then the engine dies
    vol.crash()
    monkeypatch.delenv("SNAPTAX_COFW_KILL_AFTER_COPY")
    with Volume(disk_dir / "src.img", snapdev=dev) as vol2:
        k = vol2.counters()
        assert k["copied_pages"]["s"] == 3 and k["recovery_punched_pages"] == 0
        assert vol2.view("s") == at_snapshot
        assert vol2.view() == model                    # the source write never happened
        vol2.write(b"k" * 12288, 5 * 8192 + 4096)      # retried: nothing more to copy
        assert vol2.counters()["pages_copied"] == 0 and vol2.view("s") == at_snapshot
