"""counters: the catalogue's names, kinds and units, and the pairing of readings over a measurement."""
import re

import pytest

from snaptax import counters
from snaptax.counters import CATALOGUE, CounterValue, UnknownCounter, over_measurement, spec

# (name, kind, unit): a sample of every source and of names that alternations and digits must match
KNOWN = [
    ("host.reads", "counter", "requests"),
    ("host.sectors_written", "counter", "512-byte sectors"),
    ("host.io_ms", "counter", "ms"),
    ("host.unmapped_reads", "counter", "requests"),
    ("host.split_writes", "counter", "requests"),
    ("host.unmapped_bytes_read", "counter", "bytes"),
    ("host.member_writes", "counter", "requests"),
    ("host.member12.cache_hits", "counter", "requests"),
    ("host.member0.busy_s", "counter", "s"),
    ("emulator.release_late_s_sum", "counter", "s"),
    ("engine.snapshot_allocated_bytes", "gauge", "bytes"),
    ("engine.pool_data_percent", "gauge", "%"),
    ("engine.pool_transaction_id", "gauge", ""),
    ("engine.live_mapped_sectors", "gauge", "512-byte sectors"),
    ("engine.snap3.commit_s", "counter", "thread-seconds"),
    ("engine.chunks_broken", "counter", "chunks"),
    ("guest.cpu_busy_s", "counter", "s"),
    ("guest.cpu_idle_s", "counter", "s"),
    ("snapdev.writes", "counter", "requests"),
    ("snapdev.unmapped_reads", "counter", "requests"),
    ("snapdev.member1.bytes_read", "counter", "bytes"),
]


@pytest.mark.parametrize(("name", "kind", "unit"), KNOWN)
def test_spec_kind_and_unit_of_known_names(name, kind, unit):
    s = spec(name)
    assert (s.kind, s.unit) == (kind, unit) and counters.kind(name) == kind


@pytest.mark.parametrize("name", [
    "host.reads_total",            # a prefix of a name is not the name: full match
    "xhost.reads",
    "host.memberX.reads",          # member numbers are digits
    "snapdev.promotions_extra",
    "guest.cpu_steal_s",           # steal is neither busy nor idle and is not recorded
    "snapdev.pool_data_percent",   # snapdev copies only the host counters
    "",
])
def test_unknown_names_raise_naming_the_name(name):
    with pytest.raises(UnknownCounter, match=re.escape(repr(name))):
        spec(name)


def test_every_host_spec_has_its_snapshot_device_twin():
    host = [s for s in CATALOGUE if s.pattern.startswith(r"host\.")]
    snapdev = {s.pattern: s for s in CATALOGUE if s.pattern.startswith(r"snapdev\.")}
    assert host and len(snapdev) == len(host)
    for s in host:
        twin = snapdev[s.pattern.replace(r"host\.", r"snapdev\.")]
        assert (twin.kind, twin.unit) == (s.kind, s.unit) and twin.doc == s.doc + " (snapshot device)"
        assert "host" not in twin.pattern


def test_catalogue_entries_are_well_formed():
    for s in CATALOGUE:
        re.compile(s.pattern)
        assert s.kind in ("counter", "gauge") and s.doc, s.pattern


def test_over_measurement_differences_counters_not_gauges():
    out = over_measurement({"host.writes": 10, "engine.pool_data_percent": 40.0},
                           {"host.writes": 25, "engine.pool_data_percent": 55.5})
    assert list(out) == ["engine.pool_data_percent", "host.writes"]          # sorted
    assert out["host.writes"].delta == 15.0 and out["host.writes"].unit == "requests"
    gauge = out["engine.pool_data_percent"]
    assert gauge.delta is None and (gauge.before, gauge.after) == (40.0, 55.5)
    assert gauge.to_json() == {"kind": "gauge", "unit": "%", "before": 40.0, "after": 55.5, "delta": None}
    assert isinstance(out["host.writes"].before, float)


def test_over_measurement_a_name_read_only_once():
    out = over_measurement({"host.reads": 7}, {"host.writes": 3})
    assert out["host.reads"].delta == 0.0                 # missing after: unchanged
    assert (out["host.writes"].before, out["host.writes"].delta) == (0.0, 3.0)   # missing before: from zero


def test_over_measurement_refuses_a_name_not_in_the_catalogue():
    with pytest.raises(UnknownCounter, match="'engine.made_up'"):
        over_measurement({"host.reads": 1}, {"host.reads": 2, "engine.made_up": 1})


def test_counter_value_json_carries_its_delta():
    v = CounterValue("host.io_ms", "counter", "ms", 100.0, 160.0)
    assert v.to_json() == {"kind": "counter", "unit": "ms", "before": 100.0, "after": 160.0, "delta": 60.0}
