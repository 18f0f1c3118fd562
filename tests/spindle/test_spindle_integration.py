"""serve() + nbdkit + fio/nbdsh end to end: data integrity, counters, clean-up."""
import json
import os
import shutil
import subprocess

import pytest

from snaptax import fio
from snaptax.errors import ConfigError
from snaptax.host.procs import ProcessGroup
from snaptax.lock import measurement_lock
from snaptax.spindle.profiles import DiskSpec, ZeroProfile
from snaptax.spindle.rigfiles import parse_device
from snaptax.spindle.serve import SpindleDevice, serve

pytestmark = pytest.mark.integration
needs = pytest.mark.skipif(not (shutil.which("nbdkit") and shutil.which("fio") and shutil.which("nbdsh")),
                           reason="needs nbdkit, fio, nbdsh")


# nbdsh is a python3 script: it needs Debian's python3 (python3-libnbd), whatever python3 comes first on PATH
NBDSH_ENV = {**os.environ, "PATH": "/usr/bin:/bin:" + os.environ.get("PATH", "")}


def _nbdkit_pids(sock):
    out = subprocess.run(["pgrep", "-f", f"nbdkit.*{sock}"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@needs
def test_raid1_data_integrity_counters_and_cleanup(work_dir):
    spec = parse_device({"device": "raid1_10k"}, "test")
    dev = SpindleDevice(spec, 64 << 20, work_dir, "r1")
    with measurement_lock(), ProcessGroup() as group:
        with serve(group, dev) as s:
            assert s.uri.startswith("nbd+unix:///?socket=")
            # fio writes a verifiable pattern and reads it back through the emulator (snaptax.fio runs fio in
            # its own directory under work_dir, so nothing, not even a verify state file, lands in the cwd)
            job = fio.FioJob("v", "randwrite", bs=4096, iodepth=8, size=1 << 20, time_based=False,
                             runtime_s=None, verify="crc32c", log_avg_msec=None)
            res = fio.run(job, fio.FioTarget("nbd", uri=s.uri), work_dir / "fio-verify").result
            assert res["jobs"][0]["error"] == 0
            assert not list(work_dir.rglob("*-verify.state"))
            # bytes written through NBD are in the backing file at their logical offsets
            script = ("h.pwrite(b'snaptax!' * 512, 1 << 20)\n"
                      "assert h.pread(4096, 1 << 20) == b'snaptax!' * 512\n")
            subprocess.run(["nbdsh", "-u", s.uri, "-c", script], check=True, timeout=60, env=NBDSH_ENV)
            with open(dev.backing, "rb") as f:
                f.seek(1 << 20)
                assert f.read(4096) == b"snaptax!" * 512
            pids = _nbdkit_pids(s.socket)
            assert pids
        # after serve(): daemon gone, socket gone, final counters written
        assert not _nbdkit_pids(dev.socket)
        assert not dev.socket.exists()
        c = json.loads(dev.counters.read_text())
        m0, m1 = c["members"]
        assert m0["writes"] == m1["writes"] >= 256          # RAID1: every write on both mirrors
        assert c["array"]["writes"] >= 257
        assert m0["reads"] + m1["reads"] >= 256             # verify reads split over the mirrors
        assert sum(m0["seek_hist_log2_cyl"]) > 0
    assert not dev.backing.exists()                          # the group removed the scratch backing file


PLUGINS = pytest.mark.parametrize("plugin", ["c", "python"])


@needs
@PLUGINS
def test_zero_device_counts(work_dir, plugin):
    dev = SpindleDevice(DiskSpec(ZeroProfile()), 16 << 20, work_dir, "z", plugin=plugin)
    with measurement_lock(), ProcessGroup() as group, serve(group, dev) as s:
        subprocess.run(["nbdsh", "-u", s.uri, "-c", "for i in range(200): h.pread(4096, i * 4096)"],
                       check=True, timeout=60, env=NBDSH_ENV)
    c = json.loads(dev.counters.read_text())
    assert c["array"]["reads"] == 200


@needs
def test_startup_failure_is_reported_and_cleaned(work_dir):
    dev = SpindleDevice(DiskSpec(ZeroProfile()), 1000, work_dir, "bad")
    with pytest.raises(ConfigError, match="capacity"):
        with ProcessGroup() as group, serve(group, dev):
            pass
    assert not _nbdkit_pids(dev.socket)


@needs
@PLUGINS
def test_tier_pool_served_counts_where_io_landed(work_dir, plugin):
    # the per-tier counters must reach the counters file, from the C core and from the Python plugin (which runs
    # the Tier under Debian's python3)
    from snaptax.spindle.serve import flat_counters
    dev = SpindleDevice(parse_device({"device": "tier_pool"}, "test"), 64 << 20, work_dir, "tier", plugin=plugin)
    script = ("h.pwrite(b'a' * 4096, 0)\n"                      # small write: allocates extent 0 on HDD
              "h.pwrite(b'b' * (256 << 10), 16 << 20)\n"        # large write: extent 1, no heat
              "h.pread(4096, 0)\n"
              "h.pread(4096, 48 << 20)\n")                      # never written: zeros, no media access
    with measurement_lock(), ProcessGroup() as group, serve(group, dev) as s:
        subprocess.run(["nbdsh", "-u", s.uri, "-c", script], check=True, timeout=60, env=NBDSH_ENV)
    flat = flat_counters(json.loads(dev.counters.read_text()))
    assert (flat["host.hdd_writes"], flat["host.hdd_reads"], flat["host.unmapped_reads"]) == (2, 1, 1)
    assert flat["host.ssd_reads"] == flat["host.ssd_writes"] == 0
    assert flat["host.hdd_bytes_written"] == 4096 + (256 << 10) and flat["host.unmapped_bytes_read"] == 4096
    assert (flat["host.heat_ios"], flat["host.heat_ignored_ios"]) == (3, 1)


def _shape(doc):
    """A counters document's keys and value types, recursively (lists by their first item)."""
    if isinstance(doc, dict):
        return {k: _shape(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [len(doc), _shape(doc[0]) if doc else None]
    return "number" if isinstance(doc, (int, float)) and not isinstance(doc, bool) else type(doc).__name__


@needs
def test_both_plugins_write_one_counters_format(work_dir):
    """The C plugin's counters file has every key of the Python plugin's, with the same shapes (its emulator block
    adds its own plugin-boundary keys), so the record, flat_counters and every study read either."""
    from snaptax.spindle.serve import flat_counters
    spec = parse_device({"device": "raid5_15k_6"}, "test")
    script = "for i in range(40): h.pwrite(b'x' * 4096, i * 65536); h.pread(8192, i * 4096); h.flush()"
    docs = {}
    for plugin in ("python", "c"):
        dev = SpindleDevice(spec, 64 << 20, work_dir, f"r5{plugin}", plugin=plugin)
        with measurement_lock(), ProcessGroup() as group, serve(group, dev) as s:
            subprocess.run(["nbdsh", "-u", s.uri, "-c", script], check=True, timeout=60, env=NBDSH_ENV)
        docs[plugin] = json.loads(dev.counters.read_text())
    py, c = _shape(docs["python"]), _shape(docs["c"])
    assert {k: v for k, v in c.items() if k != "emulator"} == {k: v for k, v in py.items() if k != "emulator"}
    assert set(py["emulator"]) <= set(c["emulator"])
    assert {k: c["emulator"][k] for k in py["emulator"]} == py["emulator"]
    assert docs["c"]["emulator"]["plugin"] == "c" and docs["c"]["emulator"]["released"] == 120
    flat = {p: flat_counters(d) for p, d in docs.items()}
    assert set(flat["python"]) <= set(flat["c"])
    for key in ("host.writes", "host.reads", "host.rmw_rows", "host.member_reads", "host.member_writes"):
        assert flat["c"][key] == flat["python"][key]          # the same model: the same work, whatever the timing
    assert flat["c"]["emulator.boundary_s_sum"] >= flat["c"]["emulator.model_s_sum"] > 0


@needs
def test_one_request_thread_spins_at_a_time(work_dir):
    """Spinning is bounded: with a margin longer than every command (spin_us=2000 on the flash tier, 32 KiB at QD8),
    each thread would spin from submission to reply; one at a time, the others sleep to their time (spin_denied),
    and the time spent spinning cannot exceed the wall time (several spinners at once could: the runaway that
    starved the clients on the tiered pool's flash tier)."""
    import time

    from snaptax.spindle.profiles import TierSpec
    from snaptax.spindle.serve import flat_counters
    pool = parse_device({"device": "tier_pool"}, "test")
    assert isinstance(pool, TierSpec)
    dev = SpindleDevice(pool.ssd, 64 << 20, work_dir, "flash", spin_us=2000)
    job = fio.FioJob("s", "randread", bs=32768, iodepth=8, size=64 << 20, runtime_s=1, log_avg_msec=None)
    with measurement_lock(), ProcessGroup() as group, serve(group, dev) as s:
        t0 = time.monotonic()
        fio.run(job, fio.FioTarget("nbd", uri=s.uri), work_dir / "fio-spin")
        wall = time.monotonic() - t0
    flat = flat_counters(json.loads(dev.counters.read_text()))
    assert flat["emulator.released"] > 100
    assert flat["emulator.spin_denied"] > 0
    assert 0 < flat["emulator.spin_s_sum"] <= wall
