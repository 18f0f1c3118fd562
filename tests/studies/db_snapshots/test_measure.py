"""The database-snapshot study measured end to end at the smoke profile (integration: the cofw engine with its
snapshots on the emulated RAID5 and on an SSD-class file, fio), and the rig's devices it needs."""
import pytest

from snaptax.errors import ConfigError
from snaptax.host import rig as rigmod
from snaptax.studies.db_snapshots import analyse as an, measure, plan as planmod

from ...conftest import requires_root, requires_spindles


def test_the_snapshot_devices_come_from_the_rig_and_are_not_the_source():
    rig = rigmod.load("local")
    devs = measure.snapshot_devices(rig, rig.device())
    assert list(devs) == list(planmod.SNAPSHOT_DEVICES)
    with pytest.raises(ConfigError, match="source device"):
        measure.snapshot_devices(rig, rig.device("ssd_snapshots"))


def test_each_snapshot_device_has_its_source_and_one_named_source_serves_both():
    rig = rigmod.load("local")
    sources = measure.source_devices(rig)
    assert {n: d.name for n, d in sources.items()} == planmod.SOURCE_DEVICES
    # the SSD pair are two capped devices of one class; the RAID5's source is the host disk as it is
    assert sources["ssd_snapshots"].throttle == rig.device("ssd_snapshots").throttle is not None
    assert sources["raid5_15k_6"].throttle is None
    assert {d.name for d in measure.source_devices(rig, "ssd").values()} == {"ssd"}
    with pytest.raises(ConfigError, match="source device"):
        measure.source_devices(rig, "ssd_snapshots")


@pytest.mark.integration
@requires_root
@requires_spindles
def test_smoke_run_publishes_an_analysable_run(smoke_run):
    record = smoke_run("db_snapshots")
    m = record.manifest
    assert set(m.variants) == set(planmod.SNAPSHOT_DEVICES) and m.emulated
    a = an.analyse(record)
    s = planmod.scale(record.manifest.profile)
    assert len(a.runs) == 3 * (s.repeats + s.ssd_repeats)
    with_snaps = a.runs[a.runs.k > 0]
    # every page of the table is a first write for each snapshot taken before the run: copied k times
    assert (with_snaps.pages_first_written == s.pages).all()
    assert (with_snaps.pages_copied == with_snaps.k * s.pages).all()
    assert (a.runs[a.runs.k == 0].pages_copied == 0).all()
    # the second snapshot's own time is counted only with two
    assert (a.runs[a.runs.k == 2].second_snapshot_s > 0).all() and (a.runs[a.runs.k < 2].second_snapshot_s == 0).all()
    # the RAID5's copies reach its members as writes; SSD-class has no array counters
    raid = a.runs[(a.runs.device == "raid5_15k_6") & (a.runs.k > 0)]
    assert (raid.snapdev_writes > 0).all()
    assert {o.claim.id for o in a.outcomes} == {f"db_snapshots.C004-{c}" for c in ("1", "2a", "2b", "3")} | {
        "db_snapshots.top_wait"}
