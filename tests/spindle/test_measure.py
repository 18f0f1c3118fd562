"""Spindle measuring helpers: fio jobs, what the per-request fit reads back, the Plan executor."""
import shutil

import numpy as np
import pytest

from snaptax import bench, profiles
from snaptax.errors import ConfigError
from snaptax.plan import Measure, Plan, TakeSnapshot
from snaptax.spindle import measure as sm


def test_span_job_logs_offsets_at_qd1():
    job = sm.span_job(0.01, 3)
    opts = job.options()
    assert dict(opts)["iodepth"] == "1" and dict(opts)["rw"] == "randread"
    assert ("log_offset", "1") in opts and ("write_lat_log", "req") in opts
    assert job.size == int(0.01 * sm.CAPACITY) // 4096 * 4096
    assert sm.span_of(job.name) == 0.01
    assert sm.span_job(1e-9, 3).size == 16 * 4096   # never below 16 blocks


def test_qd_job_covers_the_device():
    job = sm.qd_job("randwrite", 8, 5)
    assert (job.name, job.rw, job.iodepth, job.size, job.runtime_s) == ("randwrite-qd8", "randwrite", 8,
                                                                         sm.CAPACITY, 5)


def test_read_clat_log_gives_offsets_and_seconds(tmp_path):
    (tmp_path / "req_clat.1.log").write_text("3, 5000000, 0, 4096, 8192, 0\n9, 250000, 0, 4096, 40960, 0\n")
    off, lat = sm.read_clat_log(sm.clat_log(tmp_path))
    assert off.tolist() == [8192, 40960] and lat == pytest.approx([5e-3, 250e-6])
    with pytest.raises(FileNotFoundError):
        sm.clat_log(tmp_path / "nothing")


def test_phase_from_counter_histograms():
    before = {"emulator": {"idle_phase_bin_us": 2.0, "idle_phase_hist": [0] * 200}}
    hist = [0] * 200
    hist[100] = 10   # 200-202 µs
    hist[10] = 3
    after = {"emulator": {"idle_phase_bin_us": 2.0, "idle_phase_hist": hist}}
    assert sm.phase_from_counters(before, after) == pytest.approx(201e-6)
    assert sm.phase_from_counters({}, {}) == 0.0
    # 3 of 13 arrivals at 20-22 µs, 10 at 200-202: four equally likely points fall at 21, 201, 201, 201 µs
    assert sm.phase_quantiles_from_counters(before, after, points=4) == pytest.approx((21e-6, 201e-6, 201e-6, 201e-6))
    assert sm.phase_quantiles_from_counters({}, {}) == ()


def test_predicted_iops_takes_a_spec_or_a_name():
    from snaptax.spindle.rigfiles import disk

    by_name = sm.predicted_iops("sas10k", rw="randread", iodepth=4, ios=500)
    assert by_name == sm.predicted_iops(disk("sas10k"), rw="randread", iodepth=4, ios=500)
    assert sm.predicted_iops("sas10k", rw="randread", iodepth=32, ios=500) > by_name


def test_a_served_spindle_refuses_snapshots():
    plan = Plan((Measure(sm.qd_job("randread", 1, 1), "qd"), TakeSnapshot()))
    with pytest.raises(ValueError, match="step 1 .*TakeSnapshot.* no snapshots"):
        sm.check_measure_only(plan)


def test_a_served_spindle_refuses_gated_steps():
    job = sm.qd_job("randread", 1, 1)
    gated = Plan((Measure(job, "qd"), Measure(job, "learn", gate="learn")))
    with pytest.raises(ConfigError, match=r"plan: field 'steps\[1\]\.gate': 'learn'") as refused:
        sm.check_measure_only(gated)
    assert (refused.value.source, refused.value.field) == ("plan", "steps[1].gate")


def test_the_spindle_benchmarks_are_found():
    assert "spindle" in bench.groups()


@pytest.mark.integration
def test_execute_records_every_step_with_catalogue_counters(tmp_path, work_dir):
    """Serve the zero-latency device and execute a two-step plan into a run (a few seconds of fio)."""
    from snaptax.record import RunRecord, RunWriter
    from snaptax.spindle.profiles import DiskSpec, ZeroProfile
    from tests.synthetic import rig

    if not (shutil.which("nbdkit") and shutil.which("fio")):
        pytest.skip("needs nbdkit and fio")
    plan = Plan((Measure(sm.span_job(0.01, 1), "span"), Measure(sm.qd_job("randwrite", 4, 1), "qd")))
    w = RunWriter(rig(tmp_path), "unit", profiles.get("smoke"), {}, tmp_path / "staging")
    with sm.ServedSpindle(DiskSpec(ZeroProfile()), sm.CAPACITY, work_dir / "spindle", "zero") as dev:
        with w.in_variant("zero", dev.describe()):
            dev.execute(plan, w)
    assert not (work_dir / "spindle" / "zero.sock").exists()
    run = RunRecord.load(w.publish(tmp_path / "data" / "run"))
    span, qd = run.measurements
    assert (span.index, span.phase, qd.index, qd.phase) == (0, "span", 1, "qd")
    assert span.extra["spindle"]["label"] == "zero" and span.extra["spindle"]["phase_s"] >= 0
    assert span.delta("host.reads") == span.ios("read") > 0
    assert qd.delta("host.writes") == qd.ios("write") > 0
    assert span.delta("emulator.released") >= span.ios("read")
    off, lat = sm.read_clat_log(sm.clat_log(span.directory))
    assert len(off) == span.ios("read") and np.all(off < 0.01 * sm.CAPACITY)
    assert run.manifest.variants["zero"]["spec"]["profile"]["type"] == "ZeroProfile"
