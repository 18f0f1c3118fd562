"""Integration: a real qemu-storage-daemon, qcow2 overlays over QMP, fio over NBD."""
import dataclasses
import subprocess
from fractions import Fraction

import pytest

from snaptax import fio
from snaptax.engines.qcow2 import Qcow2ChainEngine, Qcow2Config
from snaptax.errors import ConfigError, MeasurementError
from snaptax.host import rig as rigmod
from tests.conftest import requires_qsd, requires_root

pytestmark = [pytest.mark.integration, requires_qsd, requires_root]
SIZE = 64 << 20
HALF = SIZE // 2


def writer(name, offset, generation):
    """Writes one half of the disk with a pattern unique to `generation`."""
    return fio.FioJob(name, "write", bs=64 << 10, iodepth=4, size=HALF, offset=offset, time_based=False,
                      runtime_s=None, verify="pattern", log_avg_msec=None,
                      extra=(("verify_pattern", f"0x5eed{generation:04x}"), ("do_verify", "0")))


def check(job, target, directory):
    """Re-read the span `job` wrote and compare every byte with its pattern (raises on a mismatch)."""
    verify = job.replace(name=job.name + "-verify", rw="read", extra=(job.extra[0], ("verify_only", "1")))
    return fio.run(verify, target, directory)


def engine(config=None):
    rig = rigmod.load("local")
    cfg = config or Qcow2Config("test", extended_l2=True, l2_cache_size=8192, l2_cache_entry_size=4096)
    return Qcow2ChainEngine(rig, rig.device(), cfg, SIZE)


def no_daemons():
    out = subprocess.run(["pgrep", "-f", "snaptax-tests.*qcow2"], capture_output=True, text=True)
    return out.stdout.strip() == ""


def test_chain_views_and_commits_keep_every_byte(work_dir, tmp_path):
    a0, b1, a2 = writer("a0", 0, 11), writer("b1", HALF, 12), writer("a2", 0, 13)
    with engine() as e:
        fio.run(a0, e.fio_target(), tmp_path / "a0")
        fio.run(writer("b0", HALF, 10), e.fio_target(), tmp_path / "b0")
        e.take_snapshot()
        fio.run(b1, e.fio_target(), tmp_path / "b1")
        e.take_snapshot()
        fio.run(a2, e.fio_target(), tmp_path / "a2")
        e.take_snapshot()
        assert e.chain_length == 3
        # Point-in-time views: the base still holds generation 0, layer 1 generation 1 in the second half.
        check(a0, e.view_target(0), tmp_path / "v0")
        check(b1, e.view_target(1), tmp_path / "v1")
        with pytest.raises(MeasurementError):
            check(a2, e.view_target(1), tmp_path / "v1-wrong")
        e.close_views()
        # Live volume: newest data everywhere, before and after each kind of delete.
        check(a2, e.fio_target(), tmp_path / "l3")
        check(b1, e.fio_target(), tmp_path / "l3b")
        assert e.delete_snapshot("oldest") == "snap1"
        check(a2, e.fio_target(), tmp_path / "l2")
        check(b1, e.fio_target(), tmp_path / "l2b")
        e.delete_snapshot("newest")
        e.delete_snapshot("newest")
        assert e.chain_length == 0
        check(a2, e.fio_target(), tmp_path / "l0")
        check(b1, e.fio_target(), tmp_path / "l0b")
    assert no_daemons()
    assert not list((work_dir / "local" / "devices").glob("*.img"))


def test_snapshot_under_a_running_writer(work_dir, tmp_path):
    import threading
    job = fio.FioJob("busy", "randwrite", bs=4096, iodepth=16, size=SIZE, runtime_s=3, log_avg_msec=None)
    with engine() as e:
        results = {}
        t = threading.Thread(target=lambda: results.setdefault("run", fio.run(job, e.fio_target(), tmp_path / "b")))
        t.start()
        import time
        time.sleep(1)
        e.take_snapshot()
        e.take_snapshot()
        t.join()
        assert fio.total_iops(results["run"].result) > 0
        counters = e.counters()
        assert counters["host.writes"] > 0
        e.delete_snapshot("newest")
        e.delete_snapshot("newest")


def test_bad_config_is_refused():
    with pytest.raises(ConfigError, match="extended_l2"):
        Qcow2Config("x", cluster_size=4096, extended_l2=True)
    with pytest.raises(ConfigError, match="cluster_size"):
        Qcow2Config("x", cluster_size=3000)


def test_clone_copies_the_chain_and_leaves_it_intact(work_dir, tmp_path):
    a0, b1 = writer("a0", 0, 21), writer("b1", HALF, 22)
    with engine() as e:
        fio.run(a0, e.fio_target(), tmp_path / "a0")
        e.take_snapshot()
        fio.run(b1, e.fio_target(), tmp_path / "b1")
        # twice: the first copy's region is freed, so the second fits where it was
        assert e.clone() == SIZE and e.clone() == SIZE
        assert e.chain_length == 1
        check(a0, e.fio_target(), tmp_path / "after-a0")
        check(b1, e.fio_target(), tmp_path / "after-b1")
        assert not [r for r in e.store.regions if "clone" in r]
    assert no_daemons()


@pytest.mark.skipif(not rigmod.load("local").devices or not any(d.emulated for d in rigmod.load("local").devices),
                    reason="the local rig has no emulated device")
