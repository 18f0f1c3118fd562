"""The emulated Easy Tier pool (arrays.Tier): placement, heat size limit, migration rate, per-tier counters,
and the rig file's refusal of bad pool parameters. Deterministic: Simulator time only, no daemons."""
import dataclasses
import random

import pytest

from snaptax import counters
from snaptax.errors import ConfigError
from snaptax.host import rig as rigmod
from snaptax.spindle.arrays import Simulator, Tier
from snaptax.spindle.profiles import DiskSpec, TierSpec, spec_from_json, to_json
from snaptax.spindle.rigfiles import load_profile, parse_device
from snaptax.spindle.serve import flat_counters

MiB = 1 << 20
EXT = 4 * MiB          # 16 extents in a 64 MiB pool, 4 of them SSD slots


def _spec(**kw) -> TierSpec:
    base = dict(ssd=DiskSpec(load_profile("ssd_sas")), hdd=DiskSpec(load_profile("sas10k")), extent_bytes=EXT,
                ssd_fraction=0.25, cycle_s=1.0, window_cycles=1, migration_mb_s=1000.0, migration_chunk_bytes=MiB)
    base.update(kw)
    return TierSpec(**base)


class Driver:
    """Feeds a Simulator one command at a time in simulated time (QD1), advancing through its events."""

    def __init__(self, spec: TierSpec, capacity: int = 16 * EXT):
        self.sim = Simulator(spec, capacity)
        self.tier = self.sim.volume
        assert isinstance(self.tier, Tier)
        self.t = 0.0
        self.n = 0

    def io(self, kind: str, offset: int, length: int, gap_s: float = 0.002) -> None:
        self.sim.advance(self.t)
        self.sim.submit(self.n, kind, offset, length, self.t)
        self.n += 1
        self.t += gap_s

    def idle(self, seconds: float) -> None:
        self.t += seconds
        self.sim.advance(self.t)

    def until(self, t: float) -> None:
        assert t >= self.t
        self.idle(t - self.t)

    def where(self, ext: int) -> str | None:
        return self.tier.location(ext * EXT)


def _write_all(d: Driver, extents=range(16), size: int = 4096) -> None:
    for e in extents:
        d.io("write", e * EXT, size, gap_s=0.02)


# cycles end at t = 1, 2, 3 … (cycle_s = 1); each test keeps its I/O of one cycle inside that cycle

def test_hot_extents_with_small_io_are_promoted_after_a_cycle():
    d = Driver(_spec())
    _write_all(d)                              # every extent allocated on HDD, heat 1 each (in cycle 1)
    assert all(d.where(e) == "hdd" for e in range(16))
    d.until(1.5)                               # cycle 1 ended: the 4 SSD slots went to 4 of the equally warm extents
    hot = [e for e in range(16) if d.where(e) == "hdd"][:2]
    for i in range(150):                       # in cycle 2: hammer two HDD extents with 32 KiB reads
        d.io("read", hot[i % 2] * EXT + (i % 100) * 32768, 32768, gap_s=0.003)
    assert [d.where(e) for e in hot] == ["hdd", "hdd"]          # nothing moves before the cycle ends
    d.until(2.9)
    assert [d.where(e) for e in hot] == ["ssd", "ssd"]          # swapped with the SSD extents cold in cycle 2
    c = d.sim.counters()["array"]
    assert (c["promotions"], c["demotions"]) == (6, 2) and not c["migration_running"]
    assert c["migrated_bytes"] == 8 * EXT


def test_extents_hot_only_with_large_io_are_not_promoted():
    d = Driver(_spec())
    _write_all(d)
    d.until(1.5)
    on_hdd = [e for e in range(16) if d.where(e) == "hdd"]
    big, small = on_hdd[0], on_hdd[1]
    for i in range(60):                        # 256 KiB reads: six times the I/Os the small extent gets
        d.io("read", big * EXT + (i % 16) * (256 << 10), 256 << 10, gap_s=0.005)
    for i in range(10):
        d.io("read", small * EXT + i * 4096, 4096, gap_s=0.005)
    d.until(2.9)
    assert d.where(small) == "ssd"             # a little small-block I/O wins an SSD slot ...
    assert d.where(big) == "hdd"               # ... the large-block I/O counted no heat at all
    assert d.sim.counters()["array"]["heat_ignored_ios"] == 60


def test_heat_size_limit_is_inclusive_at_64k():
    d = Driver(_spec())
    d.io("write", 0, 64 << 10)
    d.io("write", EXT, (64 << 10) + 512)
    assert d.tier.heat_now == {0: 1}


