"""The spindle on the rig path: rig validation of `spindle:` mappings, flat host counters, completion times."""
import pytest

from snaptax import counters
from snaptax.errors import ConfigError
from snaptax.host import rig as rigmod
from snaptax.spindle.arrays import Simulator
from snaptax.spindle.rigfiles import disk, parse_device
from snaptax.spindle.serve import flat_counters


def test_local_rig_has_the_seeds_arrays_emulated_and_ssd_first():
    local = rigmod.load("local")
    assert local.device().name == "ssd"
    emulated = {d.name: d for d in local.devices if d.emulated}
    assert set(emulated) == {"raid1_10k", "raid5_15k_6", "sas_pool", "tier_pool",
                             # the same arrays behind a controller's write cache (issue 45.4)
                             "raid1_10k_wb", "raid5_15k_6_wb", "sas_pool_v7000", "tier_pool_v7000"}
    assert emulated["tier_pool"].medium == "tiered" and emulated["raid1_10k"].medium == "hdd"


def _rig(spindle, medium="hdd"):
    return {"name": "t", "kind": "embedded", "devices": {"d": {"type": "spindle", "medium": medium,
                                                               "capacity": "1G", "spindle": spindle}}}


@pytest.mark.parametrize("spindle, field", [
    ({"device": "nope"}, "devices.d.spindle.device"),
    ({"kind": "raid5", "profile": "sas10k", "members": "six"}, "devices.d.spindle.members"),
    ({"kind": "disk", "profile": "sas10k", "overrides": {"rpm": 1}}, "devices.d.spindle.overrides.rpm"),
])
def test_bad_spindle_field_is_named(spindle, field):
    with pytest.raises(ConfigError) as exc:
        rigmod.parse_rig(_rig(spindle), "rig.yaml")
    assert exc.value.field == field


def test_spindle_medium_must_be_mechanical():
    with pytest.raises(ConfigError, match="medium"):
        rigmod.parse_rig(_rig({"device": "raid1_10k"}, medium="ssd"), "rig.yaml")


def test_flat_counters_are_cumulative_numbers_named_by_the_catalogue():
    sim = Simulator(parse_device({"device": "raid1_10k"}, "t"), 1 << 30)
    sim.submit(1, "write", 0, 4096, 0.0)
    sim.submit(2, "read", 1 << 20, 4096, 0.0)
    sim.advance(1.0)
    raw = sim.counters()
    raw["emulator"] = {"released": 2, "release_late_s_sum": 1e-5, "idle_phase_hist": [0, 1],
                       "release_late_us_mean": 5.0}
    flat = flat_counters(raw)
    assert flat["host.reads"] == 1 and flat["host.writes"] == 1
    assert flat["host.member0.writes"] == flat["host.member1.writes"] == 1
    assert flat["host.member_reads"] == 1 and flat["emulator.released"] == 2
    assert all(isinstance(v, float) for v in flat.values())
    # every name is in the catalogue, and every one of them is a counter (differenced over a measurement)
    assert {counters.kind(n) for n in flat} == {"counter"}
    assert "emulator.release_late_us_mean" not in flat and "emulator.idle_phase_hist" not in flat


@pytest.mark.parametrize("device", ["raid5_15k_6", "tier_pool", "raid5_15k_6_wb", "tier_pool_v7000"])
def test_flat_counters_of_arrays_are_in_the_catalogue(device):
    sim = Simulator(parse_device({"device": device}, "t"), 1 << 30)
    sim.submit(1, "write", 0, 4096, 0.0)
    sim.advance(1.0)
    flat = flat_counters(sim.counters())
    assert {counters.kind(n) for n in flat} == {"counter"}
    assert "host.rmw_rows" in flat   # the tier's HDD tier is a RAID5 too
    assert ("host.promotions" in flat) == device.startswith("tier_pool")
    cached = device.endswith(("_wb", "_v7000"))
    assert ("host.cache_write_backs" in flat) == cached
    if cached:   # the level (cache_used_bytes) is not a counter and stays out
        assert flat["host.cache_write_backs"] == 1 and "host.cache_used_bytes" not in flat


def test_completion_time_is_known_at_dispatch_and_kept():
    sim = Simulator(disk("sas10k"), 1 << 30)
    sim.submit("a", "read", 123 * 4096, 4096, 0.0)
    sim.submit("b", "read", 9999 * 4096, 4096, 0.0)   # queued behind a: no completion time yet
    assert set(sim.take_etas()) == {"a"} and "b" not in sim.etas
    eta = sim.etas["a"]
    done = sim.advance(eta)
    assert done == [("a", eta)] and "b" in sim.etas      # b dispatched when a completed
