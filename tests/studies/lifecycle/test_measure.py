"""The lifecycle study measured (integration: qemu-storage-daemon, nbdkit, fio): the smoke run end to end, every
deletion method keeps every byte of the delta under load at both load levels (fio verify across the volume), and
Ctrl-C during a deletion leaves no daemon, socket or partial run."""
import os
import signal
import subprocess
import sys
import time

import pytest

from snaptax import fio, paths, profiles
from snaptax.errors import EngineError, MeasurementError
from snaptax.host import rig as rigmod
from snaptax.record import RunWriter
from snaptax.studies.lifecycle import analyse as an, measure, plan as planmod
from snaptax.timeline import ATTEMPTS, Timeline, job_text

from ...conftest import requires_root, requires_spindles
from ...test_interrupt import _as_from_a_terminal, ours

MiB = 1 << 20
pytestmark = [pytest.mark.integration, requires_root, requires_spindles]
SMALL = planmod.LifecycleScale(4 * MiB, 16 * MiB, steady_s=2, delete_window_s=4, light_steady_s=2, grid_rates=(20,),
                               grid_window_s=4, max_iterations=3)


def pattern_job(name: str, pattern: str, rw: str, s: planmod.LifecycleScale) -> fio.FioJob:
    """The whole volume written (or read and verified) 4 KiB at a time, each block holding its pattern with its
    offset (%o). 4 KiB as the workload's blocks: the workers' reads verify too, and fio computes a read's expected
    pattern from the read's own offset, so a 4 KiB read inside a larger written block would always mismatch."""
    return fio.FioJob(name, rw, bs=4096, iodepth=4, size=s.disk_bytes, time_based=False, runtime_s=None,
                      log_avg_msec=None, extra=(("verify", "pattern"), ("verify_pattern", pattern),
                                                ("do_verify", "1" if rw == "read" else "0"),
                                                ("verify_fatal", "1")))


# Each method under one load and each load with one method: the two pairs that are left run the same code paths
# (23 s each, a daemon and a verified volume apiece).
@pytest.mark.parametrize("load,method", [("saturated", "iterative"), ("light", "mirror")])
def test_deletion_under_load_keeps_every_byte(load, method, tmp_path, work_dir):
    """The volume is written with pattern A, snapshotted, rewritten with pattern B (the delta holds all of it);
    the deletion runs beside the two workers, whose writes carry pattern B too; afterwards a read of the whole
    volume must find B (the block's offset in every block): a delta block lost, misplaced or not committed
    would show A or another offset. A daemon hang (plan.HANG_NOTE) is retried as the study retries it; a
    verify mismatch fails at once."""
    rig = rigmod.load("local")
    dev = measure.spindle_device(rig)
    s = SMALL
    for k in range(ATTEMPTS):
        writer = RunWriter(rig, planmod.STUDY, profiles.get("smoke"), {}, tmp_path / f"staging{k}")
        try:
            with measure.LifecycleEngine(rig, dev, planmod.qcow2_config(s), s.disk_bytes) as engine:
                with writer.in_variant(f"{load}-{method}", {}):
                    tl = Timeline(writer, engine, writer.variant)   # type: ignore[arg-type]
                    a = pattern_job("a", "0x0a%o", "write", s)
                    b = pattern_job("b", "0x0b%o", "write", s)
                    tl.run(job_text(a), a, "create")
                    engine.take_snapshot()
                    engine.empty_bytes = engine.layer_bytes(1)
                    tl.run(job_text(b), b, "refill")
                    w = planmod.Workload("w", s.file_bytes, s.delete_window_s, planmod.THINKTIME_MS[load],
                                         extra=(("verify", "pattern"), ("verify_pattern", "0x0b%o"),
                                                ("do_verify", "0")))
                    ld = tl.start(w.job_file, w.summary_job(), "delete")
                    time.sleep(0.5)
                    if method == "iterative":
                        info = measure.delete_iterative(tl, ld, s)
                    else:
                        info = measure.delete_mirror(tl, ld)
                    tl.finish(ld, {"deletion": info})
                    assert engine.chain_length == 0
                    check = pattern_job("check", "0x0b%o", "read", s)
                    try:
                        tl.run(job_text(check), check, "after")
                    except MeasurementError as exc:       # fio exits non-zero on a mismatch
                        pytest.fail(f"verify after the deletion failed: {exc}")
            return
        except (MeasurementError, EngineError, TimeoutError):
            if k == ATTEMPTS - 1:
                raise


def test_smoke_run_publishes_an_analysable_run(smoke_run):
    record = smoke_run("lifecycle")
    assert (record.path.parent.parent.name, record.path.parent.name) == ("local", "lifecycle")
    m = record.manifest
    timelines = {planmod.variant_name(lo, me) for lo, me in planmod.variants()}
    assert set(m.variants) == timelines | {planmod.GRID, planmod.APART}
    a = an.analyse(record)
    # the consolidation model's parameters measured apart, and its held-out tests of every iterative deletion
    assert a.apart is not None and a.apart.parameters.c0.value > 0 and a.apart.parameters.r_max.value > 0
    v = {x.key: x for x in a.values}
    assert v["lifecycle.consolidation_apart.heldout.commit.verdict"].text in ("predicts", "descriptive only")
    assert set(a.timeline.level) == {"VM", "host"}
    assert len(a.deletions) == len(planmod.variants()) + len(planmod.scale(profiles.get("smoke")).grid_rates)
    for variant in m.variants:
        assert (record.path / "measurements" / variant / "host_series.csv").exists()
    parsed = list(record.path.glob("measurements/*/*/fio_iops.*.log.parsed"))
    assert parsed and all(p.read_text().strip() for p in parsed)


def test_interrupt_during_a_deletion_cleans_up(data_dir, work_dir):
    env = dict(os.environ, SNAPTAX_DATA_DIR=str(data_dir), SNAPTAX_WORK_DIR=str(work_dir))
    proc = subprocess.Popen([sys.executable, "-m", "snaptax", "run", "lifecycle", "--profile", "smoke"],
                            cwd=paths.REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if list(work_dir.glob("local/staging/lifecycle/*/measurements/*/*-delete-*/job.fio")):
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.1)
    else:
        pytest.fail("the study never reached a deletion")
    time.sleep(1.5)          # inside the deletion (the load runs 1 s before the deletion starts)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in (130, 128 + signal.SIGINT), err.decode()
    time.sleep(0.5)
    assert ours(work_dir) == []
    assert not list(work_dir.glob("local/spindles/*.sock")) and not list(work_dir.glob("local/run/*/*.sock"))
    published = list((data_dir / "local" / "lifecycle").glob("*")) if data_dir.exists() else []
    assert published == []
    assert not list(work_dir.glob("local/staging/lifecycle/*"))