def test_snapshot_like_writes_to_never_written_extents_land_on_hdd():
    d = Driver(_spec(ssd_fraction=0.5))        # 8 SSD slots: room on SSD is not what keeps new data off it
    for e in range(4):                         # the "base disk": four extents, learned onto SSD
        for i in range(50):
            d.io("write" if i % 5 == 0 else "read", e * EXT + i * 32768, 32768)
    d.until(2.1)
    assert all(d.where(e) == "ssd" for e in range(4))
    assert len(d.tier.free["ssd"]) == 4
    for i in range(64):                        # the "delta": new data written to never-written extents 8 and 9
        d.io("write", 8 * EXT + i * (128 << 10), 32768)
    assert d.where(8) == d.where(9) == "hdd"
    assert len(d.tier.free["ssd"]) == 4        # no SSD slot was used for new data
    assert d.where(10) is None                 # untouched extents stay unallocated
    d.until(3.9)                               # one cycle later the delta is hot: promoted into the free slots
    assert d.where(8) == d.where(9) == "ssd"


def test_tier_pool_allocates_new_extents_on_the_enterprise_tier():
    spec = parse_device({"device": "tier_pool"}, "t")
    assert isinstance(spec, TierSpec) and spec.new_allocation == "hdd"
    assert spec.heat_max_io_bytes == 64 << 10 and spec.window_cycles == 1 and spec.cycle_s == 120.0


def test_tier_pool_migration_rate_is_ibms_12gb_per_5min_scaled():
    spec = parse_device({"device": "tier_pool"}, "t")
    real = 12e9 / 300                                   # 40 MB/s, IBM's default
    capacity_scale = (16 << 30) / 4.2e12                # rigs/local.yaml: 16 GiB stand for 4.2 TB
    time_scale = 86400 / spec.cycle_s                   # 24 h cycle -> 120 s
    assert spec.migration_mb_s * 1e6 == pytest.approx(real * capacity_scale * time_scale, rel=1e-3)


def test_migration_respects_the_byte_rate_limit():
    rate_mb_s = 20.0                          # slow enough to bind: a 4 MiB extent may start every 0.21 s
    d = Driver(_spec(migration_mb_s=rate_mb_s, ssd_fraction=0.5))     # 8 SSD slots
    _write_all(d)
    d.until(1.0)                              # cycle 1 ends: 8 promotions planned at once
    seen = d.tier.moving
    starts = [d.t] if seen is not None else []   # the first move starts at the cycle end when the rate allows
    while d.t < 3.9:
        d.idle(0.001)
        if d.tier.moving is not None and d.tier.moving != seen:
            starts.append(d.t)
        seen = d.tier.moving
    c = d.sim.counters()["array"]
    assert c["promotions"] == 8 and c["migrated_bytes"] == 8 * EXT and len(starts) == 8
    interval = EXT / (rate_mb_s * 1e6)
    # the k-th move starts no earlier than k intervals after the first (1 ms polling) ...
    assert all(s - starts[0] >= k * interval - 0.002 for k, s in enumerate(starts))
    # ... and the rate, not the copying, sets the pace: a copy takes less than an interval here
    assert starts[-1] - starts[0] == pytest.approx(7 * interval, abs=0.01)


def test_unlimited_rate_moves_back_to_back():
    d = Driver(_spec(migration_mb_s=1e6, ssd_fraction=0.5))
    _write_all(d)
    d.until(2.9)
    assert d.sim.counters()["array"]["promotions"] == 8


def test_count_cap_still_limits_moves_per_cycle():
    d = Driver(_spec(max_migrations_per_cycle=2, ssd_fraction=0.5))
    _write_all(d)
    d.until(2.9)                               # cycle 2 has no heat: nothing more is planned
    assert d.sim.counters()["array"]["promotions"] == 2


