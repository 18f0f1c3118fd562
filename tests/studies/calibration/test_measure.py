"""The calibration measured end to end at the smoke profile (integration: nbdkit, fio, qemu-storage-daemon)."""
import pytest

from snaptax.studies.calibration import analyse as an, plan as planmod

from ...conftest import requires_root, requires_spindles


@pytest.mark.integration
@requires_root
@requires_spindles
def test_smoke_run_publishes_an_analysable_run(smoke_run):
    record = smoke_run("calibration")
    assert (record.path.parent.parent.name, record.path.parent.name) == ("local", "calibration")
    m = record.manifest
    study = planmod.build_plan(m.profile)
    assert m.measurements == study.points() == m.planned_points
    assert set(m.variants) == {v.variant for v in study.variants}
    assert m.measured_devices == ("raid1_10k",) and m.emulated
    span = [x for x in record.measurements if x.variant == "sas10k" and x.phase == "span"]
    assert span and all(x.extra["spindle"]["phase_s"] > 0 for x in span)
    a = an.analyse(record)
    none = a.value("calibration.reads_double.host_reads_per_vm_read.none").value
    snap = a.value("calibration.reads_double.host_reads_per_vm_read.snapshot").value
    assert none == pytest.approx(1.0, abs=0.05) and snap > 1.5
    assert set(a.fits) == set(planmod.drive_profiles())
    assert a.outcomes[0].verdict == "not judged"
