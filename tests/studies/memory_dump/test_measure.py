"""The memory-dump study measured end to end at the smoke profile (integration: qemu-storage-daemon, nbdkit, fio)."""
import pytest

from snaptax import profiles
from snaptax.errors import ConfigError
from snaptax.host import rig as rigmod
from snaptax.host.rig import Device, Rig
from snaptax.plan import split_replicate
from snaptax.studies.memory_dump import analyse as an, measure, plan as planmod

from ...conftest import requires_root, requires_spindles


def test_roles_resolve_to_the_rigs_devices():
    devs = measure.role_devices(rigmod.load("local"))
    assert devs["ssd"].name == "ssd" and devs["raid1_10k"].name == "raid1_10k"
    assert measure.role_devices(rigmod.load("local"), "sas_pool")["raid1_10k"].name == "sas_pool"
    bare = Rig(name="t", kind="embedded", description="", engines=("qcow2",), work_dir="/tmp",
               devices=(Device(name="ssd", type="file", medium="ssd", capacity=1 << 30),))
    with pytest.raises(ConfigError, match="spindle role"):
        measure.role_devices(bare)


@pytest.mark.integration
@requires_root
@requires_spindles
def test_smoke_run_publishes_an_analysable_run(smoke_run):
    record = smoke_run("memory_dump")
    assert (record.path.parent.parent.name, record.path.parent.name) == ("local", "memory_dump")
    m = record.manifest
    # the skipping walker runs where the rig has the stand-in's inferred zero share
    zero_fraction, _ = measure.skip_point("local", planmod.scale(profiles.get("smoke")))
    study = planmod.build_plan(profiles.get("smoke"), zero_fraction=zero_fraction)
    assert m.measurements == study.points() == m.planned_points
    assert {split_replicate(v)[0] for v in m.variants} == {"ssd", "raid1_10k"} and m.emulated
    a = an.analyse(record)
    s = a.summary
    # every wait is waited: no point is faster than its waits, n·w
    assert (s.dump_s >= s.estimate_s).all()
    assert len(a.outcomes) == 5 and set(a.fits) == {"ssd", "raid1_10k"}
    assert a.value("memory_dump.skip_walker.zero_fraction").value > 0 if zero_fraction is not None else \
        an.measurements(record, planmod.SKIP_PHASE).empty
    # the guest phase: every planned dump of the running guest completed, the guest kept running through them
    planned = planmod.guest_dumps(profiles.get("smoke"))
    assert [(r.label, r.repeat) for r in a.guest.itertuples()] == [(d.label, d.repeat) for d in planned]
    g = a.guest
    assert (g.dump_s > 0).all() and (g.file_per_ram > 0.3).all() and (g.probe_during > 0).all()
    assert set(a.guest_summary.label) == {d.label for d in planned}
    assert (record.path / planmod.GUEST_CONSOLE).exists()
    # nothing of the guest phase is left in the rig's work directory (no qemu, dump file or socket)
    work = rigmod.load("local").rig_work_dir / "memdump-guest"
    assert not work.exists()