def test_per_tier_counters_add_up_to_the_host_counts():
    d = Driver(_spec())
    rng = random.Random(3)
    _write_all(d, range(12))
    for i in range(1500):
        size = rng.choice([4096, 32768, 256 << 10])
        if rng.random() < 0.2:                                 # writes stay in extents 0..11 ...
            d.io("write", rng.randrange(0, 12 * EXT - size, 4096), size, gap_s=0.01)
        else:                                                  # ... so reads of 12..15 find them unmapped
            d.io("read", rng.randrange(0, 16 * EXT - size, 4096), size, gap_s=0.01)
        if i % 300 == 0:                                       # mid-run, commands outstanding: still consistent
            _check_sums(d.sim.counters()["array"])
    d.idle(5.0)
    c = d.sim.counters()["array"]
    assert c["reads"] + c["writes"] == d.n
    _check_sums(c)
    assert c["ssd_reads"] > 0 and c["hdd_reads"] > 0 and c["unmapped_reads"] > 0 and c["split_reads"] > 0
    assert c["heat_ios"] + c["heat_ignored_ios"] == d.n
    flat = flat_counters(d.sim.counters())
    assert flat["host.ssd_reads"] == c["ssd_reads"] and flat["host.hdd_bytes_written"] == c["hdd_bytes_written"]
    assert {counters.kind(n) for n in flat} == {"counter"}


def _check_sums(c: dict) -> None:
    assert c["ssd_reads"] + c["hdd_reads"] + c["unmapped_reads"] + c["split_reads"] == c["reads"]
    assert c["ssd_writes"] + c["hdd_writes"] + c["split_writes"] == c["writes"]
    assert c["ssd_bytes_read"] + c["hdd_bytes_read"] + c["unmapped_bytes_read"] == c["bytes_read"]
    assert c["ssd_bytes_written"] + c["hdd_bytes_written"] == c["bytes_written"]


def test_tier_spec_round_trips_with_the_new_fields():
    spec = _spec(max_migrations_per_cycle=None, heat_max_io_bytes=32 << 10)
    assert spec_from_json(to_json(spec)) == spec
    capped = dataclasses.replace(spec, max_migrations_per_cycle=5)
    assert spec_from_json(to_json(capped)) == capped


# ------------------------------------------------------------------ rig-file validation

def _tier_rig(**fields):
    spindle = {"kind": "tier", "ssd": {"kind": "raid1", "profile": "ssd_sas"},
               "hdd": {"kind": "raid5", "profile": "sas10k", "members": 8, "stripe_unit": "256K"}, **fields}
    return {"name": "t", "kind": "embedded", "devices": {"p": {"type": "spindle", "medium": "tiered",
                                                               "capacity": "1G", "spindle": spindle}}}


def test_a_good_inline_tier_is_accepted():
    rig = rigmod.parse_rig(_tier_rig(ssd_fraction=0.1, cycle="120s", heat_max_io="64K", migration_mb_s=117.8),
                           "rig.yaml")
    (device,) = rig.devices
    tier = parse_device(device.spindle, "rig.yaml", "devices.p.spindle")
    assert isinstance(tier, TierSpec)
    assert (tier.ssd_fraction, tier.cycle_s, tier.heat_max_io_bytes, tier.migration_mb_s) == (0.1, 120.0, 64 << 10,
                                                                                              117.8)


@pytest.mark.parametrize("fields, field", [
    ({"ssd_fraction": 0}, "ssd_fraction"),
    ({"ssd_fraction": 1}, "ssd_fraction"),
    ({"ssd_fraction": 1.5}, "ssd_fraction"),
    ({"ssd_fraction": -0.1}, "ssd_fraction"),
    ({"ssd_fraction": "ten"}, "ssd_fraction"),
    ({"cycle": 0}, "cycle"),
    ({"cycle": "-5s"}, "cycle"),
    ({"cycle": "soon"}, "cycle"),
    ({"heat_max_io": 0}, "heat_max_io"),
    ({"heat_max_io": -4096}, "heat_max_io"),
    ({"heat_max_io": "big"}, "heat_max_io"),
    ({"migration_mb_s": 0}, "migration_mb_s"),
    ({"migration_mb_s": -1}, "migration_mb_s"),
    ({"migration_mb_s": "fast"}, "migration_mb_s"),
    ({"max_migrations_per_cycle": -1}, "max_migrations_per_cycle"),
    ({"window_cycles": 0}, "window_cycles"),
    ({"new_allocation": "nearline"}, "new_allocation"),
    ({"migration_rate": 5}, "migration_rate"),              # unknown field
])
def test_bad_pool_parameter_is_refused_with_one_line_naming_it(fields, field):
    with pytest.raises(ConfigError) as exc:
        rigmod.parse_rig(_tier_rig(**fields), "rig.yaml")
    assert exc.value.field == f"devices.p.spindle.{field}"
    assert "\n" not in str(exc.value) and str(exc.value).startswith("rig.yaml: field 'devices.p.spindle.")