def test_a_diagnosis_reads_each_side_without_stopping_anything(work_dir):
    # what attempt() records when a timeline hangs: here on an idle engine, where every part is readable
    rig = rigmod.load("local")
    dev = next(d for d in rig.devices if d.emulated)
    cfg = Qcow2Config("test", extended_l2=True, l2_cache_size=8192, l2_cache_entry_size=4096)
    with Qcow2ChainEngine(rig, dev, cfg, SIZE) as e:
        d = e.diagnose(wait_s=0.2, qmp_timeout_s=2)
        assert d["qmp_block_jobs"] == []                      # the daemon answers: no job
        assert d["device_progress"]["host.reads"] == 0        # nothing is running
        assert all(q == 0 for q in d["device_levels"]["members_queue_depth"])
        daemon = [threads for name, threads in d["processes"].items() if name.startswith("qemu-storage-daemon")]
        assert daemon and all(t["state"] and t["cpu_s_in_window"] >= 0 for t in daemon[0])
        assert not any(isinstance(v, list) for v in d["device_levels"]["emulator"].values())
        e.daemon.execute("query-version")                     # the monitor still works afterwards


def test_a_cache_resized_in_place_keeps_the_chain_and_its_bytes_and_changes_what_a_read_costs(work_dir, tmp_path):

    from snaptax.errors import EngineError

    a0, a1 = writer("a0", 0, 21), writer("a1", 0, 22)
    read = fio.FioJob("r", "randread", bs=4096, iodepth=4, size=SIZE, runtime_s=1, log_avg_msec=None)
    with engine() as e:
        with pytest.raises(EngineError, match="take a snapshot first"):
            e.set_cache(Fraction(1, 2))
        fio.run(a0, e.fio_target(), tmp_path / "a0")
        e.take_snapshot()
        fio.run(a1, e.fio_target(), tmp_path / "a1")
        fio.run(writer("b1", HALF, 23), e.fio_target(), tmp_path / "b1")
        reads = {}
        # 64 MiB, 64 KiB clusters, extended L2: 16 KiB of tables, 4 slices; at least QEMU's two
        for c, slices in ((Fraction(0), 2), (Fraction(1), None)):
            got = e.set_cache(c)
            assert got["l2_cache_size"] == (slices * 4096 if slices else 16384 + 65536)
            before = e.counters()
            run = fio.run(read, e.fio_target(), tmp_path / f"r{c}")
            after = e.counters()
            guest = sum(r["ios"] for r in fio.tidy_rows(run.result) if r["direction"] == "read")
            reads[c] = (after["host.reads"] - before["host.reads"]) / guest
        assert e.chain_length == 1
        check(a1, e.fio_target(), tmp_path / "a1-after")             # the overlay's data, through the new cache
        assert reads[Fraction(0)] > reads[Fraction(1)] == pytest.approx(1.0, abs=0.02)
    assert no_daemons()


def _host_reads_per_io(e, tmp_path, structured_replies: bool) -> dict[tuple[str, int], float]:
    """Host reads per fio I/O through the NBD export at half the L2 tables cached (64 MiB: 4 slices, 2 cached)."""
    target = dataclasses.replace(e.fio_target(), structured_replies=structured_replies)
    per_io = {}
    for rw, qd in (("randread", 1), ("randread", 16), ("randwrite", 16)):
        job = fio.FioJob(f"{rw}{qd}", rw, bs=4096, iodepth=qd, size=SIZE, runtime_s=2, log_avg_msec=None)
        before = e.counters()
        run = fio.run(job, target, tmp_path / f"{rw}{qd}-{'sr' if structured_replies else 'simple'}")
        after = e.counters()
        ios = sum(r["ios"] for r in fio.tidy_rows(run.result) if r["direction"] == rw.removeprefix("rand"))
        per_io[(rw, qd)] = (after["host.reads"] - before["host.reads"]) / ios
    return per_io


@requires_root
@requires_qsd
def test_structured_replies_look_a_reads_l2_entry_up_twice_and_the_harness_asks_for_simple_ones(work_dir,
                                                                                                 tmp_path):
    # QEMU's NBD server, for a client that negotiated structured replies (libnbd's default), reads a read's data and
    # then asks the block status of the same range for the reply's holes (nbd/server.c, nbd_co_send_sparse_read):
    # two L2 lookups per read. With as many reads in flight as slices cached, the slice is still there for the
    # second lookup; with more, it has been evicted and misses again. A VM's disk asks no block status; the harness's
    # fio asks for simple replies (snaptax.nbdclient), and then a read looks up once at any depth. A write looks up
    # once either way.
    fill = fio.FioJob("f", "write", bs=64 << 10, iodepth=4, size=SIZE, time_based=False, log_avg_msec=None)
    with engine() as e:
        fio.run(fill, e.fio_target(), tmp_path / "base")
        e.take_snapshot()
        fio.run(fio.FioJob("f1", "write", bs=64 << 10, iodepth=4, size=SIZE, time_based=False, log_avg_msec=None),
                e.fio_target(), tmp_path / "overlay")
        e.set_cache(Fraction(1, 2))      # a lookup misses with p = 1/2
        structured = _host_reads_per_io(e, tmp_path, structured_replies=True)
        simple = _host_reads_per_io(e, tmp_path, structured_replies=False)
    assert structured[("randread", 1)] == pytest.approx(1.5, abs=0.05)     # the data read + one miss in two
    assert structured[("randread", 16)] > 1.85                              # + a second miss in two, mostly
    assert simple[("randread", 1)] == pytest.approx(1.5, abs=0.05)
    assert simple[("randread", 16)] == pytest.approx(1.5, abs=0.05)         # no second lookup at any depth
    for per_io in (structured, simple):
        assert per_io[("randwrite", 16)] == pytest.approx(0.5, abs=0.05)   # an overwrite: one lookup, no data read
    assert (tmp_path / "randread16-simple" / fio.JOB_FILE).read_text().count("# nbd replies: simple") == 1
    assert no_daemons()
