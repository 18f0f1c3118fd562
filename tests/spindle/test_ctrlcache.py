"""The array controller's write cache (snaptax.spindle.ctrlcache) on small hand-made traces: hits, stalls, destage
order, RAID5 full-stripe against read-modify-write, write-through, flushes. Simulated time only."""
from __future__ import annotations

import pytest

from snaptax.errors import ConfigError
from snaptax.spindle.arrays import Simulator
from snaptax.spindle.ctrlcache import PAGE, ControllerCache
from snaptax.spindle.profiles import describe
from snaptax.spindle.rigfiles import parse_device

OVERHEAD_S = 50e-6
LINK = 600e6


def _sim(raw: dict, capacity: int = 1 << 30) -> Simulator:
    return Simulator(parse_device(raw, "test_ctrlcache"), capacity, "a")


def _raid1(**cache) -> Simulator:
    return _sim({"kind": "raid1", "profile": "sas10k", "cache": {"battery_backed": True, **cache}})


def _cache(sim: Simulator) -> ControllerCache:
    assert isinstance(sim.volume, ControllerCache)
    return sim.volume


def _run(sim: Simulator, cmds: list[tuple[float, str, int, int]], until: float = 5.0) -> dict:
    done = {}
    for i, (t, kind, off, n) in enumerate(cmds):
        done.update(sim.advance(t))
        sim.submit(i, kind, off, n, t)
    done.update(sim.advance(until))
    return done


def test_a_write_is_acknowledged_after_the_controllers_overhead_and_a_read_of_it_hits():
    sim = _raid1(size="1M")
    done = _run(sim, [(0.0, "write", 1 << 20, 4096), (1e-4, "read", 1 << 20, 4096), (1.0, "read", 1 << 20, 4096)])
    assert done[0] == 0.0 + OVERHEAD_S + 4096 / LINK
    assert done[1] == 1e-4 + OVERHEAD_S + 4096 / LINK        # dirty (or being destaged): served from the cache
    assert done[2] - 1.0 > 1e-3                               # destaged and gone: the members position for it
    arr, members = sim.counters()["array"], sim.counters()["members"]
    assert arr["cache_read_hits"] == 1 and arr["cache_write_backs"] == 1 and arr["cache_destages"] == 1
    assert sum(m["writes"] for m in members) == 2              # the destage: one write per mirror
    assert sum(m["reads"] for m in members) == 1
    assert arr["cache_used_bytes"] == 0


def test_a_read_partly_in_the_cache_is_a_miss():
    sim = _raid1(size="1M", destage="watermark")
    done = _run(sim, [(0.0, "write", 0, 4096), (1e-4, "read", 0, 8192)])
    assert done[1] - 1e-4 > 1e-3
    assert sim.counters()["array"]["cache_read_hits"] == 0


def test_a_full_cache_makes_writes_wait_for_the_destage():
    sim = _raid1(size="8K", destage_depth=1)
    done = _run(sim, [(0.0, "write", i * (64 << 20), 4096) for i in range(3)])
    ack = OVERHEAD_S + 4096 / LINK
    assert done[0] == done[1] == ack
    assert done[2] > 1e-3                                     # accepted once the first destage ended
    arr = sim.counters()["array"]
    assert arr["cache_full_stalls"] == 1 and arr["cache_write_backs"] == 3 and arr["cache_destages"] == 3


def test_a_waiting_write_holds_back_later_ones_and_a_write_larger_than_the_cache_bypasses_it():
    sim = _raid1(size="8K", destage_depth=1)
    done = _run(sim, [(0.0, "write", 0, 8192), (0.0, "write", 1 << 20, 4096), (0.0, "write", 2 << 20, 4096),
                      (0.0, "write", 3 << 20, 16384)])
    assert done[0] == OVERHEAD_S + 8192 / LINK
    assert done[2] >= done[1] > 1e-3                          # in arrival order, after destages made room
    arr = sim.counters()["array"]
    assert arr["cache_full_stalls"] == 2 and arr["cache_write_backs"] == 3   # the 16 KiB write went through


