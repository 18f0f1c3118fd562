"""The script's counter lines read into snaptax.counters' names (snaptax.engines.lvmthin.counters)."""
from __future__ import annotations

import pytest

from snaptax import counters
from snaptax.engines.lvmthin.counters import chunks_broken, parse_counters

COUNTERS = """pv pv0 153 0 10408 103 4193 17 51961 1702 0 904 1820 0 0 0 0 35 13
lv origin 10 0 80 1 20 0 160 2 0 3 3 0 0 0 0 0 0
pool 0 524288 thin-pool 2 112/1024 {used}/8192 - rw discard_passdown queue_if_no_space - 256
thin origin 0 524288 thin {mapped} 524287
cpu  1200 30 800 5000 70 10 40 0 0 0
"""


def test_parse_counters_and_broken_chunks():
    chunk = 64 << 10
    before = parse_counters(COUNTERS.format(used=4096, mapped=524288), chunk)
    assert before["host.writes"] == 4193 and before["host.sectors_written"] == 51961 and before["host.io_ms"] == 904
    assert before["guest.writes"] == 20 and before["guest.sectors_written"] == 160
    assert before["engine.pool_data_used_chunks"] == 4096 and before["engine.pool_transaction_id"] == 2
    assert before["engine.pool_meta_used_blocks"] == 112 and before["engine.pool_data_total_chunks"] == 8192
    assert before["engine.pool_data_percent"] == 50.0 and before["engine.pool_metadata_percent"] == 10.9375
    assert before["engine.live_mapped_sectors"] == 524288
    # the guest's CPU in seconds (ticks of 1/100 s): busy = user + nice + system + irq + softirq, idle + iowait
    assert before["guest.cpu_busy_s"] == pytest.approx(20.8) and before["guest.cpu_idle_s"] == pytest.approx(50.7)
    # the prefilled origin maps every pool chunk: nothing is held by snapshots alone
    assert before["engine.snapshot_allocated_bytes"] == 0
    assert "engine.chunks_broken" not in before        # a counter the engine keeps across the plan (execute)
    assert not any(k.endswith("chunk_sectors") for k in before)          # a constant: in describe(), not here
    # 60 new pool chunks, 10 of them new mappings (10 * 128 sectors): 50 shared chunks were broken
    after = parse_counters(COUNTERS.format(used=4156, mapped=524288 + 1280), chunk)
    assert chunks_broken(before, after, chunk) == (50, 10)
    assert after["engine.snapshot_allocated_bytes"] == 50 * chunk
    for name in after:                                                    # every name is in the catalogue
        counters.spec(name)
    assert {n for n in after if counters.kind(n) == "gauge"} == {n for n in after if n.startswith("engine.")}
    assert counters.kind("engine.chunks_broken") == "counter"
    empty = parse_counters("thin origin 0 204800 thin 0 -\npool 0 1 thin-pool 0 1/2 0/3 - rw\n", chunk)
    assert empty["engine.live_mapped_sectors"] == 0 and empty["host.writes"] == 0
    assert empty["engine.snapshot_allocated_bytes"] == 0