def test_dirty_data_is_destaged_oldest_first_and_an_overwrite_takes_no_room():
    sim = _sim({"kind": "disk", "profile": "sas10k",
                "cache": {"size": "1M", "battery_backed": True, "destage_depth": 1, "segment": "64K"}})
    cache = _cache(sim)
    order: list[tuple[int, int]] = []
    inner = cache.array.submit

    def record(offset, length, write, t, on_done, eta=None):
        order.append((offset, length))
        inner(offset, length, write, t, on_done, eta)

    cache.array.submit = record  # type: ignore[method-assign]
    far, near = 900 << 20, 4 << 20
    _run(sim, [(0.0, "write", far, 4096), (0.0, "write", near, 4096), (0.0, "write", near + 4096, 4096),
               (0.0, "write", far, 4096), (0.0, "write", 100 << 20, 4096)])
    # the first write starts destaging at once (depth 1: nothing else until it ends); then the oldest dirty page
    # with the dirty page contiguous to it, as one write; the rewrite of `far` made while its destage was in flight
    # is a second copy, destaged in its own turn; the page written last goes last
    assert order == [(far, 4096), (near, 8192), (far, 4096), (100 << 20, 4096)]
    arr = sim.counters()["array"]
    assert arr["cache_write_backs"] == 5 and arr["cache_used_bytes"] == 0


def test_an_overwrite_of_a_dirty_page_is_absorbed():
    sim = _raid1(size="1M", destage="watermark", high_watermark=1.0)
    _run(sim, [(0.0, "write", 0, 4096), (1e-3, "write", 0, 4096), (2e-3, "write", 0, 4096)], until=1.0)
    arr = sim.counters()["array"]
    assert arr["cache_write_backs"] == 3 and arr["cache_destages"] == 0 and arr["cache_used_bytes"] == PAGE
    assert sum(m["writes"] for m in sim.counters()["members"]) == 0


RAID5 = {"kind": "raid5", "profile": "sas10k", "members": 4, "stripe_unit": "64K"}   # rows of 192 KiB


def test_raid5_a_row_filled_in_the_cache_is_written_full_stripe_a_lone_page_by_read_modify_write():
    row = 3 * (64 << 10)
    writes = [(0.0, "write", 10 * row + i * 4096, 4096) for i in range(row // 4096)]
    writes.append((0.0, "write", 20 * row, 4096))
    cached = _sim({**RAID5, "cache": {"size": "4M", "battery_backed": False, "write_back_unprotected": True,
                                      "destage": "watermark", "high_watermark": 1.0}})
    done = _run(cached, [*writes, (1e-3, "flush", 0, 0)])
    arr = cached.counters()["array"]
    assert arr["full_stripe_rows"] == 1 and arr["rmw_rows"] == 1 and arr["cache_destages"] == 2
    assert done[len(writes)] > 1e-3 + 1e-3                     # the unprotected flush waited for the destage
    plain = _sim(RAID5)
    _run(plain, writes)
    assert plain.counters()["array"]["rmw_rows"] == len(writes)   # without the cache: every 4 KiB write is an RMW
    assert plain.counters()["array"]["full_stripe_rows"] == 0


def test_a_battery_backed_flush_is_answered_by_the_controller():
    sim = _sim({**RAID5, "cache": {"size": "4M", "battery_backed": True, "destage": "watermark"}})
    done = _run(sim, [(0.0, "write", 0, 4096), (1e-3, "flush", 0, 0)])
    assert done[1] == 1e-3 + OVERHEAD_S
    assert sim.counters()["array"]["cache_destages"] == 0      # below the watermark: still dirty, and safe


def test_an_unprotected_cache_writes_through_unless_the_rig_says_otherwise():
    sim = _raid1(size="1M", battery_backed=False)
    plain = _sim({"kind": "raid1", "profile": "sas10k"})
    cmds = [(i * 2e-3, "write" if i % 2 else "read", (i * 7919 << 12) % (1 << 30), 4096) for i in range(50)]
    assert _run(sim, cmds) == _run(plain, cmds)
    assert sim.counters()["array"]["cache_write_backs"] == 0
    assert "write-through" in describe(parse_device({"kind": "raid1", "profile": "sas10k",
                                                     "cache": {"size": "1M", "battery_backed": False}}, "t"))


@pytest.mark.parametrize("bad", [{"size": "1M"}, {"size": "1M", "battery_backed": True, "destage": "lazy"},
                                 {"size": "1M", "battery_backed": True, "low_watermark": 0.9},
                                 {"size": "1M", "battery_backed": True, "segment": "6K"},
                                 {"size": "1M", "battery_backed": True, "colour": "blue"}])
def test_a_bad_cache_is_refused_naming_the_field(bad):
    with pytest.raises(ConfigError):
        parse_device({"kind": "raid1", "profile": "sas10k", "cache": bad}, "t")


def test_the_rig_variants_load():
    for name in ("raid1_10k_wb", "raid5_15k_6_wb", "sas_pool_v7000", "tier_pool_v7000"):
        sim = Simulator(parse_device({"device": name}, "t"), 1 << 30, name)
        assert isinstance(sim.volume, ControllerCache) and sim.volume.write_back
